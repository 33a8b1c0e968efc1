import { wholeTraffic } from '../config/rollout-stages.js';
import type { RLConfig } from '../config/schema.js';
import { canary } from '../resources/production.js';
import type { ResourceSet, Store } from '../store/index.js';
import { fixed } from '../util/fixed.js';
import type { GateCheck } from './gates.js';
import { compareGroups, type UnpairedComparison } from './unpaired.js';

export interface CanaryState {
  set: ResourceSet;
  fraction: number;
  evalRunId: string | null;
  comparison: UnpairedComparison;
  gates: GateCheck[];
}

/**
 * The running canary against production over the same period (rollouts, collected or captured by the
 * gateway, since the canary's current stage began; at the whole traffic, production's before it):
 * enough canary rollouts, the minimum improvement of mean reward, and (when configured) a bootstrap
 * interval of the difference above 0.
 */
export function canaryGates(store: Store, config: RLConfig, production: ResourceSet): CanaryState | undefined {
  const trial = canary(store);
  const pointer = store.sets.pointer('canary');
  if (!trial || !pointer) return undefined;
  const { min_rollouts: needed } = config.deploy.canary;
  // the pointer changes with each stage: rollouts count from the stage's start, collect's and the gateway's
  const since = { after: pointer.updatedAt };
  // at the whole traffic production serves no one: its rollouts before the stage are the baseline
  const baseline = wholeTraffic(trial.fraction) ? { before: pointer.updatedAt, last: Math.max(50, needed) } : since;
  const cmp = compareGroups(
    store.rollouts.setRewards(production.id, baseline),
    store.rollouts.setRewards(trial.set.id, since),
    config.eval.bootstrap,
  );
  const g = config.deploy.gates;
  const gates: GateCheck[] = [
    {
      gate: 'canary_rollouts',
      passed: cmp.n.after >= needed,
      value: cmp.n.after,
      threshold: needed,
      detail: `${cmp.n.after} canary rollout(s), ${cmp.n.before} production rollout(s) since the canary's stage began; need ${needed}`,
    },
    {
      gate: 'min_improvement',
      passed: cmp.diff !== null && cmp.diff.mean >= g.min_improvement,
      value: cmp.diff?.mean ?? null,
      threshold: g.min_improvement,
      detail: `mean reward canary ${fixed(cmp.after)} vs production ${fixed(cmp.before)}: ${fixed(cmp.diff?.mean)} ≥ ${g.min_improvement}`,
    },
    ...(g.ci_lower_above_zero
      ? [
          {
            gate: 'ci_lower_above_zero',
            passed: cmp.diff !== null && cmp.diff.low > 0,
            value: cmp.diff?.low ?? null,
            threshold: 0,
            detail: `bootstrap CI of the difference [${fixed(cmp.diff?.low)}, ${fixed(cmp.diff?.high)}] lies above 0`,
          },
        ]
      : []),
  ];
  return { set: trial.set, fraction: trial.fraction, evalRunId: pointer.evalRunId, comparison: cmp, gates };
}
