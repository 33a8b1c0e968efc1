import type { ChatMessage } from '../llm/types.js';
import { askJudge } from './judge-ask.js';
import { JUDGE_FORMAT, judgeMessages, parseJudgeReply, type Criterion, type Verdict } from './judge-reply.js';
import type { RewardContext, RewardFamily, RewardsConfig } from './types.js';

/** The judge model's config name when the judge reward is on (it has a non-zero weight): the one place that decides. */
export function activeJudgeModel(rewards: RewardsConfig): string | undefined {
  return rewards.judge.model && (rewards.weights.judge ?? 0) !== 0 ? rewards.judge.model : undefined;
}

/** Used when rewards.judge.rubric is empty (the config rules require one when the judge has a weight). */
export const DEFAULT_RUBRIC: Criterion[] = [{ criterion: 'correctness', weight: 1 }];

/** Weighted mean of 0..10 scores, normalized to 0..1. */
export function rubricValue(scores: Record<string, number>, rubric: Criterion[]): number {
  const total = rubric.reduce((s, c) => s + c.weight, 0);
  return rubric.reduce((s, c) => s + c.weight * (scores[c.criterion] ?? 0), 0) / (10 * total);
}

/**
 * Asks the judge model for {"scores": {criterion: 0..10}, "reason"} on the final answer (rollout
 * channel). A malformed reply is answered with what was wrong and asked again; failed calls (after
 * the client's own HTTP retries) are sent again; 1 + max_retries attempts in all, after which the
 * value is failure_score with the last problem as the reason. Every reply's total tokens are added
 * to ctx.usage.judgeTokens. Cancellation (ctx.signal) is rethrown, never scored.
 */
export const judgeReward: RewardFamily = {
  name: 'judge',
  scope: 'answer',
  describe: 'an LLM judge scores the final answer on the weighted rubric (rewards.judge), normalized to 0..1',
  async score(ctx) {
    const { outcome, config } = ctx;
    if (outcome.finalAnswer === null)
      return [{ channel: 'rollout', family: 'judge', value: 0, reason: `no final answer (rollout ${outcome.status})` }];
    const rubric = config.judge.rubric.length ? config.judge.rubric : DEFAULT_RUBRIC;
    const attempts = 1 + config.judge.max_retries;
    const result = await askVerdict(ctx, judgeMessages(outcome, outcome.finalAnswer, rubric), rubric, attempts);
    if ('failure' in result) {
      return [
        {
          channel: 'rollout',
          family: 'judge',
          value: config.judge.failure_score,
          reason: `judge failed after ${attempts} attempt(s): ${result.failure}`,
        },
      ];
    }
    const value = rubricValue(result.scores, rubric);
    const breakdown = rubric.map((c) => `${c.criterion} ${result.scores[c.criterion]}/10 ×${c.weight}`).join(', ');
    return [
      {
        channel: 'rollout',
        family: 'judge',
        value,
        reason: `${breakdown} → ${value.toFixed(3)}${result.reason ? `: ${result.reason}` : ''}`,
      },
    ];
  },
};

async function askVerdict(
  ctx: RewardContext,
  first: ChatMessage[],
  rubric: Criterion[],
  attempts: number,
): Promise<Verdict | { failure: string }> {
  if (!ctx.judge) throw new Error('the judge reward needs a judge model: set rewards.judge.model');
  const r = await askJudge(
    {
      ...ctx.judge,
      attempts,
      maxTokens: 512,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      parse: (content) => parseJudgeReply(content, rubric),
      format: `this JSON object:\n${JUDGE_FORMAT(rubric)}`,
    },
    first,
  );
  if (ctx.usage) {
    ctx.usage.judgeTokens += r.tokens;
    ctx.usage.judgeCalls += r.calls;
  }
  return 'value' in r ? r.value : { failure: r.failure };
}
