/**
 * deploy.rollout: the canary's shares of traffic, stage by stage (e.g. [0.1, 0.5, 1.0]). A canary
 * advances to the next stage when its gates pass at this one; passing at the last (1.0) promotes it.
 */

/** Why a rollout list is not usable (strictly increasing shares in (0, 1], the last 1), or undefined. */
export function rolloutProblem(stages: readonly number[]): string | undefined {
  if (stages.length === 0) return 'must list at least one stage, e.g. [0.1, 0.5, 1.0]';
  const bad = stages.findIndex((f) => !(f > 0 && f <= 1));
  if (bad >= 0) return `stage ${bad + 1} is ${stages[bad]}: each stage must be a share in (0, 1]`;
  const down = stages.findIndex((f, i) => i > 0 && f <= stages[i - 1]!);
  if (down >= 0) return `stage ${down + 1} (${stages[down]}) must be above stage ${down} (${stages[down - 1]})`;
  if (stages.at(-1) !== 1) return `the last stage must be 1.0 (the whole traffic), got ${stages.at(-1)}`;
  return undefined;
}

/** Shares this close count as the same stage (a fraction stored and read back). */
const EPS = 1e-9;

/** The 0-based stage a canary at `fraction` is in: the last stage at or below it (-1: below the first). */
export function stageOf(stages: readonly number[], fraction: number): number {
  let at = -1;
  stages.forEach((f, i) => {
    if (f <= fraction + EPS) at = i;
  });
  return at;
}

/** The share of the stage after the one `fraction` is in; null at the last stage (what is left is promotion). */
export function nextStage(stages: readonly number[], fraction: number): number | null {
  return stages.find((f) => f > fraction + EPS) ?? null;
}

/** A canary at the whole traffic leaves production no sessions of its own to compare with. */
export function wholeTraffic(fraction: number): boolean {
  return fraction >= 1 - EPS;
}
