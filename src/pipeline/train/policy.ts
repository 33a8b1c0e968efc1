import { POLICY_KINDS, type PolicyKind, type RLConfig } from '../../config/schema.js';
import { verifyingFamilies } from '../../config/sections/rewards.js';
import { NotEnoughData, UserError } from '../../errors.js';
import {
  learnPolicy,
  serializePolicy,
  STOP_FEATURES,
  taskFeatureNames,
  type LearnResult,
} from '../../policies/index.js';
import { withPolicy } from '../../resources/sets.js';
import { DELEGATE_ARMS, EMBEDDING_DIM, routingArms, STOP_ARMS } from '../../rollouts/decide.js';
import type { Runtime } from '../../runtime/runtime.js';
import { syncProduction } from '../production-sync.js';

export interface PolicyTrainOptions {
  policy?: string;
  /** Learning settings over config `policies` (a role's bandit recipe), and where the config gives them. */
  settings?: Partial<RLConfig['policies']>;
  settingsField?: string;
  onStage?: (message: string) => void;
}

export interface PolicyTrainResult {
  runId: string;
  algo: 'bandit';
  policy: { id: string; kind: PolicyKind; version: number; algorithm: string; arms: string[] };
  candidateSet: { id: string; version: number };
  decisions: number;
  rollouts: number;
  skipped: Record<string, number>;
  armCounts: Record<string, number>;
  ope: LearnResult['ope'];
  noPolicy: LearnResult['noPolicy'] | null;
}

const NO_POLICY_ARM: Partial<Record<PolicyKind, string>> = { stop: 'continue', routing: 'team', delegate: 'none' };

/** The arms and features a decision of this kind has under the current config. */
export function decisionShape(rt: Runtime, kind: PolicyKind): { arms: string[]; featureNames: string[] } {
  const taskNames = taskFeatureNames(rt.config.policies.embedding_model ? EMBEDDING_DIM : 0);
  if (kind === 'stop') return { arms: STOP_ARMS, featureNames: STOP_FEATURES };
  if (kind === 'routing') return { arms: Object.keys(routingArms(rt.config)), featureNames: taskNames };
  if (kind === 'tool') return { arms: Object.keys(rt.config.tools), featureNames: taskNames };
  return { arms: DELEGATE_ARMS, featureNames: taskNames };
}

/**
 * `train policy KIND`: fits a contextual bandit on the decisions stored traces logged
 * (context, arm, propensity, the rollout's reward), values it off-policy, and records it as the next
 * version of the policy resource with a candidate set (production plus the policy) for `eval` and `deploy`.
 */
export async function trainPolicy(rt: Runtime, opts: PolicyTrainOptions): Promise<PolicyTrainResult> {
  const kind = opts.policy as PolicyKind;
  if (!opts.policy) throw new UserError(`train policy needs the decision to learn, one of ${POLICY_KINDS.join(', ')}`);
  if (!(POLICY_KINDS as readonly string[]).includes(kind))
    throw new UserError(`unknown policy "${opts.policy}"; choose one of ${POLICY_KINDS.join(', ')}`);
  if (!rt.storeExists())
    throw new UserError(
      `there are no traces to train on yet (no store at ${rt.paths.storePath})`,
      'run `massgen-rl collect` first',
    );
  const store = rt.existingStore();
  const p = { ...rt.config.policies, ...opts.settings };
  const { arms, featureNames } = decisionShape(rt, kind);
  opts.onStage?.(`reading the logged ${kind} decisions`);
  const rows = store.spans.policyDecisions(kind, verifyingFamilies(rt.config.rewards));
  const learned = learnPolicy({
    kind,
    algorithm: p.algorithm,
    arms,
    featureNames,
    rows,
    costPer1kTokens: p.cost_per_1k_tokens,
    alpha: p.alpha,
    lambda: p.lambda,
    noise: p.noise,
    epsilon: p.explore,
    noPolicyArm: NO_POLICY_ARM[kind],
  });
  if (learned.decisions < p.min_decisions) {
    const left = Object.entries(learned.skipped)
      .map(([why, n]) => `${n} with ${why}`)
      .join(', ');
    throw new NotEnoughData(
      `only ${learned.decisions} usable ${kind} decision(s) in the store (${opts.settingsField ?? 'policies'}.min_decisions is ${p.min_decisions})${left ? `; left out: ${left}` : ''}`,
      `collect with policies.bootstrap: [${kind}] (or a deployed ${kind} policy) to log decisions first`,
    );
  }
  const production = syncProduction(rt);
  const parentId = production.members.policies?.[kind] ?? store.resources.latest('policy', kind)?.id ?? null;
  const summary = {
    decisions: learned.decisions,
    rollouts: learned.rollouts,
    skipped: learned.skipped,
    arm_counts: learned.armCounts,
    ope: learned.ope,
    no_policy: learned.noPolicy ?? null,
  };
  const runId = store.trainingRuns.start(
    { algo: 'bandit', policy: kind, algorithm: p.algorithm, arms, features: featureNames },
    { algo: 'bandit' },
  );
  const { resource, set } = store.transaction(() => {
    const r = store.resources.add({
      kind: 'policy',
      name: kind,
      parentId,
      content: serializePolicy({ ...learned.spec, trained: { training_run_id: runId, ...summary } }),
      metadata: { source: 'bandit', algorithm: p.algorithm, training_run_id: runId, ...summary },
    });
    const s = store.sets.add(
      withPolicy(production.members, r),
      { kind: 'policy', policy_id: r.id, training_run_id: runId },
      production.id,
    );
    store.trainingRuns.finish(runId, 'completed', { policy_id: r.id, candidate_set: s.id, ...summary });
    return { resource: r, set: s };
  });
  return {
    runId,
    algo: 'bandit',
    policy: { id: resource.id, kind, version: resource.version, algorithm: p.algorithm, arms },
    candidateSet: { id: set.id, version: set.version },
    decisions: learned.decisions,
    rollouts: learned.rollouts,
    skipped: learned.skipped,
    armCounts: learned.armCounts,
    ope: learned.ope,
    noPolicy: learned.noPolicy ?? null,
  };
}
