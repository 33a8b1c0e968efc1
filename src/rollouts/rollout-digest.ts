import type { RLConfig } from '../config/schema.js';
import type { RolloutDigest } from '../prompt-opt/index.js';
import { answerQuality } from '../rewards/index.js';
import type { Store } from '../store/index.js';
import type { Task } from '../tasks/types.js';
import { nestedDepth, type NewAnswerPayload, type VotePayload } from '../trace/payloads.js';

/**
 * A stored rollout as prompt optimization reads it: every top-level answer and vote (with its reason)
 * of the orchestration, each answer checked against the task's reference, the final answer, the
 * reward, and the reasons the reward families gave (a judge's feedback among them).
 */
export function rolloutDigest(
  store: Store,
  rolloutId: string,
  task: Task,
  rewards: RLConfig['rewards'],
): RolloutDigest | null {
  const rollout = store.rollouts.get(rolloutId);
  if (!rollout || rollout.status !== 'completed') return null;
  const quality = (text: string | null) => answerQuality(text, task, rewards)?.value ?? null;
  const spans = store.spans.list(rolloutId).filter((s) => s.type === 'coordination' && nestedDepth(s.payload) === 0);
  const answers = spans
    .filter((s) => s.name === 'new_answer')
    .map((s) => {
      const p = s.payload as NewAnswerPayload;
      return { agent: s.agent ?? '', label: p.label, content: p.content, quality: quality(p.content) };
    });
  // An answer label can be reused by a later answer of the same agent: a vote goes to the latest one it saw.
  const latest = (label: string) => answers.filter((a) => a.label === label).at(-1);
  const votes = spans
    .filter((s) => s.name === 'vote')
    .map((s) => {
      const p = s.payload as VotePayload;
      return {
        voter: s.agent ?? '',
        target: p.target_agent,
        targetLabel: p.target_label,
        reason: p.reason,
        targetQuality: latest(p.target_label)?.quality ?? null,
      };
    });
  const feedback = store.rewards
    .list(rolloutId)
    .filter((r) => r.family === 'judge' && r.reason)
    .map((r) => `${r.family}: ${r.reason}`);
  const reference = typeof task.reference === 'string' ? task.reference : null;
  return {
    rolloutId,
    taskId: task.id,
    task: task.prompt,
    reference,
    reward: rollout.totalReward,
    success: quality(rollout.finalAnswer),
    finalAnswer: rollout.finalAnswer,
    winner: rollout.winner,
    answers,
    votes,
    feedback,
  };
}
