import type { Candidate } from './types.js';

/** The nearest candidate both descend from (the seed at worst), following first parents. */
export function commonAncestor(pool: ReadonlyMap<string, Candidate>, a: string, b: string): Candidate | undefined {
  const line = (id: string) => {
    const out: string[] = [];
    for (let c = pool.get(id); c; c = c.parents[0] ? pool.get(c.parents[0]) : undefined) out.push(c.id);
    return out;
  };
  const ofB = new Set(line(b));
  const shared = line(a).find((id) => ofB.has(id));
  return shared ? pool.get(shared) : undefined;
}

/**
 * GEPA's merge for a team: each prompt is taken from whichever of the two candidates changed it since
 * their common ancestor; where both did, from the one with the better mean. Null when the merge gives
 * nothing new (one candidate already holds every change).
 */
export function mergeTexts(
  a: Candidate,
  b: Candidate,
  ancestor: Candidate,
  betterIsA: boolean,
): Record<string, string> | null {
  const texts: Record<string, string> = {};
  for (const name of Object.keys(ancestor.texts)) {
    const [ta, tb, t0] = [a.texts[name]!, b.texts[name]!, ancestor.texts[name]!];
    texts[name] = ta !== t0 && tb !== t0 ? (betterIsA ? ta : tb) : ta !== t0 ? ta : tb;
  }
  const same = (c: Candidate) => Object.keys(texts).every((k) => texts[k] === c.texts[k]);
  return same(a) || same(b) ? null : texts;
}
