import type { Algo, RLConfig, RoleConfig } from '../config/schema.js';
import { isAlgo, roleContext, type RoleContext } from '../datasets/roles.js';
import { UserError } from '../errors.js';
import { refName } from '../resources/checkpoints.js';
import { roleScopes, type RoleScope } from '../resources/role-variants.js';

/** The name of the one implicit role of a team without `roles:`. */
export const TEAM_ROLE = 'team';

/**
 * A weight line one role trains: its recipe (algo and that algo's keys), where the line starts, the agents it
 * serves and whose calls it learns from. A team without `roles:` is one implicit role: every agent, the config's
 * `train` section as its recipe, the team's datasets (every call, the team's rewards) and the line that
 * `train.base_model` or `--from` resolves to.
 */
export interface RoleRun {
  name: string;
  recipe: { algo: Algo } & Record<string, unknown>;
  /** The line it trains (null: the implicit role's, resolved from train.base_model or --from). */
  line: string | null;
  /** Where the line starts before it has production weights (train.base_model, or the role's own model's). */
  baseModel: string;
  agents: readonly string[];
  /** Who owns which call (null: the implicit role owns every call and learns from the team's datasets). */
  context: RoleContext | null;
}

/** The team's roles: the config's `roles`, or one implicit role holding every agent. */
export interface TeamRoles {
  implicit: boolean;
  context: RoleContext | null;
  /** Each explicit role's part of a set (the implicit role's part is the whole team: none). */
  scopes: Record<string, RoleScope>;
}

export function teamRoles(config: RLConfig): TeamRoles {
  const context = roleContext(config);
  return { implicit: !context, context, scopes: config.roles ? roleScopes(config.roles) : {} };
}

/** One explicit role's config, or a UserError naming the roles there are (`what`: the flag or key asking). */
export function roleNamed(config: RLConfig, name: string, what: string): RoleConfig {
  const roles = config.roles ?? {};
  const r = roles[name];
  if (r) return r;
  const names = Object.keys(roles);
  throw new UserError(
    `${what} ${name}: no such role${names.length ? ` (roles: ${names.join(', ')})` : ': the config has no roles'}`,
  );
}

/** The line a role trains and where it starts: its LoRA line on train.base_model, or its own model's weights. */
export function roleLine(config: RLConfig, weights: { lora?: string; model?: string }): [string, string] {
  if (weights.lora !== undefined) return [weights.lora, config.train.base_model];
  const local = config.models[weights.model!]?.local;
  if (!local) throw new UserError(`models.${weights.model}: a role trains only weights massgen-rl serves (local)`);
  return [refName(local.weights), local.weights];
}

/** The implicit role's run: the whole team on train's recipe (`algo` overrides train.algo, as --algo does). */
export function implicitRun(config: RLConfig, algo?: string): RoleRun {
  return {
    name: TEAM_ROLE,
    recipe: { algo: (algo ?? config.train.algo) as Algo },
    line: null,
    baseModel: config.train.base_model,
    agents: config.agents.map((a) => a.id),
    context: null,
  };
}

/** The weight runs of a team, in config order: each role with a weight recipe, or the implicit role. */
export function weightRuns(config: RLConfig, { context }: TeamRoles, algo?: string): RoleRun[] {
  if (!context) return [implicitRun(config, algo)];
  return Object.entries(context.roles).flatMap(([name, r]) => {
    if (!r.recipe || !r.weights || !isAlgo(r.recipe.algo)) return [];
    const [line, baseModel] = roleLine(config, r.weights);
    const recipe = r.recipe as RoleRun['recipe'];
    return [{ name, recipe, line, baseModel, agents: r.agents, context }];
  });
}

/** The roles whose recipe learns decisions (bandit) or prompts (apo) rather than weights; none for the implicit role. */
export function learnerRoles(config: RLConfig): [string, RoleConfig][] {
  return Object.entries(config.roles ?? {}).filter(([, r]) => r.recipe?.algo === 'bandit' || r.recipe?.algo === 'apo');
}
