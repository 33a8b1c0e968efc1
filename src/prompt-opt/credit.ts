import type { Component, RolloutDigest } from './types.js';

/** Why a component deserves the next edit, summed over the rollouts read. */
export interface Blame {
  component: string;
  /** Share of the agents' answers that other agents did not vote for. */
  lostVotes: number;
  /** Votes the agents gave to answers that were wrong. */
  wrongVotes: number;
  /** Answers of the agents that were wrong (tasks with a reference). */
  wrongAnswers: number;
  /** Presenter: a wrong final answer although a right answer was on the table. */
  badPresentations: number;
  score: number;
}

const isWrong = (q: number | null) => q !== null && q < 1;

/**
 * Credit from the traces: an agent whose answers lose votes, whose votes go to wrong answers, or whose
 * answers are wrong, puts its prompt up for editing; the presenter's prompt is blamed for wrong final
 * answers, most of all when a right answer was available.
 */
export function blame(components: readonly Component[], views: readonly RolloutDigest[]): Blame[] {
  return components.map((c) => {
    const b: Blame = { component: c.name, lostVotes: 0, wrongVotes: 0, wrongAnswers: 0, badPresentations: 0, score: 0 };
    for (const v of views) {
      for (const a of v.answers.filter((x) => c.agents.includes(x.agent))) {
        const others = v.votes.filter((x) => x.voter !== a.agent);
        if (others.length && !others.some((x) => x.targetLabel === a.label)) b.lostVotes += 1;
        if (isWrong(a.quality)) b.wrongAnswers += 1;
      }
      b.wrongVotes += v.votes.filter((x) => c.agents.includes(x.voter) && isWrong(x.targetQuality)).length;
      if (c.presenter && isWrong(v.success)) b.badPresentations += v.answers.some((a) => a.quality === 1) ? 2 : 1;
    }
    b.score = b.lostVotes + b.wrongVotes + b.wrongAnswers + b.badPresentations;
    return b;
  });
}

/** The component a proposal edits: drawn with probability proportional to its blame (plus a floor, so none starves). */
export function pickComponent(blames: readonly Blame[], u: number): string {
  const weights = blames.map((b) => b.score + 0.5);
  const total = weights.reduce((s, w) => s + w, 0);
  let r = u * total;
  for (let i = 0; i < blames.length; i++) if ((r -= weights[i]!) < 0) return blames[i]!.component;
  return blames.at(-1)!.component;
}
