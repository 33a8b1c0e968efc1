import type { ChatResult } from '../llm/types.js';
import { scoreCompletion, singleAnswerWeights } from '../rewards/completion.js';
import type { RewardContext, RewardsConfig } from '../rewards/types.js';
import type { EvalResult } from '../store/index.js';
import type { Pair } from './compare.js';
import { judgeSwapped, type JudgeCall, type Preference } from './pairwise.js';
import type { ReplayItem } from './replay-items.js';
import { pairedBootstrap, type BootstrapOptions, type Interval } from './stats.js';

/** One side's answer to a replayed call; text null when the call failed. */
export interface ReplayAnswer {
  text: string | null;
  tokens: number;
  latencyMs: number;
  error?: string;
}

export interface ScoredItem {
  kind: 'judge' | 'reference';
  /** Judge: 1 / 0.5 / 0 for the candidate; reference: candidate − baseline reward. */
  score: number;
  baselineValue: number | null;
  candidateValue: number | null;
  /** Judge: whether both orders agreed (null: not asked, a side failed to answer). */
  agreed: boolean | null;
  /** Judge: the verdict of each order (A: the answer shown first). */
  verdicts?: { candidateFirst: Preference; baselineFirst: Preference };
  judgeFailures: string[];
  judgeTokens: number;
}

export interface ScoreContext {
  rewards: RewardsConfig;
  /** The reward families' judge (rewards.judge), for reference scoring. */
  rewardJudge?: RewardContext['judge'];
  /** The pairwise judge, for calls without a reference. */
  judge?: JudgeCall;
  signal?: AbortSignal;
}

/** What a reply says: its text, then each tool call it makes. */
export function answerText(r: ChatResult): string {
  const calls = r.toolCalls.map((c) => `[tool call] ${c.function.name}(${c.function.arguments})`);
  return [r.content ?? '', ...calls].filter((s) => s.trim()).join('\n');
}

/**
 * The paired score of one replayed call: against the reference by the single-answer reward families when
 * its task has one (and both answers score), else by the position-swapped judge. A side that failed to
 * answer loses; null when both failed.
 */
export async function scoreItem(
  item: ReplayItem,
  baseline: ReplayAnswer,
  candidate: ReplayAnswer,
  ctx: ScoreContext,
): Promise<ScoredItem | null> {
  const kind = item.task ? 'reference' : 'judge';
  const none = { agreed: null, judgeFailures: [], judgeTokens: 0, baselineValue: null, candidateValue: null };
  if (baseline.text === null && candidate.text === null) return null;
  if (baseline.text === null || candidate.text === null)
    return { ...none, kind, score: candidate.text === null ? (kind === 'judge' ? 0 : -1) : 1 };
  if (item.task) {
    const weights = singleAnswerWeights(ctx.rewards.weights);
    const base = { config: ctx.rewards, signal: ctx.signal, judge: ctx.rewardJudge };
    const score = (side: string, text: string) =>
      scoreCompletion(
        { id: `${item.rolloutId}:${item.seq}:${side}`, text, task: item.task!, agent: 'replay' },
        base,
        weights,
      );
    const [b, c] = await Promise.all([score('baseline', baseline.text), score('candidate', candidate.text)]);
    if (b !== null && c !== null) return { ...none, kind, score: c - b, baselineValue: b, candidateValue: c };
  }
  if (!ctx.judge) throw new Error('a replayed call without a reference needs a judge: set eval.replay.judge_model');
  const v = await judgeSwapped(ctx.judge, item.messages, candidate.text, baseline.text);
  return {
    kind: 'judge',
    score: v.score,
    baselineValue: null,
    candidateValue: null,
    agreed: v.agreed,
    verdicts: { candidateFirst: v.candidateFirst, baselineFirst: v.baselineFirst },
    judgeFailures: v.failures,
    judgeTokens: v.tokens,
  };
}

/**
 * One scored call as a pair of the paired comparison, on `reward`: a judged call is the candidate's score
 * against an even 0.5 (so the mean difference is the win rate − 0.5); a referenced one is both rewards.
 */
export function replayPair(
  item: ReplayItem,
  seed: number,
  s: ScoredItem,
  sides: { baseline: ReplayAnswer; candidate: ReplayAnswer },
  ids: { baselineSet: string; candidateSet: string; evalRunId: string },
): Pair {
  const category = item.agent ?? item.model;
  const taskId = item.task?.id ?? `${item.rolloutId}#${item.seq}`;
  const judged = s.kind === 'judge';
  const reward = (side: 'baseline' | 'candidate'): number => {
    if (side === 'baseline') return judged ? 0.5 : (s.baselineValue ?? (s.score > 0 ? 0 : 1));
    return judged ? s.score : (s.candidateValue ?? (s.score > 0 ? 1 : 0));
  };
  const result = (side: 'baseline' | 'candidate'): EvalResult => ({
    servingHash: '',
    setId: side === 'baseline' ? ids.baselineSet : ids.candidateSet,
    taskHash: taskId,
    seed,
    settingsHash: '',
    taskId,
    category,
    rolloutId: item.rolloutId,
    evalRunId: ids.evalRunId,
    status: sides[side].text === null ? 'failed' : 'completed',
    reward: reward(side),
    success: null,
    consensus: false,
    rounds: 1,
    tokens: sides[side].tokens,
    wallMs: sides[side].latencyMs,
  });
  return { taskId, category, seed, baseline: result('baseline'), candidate: result('candidate') };
}

/** Wins, losses and ties over every scored call, the judge's agreement rate and the judged win rate. */
export function replayTally(scored: readonly ScoredItem[], boot: BootstrapOptions) {
  const edge = (s: ScoredItem) => (s.kind === 'judge' ? s.score - 0.5 : s.score);
  const judged = scored.filter((s) => s.kind === 'judge');
  const asked = judged.filter((s) => s.agreed !== null);
  return {
    judged: judged.length,
    referenced: scored.length - judged.length,
    wins: scored.filter((s) => edge(s) > 1e-9).length,
    losses: scored.filter((s) => edge(s) < -1e-9).length,
    ties: scored.filter((s) => Math.abs(edge(s)) <= 1e-9).length,
    agreement: asked.length ? asked.filter((s) => s.agreed).length / asked.length : null,
    winRate: judged.length
      ? pairedBootstrap(
          judged.map((s) => s.score),
          boot,
        )
      : (null as Interval | null),
    judgeFailures: judged.filter((s) => s.judgeFailures.length > 0).length,
  };
}
