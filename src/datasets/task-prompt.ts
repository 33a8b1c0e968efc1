import type { PromptPayload } from '../trace/payloads.js';
import type { ChatMessage } from './messages.js';
import { DEFAULT_SYSTEM_PROMPT } from './options.js';
import type { TraceReader } from './read-traces.js';
import type { RolloutIndex } from './rollout-index.js';

const ORIGINAL = /<ORIGINAL MESSAGE>\n([\s\S]*?)\n<\/ORIGINAL MESSAGE>/;

/**
 * The task as a plain chat prompt (system + user), for pairs whose answers were written in different
 * coordination contexts. User: the task row's prompt, else the rollout's original_task (imported
 * rollouts), else the <ORIGINAL MESSAGE> block of its first action's prompt; null when none is known.
 * System: `systemPrompt` when given, else the agent's system prompt resource recorded in the rollout's
 * metadata.prompts, else DEFAULT_SYSTEM_PROMPT.
 */
export function taskPrompt(
  view: RolloutIndex,
  agent: string,
  reader: TraceReader,
  systemPrompt: string | null,
): ChatMessage[] | null {
  const user = taskText(view);
  if (user === null) return null;
  return [
    { role: 'system', content: systemPrompt ?? agentSystemPrompt(view, agent, reader) ?? DEFAULT_SYSTEM_PROMPT },
    { role: 'user', content: user },
  ];
}

export function taskText(view: RolloutIndex): string | null {
  if (view.record.task) return view.record.task.prompt;
  const original = view.rollout.metadata.original_task;
  if (typeof original === 'string' && original.trim()) return original;
  const first = view.actions[0];
  const p: PromptPayload | null = first ? view.prompt(first.promptSeq) : null;
  for (const m of p?.request?.messages ?? []) {
    const content = (m as { role?: unknown; content?: unknown }).content;
    const match = typeof content === 'string' ? ORIGINAL.exec(content) : null;
    if (match) return match[1]!;
  }
  return null;
}

function agentSystemPrompt(view: RolloutIndex, agent: string, reader: TraceReader): string | null {
  const prompts = view.rollout.metadata.prompts;
  const id = prompts && typeof prompts === 'object' ? (prompts as Record<string, unknown>)[agent] : undefined;
  const text = typeof id === 'string' ? reader.promptText(id) : null;
  return text?.trim() ? text : null;
}

/** Answer text compared for equality: trimmed, whitespace runs collapsed. */
export function sameText(a: string, b: string): boolean {
  return normalizeText(a) === normalizeText(b);
}

export function normalizeText(s: string): string {
  return s.trim().replace(/\s+/g, ' ');
}
