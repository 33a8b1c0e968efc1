import type { RolloutOutcome } from './types.js';

export type OutcomeAnswer = RolloutOutcome['answers'][number];

/** The task's reference answer, or null when there is nothing to compare with. */
export function referenceOf(outcome: RolloutOutcome): string | null {
  const ref = outcome.task?.reference;
  return typeof ref === 'string' && ref.trim() !== '' ? ref : null;
}

/** Each agent's last answer (optionally only answers given before `beforeSeq`), in agent order. */
export function latestAnswers(outcome: RolloutOutcome, beforeSeq = Infinity): Map<string, OutcomeAnswer> {
  const latest = new Map<string, OutcomeAnswer>();
  for (const a of outcome.answers) if (a.seq < beforeSeq) latest.set(a.agent, a);
  const order = (agent: string) => {
    const i = outcome.agents.indexOf(agent);
    return i < 0 ? Infinity : i;
  };
  return new Map([...latest].sort(([a], [b]) => order(a) - order(b)));
}

/**
 * The agent id a vote target names: the target may be an agent id or an anonymous label
 * (agent1..agentN), and `labels` may map either way (agent → label or label → agent).
 */
export function agentOf(outcome: RolloutOutcome, target: string): string {
  if (outcome.agents.includes(target)) return target;
  const direct = Object.hasOwn(outcome.labels, target) ? outcome.labels[target] : undefined;
  if (direct !== undefined && outcome.agents.includes(direct)) return direct;
  const reverse = Object.entries(outcome.labels).find(
    ([agent, label]) => label === target && outcome.agents.includes(agent),
  );
  if (reverse) return reverse[0];
  const answered = outcome.answers.find((a) => a.label === target);
  return answered ? answered.agent : target;
}

export function mean(values: number[]): number {
  return values.length ? values.reduce((s, v) => s + v, 0) / values.length : 0;
}
