import { canaryGates } from '../../evaluation/canary.js';
import { gatesPass } from '../../evaluation/gates.js';
import { compareGroups, type UnpairedComparison } from '../../evaluation/unpaired.js';
import type { Runtime } from '../../runtime/runtime.js';
import { fixed } from '../../util/fixed.js';
import {
  advanceCanary,
  nextShare,
  rewardDrop,
  rollbackCanary,
  significantDrop,
  stageInfo,
} from '../deploy/canary-stages.js';
import { promote, rollback } from '../deploy/deploy.js';
import { syncProduction } from '../production-sync.js';

export interface CanaryReview {
  set: { id: string; version: number };
  verdict: 'waiting' | 'advanced' | 'promoted' | 'rolled back' | 'stopped' | 'running';
  /** Its share of the traffic when reviewed (after an advance: the new one), and its stage of deploy.rollout. */
  fraction: number;
  stage: { stage: number; of: number } | null;
  rollouts: number;
  needed: number;
  comparison: UnpairedComparison;
  detail: string;
}

export interface WatchReview {
  deployedSet: { id: string; version: number };
  verdict: 'waiting' | 'held' | 'rolled back';
  rollouts: number;
  needed: number;
  comparison: UnpairedComparison;
  detail: string;
}

export interface Review {
  canary: CanaryReview | null;
  watch: WatchReview | null;
}

/**
 * The review stage: what the rollouts collected since the last change of production say about it. A
 * canary that has served enough rollouts is promoted when it passes the gates against production's
 * rollouts of the same period (and stopped once it had three times that many without passing); with
 * deploy.rollout it first advances stage by stage, and a significant drop rolls it back; after a
 * deploy, production's rewards are compared with the rewards before it, and a drop beyond
 * deploy.watch.max_drop that a one-sided permutation test finds significant rolls back, with an audit
 * record. Collect only records rollouts; this is where they may switch production.
 */
export async function reviewProduction(rt: Runtime, trigger: 'cli' | 'loop'): Promise<Review> {
  rt.existingStore();
  return {
    canary: await reviewCanary(rt, trigger),
    watch: rt.config.deploy.rollback_on_regression ? await watch(rt) : null,
  };
}

/** A line per verdict, for the review command and the loop's review record. */
export function describeReview(r: Review): string[] {
  const { canary: c, watch: w } = r;
  return [
    ...(c
      ? [
          `canary set v${c.set.version}${c.stage ? ` (stage ${c.stage.stage} of ${c.stage.of}, ${Math.round(c.fraction * 100)} %)` : ''}: ${c.verdict}, ${c.rollouts} of ${c.needed} rollouts (${c.detail})`,
        ]
      : []),
    ...(w ? [`production set v${w.deployedSet.version} since its deploy: ${w.verdict} (${w.detail})`] : []),
  ];
}

async function reviewCanary(rt: Runtime, trigger: 'cli' | 'loop'): Promise<CanaryReview | null> {
  const store = rt.store();
  const production = syncProduction(rt, trigger);
  const state = canaryGates(store, rt.config, production);
  if (!state) return null;
  const cmp = state.comparison;
  const needed = rt.config.deploy.canary.min_rollouts;
  const base = {
    set: { id: state.set.id, version: state.set.version },
    fraction: state.fraction,
    stage: stageInfo(rt.config, state.fraction),
    rollouts: cmp.n.after,
    needed,
    comparison: cmp,
  };
  const detail = state.gates.map((g) => `${g.passed ? '✓' : '✗'} ${g.detail}`).join('; ');
  if (cmp.n.after < needed) return { ...base, verdict: 'waiting', detail };
  const drop = rt.config.deploy.rollout && significantDrop(rt.config, cmp);
  if (drop) {
    rollbackCanary(store, rt.config, state, production, trigger, drop);
    return { ...base, verdict: 'rolled back', detail: drop };
  }
  const next = nextShare(rt.config, state.fraction);
  if (next !== null && gatesPass(state.gates)) {
    advanceCanary(store, rt.config, state, production, next, trigger, detail);
    return { ...base, fraction: next, stage: stageInfo(rt.config, next), verdict: 'advanced', detail };
  }
  if (gatesPass(state.gates)) {
    await promote(rt, state, production, trigger, `the canary passed its gates: ${detail}`);
    return { ...base, verdict: 'promoted', detail };
  }
  if (cmp.n.after >= 3 * needed) {
    store.transaction(() => {
      store.sets.setPointer('canary', null);
      store.audit.add({
        action: 'canary-stop',
        trigger,
        beforeSet: state.set.id,
        afterSet: production.id,
        reason: `the canary did not pass its gates in ${cmp.n.after} rollouts: ${detail}`,
        detail: { comparison: cmp, gates: state.gates },
      });
    });
    return { ...base, verdict: 'stopped', detail };
  }
  return { ...base, verdict: 'running', detail };
}

async function watch(rt: Runtime): Promise<WatchReview | null> {
  const store = rt.store();
  const pointer = store.sets.pointer('production');
  const deployed = store.audit.list({
    limit: 1,
    actions: ['deploy', 'force-deploy', 'canary-promote', 'init', 'config', 'rollback', 'auto-rollback'],
  })[0];
  if (
    !pointer
    || !deployed
    || !['deploy', 'force-deploy', 'canary-promote'].includes(deployed.action)
    || deployed.afterSet !== pointer.setId
    || !deployed.beforeSet
  )
    return null;
  const w = rt.config.deploy.watch;
  const before = store.rollouts.setRewards(deployed.beforeSet, {
    before: deployed.createdAt,
    last: Math.max(50, w.min_rollouts),
  });
  const after = store.rollouts.setRewards(pointer.setId, { after: deployed.createdAt });
  const cmp = compareGroups(before, after, rt.config.eval.bootstrap);
  const set = store.sets.get(pointer.setId)!;
  const base = {
    deployedSet: { id: set.id, version: set.version },
    rollouts: after.length,
    needed: w.min_rollouts,
    comparison: cmp,
  };
  const drop = rewardDrop(rt.config, cmp);
  if (after.length < w.min_rollouts || !drop)
    return { ...base, verdict: 'waiting', detail: `${after.length} of ${w.min_rollouts} rollouts since the deploy` };
  const detail = `mean reward ${fixed(cmp.before)} before the deploy (${cmp.n.before} rollouts) → ${fixed(cmp.after)} after (${cmp.n.after}); ${drop.text}`;
  if (drop.significant) {
    await rollback(rt, {
      trigger: 'watch',
      to: { setId: deployed.beforeSet },
      reason: `production regressed after the deploy: ${detail}`,
      detail: { comparison: cmp, deploy_audit_id: deployed.id },
    });
    return { ...base, verdict: 'rolled back', detail };
  }
  return { ...base, verdict: 'held', detail };
}
