import { GateError, UserError } from '../../errors.js';
import { canaryGates, type CanaryState } from '../../evaluation/canary.js';
import { resolveSet, type SetSpec } from '../../evaluation/candidates.js';
import { primaryMetric, type Comparison } from '../../evaluation/compare.js';
import { forgettingGate } from '../../evaluation/forgetting.js';
import { categoryRule, checkGates, gatesPass, type GateCheck } from '../../evaluation/gates.js';
import { switchProduction } from '../../resources/production-switch.js';
import { roleChanged, roleScope, withRoles } from '../../resources/role-variants.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { EvalRun, ResourceSet } from '../../store/index.js';
import type { EvalSummary } from '../evaluate/sets.js';
import { syncProduction } from '../production-sync.js';
import { roleNamed } from '../roles.js';
import { stageInfo } from './canary-stages.js';
import { checkPublish, publish, type PublishOptions, type Published } from './publish.js';

export interface DeployOptions {
  /** A set, checkpoint, resource:NAME@V or PROMPT@V, or a set's id (default: the newest evaluation's candidate). */
  candidate?: SetSpec;
  /** Promote even when a gate fails or there is no evaluation; the audit record says so. */
  force?: boolean;
  /** Start a canary serving this share of later collects and gateway sessions instead of promoting (true: deploy.rollout's first stage). */
  canary?: number | true;
  /** Also write production as a MassGen config here (relative to the cwd); deploy.export_massgen is written too. */
  exportMassgen?: string;
  trigger?: 'cli' | 'loop';
  reason?: string;
}

export type DeployAction = 'promoted' | 'forced' | 'canary started' | 'not promoted';

export interface DeployResult {
  action: DeployAction;
  before: { id: string; version: number };
  candidate: { id: string; version: number };
  evalRunId: string | null;
  gates: GateCheck[];
  passed: boolean;
  auditId: number | null;
  published: Published | null;
}

/**
 * Promotes a candidate when the deploy gates pass on its evaluation against current production (a
 * missing or stale evaluation is a failed gate); otherwise a GateError listing every failed gate.
 * `force` promotes anyway, `canary` starts a canary instead. The switch is one transaction with its
 * audit record; then the served weights, external servers and exports follow.
 */
export async function deploy(rt: Runtime, opts: DeployOptions = {}): Promise<DeployResult> {
  const fraction = canaryFraction(rt, opts.canary);
  if (opts.canary !== undefined && opts.exportMassgen)
    throw new UserError(
      '--export-massgen writes production, which a canary does not change',
      'export when the canary is promoted, or set deploy.export_massgen to follow every switch',
    );
  const store = rt.existingStore();
  const trigger = opts.trigger ?? 'cli';
  const production = syncProduction(rt, trigger);
  const run = opts.candidate ? undefined : latestEvaluation(rt, production);
  const candidate = opts.candidate
    ? resolveSet(rt.setContext(), production, opts.candidate, '--candidate')
    : run && store.sets.get(run.candidateSet);
  if (!candidate)
    throw new UserError(
      `nothing to deploy: no evaluation of a candidate against production (set v${production.version})`,
      'run `massgen-rl eval` first, or name one with --candidate',
    );
  if (candidate.id === production.id) throw new UserError(`resource set v${candidate.version} is production already`);
  const evaluation = run ?? latestEvaluation(rt, production, candidate.id);
  const gates = evaluation
    ? gatesOf(rt, evaluation)
    : [
        {
          gate: 'evaluated',
          passed: false,
          value: null,
          threshold: null,
          detail: `set v${candidate.version} has no completed evaluation against production (set v${production.version}); run \`massgen-rl eval --candidate set:${candidate.version}\``,
        },
      ];
  const passed = gatesPass(gates);
  const base = { before: ref(production), candidate: ref(candidate), evalRunId: evaluation?.id ?? null, gates, passed };
  if (!passed && !opts.force) return { ...base, action: 'not promoted', auditId: null, published: null };
  const detail = { gates, forced: !passed };
  if (fraction !== undefined) {
    const auditId = store.transaction(() => {
      store.sets.setPointer('canary', candidate.id, fraction, evaluation?.id ?? null);
      return store.audit.add({
        action: 'canary-start',
        trigger,
        beforeSet: production.id,
        afterSet: candidate.id,
        evalRunId: evaluation?.id,
        reason: opts.reason ?? `canary on ${Math.round(fraction * 100)} % of collects and gateway sessions`,
        detail: { ...detail, fraction, ...stageInfo(rt.config, fraction) },
      });
    });
    return { ...base, action: 'canary started', auditId, published: null };
  }
  checkPublish(rt, candidate, { exportMassgen: opts.exportMassgen });
  const auditId = switchProduction(store, rt.paths.dataDir, {
    to: candidate,
    action: passed ? 'deploy' : 'force-deploy',
    trigger,
    evalRunId: evaluation?.id,
    reason:
      opts.reason
      ?? (passed
        ? 'every deploy gate passed'
        : `forced past: ${gates
            .filter((g) => !g.passed)
            .map((g) => g.gate)
            .join(', ')}`),
    detail,
    clearCanary: store.sets.pointer('canary')?.setId === candidate.id,
  });
  rt.forgetWeights();
  const published = await publish(rt, candidate, production, { exportMassgen: opts.exportMassgen });
  return { ...base, action: passed ? 'promoted' : 'forced', auditId, published };
}

/** The canary's starting share: the one given, or deploy.rollout's first stage; a UserError for a bad one. */
function canaryFraction(rt: Runtime, canary: number | true | undefined): number | undefined {
  if (canary === undefined) return undefined;
  const stages = rt.config.deploy.rollout;
  if (canary === true) {
    if (!stages)
      throw new UserError('--canary needs a fraction, such as 0.2', 'or set deploy.rollout: [0.1, 0.5, 1.0]');
    return stages[0]!;
  }
  // a staged rollout may start anywhere up to the whole traffic; an unstaged canary that never moves must leave some
  if (!(canary > 0 && (canary < 1 || (stages && canary === 1))))
    throw new UserError(`--canary ${canary}: expected a fraction between 0 and 1, such as 0.2`);
  return canary;
}

/** Throws the gate failure a refused deploy exits 1 with (after the caller printed the result). */
export function refusal(r: DeployResult): GateError {
  const failed = r.gates.filter((g) => !g.passed);
  return new GateError(
    `not promoted: ${failed.length} gate(s) failed:\n  ${failed.map((g) => `${g.gate}: ${g.detail}`).join('\n  ')}`,
    'improve the candidate, change deploy.gates, or pass --force (recorded in the audit)',
  );
}

/** Promotes the running canary when its gates pass (or with force), like a deploy. */
export async function promoteCanary(
  rt: Runtime,
  opts: { force?: boolean; reason?: string; trigger?: 'cli' | 'loop'; exportMassgen?: string } = {},
): Promise<DeployResult> {
  rt.existingStore();
  const production = syncProduction(rt, opts.trigger ?? 'cli');
  const state = canaryGates(rt.store(), rt.config, production);
  if (!state) throw new UserError('no canary is running', 'start one with `massgen-rl deploy --canary 0.2`');
  const passed = gatesPass(state.gates);
  const base = {
    before: ref(production),
    candidate: ref(state.set),
    evalRunId: state.evalRunId,
    gates: state.gates,
    passed,
  };
  if (!passed && !opts.force) return { ...base, action: 'not promoted', auditId: null, published: null };
  const reason =
    opts.reason
    ?? (passed
      ? 'the canary passed its gates'
      : `forced past: ${state.gates
          .filter((g) => !g.passed)
          .map((g) => g.gate)
          .join(', ')}`);
  checkPublish(rt, state.set, { exportMassgen: opts.exportMassgen });
  const { auditId, published } = await promote(rt, state, production, opts.trigger ?? 'cli', reason, {
    exportMassgen: opts.exportMassgen,
  });
  return { ...base, action: passed ? 'promoted' : 'forced', auditId, published };
}

/** The canary becomes production (one transaction with its audit record), the canary pointer is cleared. */
export async function promote(
  rt: Runtime,
  state: CanaryState,
  production: ResourceSet,
  trigger: 'cli' | 'loop',
  reason: string,
  publishing: PublishOptions = {},
): Promise<{ auditId: number; published: Published }> {
  const store = rt.store();
  const auditId = switchProduction(store, rt.paths.dataDir, {
    to: state.set,
    action: 'canary-promote',
    trigger,
    evalRunId: state.evalRunId,
    reason,
    detail: { comparison: state.comparison, gates: state.gates },
    clearCanary: true,
  });
  rt.forgetWeights();
  return { auditId, published: await publish(rt, state.set, production, publishing) };
}

export interface RollbackResult {
  before: { id: string; version: number };
  after: { id: string; version: number };
  auditId: number;
  published: Published;
}

/**
 * Restores the production set before the current one (or `to`), with an audit record. With `role` (config
 * roles), only that role's members are restored: production stays as it is for every other role.
 */
export async function rollback(
  rt: Runtime,
  opts: {
    to?: SetSpec;
    role?: string;
    trigger?: 'cli' | 'loop' | 'watch';
    reason?: string;
    detail?: Record<string, unknown>;
  } = {},
): Promise<RollbackResult> {
  const store = rt.existingStore();
  const current = syncProduction(rt, opts.trigger === 'watch' ? 'collect' : (opts.trigger ?? 'cli'));
  const earlier = opts.to ? resolveSet(rt.setContext(), current, opts.to, '--to') : previousProduction(rt, current);
  const target = opts.role ? roleRestored(rt, current, earlier, opts.role) : earlier;
  if (target.id === current.id) throw new UserError(`resource set v${target.version} is production already`);
  const auditId = switchProduction(store, rt.paths.dataDir, {
    to: target,
    action: opts.trigger === 'watch' ? 'auto-rollback' : 'rollback',
    trigger: opts.trigger ?? 'cli',
    reason: opts.reason ?? `rolled back from set v${current.version} to v${target.version}`,
    detail: opts.detail,
  });
  rt.forgetWeights();
  return { before: ref(current), after: ref(target), auditId, published: await publish(rt, target, current, {}) };
}

/** Production with one role's members as `earlier` had them. */
function roleRestored(rt: Runtime, current: ResourceSet, earlier: ResourceSet, role: string): ResourceSet {
  const scope = roleScope(roleNamed(rt.config, role, '--role'));
  if (!roleChanged(current.members, earlier.members, scope))
    throw new UserError(
      `role ${role} serves the same in set v${earlier.version} as in production (v${current.version})`,
    );
  const members = withRoles(current.members, earlier.members, [scope]);
  const origin = { kind: 'manual' as const, rollback_role: role, from: earlier.id };
  return rt.store().sets.add(members, origin, current.id);
}

function previousProduction(rt: Runtime, current: ResourceSet): ResourceSet {
  const store = rt.store();
  const switched = store.audit
    .list({
      limit: 500,
      actions: ['init', 'config', 'deploy', 'force-deploy', 'canary-promote', 'rollback', 'auto-rollback'],
    })
    .find((a) => a.afterSet === current.id && a.beforeSet && a.beforeSet !== current.id);
  const previous = switched?.beforeSet ? store.sets.get(switched.beforeSet) : undefined;
  if (!previous)
    throw new UserError(
      `no production set before v${current.version} to roll back to`,
      'name one with --to set:N (see `massgen-rl resources list`)',
    );
  return previous;
}

/** The newest completed evaluation against this production (of this candidate, when given). */
export function latestEvaluation(rt: Runtime, production: ResourceSet, candidateId?: string): EvalRun | undefined {
  return rt
    .store()
    .evaluations.runs({ status: 'completed', limit: 200, candidateSet: candidateId })
    .find((r) => r.baselineSet === production.id && r.candidateSet !== production.id);
}

/** The gates of today's config held against a stored evaluation's comparison. */
function gatesOf(rt: Runtime, run: EvalRun): GateCheck[] {
  const cmp = run.summary?.comparison as Comparison | undefined;
  if (!cmp)
    return [
      { gate: 'evaluated', passed: false, value: null, threshold: null, detail: `evaluation ${run.id} has no results` },
    ];
  // a replay of captured calls is compared on reward alone (its judged pairs have no success)
  const metric = run.summary?.source === 'gateway' ? 'reward' : primaryMetric(rt.config.eval.metric);
  const gates = checkGates(cmp, metric, rt.config.deploy.gates);
  // An evaluation drawn by the curriculum covered the levels below each suite's: held against forgetting.
  const curriculum = run.summary?.curriculum as EvalSummary['curriculum'];
  if (rt.config.tasks.curriculum.enabled && curriculum)
    gates.push(forgettingGate(curriculum.lowerLevels, metric, categoryRule(rt.config.deploy.gates)));
  return gates;
}

const ref = (s: ResourceSet) => ({ id: s.id, version: s.version });
