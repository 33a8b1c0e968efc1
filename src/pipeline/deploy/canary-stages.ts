import { nextStage, stageOf } from '../../config/rollout-stages.js';
import type { RLConfig } from '../../config/schema.js';
import type { CanaryState } from '../../evaluation/canary.js';
import type { UnpairedComparison } from '../../evaluation/unpaired.js';
import type { ResourceSet, Store } from '../../store/index.js';
import { fixed } from '../../util/fixed.js';

/** Where a canary stands in deploy.rollout: its 1-based stage, of how many (null without deploy.rollout). */
export function stageInfo(config: RLConfig, fraction: number): { stage: number; of: number } | null {
  const stages = config.deploy.rollout;
  return stages ? { stage: stageOf(stages, fraction) + 1, of: stages.length } : null;
}

/** The share the canary moves to when it passes at this stage; null: it is at the last stage (or unstaged). */
export function nextShare(config: RLConfig, fraction: number): number | null {
  const stages = config.deploy.rollout;
  return stages ? nextStage(stages, fraction) : null;
}

/**
 * deploy.watch's test of `after` against `before`: the drop in mean reward is past max_drop and a one-sided
 * permutation test finds it significant at alpha. Null when a side has no rewards.
 */
export function rewardDrop(config: RLConfig, cmp: UnpairedComparison): { significant: boolean; text: string } | null {
  const w = config.deploy.watch;
  if (cmp.before === null || cmp.after === null) return null;
  const drop = cmp.before - cmp.after;
  return {
    significant: drop > w.max_drop && (cmp.pLower ?? 1) < w.alpha,
    text: `drop ${fixed(drop)} (limit ${w.max_drop}), one-sided p ${fixed(cmp.pLower)} (alpha ${w.alpha})`,
  };
}

/** Why the canary is to be rolled back: its mean reward fell significantly below production's (rewardDrop). */
export function significantDrop(config: RLConfig, cmp: UnpairedComparison): string | undefined {
  const drop = rewardDrop(config, cmp);
  if (!drop?.significant) return undefined;
  return `mean reward canary ${fixed(cmp.after)} (${cmp.n.after} rollouts) vs production ${fixed(cmp.before)} (${cmp.n.before}): ${drop.text}`;
}

/** Moves the canary to the share `to` (its stage starts now: rollouts count again), with a `canary-advance` record. */
export function advanceCanary(
  store: Store,
  config: RLConfig,
  state: CanaryState,
  production: ResourceSet,
  to: number,
  trigger: 'cli' | 'loop',
  detail: string,
): number {
  const stage = stageInfo(config, to);
  return store.transaction(() => {
    store.sets.setPointer('canary', state.set.id, to, state.evalRunId);
    return store.audit.add({
      action: 'canary-advance',
      trigger,
      beforeSet: production.id,
      afterSet: state.set.id,
      evalRunId: state.evalRunId,
      reason: `the canary passed its gates on ${pct(state.fraction)} of the traffic; now ${pct(to)}: ${detail}`,
      detail: { from: state.fraction, fraction: to, ...stage, comparison: state.comparison, gates: state.gates },
    });
  });
}

/** Ends the canary after a significant drop (its sessions go back to production), with a `canary-rollback` record. */
export function rollbackCanary(
  store: Store,
  config: RLConfig,
  state: CanaryState,
  production: ResourceSet,
  trigger: 'cli' | 'loop',
  detail: string,
): number {
  return store.transaction(() => {
    store.sets.setPointer('canary', null);
    return store.audit.add({
      action: 'canary-rollback',
      trigger,
      beforeSet: state.set.id,
      afterSet: production.id,
      evalRunId: state.evalRunId,
      reason: `the canary regressed on ${pct(state.fraction)} of the traffic: ${detail}`,
      detail: { fraction: state.fraction, ...stageInfo(config, state.fraction), comparison: state.comparison },
    });
  });
}

const pct = (f: number) => `${Math.round(f * 1000) / 10} %`;
