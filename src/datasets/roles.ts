import { ALGOS, type Algo, type Recipe, type RLConfig, type RolesConfig } from '../config/schema.js';
import { verifyingFamilies } from '../config/sections/rewards.js';
import { decisionReward } from '../policies/learn.js';
import type { PolicyDecisionRow, Store } from '../store/index.js';
import type { Reward } from '../trace/records.js';
import { buildDataset, type BuildDatasetInput, type BuildDatasetResult } from './build.js';
import { SECTION_OPTIONS, type DatasetOptionsInput } from './options.js';
import type { TraceRecord } from './read-traces.js';
import { RoleMap, spanSite } from './role-calls.js';
import { attributeRollout, type Attribution } from './role-rewards.js';
import { RolloutIndex } from './rollout-index.js';

/** The reward family of attributed rewards: a role's datasets weigh it alone. */
export const ROLE_FAMILY = 'role';

/** The config's roles, who owns which call, and the token cost decisions are netted of outside a bandit recipe. */
export interface RoleContext {
  roles: RolesConfig;
  map: RoleMap;
  costPer1kTokens: number;
  /** The families whose verdict says an answer is right (config verifyingFamilies). */
  verifying: readonly string[];
}

/** The role context of a config with `roles` (null without: one team, trained by `train`). */
export function roleContext(config: Pick<RLConfig, 'roles' | 'policies' | 'rewards'>): RoleContext | null {
  const roles = config.roles;
  if (!roles) return null;
  const costPer1kTokens = config.policies.cost_per_1k_tokens;
  return { roles, map: new RoleMap(roles), costPer1kTokens, verifying: verifyingFamilies(config.rewards) };
}

function costOf(ctx: RoleContext, role: string): number {
  const recipe = ctx.roles[role]?.recipe;
  return recipe?.algo === 'bandit' ? recipe.cost_per_1k_tokens : ctx.costPer1kTokens;
}

/**
 * One rollout as role `role` sees it: the prompt spans and actions (answers, votes, the presentation) of
 * its own calls, every other coordination span as context, its attributed rewards (role-rewards.ts) added
 * as turn rewards of family `role`, the role's total (the mean over its answers, votes, presentation,
 * delegations and decisions; null when none was attributed) as the rollout total, and the final answer
 * only when the role owns it (its presentation, else the winner's answer). The existing builders run on it
 * unchanged, with rewards.weights `{role: 1}`.
 */
export function roleRecord(record: TraceRecord, role: string, ctx: RoleContext): TraceRecord {
  const { map } = ctx;
  const view = new RolloutIndex(record, null, undefined, ctx.verifying);
  const own = attributeRollout(view, costOf(ctx, role)).filter((a) => ownerOf(map, a) === role);
  const spans = record.spans.filter((s) => {
    const action = s.name === 'new_answer' || s.name === 'vote' || s.name === 'presentation';
    return s.type === 'prompt' || action ? map.ownerOf(spanSite(s)) === role : true;
  });
  const rewards: Reward[] = own.map((a, i) => ({
    id: -1 - i,
    rolloutId: record.rollout.id,
    createdAt: record.rollout.finishedAt ?? record.rollout.startedAt,
    channel: 'turn',
    family: ROLE_FAMILY,
    value: a.value,
    reason: `${a.kind}: ${a.reason}`,
    agent: a.site.agent,
    targetSeq: a.seq,
  }));
  const counted = own.filter((a) => a.kind !== 'sample');
  const total = counted.length ? counted.reduce((n, a) => n + a.value, 0) / counted.length : null;
  const finalOwner = view.presentation
    ? map.ownerOf({ agent: view.presentation.agent, presentation: true, delegated: false })
    : map.ownerOf({ agent: record.rollout.winner, presentation: false, delegated: false });
  return {
    ...record,
    rollout: {
      ...record.rollout,
      totalReward: total,
      finalAnswer: finalOwner === role ? record.rollout.finalAnswer : null,
    },
    spans,
    rewards: [...record.rewards, ...rewards],
  };
}

function ownerOf(map: RoleMap, a: Attribution): string | null {
  return a.kind === 'decision' ? map.ownerOfDecision(a.policy ?? '') : map.ownerOf(a.site);
}

export interface RoleDataset {
  role: string;
  algo: Algo;
  result: BuildDatasetResult;
}

/** What differs between roles' builds: each trains its own line, so each has its own start and watermark. */
export type RoleBuildInput = Pick<BuildDatasetInput, 'sinceWatermark' | 'startWeights'>;

export type RoleDatasetsInput = Omit<BuildDatasetInput, 'algo' | 'options' | 'transform'> & {
  context: RoleContext;
  /** Build only these roles (default: every role with a weight recipe). */
  only?: string[];
  /** Per role: its watermark and start weights (offline GRPO), instead of the shared ones. */
  perRole?: Record<string, RoleBuildInput>;
};

/**
 * The datasets of every role with a weight recipe (sft, dpo, grpo, ppo), from the same stored rollouts:
 * each built by its recipe's builder over roleRecord views, so its rows are its members' calls with the
 * rewards attributed to it. Roles with bandit recipes learn from roleDecisions; apo and recipe-less roles
 * have no dataset.
 */
export async function buildRoleDatasets(store: Store, input: RoleDatasetsInput): Promise<RoleDataset[]> {
  const { context, only, perRole, ...rest } = input;
  const out: RoleDataset[] = [];
  for (const [role, r] of Object.entries(context.roles)) {
    if (only && !only.includes(role)) continue;
    const algo = r.recipe?.algo;
    if (!r.recipe || !isAlgo(algo)) continue;
    const options: DatasetOptionsInput = {
      [algo]: sectionOptions(r.recipe),
      weights: { [ROLE_FAMILY]: 1 },
      verifying: context.verifying,
    };
    const transform = (record: TraceRecord) => roleRecord(record, role, context);
    const own = perRole?.[role] ?? {};
    out.push({ role, algo, result: await buildDataset(store, { ...rest, ...own, algo, options, transform }) });
  }
  return out;
}

/** A weight recipe's builder options (its keys as train.<algo> would give them). */
function sectionOptions(recipe: Recipe): DatasetOptionsInput[Algo] {
  switch (recipe.algo) {
    case 'sft':
      return SECTION_OPTIONS.sft(recipe);
    case 'grpo':
      return SECTION_OPTIONS.grpo(recipe);
    case 'dpo':
      return SECTION_OPTIONS.dpo(recipe);
    case 'ppo':
      return SECTION_OPTIONS.ppo(recipe);
    default:
      return undefined;
  }
}

/** A weight recipe's algo (sft, dpo, grpo, ppo): the recipes with a dataset. */
export const isAlgo = (a: string | undefined): a is Algo => (ALGOS as readonly (string | undefined)[]).includes(a);

/** A logged decision with the reward attributed to the role that takes it: the outcome net of cost. */
export interface RoleDecision extends PolicyDecisionRow {
  kind: string;
  reward: number;
}

/** The logged decisions of a role's policies (recipe bandit), each with its attributed reward. */
export function roleDecisions(store: Store, ctx: RoleContext, role: string): RoleDecision[] {
  const r = ctx.roles[role];
  if (!r) return [];
  const cost = costOf(ctx, role);
  return r.policies.flatMap((kind) =>
    store.spans
      .policyDecisions(kind, ctx.verifying)
      .map((row) => ({ ...row, kind, reward: decisionReward(row, cost) })),
  );
}
