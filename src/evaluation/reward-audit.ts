import { groupBy } from '../store/query.js';

/** One answer (turn channel) or final answer (rollout channel) that a family scored and a reference verified. */
export interface AuditItem {
  family: string;
  channel: 'turn' | 'rollout';
  value: number;
  /** The exact or numeric verdict on the same answer: right when 1. */
  right: boolean;
  /** Which answer (rollout and span): what ensembles combine. */
  answer?: string;
}

/** How well one family's value tells right answers from wrong ones, on answers a reference verified. */
export interface FamilyAudit {
  family: string;
  channel: 'turn' | 'rollout';
  /** Verified answers the family scored, and how many of those were right. */
  n: number;
  right: number;
  /** The share of the channel's verified answers the family gave any signal on. */
  coverage: number;
  /** P(a right answer scores above a wrong one), ties counted half; null without both kinds. */
  auc: number | null;
  /** "value ≥ threshold" read as "right": precision and recall with 95 % Wilson intervals. */
  threshold: number;
  precision: Rate | null;
  recall: Rate | null;
}

export interface Rate {
  value: number;
  low: number;
  high: number;
  k: number;
  n: number;
}

/** Per family and channel, from the scored items; `labelled` = verified answers per channel (the coverage base). */
export function auditFamilies(
  items: readonly AuditItem[],
  labelled: Record<'turn' | 'rollout', number>,
  threshold = 0.5,
): FamilyAudit[] {
  return [...groupBy([...items], (it) => `${it.family}\u0000${it.channel}`).values()]
    .map((g) => {
      const { family, channel } = g[0]!;
      const right = g.filter((x) => x.right);
      const flagged = g.filter((x) => x.value >= threshold);
      const hits = flagged.filter((x) => x.right).length;
      return {
        family,
        channel,
        n: g.length,
        right: right.length,
        coverage: labelled[channel] ? g.length / labelled[channel] : 0,
        auc: mannWhitneyAuc(
          right.map((x) => x.value),
          g.filter((x) => !x.right).map((x) => x.value),
        ),
        threshold,
        precision: flagged.length ? wilson(hits, flagged.length) : null,
        recall: right.length ? wilson(hits, right.length) : null,
      };
    })
    .sort((a, b) => a.channel.localeCompare(b.channel) || a.family.localeCompare(b.family));
}

/**
 * Each ensemble (families named together, e.g. judge + peer_vote) as one more family: on every answer one of its
 * members scored, the mean of the members' values there (as a weighted total of them would rank it, at equal weights).
 */
export function ensembleItems(items: readonly AuditItem[], ensembles: readonly (readonly string[])[]): AuditItem[] {
  return ensembles.flatMap((members) => {
    const family = members.join('+');
    const scoredBy = items.filter((it) => it.answer && members.includes(it.family));
    return [...groupBy(scoredBy, (it) => `${it.channel}\u0000${it.answer}`).values()].map((scored) => ({
      family,
      channel: scored[0]!.channel,
      value: scored.reduce((sum, x) => sum + x.value, 0) / scored.length,
      right: scored[0]!.right,
      answer: scored[0]!.answer,
    }));
  });
}

/** The area under the ROC curve as the Mann–Whitney statistic: each right/wrong pair ordered right, ties half. */
export function mannWhitneyAuc(pos: readonly number[], neg: readonly number[]): number | null {
  if (!pos.length || !neg.length) return null;
  // rank sum over the pooled values, ties sharing their mean rank
  const pooled = [...pos.map((v) => ({ v, pos: true })), ...neg.map((v) => ({ v, pos: false }))].sort(
    (a, b) => a.v - b.v,
  );
  let rankSum = 0;
  for (let i = 0; i < pooled.length;) {
    let j = i;
    while (j < pooled.length && pooled[j]!.v === pooled[i]!.v) j++;
    const rank = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (pooled[k]!.pos) rankSum += rank;
    i = j;
  }
  return (rankSum - (pos.length * (pos.length + 1)) / 2) / (pos.length * neg.length);
}

/** k of n with its 95 % Wilson score interval (sound at small n, never outside [0, 1]). */
export function wilson(k: number, n: number, z = 1.959963984540054): Rate {
  const p = k / n;
  const denom = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denom;
  return { value: p, low: Math.max(0, centre - half), high: Math.min(1, centre + half), k, n };
}

/** The audit as a table: its header and one row per family and channel (precision and recall with their intervals). */
export function auditTable(families: readonly (FamilyAudit & { readsReference: boolean })[]): {
  head: string[];
  rows: string[][];
} {
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const rate = (r: Rate | null) => (r ? `${pct(r.value)} [${pct(r.low)}, ${pct(r.high)}]` : '—');
  return {
    head: ['family', 'channel', 'reads the reference', 'answers (right)', 'coverage', 'AUC', 'precision', 'recall'],
    rows: families.map((f) => [
      f.family,
      f.channel,
      f.readsReference ? 'yes' : 'no',
      `${f.n} (${f.right})`,
      pct(f.coverage),
      f.auc === null ? '—' : f.auc.toFixed(3),
      rate(f.precision),
      rate(f.recall),
    ]),
  };
}
