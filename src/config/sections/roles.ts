import { z } from 'zod';
import { name } from '../fields.js';
import { POLICY_KINDS, policiesSchema } from './policies.js';
import { promptOptSchema } from './prompt-opt.js';
import { ALGOS, type Algo, selection } from './train-selection.js';

/**
 * A role's recipe: how its weights (or prompts, or policies) learn. The weight recipes are the trainers' algorithms.
 */
export const RECIPES = [...ALGOS, 'bandit', 'apo'] as const;

/** A selection shape without `agents`: in a role, the role's members choose the calls. */
function withoutAgents<S extends z.core.$ZodLooseShape & { agents?: unknown }>(shape: S): Omit<S, 'agents'> {
  const { agents, ...rest } = shape;
  void agents;
  return rest;
}

/** A weight recipe: the keys and defaults of train.<algo> (its data selection and the trainer's settings). */
function weightRecipe<A extends Algo, S extends z.core.$ZodLooseShape>(algo: A, shape: S) {
  return z.looseObject({ algo: z.literal(algo), ...shape }).superRefine((r, ctx) => {
    if (Object.hasOwn(r, 'agents'))
      ctx.addIssue({
        code: 'custom',
        path: ['agents'],
        message: "a role's members choose its calls (roles.<name>.agents): leave agents out of the recipe",
      });
  });
}

const recipe = z
  .discriminatedUnion('algo', [
    weightRecipe('sft', withoutAgents(selection.sft)),
    weightRecipe('dpo', selection.dpo),
    weightRecipe('grpo', withoutAgents(selection.grpo)),
    weightRecipe('ppo', withoutAgents(selection.ppo)),
    z.strictObject({
      algo: z.literal('bandit'),
      ...policiesSchema.pick({
        algorithm: true,
        alpha: true,
        lambda: true,
        noise: true,
        cost_per_1k_tokens: true,
        min_decisions: true,
      }).shape,
    }),
    z.strictObject({ algo: z.literal('apo'), ...promptOptSchema.omit({ prompts: true }).shape }),
  ])
  .describe(
    "algo (sft, dpo, grpo, ppo: the role's weights; bandit: its policies; apo: its agents' "
      + "system prompts) and that algorithm's keys, with the defaults of train.<algo>, "
      + "policies or prompt_opt (a recipe does not inherit those sections' values)",
  );

const roleWeights = z
  .strictObject({
    lora: name
      .optional()
      .describe('a LoRA adapter line on the shared base (train.base_model): the role trains adapters of this line'),
    model: name
      .optional()
      .describe(
        "its own model (a key under models) that every agent of the role runs on: the role trains that model's weights",
      ),
  })
  .refine((w) => (w.lora === undefined) !== (w.model === undefined), {
    message: 'set exactly one of lora (an adapter line on the shared base) or model (its own model)',
  });

const role = z
  .strictObject({
    agents: z
      .array(name)
      .max(1000)
      .default([])
      .describe("agent ids whose calls are this role's: their answers, votes and every other call of their turns"),
    presenter: z
      .boolean()
      .default(false)
      .describe("the presentation call is this role's, whichever agent won (unclaimed: the presenting agent's role)"),
    delegate: z
      .boolean()
      .default(false)
      .describe(
        'the calls of delegated sub-tasks (child orchestrations) '
          + "are this role's (unclaimed: each calling agent's role)",
      ),
    policies: z
      .array(z.enum(POLICY_KINDS))
      .default([])
      .describe("the orchestration decisions (routing, stop, tool, delegate) that are this role's (recipe bandit)"),
    weights: roleWeights
      .optional()
      .describe('the weight line the role runs on and trains: lora (an adapter on the shared base) or model'),
    recipe: recipe.optional().describe("how the role learns (absent: the role's weights and prompts stay as they are)"),
  })
  .refine((r) => r.agents.length > 0 || r.presenter || r.delegate || r.policies.length > 0, {
    message: 'a role needs members: agents, presenter: true, delegate: true or policies',
  });

export const rolesSchema = z
  .record(name, role)
  .refine((r) => Object.keys(r).length > 0, 'name at least one role, or leave roles out (one team, trained by train)')
  .optional()
  .describe(
    'heterogeneous teams: named groups of agents (and the presenter, the delegated sub-tasks, the '
      + "policies), each with its own weights and recipe; each role's datasets come from its own "
      + "members' calls with rewards attributed to it (docs/roles.md). Absent: one team, trained by train",
  );

export type RecipeAlgo = (typeof RECIPES)[number];
export type RolesConfig = NonNullable<z.output<typeof rolesSchema>>;
export type RoleConfig = RolesConfig[string];
export type Recipe = NonNullable<RoleConfig['recipe']>;
