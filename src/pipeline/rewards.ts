import os from 'node:os';
import { UserError } from '../errors.js';
import { computeRewards } from '../rewards/compute.js';
import { delegationCredit, delegationsFromSpans } from '../rewards/delegation-credit.js';
import { samplesOf, sampleRewards } from '../rewards/samples.js';
import { rewardSpan } from '../rewards/spans.js';
import { totalFromRewards } from '../rewards/total.js';
import { outcomeFromSpans } from '../rollouts/outcome.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Reward, RewardInput, RolloutFilter } from '../store/types.js';

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
    scored.rewards.push(...delegationCredit(delegationsFromSpans(spans), { byFamily: scored.byFamily, total }));
    // Samples are credited on their own spans, after the total.
    scored.rewards.push(...await sampleRewards(r.id, samplesOf(spans), task, { config: config.rewards, judge }));
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

export interface Feedback {
  score: number;
  agent?: string;
  note?: string;
}

/** Adds a human reward to a rollout (or one of its agents) and updates the rollout's total. */
export async function addFeedback(rt: Runtime, rolloutRef: string, fb: Feedback): Promise<{ rolloutId: string; reward: Reward; total: number }> {
  if (!Number.isFinite(fb.score)) throw new UserError(`--score must be a number, got ${fb.score}`);
  const store = rt.store();
  const rollout = store.rollouts.resolve(rolloutRef);
  if (!rollout) throw new UserError(`no rollout "${rolloutRef}" in ${rt.paths.storePath}`, 'list them with `massgen-rl traces list`');
  const agents = Array.isArray(rollout.metadata.agents) ? (rollout.metadata.agents as string[]) : [];
  if (fb.agent && !agents.includes(fb.agent)) throw new UserError(`rollout ${rollout.id} has no agent "${fb.agent}"; agents: ${agents.join(', ') || 'none recorded'}`);
  const input: RewardInput = { channel: fb.agent ? 'agent' : 'rollout', family: 'human', value: fb.score, reason: fb.note ?? `feedback from ${os.userInfo().username}`, agent: fb.agent ?? null };
  return store.transaction(() => {
    const writer = store.spans.writer(rollout.id);
    writer.add(rewardSpan(input));
    writer.flush();
    store.rewards.add(rollout.id, [input]);
    const all = store.rewards.list(rollout.id);
    const total = totalFromRewards(all, rt.config.rewards.weights);
    store.rollouts.setTotalReward(rollout.id, total);
    return { rolloutId: rollout.id, reward: all[all.length - 1]!, total };
  });
}

function mean(xs: number[]): number | null {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}
