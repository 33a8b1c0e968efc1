import os from 'node:os';
import { READS_REFERENCE, REWARD_FAMILIES, verifyingFamilies } from '../../config/sections/rewards.js';
import { UserError } from '../../errors.js';
import { auditFamilies, ensembleItems, type FamilyAudit } from '../../evaluation/reward-audit.js';
import { computeRewards } from '../../rewards/compute.js';
import { delegationCredit, delegationsFromSpans } from '../../rewards/delegation-credit.js';
import { feedbackAgents, FeedbackError, feedbackReward, storeRewards, type Feedback } from '../../rewards/feedback.js';
import { samplesOf, sampleRewards } from '../../rewards/samples.js';
import { rewardSpan } from '../../rewards/spans.js';
import { totalFromRewards } from '../../rewards/total.js';
import { outcomeFromSpans } from '../../rollouts/outcome.js';
import type { Runtime } from '../../runtime/runtime.js';
import { GATEWAY_SOURCE } from '../../store/rollouts.js';
import type { Reward, RewardInput, RolloutFilter } from '../../store/types.js';

export interface RecomputeSummary {
  rollouts: number;
  changed: number;
  meanBefore: number | null;
  meanAfter: number | null;
}

/** Re-scores stored rollouts with the current reward config; human feedback is kept. */
export async function recomputeRewards(rt: Runtime, filter: RolloutFilter = {}): Promise<RecomputeSummary> {
  const { config } = rt;
  const store = rt.store();
  const judge = await rt.judge();
  const rollouts = store.rollouts.list({ ...filter }).filter((r) => r.status === 'completed' || r.status === 'failed');
  const before: number[] = [];
  const after: number[] = [];
  let changed = 0;
  for (const r of rollouts) {
    const task = r.taskId ? (store.tasks.get(r.taskId) ?? null) : null;
    const spans = store.spans.list(r.id);
    const outcome = outcomeFromSpans(r, spans, task);
    const scored = await computeRewards({ outcome, config: config.rewards, judge }, config.rewards.weights);
    const kept = store.rewards.list(r.id).filter((w) => w.family === 'human');
    const total = totalFromRewards([...scored.rewards, ...kept], config.rewards.weights);
    const credits = delegationCredit(
      delegationsFromSpans(spans),
      { byFamily: scored.byFamily, total },
      verifyingFamilies(config.rewards),
    );
    scored.rewards.push(...credits);
    // Samples are credited on their own spans, after the total.
    scored.rewards.push(...(await sampleRewards(r.id, samplesOf(spans), task, { config: config.rewards, judge })));
    store.transaction(() => {
      store.rewards.removeComputed(r.id);
      const writer = store.spans.writer(r.id);
      for (const w of scored.rewards) writer.add(rewardSpan(w));
      writer.flush();
      store.rewards.add(r.id, scored.rewards);
      store.rollouts.setTotalReward(r.id, total);
    });
    if (r.totalReward !== null) before.push(r.totalReward);
    after.push(total);
    if (r.totalReward === null || Math.abs(r.totalReward - total) > 1e-12) changed++;
  }
  return { rollouts: rollouts.length, changed, meanBefore: mean(before), meanAfter: mean(after) };
}

export type { Feedback } from '../../rewards/feedback.js';

/** Adds a human reward to a rollout (or one of its agents) and updates the rollout's total. */
export async function addFeedback(
  rt: Runtime,
  rolloutRef: string,
  fb: Feedback,
): Promise<{ rolloutId: string; reward: Reward; total: number }> {
  const store = rt.store();
  const rollout = store.rollouts.resolve(rolloutRef);
  if (!rollout)
    throw new UserError(
      `no rollout "${rolloutRef}" in ${rt.paths.storePath}`,
      'list them with `massgen-rl traces list`',
    );
  if (rollout.source === GATEWAY_SOURCE && rollout.status === 'running') {
    // the gateway still writes this rollout's spans; its finish would also reset the total
    throw new UserError(
      `rollout ${rollout.id} is a gateway session still open`,
      'send the feedback to the gateway (POST /v1/feedback), which stores it when the session closes, or try again once it has closed (gateway.session_idle_s)',
    );
  }
  let input: RewardInput;
  try {
    input = feedbackReward(fb, rollout.id, feedbackAgents(store, rollout), `feedback from ${os.userInfo().username}`);
  } catch (err) {
    if (!(err instanceof FeedbackError)) throw err;
    throw new UserError(err.field === 'agent' ? err.message : `--${err.message}`);
  }
  return store.transaction(() => ({
    rolloutId: rollout.id,
    ...storeRewards(store, rollout.id, [input], rt.config.rewards.weights),
  }));
}

function mean(xs: number[]): number | null {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

export interface RewardAudit {
  /** Verified answers (exact or numeric) per channel in the store: the labelled sample. */
  labelled: { turn: number; rollout: number };
  families: (FamilyAudit & { readsReference: boolean })[];
}

/**
 * How well each stored reward family tells right answers from wrong ones, on the answers a reference verified (exact
 * or numeric): per family and channel its coverage, AUC, and precision and recall of `value ≥ threshold`.
 */
export function auditRewards(rt: Runtime, opts: { threshold?: number; ensembles?: string[] } = {}): RewardAudit {
  const threshold = opts.threshold ?? 0.5;
  if (!Number.isFinite(threshold)) throw new UserError(`--threshold ${threshold}: not a number`);
  const chosen = (opts.ensembles ?? []).map(ensembleMembers);
  const { scores, labelled } = rt.existingStore().rewards.verifiedScores();
  // by default every family that reads no reference, together, when two or more scored the verified answers
  const labelFree = [...new Set(scores.map((x) => x.family))].filter((f) => !READS_REFERENCE.has(f)).sort();
  const ensembles = chosen.length ? chosen : labelFree.length > 1 ? [labelFree] : [];
  const families = auditFamilies([...scores, ...ensembleItems(scores, ensembles)], labelled, threshold).map((f) => ({
    ...f,
    readsReference: f.family.split('+').some((m) => READS_REFERENCE.has(m)),
  }));
  return { labelled, families };
}

/** `a+b` as its families, each a reward family, two or more. */
function ensembleMembers(spec: string): string[] {
  const members = [...new Set(spec.split('+').map((m) => m.trim()))];
  const unknown = members.find((m) => !(REWARD_FAMILIES as readonly string[]).includes(m));
  if (unknown !== undefined)
    throw new UserError(`--ensemble ${spec}: "${unknown}" is not a reward family (${REWARD_FAMILIES.join(', ')})`);
  if (members.length < 2) throw new UserError(`--ensemble ${spec}: name two or more families joined by +`);
  return members;
}
