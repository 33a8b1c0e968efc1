import type { RewardFamily } from './types.js';

/**
 * Human feedback. Known and described so configs and stored rewards can name it, but it computes
 * nothing: `massgen-rl feedback` adds these rewards, and recomputing keeps them.
 */
export const humanReward: RewardFamily = {
  name: 'human',
  scope: 'feedback',
  describe: 'human feedback added with `massgen-rl feedback` (stored, never computed; recompute keeps it)',
  score: () => [],
};
