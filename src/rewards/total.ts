import type { RewardInput } from '../trace/records.js';
import { familyValue } from './compute.js';

/**
 * The rollout's total from stored reward rows: Σ weight × familyValue over the families present.
 * The same rule as computeRewards, so human feedback added later counts with its configured weight.
 */
export function totalFromRewards(
  rewards: readonly Pick<RewardInput, 'family' | 'channel' | 'value'>[],
  weights: Partial<Record<string, number>>,
): number {
  const byFamily = new Map<string, Pick<RewardInput, 'family' | 'channel' | 'value'>[]>();
  for (const r of rewards) byFamily.set(r.family, [...(byFamily.get(r.family) ?? []), r]);
  let total = 0;
  for (const [family, rows] of byFamily) {
    const value = familyValue(rows as RewardInput[]);
    if (value !== null) total += (weights[family] ?? 0) * value;
  }
  return total;
}
