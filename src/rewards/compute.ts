import type { RewardInput } from '../trace/records.js';
import { mean } from './outcome.js';
import { getRewardFamily, REWARD_REGISTRY } from './registry.js';
import type { RewardContext, RewardUsage, RolloutOutcome } from './types.js';

/** A reward family failed to compute (a custom command crashed, an invalid task regex…). */
export class RewardError extends Error {
  constructor(
    readonly family: string,
    cause: unknown,
  ) {
    super(`reward ${family}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'RewardError';
  }
}

export interface RewardResult {
  /** Every reward, tagged with its family: rollout, agent and turn channels. */
  rewards: RewardInput[];
  /** Σ weight × the family's value (see familyValue). */
  total: number;
  /** The (unweighted) value of every weighted family that scored (familyValue not null). */
  byFamily: Record<string, number>;
  /** Tokens the judge spent: the caller adds them to the rollout's token cost. */
  judgeTokens: number;
}

/**
 * A family's value in the total: its rollout-channel value (the mean if it gave several); for
 * families without one (voting, tool, peer_vote) the mean of their turn values; null (counted as 0
 * and left out of byFamily) when it gave neither.
 */
export function familyValue(rewards: readonly RewardInput[]): number | null {
  const rollout = rewards.filter((r) => r.channel === 'rollout');
  const turns = rewards.filter((r) => r.channel === 'turn');
  if (rollout.length) return mean(rollout.map((r) => r.value));
  return turns.length ? mean(turns.map((r) => r.value)) : null;
}

function withheld(outcome: RolloutOutcome): RolloutOutcome {
  if (!outcome.task || outcome.task.reference === undefined) return outcome;
  const { reference: _withheld, ...task } = outcome.task;
  return { ...outcome, task };
}

/**
 * Runs every family with a non-zero weight (in registry order; unknown names throw listing the
 * valid ones) and totals them. Judge tokens go to ctx.usage (created when absent) and judgeTokens.
 * A family that throws rejects the whole call with a RewardError naming it (the cause attached).
 */
export async function computeRewards(
  ctx: RewardContext,
  weights: Partial<Record<string, number>>,
): Promise<RewardResult> {
  for (const name of Object.keys(weights)) getRewardFamily(name);
  const usage: RewardUsage = ctx.usage ?? { judgeTokens: 0, judgeCalls: 0 };
  const before = usage.judgeTokens;
  // rewards.references off withholds the reference from every family, as traffic without one would.
  const outcome = ctx.config.references === 'off' ? withheld(ctx.outcome) : ctx.outcome;
  const run = { ...ctx, outcome, usage };
  const active = REWARD_REGISTRY.filter((f) => (weights[f.name] ?? 0) !== 0);
  const results = await Promise.all(
    active.map(async (family) => {
      try {
        const rewards = (await family.score(run)).map((r) => ({ ...r, family: family.name }));
        const bad = rewards.find((r) => !Number.isFinite(r.value));
        if (bad) throw new Error(`${bad.channel} value is not a finite number: ${bad.value}`);
        return { family, rewards };
      } catch (err) {
        if (ctx.signal?.aborted) throw err;
        throw err instanceof RewardError ? err : new RewardError(family.name, err);
      }
    }),
  );
  const rewards: RewardInput[] = [];
  const byFamily: Record<string, number> = {};
  let total = 0;
  for (const { family, rewards: own } of results) {
    rewards.push(...own);
    const value = familyValue(own);
    if (value === null) continue;
    byFamily[family.name] = value;
    total += (weights[family.name] ?? 0) * value;
  }
  return { rewards, total, byFamily, judgeTokens: usage.judgeTokens - before };
}
