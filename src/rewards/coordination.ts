import { answerQuality } from './quality.js';
import type { RewardFamily } from './types.js';

/** Sum of the coordination terms, each from rewards.coordination, with a readable breakdown. */
export function coordinationScore(ctx: Parameters<RewardFamily['score']>[0]): { value: number; reason: string } {
  const { outcome, config } = ctx;
  const c = config.coordination;
  const extra = Math.max(0, outcome.rounds - c.free_rounds);
  const quality = answerQuality(outcome.finalAnswer, outcome.task, config);
  const terms: [string, number][] = [
    [`rounds ${outcome.rounds} (${extra} over ${c.free_rounds} free) × ${c.round_penalty}`, extra * c.round_penalty],
    [
      quality
        ? `quality ${round(quality.value)} (${outcome.finalAnswer === null ? 'no final answer' : quality.family}) × ${c.quality_coef}`
        : `quality 0 (no reference) × ${c.quality_coef}`,
      (quality?.value ?? 0) * c.quality_coef,
    ],
    [`tokens ${outcome.tokens} × ${c.token_coef}`, outcome.tokens * c.token_coef],
    outcome.consensus ? ['consensus', c.consensus_bonus] : ['no consensus', c.no_consensus_penalty],
  ];
  const value = terms.reduce((s, [, v]) => s + v, 0);
  return { value, reason: `${terms.map(([label, v]) => `${label} = ${signed(v)}`).join('; ')} → ${round(value)}` };
}

/**
 * The team's coordination reward (rollout channel): round_penalty per round beyond free_rounds,
 * quality_coef × the final answer's quality (exact, else numeric, else F1; 0 without a reference),
 * token_coef × tokens, and consensus_bonus or no_consensus_penalty.
 */
export const coordinationReward: RewardFamily = {
  name: 'coordination',
  scope: 'team',
  describe:
    'team reward: rounds beyond the free ones, final answer quality, tokens spent and consensus (rewards.coordination)',
  score(ctx) {
    const { value, reason } = coordinationScore(ctx);
    return [{ channel: 'rollout', family: 'coordination', value, reason }];
  },
};

function round(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}

function signed(n: number): string {
  return n >= 0 ? `+${round(n)}` : round(n);
}
