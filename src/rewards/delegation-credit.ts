import { REFERENCE_VERIFYING } from '../config/sections/rewards.js';
import type { DelegationRecord } from '../orchestrator/types.js';
import { nestedDepth, type DelegateAggregatePayload, type NestedMark } from '../trace/payloads.js';
import type { RewardInput } from '../trace/records.js';

/** The family name of delegation credit rows (not a registry family: it is never part of the total). */
export const DELEGATION_CREDIT = 'delegation';

/**
 * The rollout outcome a delegation shares in: its verified quality (the best of the verifying families: exact and
 * numeric unless `verifying` names others) when one scored, else its total reward.
 */
export function creditOutcome(
  scored: { byFamily: Record<string, number>; total: number },
  verifying: readonly string[] = REFERENCE_VERIFYING,
): {
  value: number;
  source: string;
} {
  const quality = verifiedQuality(scored.byFamily, verifying);
  return quality !== null
    ? { value: quality, source: 'verified quality' }
    : { value: scored.total, source: 'total reward' };
}

/** Verified quality: the best of the verifying families (config verifyingFamilies) that scored, null when none did. */
export function verifiedQuality(
  byFamily: Record<string, number>,
  verifying: readonly string[] = REFERENCE_VERIFYING,
): number | null {
  const verdicts = verifying.map((f) => byFamily[f]).filter((v): v is number => v !== undefined);
  return verdicts.length ? Math.max(...verdicts) : null;
}

/**
 * Credit for each delegation (child team), as a turn reward of family `delegation` on the delegating
 * agent, targetSeq = its `delegate` span:
 *
 *   credit = use × (use of each enclosing delegation, up to the team) × outcome
 *
 * use: the share of the returned answer's words found in the final answer of the level that asked for
 * it (trace/payloads.ts, delegate_aggregate; 0 when that level ignored it or had no final answer).
 * outcome: creditOutcome. A separate step after the rollout is scored, not a registry family: the
 * outcome is known only once every family has scored, and the credit must not feed back into the total.
 */
export function delegationCredit(
  delegations: readonly DelegationRecord[],
  scored: { byFamily: Record<string, number>; total: number },
  verifying: readonly string[] = REFERENCE_VERIFYING,
): RewardInput[] {
  if (!delegations.length) return [];
  const outcome = creditOutcome(scored, verifying);
  const bySeq = new Map(delegations.map((d) => [d.delegateSeq, d]));
  return delegations.map((d) => {
    let above = 1;
    let parent = d.parentDelegateSeq;
    // Bounded by the number of delegations, whatever the records say.
    for (let i = 0; parent !== null && i < delegations.length; i++) {
      const up = bySeq.get(parent);
      above *= up?.use ?? 0;
      parent = up?.parentDelegateSeq ?? null;
    }
    const chain = d.parentDelegateSeq === null ? '' : ` × ${round(above)} (the uses of the enclosing delegations)`;
    const value = d.use * above * outcome.value;
    return {
      channel: 'turn',
      family: DELEGATION_CREDIT,
      value: Number.isFinite(value) ? value : 0,
      agent: d.agent,
      targetSeq: d.delegateSeq,
      reason: `use ${round(d.use)} of the returned answer${chain} × outcome ${round(outcome.value)} (${outcome.source})`,
    };
  });
}

/** The delegation records of a stored rollout, read from its delegate_aggregate spans (for recomputing rewards). */
export function delegationsFromSpans(
  spans: Iterable<{ type: string; name: string; payload: unknown }>,
): DelegationRecord[] {
  const out: DelegationRecord[] = [];
  for (const s of spans) {
    if (s.type !== 'coordination' || s.name !== 'delegate_aggregate') continue;
    const p = s.payload as DelegateAggregatePayload & Partial<NestedMark>;
    const parentDelegateSeq = nestedDepth(p) > 0 && typeof p.delegate_seq === 'number' ? p.delegate_seq : null;
    for (const r of Array.isArray(p.returns) ? p.returns : []) {
      out.push({
        agent: r.agent,
        delegateSeq: r.delegate_seq,
        returnSeq: r.return_seq,
        depth: r.child_depth,
        parentDelegateSeq,
        use: Number.isFinite(r.use) ? r.use : 0,
      });
    }
  }
  return out.sort((a, b) => a.delegateSeq - b.delegateSeq);
}

function round(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}
