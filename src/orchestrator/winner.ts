import type { TeamAgent } from './types.js';

export interface Selection {
  winner: TeamAgent | null;
  counts: Record<string, number>;
  reason: 'votes' | 'no_votes' | 'no_answers';
}

/** Most votes wins, ties by registration order; with no votes, the first agent (by registration) with an answer. */
export function selectWinner(team: TeamAgent[], answers: Map<string, unknown>, votes: Map<string, { target: string }>): Selection {
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
  return { winner: team.find((a) => answers.has(a.id)) ?? null, counts, reason: 'no_votes' };
}
