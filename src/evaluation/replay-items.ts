import type { Rollout, Store } from '../store/index.js';
import { CAPTURED_SOURCES, GATEWAY_SOURCE } from '../store/rollouts.js';
import type { Task } from '../tasks/types.js';
import { heldOutRollout } from '../trace/held-out.js';
import type { PromptPayload } from '../trace/payloads.js';

/** One captured call to replay against both sets. */
export interface ReplayItem {
  /** The captured rollout (gateway session) and its call's span. */
  rolloutId: string;
  seq: number;
  agent: string | null;
  /** The config model the client named. */
  model: string;
  messages: unknown[];
  tools?: readonly unknown[];
  maxTokens?: number;
  /** The task with a reference the rollout is linked to, when it is: scored by the reward families. */
  task: Task | null;
}

const PAGE = 200;

/**
 * The held-out captured calls (gateway.holdout), newest rollout first and its calls in order, up to max:
 * only chat calls that got an answer, those `replayable` accepts. The last call of a rollout
 * linked to a task with a reference carries the task.
 */
export function replayItems(
  store: Store,
  opts: { holdout: number; max: number; replayable: (call: { model: string; agent: string | null }) => boolean },
): ReplayItem[] {
  const items: ReplayItem[] = [];
  // The gateway's sessions and those received as OpenTelemetry spans, newest first.
  for (let offset = 0; items.length < opts.max; offset += PAGE) {
    const page = store.rollouts.list({ source: CAPTURED_SOURCES, limit: PAGE, offset });
    for (const rollout of page) {
      if (!heldOutRollout(rollout.id, opts.holdout)) continue;
      const calls = store.spans.list(rollout.id).flatMap((span) => callItem(span, rollout.id) ?? []);
      // The reference checks the session's final answer: its last call; the calls before it are judged.
      const task = calls.length ? linkedTask(store, rollout) : null;
      if (task) calls[calls.length - 1]!.task = task;
      items.push(...calls.filter((c) => opts.replayable(c)).slice(0, opts.max - items.length));
      if (items.length >= opts.max) break;
    }
    if (page.length < PAGE) break;
  }
  return items;
}

function callItem(
  span: { type: string; name: string; seq: number; agent: string | null; payload: unknown },
  rolloutId: string,
): ReplayItem | null {
  if (span.type !== 'prompt' || span.name !== 'chat') return null;
  const p = span.payload as PromptPayload | null;
  // a call the gateway relayed, or one received as an OTLP span
  const captured = p?.gateway !== undefined || (p as { otlp?: unknown } | null)?.otlp !== undefined;
  if (!captured || !p?.response || !Array.isArray(p.request?.messages) || !p.request.messages.length) return null;
  return {
    rolloutId,
    seq: span.seq,
    agent: span.agent,
    model: p.request.model,
    messages: p.request.messages,
    ...(p.request.tools?.length ? { tools: p.request.tools } : {}),
    ...(typeof p.request.max_tokens === 'number' ? { maxTokens: p.request.max_tokens } : {}),
    task: null,
  };
}

/**
 * The task a captured rollout answers, when it has a reference: its task id (the rollout's, or its
 * metadata's task_id) in the store, or a reference the rollout carries in its metadata.
 */
export function linkedTask(store: Store, rollout: Rollout): Task | null {
  const meta = rollout.metadata;
  const id = rollout.taskId ?? (typeof meta.task_id === 'string' ? meta.task_id : null);
  const stored = id ? store.tasks.get(id) : undefined;
  if (stored?.reference?.trim()) return stored;
  if (typeof meta.reference === 'string' && meta.reference.trim()) {
    return {
      id: id ?? `gateway:${rollout.id}`,
      prompt: typeof meta.prompt === 'string' ? meta.prompt : '',
      reference: meta.reference,
      metadata: {},
      source: GATEWAY_SOURCE,
      ...(typeof meta.category === 'string' ? { category: meta.category } : {}),
    };
  }
  return null;
}
