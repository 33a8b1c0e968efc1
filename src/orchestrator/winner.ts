import type { TeamAgent } from './types.js';
import { jaccard, wordSet } from './validate.js';

export interface Selection {
  winner: TeamAgent | null;
  counts: Record<string, number>;
  reason: 'votes' | 'no_votes' | 'agreement' | 'no_answers';
}

/**
 * Most votes wins, ties by registration order; with no votes, the first agent (by registration) with an
 * answer, or (byAgreement: a stop policy ended the round before anyone voted) the answer the others agree with most.
 */
export function selectWinner(
  team: TeamAgent[],
  answers: Map<string, unknown>,
  votes: Map<string, { target: string }>,
  opts: { byAgreement?: boolean } = {},
): Selection {
  const counts: Record<string, number> = {};
  for (const v of votes.values()) {
    const label = team.find((a) => a.id === v.target)?.label;
    if (label) counts[label] = (counts[label] ?? 0) + 1;
  }
  if (!answers.size) return { winner: null, counts, reason: 'no_answers' };
  let best: TeamAgent | null = null;
  for (const agent of team) {
    const n = counts[agent.label] ?? 0;
    if (n > 0 && (!best || n > (counts[best.label] ?? 0))) best = agent;
  }
  if (best) return { winner: best, counts, reason: 'votes' };
  if (opts.byAgreement) {
    const leader = mostAgreed(team, answers as Map<string, { content: string }>);
    if (leader) return { winner: leader, counts, reason: 'agreement' };
  }
  return { winner: team.find((a) => answers.has(a.id)) ?? null, counts, reason: 'no_votes' };
}

/** The answer closest to the others (summed word overlap); none when fewer than two answers, or when none stands out. */
function mostAgreed(team: TeamAgent[], answers: Map<string, { content: string }>): TeamAgent | undefined {
  const holders = team.filter((a) => answers.has(a.id));
  if (holders.length < 2) return undefined;
  const words = holders.map((a) => wordSet(answers.get(a.id)!.content));
  const scores = words.map((w, i) => words.reduce((sum, other, j) => (i === j ? sum : sum + jaccard(w, other)), 0));
  const top = Math.max(...scores);
  return top > 0 ? holders[scores.indexOf(top)] : undefined;
}
