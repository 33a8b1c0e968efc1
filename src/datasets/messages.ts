import type { PromptPayload } from '../trace/payloads.js';
import { canonicalJson, sha256 } from '../util/hash.js';

/** An OpenAI chat message as it goes into a dataset row (tool-call fields kept when the request had them). */
export interface ChatMessage {
  role: string;
  content: string;
  tool_calls?: unknown[];
  tool_call_id?: string;
  name?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/**
 * The request messages of a prompt span as dataset messages: `role` and `content` (null content, as
 * in an assistant turn that only called tools, becomes ""), plus `tool_calls`, `tool_call_id` and `name`
 * when present. Entries that are not messages are left out.
 */
export function chatMessages(raw: readonly unknown[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of raw) {
    if (!isObj(m) || typeof m.role !== 'string') continue;
    const msg: ChatMessage = {
      role: m.role,
      content: typeof m.content === 'string' ? m.content : m.content == null ? '' : canonicalJson(m.content),
    };
    if (Array.isArray(m.tool_calls) && m.tool_calls.length) msg.tool_calls = m.tool_calls;
    if (typeof m.tool_call_id === 'string') msg.tool_call_id = m.tool_call_id;
    if (typeof m.name === 'string') msg.name = m.name;
    out.push(msg);
  }
  return out;
}

/**
 * What the model produced in a prompt span, as one string: the reply text when it has any; a reply
 * made only of tool calls (native tool mode: new_answer, vote, ordinary tools) is rendered in the
 * common `<tool_call>{"name": …, "arguments": {…}}</tool_call>` form, one block per call.
 * null when the span has no response (failed or cancelled calls).
 */
export function completionText(p: Pick<PromptPayload, 'response'>): string | null {
  const r = p.response;
  if (!r) return null;
  if (typeof r.content === 'string' && r.content.trim()) return r.content;
  const calls = (r.tool_calls ?? []).filter(isObj).map((c) => {
    const fn = isObj(c.function) ? c.function : {};
    let args: unknown = fn.arguments ?? {};
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        // keep the raw string: the model wrote invalid JSON and that is what it produced
      }
    }
    return `<tool_call>\n${JSON.stringify({ name: fn.name ?? null, arguments: args })}\n</tool_call>`;
  });
  return calls.length ? calls.join('\n') : null;
}

/**
 * The group key of a prompt: sha256 of the canonical JSON of the normalized request messages and the
 * tool specs offered (a native-mode agent offered other tools saw a different prompt). Sampling
 * parameters and the model name are not part of it.
 */
export function promptKey(request: PromptPayload['request']): string {
  const messages = chatMessages(request.messages ?? []);
  const tools = request.tools?.length ? request.tools : null;
  // chatMessages builds every message with the same key order, so plain JSON is canonical unless nested
  // objects (tool calls, tool specs) are involved.
  const plain = tools === null && messages.every((m) => m.tool_calls === undefined);
  return sha256(plain ? JSON.stringify({ messages, tools }) : canonicalJson({ messages, tools }));
}

/** Per-token logprobs as numbers (the contract's `[float]`); null when the span has none or any is unusable. */
export function logprobValues(p: Pick<PromptPayload, 'logprobs'>): number[] | null {
  if (!Array.isArray(p.logprobs) || !p.logprobs.length) return null;
  const values = p.logprobs.map((l: unknown) => (isObj(l) ? l.logprob : l));
  return values.every((v): v is number => typeof v === 'number' && Number.isFinite(v)) ? values : null;
}

/** The completion's token ids; null when the span has none (or an empty or malformed list). */
export function tokenIds(p: Pick<PromptPayload, 'token_ids'>): number[] | null {
  const ids = p.token_ids;
  return Array.isArray(ids) && ids.length && ids.every((t) => Number.isInteger(t) && t >= 0) ? ids : null;
}
