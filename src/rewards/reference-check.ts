import { REFERENCE_VERIFYING } from '../config/sections/rewards.js';
import { computeRewards } from './compute.js';
import { verifiedQuality } from './delegation-credit.js';
import type { RewardsConfig, RolloutOutcome } from './types.js';

/**
 * rewards.references off: the final answer checked against the reference the loop withheld (1 when an exact or
 * numeric match, else 0), for the evaluation's held-out check; never a reward, so nothing trains on it. Null while
 * references are on (success is that check then) or when the task has no reference.
 */
export async function referenceCheck(
  outcome: RolloutOutcome,
  config: RewardsConfig,
  signal?: AbortSignal,
): Promise<number | null> {
  if (config.references !== 'off' || !outcome.task?.reference?.trim()) return null;
  const on = { ...config, references: 'on' as const };
  const final = { ...outcome, answers: [], samples: [] };
  const scored = await computeRewards(
    { outcome: final, config: on, ...(signal ? { signal } : {}) },
    Object.fromEntries(REFERENCE_VERIFYING.map((f) => [f, 1])),
  );
  return verifiedQuality(scored.byFamily, REFERENCE_VERIFYING);
}
