import type { RoleContext } from '../../datasets/roles.js';
import { errorMessage, isSkip } from '../../errors.js';
import { withRoles } from '../../resources/role-variants.js';
import { withAgentWeights, withPolicy } from '../../resources/sets.js';
import type { Runtime } from '../../runtime/runtime.js';
import { requireVenv } from '../../trainers/preflight.js';
import { checkTrainerSettings } from '../../trainers/settings-check.js';
import { syncProduction } from '../production-sync.js';
import { learnerRoles, teamRoles, weightRuns, type RoleRun } from '../roles.js';
import { priorRun } from './prior-run.js';
import { trainApoRole, trainBanditRole, type RoleTrained } from './role-learners.js';
import { roleStart, train, withRecipe, type TrainOptions } from './train.js';

export type { RoleTrained } from './role-learners.js';

export interface TrainRolesResult {
  roles: RoleTrained[];
  /** What every trained role learned, in production (null: no role was trained). */
  candidateSet: { id: string; version: number } | null;
}

export type TrainRolesOptions = Omit<TrainOptions, 'role' | 'resume' | 'machineRank' | 'onRunStart'> & {
  /** Training runs an interrupted cycle started, by role: a completed one is taken, a stopped one resumed. */
  prior?: Readonly<Record<string, string>>;
  /** Skip a role with fewer completed rollouts than this since its line's last run (loop.min_new_traces). */
  minNewTraces?: number;
  /** A role's training run, as soon as it is recorded (the loop keeps it to resume the run). */
  onRunStart?: (role: string, runId: string) => void;
  /** Each role's outcome as soon as it is known. */
  onRole?: (r: RoleTrained) => void;
};

/**
 * One training of the team, role by role (a team without `roles:` is one implicit role, roles.ts): every role with a
 * weight recipe trains its own line, one after the other; a role with too little new data, or whose data fails the
 * gates, is skipped with the reason. Then each bandit role's decisions are learned (`train policy`'s learner) and
 * each apo role's prompts optimized (`train prompts`' search). The candidate is production with what every trained
 * role learned.
 */
export async function trainRoles(rt: Runtime, opts: TrainRolesOptions = {}): Promise<TrainRolesResult> {
  const roles: RoleTrained[] = [];
  const add = (r: RoleTrained) => {
    opts.onRole?.(r);
    roles.push(r);
  };
  const team = teamRoles(rt.config);
  for (const run of weightRuns(rt.config, team, opts.algo)) add(await trainRole(rt, run, opts));
  for (const [name, r] of learnerRoles(rt.config))
    add(await (r.recipe!.algo === 'bandit' ? trainBanditRole : trainApoRole)(rt, name, r, opts));
  return { roles, candidateSet: team.context ? combined(rt, roles, team.context) : ownCandidate(rt, roles[0]!) };
}

/**
 * Each weight role's trainer settings, checked as its training will check them (a UserError naming the key): a cycle
 * runs this before it collects, so a bad key stops it before the collect it would otherwise spend.
 */
export async function checkRoleSettings(rt: Runtime, signal?: AbortSignal): Promise<void> {
  const runs = weightRuns(rt.config, teamRoles(rt.config));
  const python = runs.length ? await requireVenv(rt.paths.venvDir) : '';
  for (const run of runs) {
    const t = run.context ? withRecipe(rt.config.train, run.recipe) : rt.config.train;
    await checkTrainerSettings({ python, train: t, algos: [run.recipe.algo], signal });
  }
}

async function trainRole(rt: Runtime, run: RoleRun, opts: TrainRolesOptions): Promise<RoleTrained> {
  const role = { role: run.name, algo: run.recipe.algo, line: run.line };
  const named = run.context ? `role ${run.name}: ` : '';
  const prior = await priorRun(rt, opts.prior?.[run.name]);
  if (prior && 'taken' in prior)
    return taken(rt, role, prior.taken.id, String(prior.taken.result?.checkpoint_id ?? ''));
  if (!prior && opts.minNewTraces !== undefined) {
    const start = roleStart(rt, rt.store(), run, opts.from);
    const fresh = rt.store().rollouts.countCollectedAfter(start.watermark);
    if (fresh < opts.minNewTraces) {
      const reason = `${fresh} new completed rollout(s) since the last ${run.recipe.algo} run on ${start.line}; loop.min_new_traces is ${opts.minNewTraces}`;
      return { ...role, status: 'skipped', reason };
    }
  }
  if (run.context) opts.onStage?.(`role ${run.name}: ${run.recipe.algo} on line ${run.line}`);
  try {
    const { algo: _algo, from: _from, all: _all, ...rest } = opts;
    const result = await train(rt, {
      ...(prior ? { ...rest, resume: prior.resume } : opts),
      role: run,
      onRunStart: (runId) => opts.onRunStart?.(run.name, runId),
    });
    const { checkpoint } = result;
    return {
      ...role,
      status: 'trained',
      trainingRunId: result.runId,
      checkpointId: checkpoint.id,
      weightId: checkpoint.resourceId!,
      result,
    };
  } catch (err) {
    if (opts.signal?.aborted || !isSkip(err)) throw err;
    opts.onStage?.(`${named}skipped: ${errorMessage(err)}`);
    return { ...role, status: 'skipped', reason: err.message };
  }
}

/** A role's run that completed before its cycle was interrupted, as it is. */
function taken(rt: Runtime, role: Pick<RoleTrained, 'role' | 'algo' | 'line'>, runId: string, checkpointId: string) {
  const checkpoint = rt.store().checkpoints.get(checkpointId);
  return {
    ...role,
    status: 'trained',
    trainingRunId: runId,
    checkpointId,
    ...(checkpoint?.resourceId ? { weightId: checkpoint.resourceId } : {}),
    reason: 'taken from the completed training run',
  } satisfies RoleTrained;
}

/** The implicit role's candidate: the set its run registered (for a run taken as it was, the newest of that run). */
function ownCandidate(rt: Runtime, r: RoleTrained): TrainRolesResult['candidateSet'] {
  if (r.status !== 'trained') return null;
  if (r.result) return r.result.candidateSet;
  const set = rt
    .store()
    .sets.list(500)
    .filter((s) => s.origin.training_run_id === r.trainingRunId)
    .at(-1);
  return set ? { id: set.id, version: set.version } : null;
}

/**
 * Production with what each trained role learned: its agents on the weights its run registered, its decisions'
 * new policies, its agents' optimized prompts.
 */
function combined(rt: Runtime, roles: RoleTrained[], context: RoleContext): TrainRolesResult['candidateSet'] {
  const trained = roles.filter((r) => r.status === 'trained');
  if (!trained.length) return null;
  const store = rt.store();
  const production = syncProduction(rt);
  let members = production.members;
  for (const r of trained) {
    const agents = context.roles[r.role]!.agents;
    if (r.weightId) members = withAgentWeights(members, agents, r.weightId);
    for (const id of Object.values(r.policies ?? {})) members = withPolicy(members, store.resources.get(id)!);
    if (r.promptSet) members = withRoles(members, store.sets.get(r.promptSet)!.members, [{ agents }]);
  }
  const origin = {
    kind: 'training' as const,
    roles: Object.fromEntries(
      trained.map((r) => [
        r.role,
        {
          training_run_id: r.trainingRunId,
          checkpoint_id: r.checkpointId,
          ...(r.policies ? { policies: r.policies } : {}),
          ...(r.promptSet ? { prompt_set: r.promptSet } : {}),
        },
      ]),
    ),
  };
  const set = rt.store().sets.add(members, origin, production.id);
  return { id: set.id, version: set.version };
}
