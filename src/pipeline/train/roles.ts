import type { RLConfig } from '../../config/schema.js';
import { isAlgo, roleContext, type RoleContext } from '../../datasets/roles.js';
import { UserError } from '../../errors.js';
import { refName } from '../../resources/checkpoints.js';
import { withRoles } from '../../resources/role-variants.js';
import { withAgentWeights, withPolicy } from '../../resources/sets.js';
import type { Runtime } from '../../runtime/runtime.js';
import { syncProduction } from '../production-sync.js';
import { skips, trainApoRole, trainBanditRole, type RoleTrained } from './role-learners.js';
import { train, type RoleRun, type TrainOptions } from './train.js';

export type { RoleTrained } from './role-learners.js';

export interface TrainRolesResult {
  roles: RoleTrained[];
  /** Production with every trained role's agents on the role's new weights (null: no role was trained). */
  candidateSet: { id: string; version: number } | null;
}

export type TrainRolesOptions = Omit<TrainOptions, 'role' | 'algo' | 'from' | 'resume' | 'machineRank'> & {
  /** Roles whose run completed already (an interrupted cycle's): role → training run id, taken as they are. */
  reuse?: Readonly<Record<string, string>>;
  /** Each role's outcome as soon as it is known (the loop records it, to resume the cycle). */
  onRole?: (r: RoleTrained) => void;
};

/** The line a role trains and where it starts: its LoRA line on train.base_model, or its own model's weights. */
export function roleLine(config: RLConfig, weights: { lora?: string; model?: string }): [string, string] {
  if (weights.lora !== undefined) return [weights.lora, config.train.base_model];
  const local = config.models[weights.model!]?.local;
  if (!local) throw new UserError(`models.${weights.model}: a role trains only weights massgen-rl serves (local)`);
  return [refName(local.weights), local.weights];
}

/** The runs of the roles with a weight recipe (sft, dpo, grpo, ppo), in config order. */
export function roleRuns(config: RLConfig, context: RoleContext): RoleRun[] {
  return Object.entries(context.roles).flatMap(([name, r]) => {
    if (!r.recipe || !r.weights || !isAlgo(r.recipe.algo)) return [];
    const [line, baseModel] = roleLine(config, r.weights);
    const recipe = r.recipe as RoleRun['recipe'];
    return [{ name, recipe, line, baseModel, agents: r.agents, context }];
  });
}

/**
 * One cycle's training with config `roles`: every role with a weight recipe trains its own line from its own
 * calls, one after the other; a role whose data is missing or fails the gates is skipped with the reason. The
 * candidate is production with each trained role's agents on its new weights. Then each bandit role's decisions
 * are learned (`train policy`'s learner) and each apo role's prompts optimized (`train prompts`' search), each with
 * its recipe's settings; the candidate takes what they learned too.
 */
export async function trainRoles(rt: Runtime, opts: TrainRolesOptions = {}): Promise<TrainRolesResult> {
  const context = roleContext(rt.config);
  if (!context) throw new UserError('no roles in the config: `train` trains the one team (see docs/roles.md)');
  const roles: RoleTrained[] = [];
  for (const run of roleRuns(rt.config, context)) {
    const done = reused(rt, run, opts.reuse?.[run.name]) ?? (await trainRole(rt, run, opts));
    opts.onRole?.(done);
    roles.push(done);
  }
  for (const [name, r] of Object.entries(context.roles)) {
    const algo = r.recipe?.algo;
    if (algo !== 'bandit' && algo !== 'apo') continue;
    const done = await (algo === 'bandit' ? trainBanditRole : trainApoRole)(rt, name, r, opts);
    opts.onRole?.(done);
    roles.push(done);
  }
  return { roles, candidateSet: combined(rt, roles, context) };
}

async function trainRole(rt: Runtime, run: RoleRun, opts: TrainRolesOptions): Promise<RoleTrained> {
  const role = { role: run.name, algo: run.recipe.algo, line: run.line };
  opts.onStage?.(`role ${run.name}: ${run.recipe.algo} on line ${run.line}`);
  try {
    const result = await train(rt, { ...opts, role: run });
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
    if (!skips(err)) throw err;
    opts.onStage?.(`role ${run.name} skipped: ${err.message}`);
    return { ...role, status: 'skipped', reason: err.message };
  }
}

/** A role's completed run from an interrupted cycle, when there is one. */
function reused(rt: Runtime, run: RoleRun, runId: string | undefined): RoleTrained | undefined {
  const store = rt.store();
  const prior = runId ? store.trainingRuns.get(runId) : undefined;
  const checkpoint =
    prior?.status === 'completed' ? store.checkpoints.get(String(prior.result?.checkpoint_id)) : undefined;
  if (!checkpoint?.resourceId) return undefined;
  return {
    role: run.name,
    algo: run.recipe.algo,
    line: run.line,
    status: 'trained',
    trainingRunId: prior!.id,
    checkpointId: checkpoint.id,
    weightId: checkpoint.resourceId,
  };
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
