import { capturedTurns } from '../../datasets/captured.js';
import type { Store } from '../../store/index.js';
import type { PromptPayload } from '../../trace/payloads.js';
import type { Rollout } from '../../trace/records.js';

/** The id of a captured session's training copy: fixed, so a session is taken at most once. */
export function trainingCopyId(rolloutId: string): string {
  return `${rolloutId}-t`;
}

/** Whether a captured session was taken already (it has a training copy). */
export function taken(store: Store, rolloutId: string): boolean {
  return store.rollouts.get(trainingCopyId(rolloutId)) !== undefined;
}

/**
 * Copies a captured session into a collect rollout of the run: a fresh rollout number, so the training
 * watermark (rollout numbers) takes it up whenever it is taken, however long its reward kept it waiting.
 * The copy holds the session's spans and rewards as they are now (feedback added to the session later
 * does not reach it), its last completion as the final answer, and metadata.captured_from naming the
 * session; call inside a write transaction.
 */
export function copyCaptured(store: Store, r: Rollout, runId: string): string {
  const spans = store.spans.list(r.id);
  // A new rollout's writer numbers its spans 1, 2, …: the copy's seq of each span is known up front.
  const seqOf = new Map(spans.map((s, i) => [s.seq, i + 1]));
  const bySeq = new Map(spans.map((s) => [s.seq, s.payload as PromptPayload]));
  const turns = capturedTurns(spans, (seq) => bySeq.get(seq) ?? null);
  const last = turns.at(-1);
  const id = store.rollouts.start({
    id: trainingCopyId(r.id),
    runId,
    source: 'collect',
    metadata: {
      ...r.metadata,
      captured_from: r.id,
      ...(last ? { captured_turn: seqOf.get(last.seq) } : {}),
    },
    resourceSetId: r.resourceSetId,
  });
  store.spans.append(
    id,
    spans.map((s) => ({
      type: s.type,
      name: s.name,
      agent: s.agent,
      parentSeq: s.parentSeq === null ? null : (seqOf.get(s.parentSeq) ?? null),
      startedAt: s.startedAt,
      durationMs: s.durationMs,
      payload: s.payload,
    })),
  );
  store.rewards.add(
    id,
    store.rewards.list(r.id).map((w) => ({
      channel: w.channel,
      family: w.family,
      value: w.value,
      reason: w.reason,
      agent: w.agent,
      targetSeq: w.targetSeq === null ? null : (seqOf.get(w.targetSeq) ?? null),
    })),
  );
  store.rollouts.finish(id, {
    status: 'completed',
    finalAnswer: last?.completion ?? null,
    totalReward: r.totalReward,
    tokens: r.tokens,
    toolCalls: r.toolCalls,
    messages: r.messages,
    wallMs: r.wallMs,
  });
  return id;
}
