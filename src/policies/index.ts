export {
  POLICY_ALGORITHMS, POLICY_KINDS, isLinearState, parsePolicy, serializePolicy,
  type ArmState, type BetaArmState, type LinearArmState, type PolicyAlgorithm, type PolicyKind, type PolicySpec,
} from './types.js';
export {
  THOMPSON_DRAWS, act, fit, meanRewards, newPolicy, probabilities, uniform, update,
  type ActOptions, type Decision, type PolicyOptions, type Sample,
} from './bandit.js';
export {
  STOP_FEATURES, TASK_FEATURES, answerSimilarity, projectEmbedding, stableHash, stopFeatures, taskFeatureNames, taskFeatures,
  type StopState, type TaskContext,
} from './features.js';
export {
  offPolicyEstimate, policyTarget, rewardModelFrom,
  type Interval, type LoggedStep, type LoggedTrajectory, type OpeOptions, type OpeResult, type RewardModel, type TargetPolicy,
} from './ope.js';
export { decisionReward, featureNamesHash, learnPolicy, type LearnInput, type LearnResult } from './learn.js';
