import type { PolicyAlgorithm, PolicyKind } from '../config/schema.js';
import type { PolicyDecisionRow } from '../store/index.js';
import type { PolicyDecisionPayload } from '../trace/payloads.js';
import { sha256 } from '../util/hash.js';
import { fit, newPolicy } from './bandit.js';
import { offPolicyEstimate, policyTarget, type LoggedTrajectory } from './ope.js';
import type { PolicySpec } from './types.js';

export interface LearnInput {
  kind: PolicyKind;
  algorithm: PolicyAlgorithm;
  arms: string[];
  featureNames: string[];
  rows: PolicyDecisionRow[];
  costPer1kTokens: number;
  alpha: number;
  lambda: number;
  noise: number;
  epsilon: number;
  /** A policy that stands for "no policy" in the comparison (stop: always continue), by arm name. */
  noPolicyArm?: string;
  seed?: number;
}

type Estimate = ReturnType<typeof offPolicyEstimate>;

export interface LearnResult {
  spec: PolicySpec;
  decisions: number;
  rollouts: number;
  /** Decisions left out, by reason. */
  skipped: Record<string, number>;
  /** How often each arm was taken in the logged data. */
  armCounts: Record<string, number>;
  /** The greedy learned policy (what an evaluation runs), valued off-policy on the logged rollouts. */
  ope: Estimate;
  /** The same for the no-policy behaviour, when it is one of the arms. */
  noPolicy?: Estimate;
}

/** The reward a policy is trained and valued on: verified correctness (else the rollout's reward) minus the token cost. */
export function decisionReward(
  row: Pick<PolicyDecisionRow, 'verified' | 'totalReward' | 'tokens'>,
  costPer1kTokens: number,
): number {
  return (row.verified ?? row.totalReward ?? 0) - costPer1kTokens * (row.tokens / 1000);
}

export function featureNamesHash(names: string[]): string {
  return sha256(names.join('\n')).slice(0, 12);
}

/**
 * Fits a policy on logged decisions: each decision is a context, the arm taken and the rollout's final
 * reward (a stop decision's "continue" is credited with what the rest of the rollout earned), then values
 * the greedy policy off-policy (IPS, self-normalized IPS, doubly robust) on whole rollouts.
 */
export function learnPolicy(input: LearnInput): LearnResult {
  const namesHash = featureNamesHash(input.featureNames);
  const skipped: Record<string, number> = {};
  const skip = (why: string) => {
    skipped[why] = (skipped[why] ?? 0) + 1;
  };
  const trajectories = new Map<string, LoggedTrajectory>();
  const data: { x: number[]; arm: number; reward: number }[] = [];
  const armCounts = Object.fromEntries(input.arms.map((a) => [a, 0]));
  for (const row of input.rows) {
    const d = row.payload as Partial<PolicyDecisionPayload>;
    const arm = typeof d.chosen === 'string' ? input.arms.indexOf(d.chosen) : -1;
    if (
      d.feature_names_hash !== namesHash
      || !Array.isArray(d.features)
      || d.features.length !== input.featureNames.length
    ) {
      skip('other features');
      continue;
    }
    if (arm < 0) {
      skip('unknown arm');
      continue;
    }
    if (!(typeof d.propensity === 'number' && d.propensity > 0 && d.propensity <= 1)) {
      skip('no propensity');
      continue;
    }
    const reward = decisionReward(row, input.costPer1kTokens);
    data.push({ x: d.features, arm, reward });
    armCounts[input.arms[arm]!]!++;
    const t = trajectories.get(row.rolloutId) ?? { steps: [], reward };
    t.steps.push({ x: d.features, arm, propensity: d.propensity });
    trajectories.set(row.rolloutId, t);
  }
  const spec = fit(
    newPolicy(input.kind, input.algorithm, input.arms, input.featureNames, {
      alpha: input.alpha,
      lambda: input.lambda,
      noise: input.noise,
      epsilon: input.epsilon,
    }),
    data,
  );
  const logged = [...trajectories.values()];
  const seed = input.seed ?? 1;
  const ope = offPolicyEstimate(policyTarget(spec), logged, { seed });
  const fixed = input.noPolicyArm ? input.arms.indexOf(input.noPolicyArm) : -1;
  const noPolicy =
    fixed >= 0 ? offPolicyEstimate(() => input.arms.map((_, i) => (i === fixed ? 1 : 0)), logged, { seed }) : undefined;
  return {
    spec,
    decisions: data.length,
    rollouts: logged.length,
    skipped,
    armCounts,
    ope,
    ...(noPolicy ? { noPolicy } : {}),
  };
}
