import type { ClientRequest } from './request.js';

type Wants = ClientRequest['wants'];

/** Whether anything the gateway added may need removing from what the client gets. */
export function needsStrip(wants: Wants, stream: boolean): boolean {
  return !wants.logprobs || !wants.tokenIds || (stream && !wants.usage);
}

/**
 * Removes from a completion (or a stream chunk) what the gateway asked for and the client did not:
 * logprobs, token ids, and in a stream the usage. Returns false for a chunk to leave out altogether
 * (the usage-only chunk at a stream's end).
 */
export function strip(obj: Record<string, unknown>, wants: Wants, chunk: boolean): boolean {
  const choices = Array.isArray(obj.choices) ? (obj.choices as Record<string, unknown>[]) : [];
  if (chunk && !wants.usage) {
    if (obj.usage && choices.length === 0) return false;
    delete obj.usage;
  }
  if (!wants.tokenIds) {
    delete obj.prompt_token_ids;
    for (const c of choices) {
      delete c.token_ids;
      delete c.prompt_token_ids;
    }
  }
  if (!wants.logprobs) for (const c of choices) if (c && 'logprobs' in c) c.logprobs = null;
  return true;
}

const ADDED = /"(?:prompt_)?token_ids"|"logprobs"\s*:\s*\{/;

/** A whole completion's body, stripped (unchanged text when nothing needs removing or it is not JSON). */
export function stripBody(text: string, wants: Wants): string {
  // a scan is far cheaper than a parse and a re-encoding, and most backends add nothing when not asked
  if (!needsStrip(wants, false) || !ADDED.test(text)) return text;
  try {
    const obj = JSON.parse(text) as Record<string, unknown>;
    strip(obj, wants, false);
    return JSON.stringify(obj);
  } catch {
    return text;
  }
}
