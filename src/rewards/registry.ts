import { UserError } from '../errors.js';
import { agreementReward } from './agreement.js';
import { containsReward } from './contains.js';
import { coordinationReward } from './coordination.js';
import { customReward } from './custom.js';
import { exactReward } from './exact.js';
import { f1Reward } from './f1.js';
import { humanReward } from './human.js';
import { judgeReward } from './judge.js';
import { numericReward } from './numeric.js';
import { peerVoteReward } from './peer-vote.js';
import { regexReward } from './regex.js';
import { rougeLReward } from './rouge-l.js';
import { toolReward } from './tool.js';
import type { RewardFamily } from './types.js';
import { votingReward } from './voting.js';

/** Every reward family, in the order of REWARD_FAMILIES (config/schema.ts): the order computeRewards runs them. */
export const REWARD_REGISTRY: readonly RewardFamily[] = Object.freeze([
  exactReward,
  numericReward,
  f1Reward,
  rougeLReward,
  regexReward,
  containsReward,
  judgeReward,
  coordinationReward,
  votingReward,
  toolReward,
  peerVoteReward,
  agreementReward,
  customReward,
  humanReward,
]);

const byName = new Map(REWARD_REGISTRY.map((f) => [f.name, f]));

export function rewardFamilyNames(): string[] {
  return REWARD_REGISTRY.map((f) => f.name);
}

export function hasRewardFamily(name: string): boolean {
  return byName.has(name);
}

/** The family called `name`; an unknown name throws a UserError listing the valid ones. */
export function getRewardFamily(name: string): RewardFamily {
  const family = byName.get(name);
  if (!family)
    throw new UserError(`unknown reward family "${name}"; valid families: ${rewardFamilyNames().join(', ')}`);
  return family;
}
