export type {
  AnswerScore,
  AnswerScorer,
  RewardContext,
  RewardFamily,
  RewardsConfig,
  RewardUsage,
  RolloutOutcome,
} from './types.js';
export { computeRewards, familyValue, RewardError, type RewardResult } from './compute.js';
export { getRewardFamily, hasRewardFamily, REWARD_REGISTRY, rewardFamilyNames } from './registry.js';
export { extractFinalAnswer, findAnswerLine, normalizeAnswer } from '../util/answer-text.js';
export { extractFinalNumber, findNumbers } from '../util/answer-numbers.js';
export { answerQuality } from './quality.js';
export { CustomRewardError } from './custom.js';
