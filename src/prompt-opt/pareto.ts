import type { Rng } from '../tasks/prng.js';

/** Scores of every candidate on every validation key (task × seed); a missing score is not a win. */
export type ScoreTable = Map<string, Map<string, number>>;

export interface Front {
  /** Candidate id → the validation keys on which it has the best score (ties share a key). */
  wins: Map<string, string[]>;
  /** The candidate with the best mean over the keys it was scored on (first in insertion order on ties). */
  best: string | null;
}

/** The mean of scores; none (or no table at all) ranks below every score. */
export function meanScore(scores: Iterable<number> | undefined): number {
  let [sum, n] = [0, 0];
  for (const v of scores ?? []) [sum, n] = [sum + v, n + 1];
  return n ? sum / n : Number.NEGATIVE_INFINITY;
}

/**
 * The Pareto front over validation keys, as GEPA keeps it: every candidate that is best on some key,
 * plus the best mean; candidates dominated on every key drop out.
 */
export function paretoFront(table: ScoreTable, keys: readonly string[]): Front {
  const wins = new Map<string, string[]>();
  for (const key of keys) {
    let top = Number.NEGATIVE_INFINITY;
    for (const s of table.values()) top = Math.max(top, s.get(key) ?? Number.NEGATIVE_INFINITY);
    if (top === Number.NEGATIVE_INFINITY) continue;
    for (const [id, s] of table) if (s.get(key) === top) wins.set(id, [...(wins.get(id) ?? []), key]);
  }
  let best: string | null = null;
  for (const [id, s] of table)
    if (best === null || meanScore(s.values()) > meanScore(table.get(best)!.values())) best = id;
  if (best !== null && !wins.has(best)) wins.set(best, []);
  // A candidate whose wins are all shared with one that wins a strict superset adds nothing.
  for (const [id, keysWon] of [...wins]) {
    const dominated = [...wins].some(
      ([other, o]) => other !== id && o.length > keysWon.length && keysWon.every((k) => o.includes(k)),
    );
    if (dominated && id !== best) wins.delete(id);
  }
  return { wins, best };
}

/** A parent drawn from the front, with probability proportional to the keys it wins (at least 1). */
export function drawParent(front: Front, rng: Rng): string {
  const entries = [...front.wins].map(([id, k]) => [id, Math.max(1, k.length)] as const);
  if (!entries.length) throw new Error('the Pareto front is empty');
  const total = entries.reduce((s, [, w]) => s + w, 0);
  let r = rng.next() * total;
  for (const [id, w] of entries) if ((r -= w) < 0) return id;
  return entries.at(-1)![0];
}
