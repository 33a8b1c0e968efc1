import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { compare } from '../../src/evaluation/compare.js';
import { judgeSwapped, parsePreference, swapped, type JudgeCall } from '../../src/evaluation/pairwise.js';
import type { ReplayItem } from '../../src/evaluation/replay-items.js';
import { replayPair, replayTally, scoreItem, type ScoredItem } from '../../src/evaluation/replay-score.js';
import type { ChatMessage, ChatRequest, ChatResult } from '../../src/llm/types.js';

const BOOT = { resamples: 2000, confidence: 0.95, seed: 3 };

/** A judge whose reply is a function of the two answers it is shown (A first). */
function scriptedJudge(decide: (a: string, b: string) => string): JudgeCall & { calls: ChatMessage[][] } {
  const calls: ChatMessage[][] = [];
  const client = {
    chat(req: ChatRequest): Promise<ChatResult> {
      calls.push(req.messages);
      const text = req.messages.at(-1)!.content!;
      const a = /Answer A[^\n]*\n([\s\S]*?)\n\nAnswer B/.exec(text)?.[1] ?? '';
      const b = /Answer B[^\n]*\n([\s\S]*?)\n\nWhich/.exec(text)?.[1] ?? '';
      return Promise.resolve({
        content: decide(a, b),
        toolCalls: [],
        finishReason: 'stop',
        usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
        model: 'judge',
        latencyMs: 1,
        attempts: 1,
      } as ChatResult);
    },
  };
  return { client, model: 'judge', attempts: 2, calls };
}

const convo = [{ role: 'user', content: 'What is 2 + 2?' }];

describe('position-swapped aggregation', () => {
  it('cancels a judge that always prefers the first position: a tie, no agreement', () => {
    expect(swapped('A', 'A')).toMatchObject({ score: 0.5, agreed: false });
    expect(swapped('B', 'B')).toMatchObject({ score: 0.5, agreed: false });
  });

  it('counts a preference only when both orders name the same answer', () => {
    expect(swapped('A', 'B')).toMatchObject({ score: 1, agreed: true });
    expect(swapped('B', 'A')).toMatchObject({ score: 0, agreed: true });
    expect(swapped('tie', 'tie')).toMatchObject({ score: 0.5, agreed: true });
    expect(swapped('A', 'tie')).toMatchObject({ score: 0.5, agreed: false });
    expect(swapped(null, 'B')).toMatchObject({ score: 0.5, agreed: false });
    expect(swapped(null, null)).toMatchObject({ score: 0.5, agreed: false });
  });

  it('asks both orders: a first-position judge ties every pair with agreement 0', async () => {
    const judge = scriptedJudge(() => '{"winner": "A", "reason": "first"}');
    const scored: ScoredItem[] = [];
    for (const [c, b] of [
      ['4', '5'],
      ['four', '22'],
      ['4', '4'],
    ] as const) {
      const v = await judgeSwapped(judge, convo, c, b);
      expect(v).toMatchObject({ candidateFirst: 'A', baselineFirst: 'A', score: 0.5, agreed: false, tokens: 30 });
      scored.push({ kind: 'judge', score: v.score, agreed: v.agreed, ...rest });
    }
    expect(judge.calls).toHaveLength(6);
    // the candidate's answer is shown first, then second
    expect(judge.calls[0]!.at(-1)!.content).toMatch(/Answer A[^\n]*\n4\n/);
    expect(judge.calls[1]!.at(-1)!.content).toMatch(/Answer A[^\n]*\n5\n/);
    expect(replayTally(scored, BOOT)).toMatchObject({ judged: 3, wins: 0, losses: 0, ties: 3, agreement: 0 });
  });

  it('a judge that reads the answers agrees with itself across orders', async () => {
    const judge = scriptedJudge((a, b) => `{"winner": "${a.trim() === '4' ? 'A' : b.trim() === '4' ? 'B' : 'tie'}"}`);
    const win = await judgeSwapped(judge, convo, '4', '5');
    const loss = await judgeSwapped(judge, convo, '5', '4');
    const tie = await judgeSwapped(judge, convo, '3', '5');
    expect([win.score, loss.score, tie.score]).toEqual([1, 0, 0.5]);
    const scored = [win, loss, tie, win].map((v) => ({
      kind: 'judge' as const,
      score: v.score,
      agreed: v.agreed,
      ...rest,
    }));
    const tally = replayTally(scored, BOOT);
    expect(tally).toMatchObject({ wins: 2, losses: 1, ties: 1, agreement: 1 });
    expect(tally.winRate!.mean).toBeCloseTo(0.625);
    expect(tally.winRate!.low).toBeLessThanOrEqual(0.625);
    expect(tally.winRate!.high).toBeGreaterThanOrEqual(0.625);
  });

  it('asks again after a malformed reply and gives up with null after its attempts', async () => {
    let n = 0;
    const flaky = scriptedJudge(() => (n++ % 2 === 0 ? 'hmm' : '```json\n{"winner": "B"}\n```'));
    const v = await judgeSwapped(flaky, convo, 'x', 'y');
    expect(v).toMatchObject({ candidateFirst: 'B', baselineFirst: 'B', agreed: false, failures: [] });
    expect(flaky.calls[1]!.at(-1)!.content).toMatch(/could not be used/);
    const broken = scriptedJudge(() => 'no idea');
    const w = await judgeSwapped(broken, convo, 'x', 'y');
    expect(w).toMatchObject({ candidateFirst: null, baselineFirst: null, score: 0.5, agreed: false });
    expect(w.failures).toHaveLength(2);
  });

  it('reads the winner from JSON or a lone word', () => {
    expect(parsePreference('{"winner": "A", "reason": "x"}')).toBe('A');
    expect(parsePreference('Sure. {"winner":"answer b"}')).toBe('B');
    expect(parsePreference('{"winner": "Tie"}')).toBe('tie');
    expect(parsePreference('B.')).toBe('B');
    expect(parsePreference('The answer is "A"')).toBe('A');
    expect(parsePreference('Winner: B, clearly.')).toBe('B');
    expect(() => parsePreference('A is better')).toThrow(/no winner/);
    expect(() => parsePreference('The answer is a good one')).toThrow(/no winner/);
    expect(() => parsePreference('')).toThrow(/empty/);
  });
});

const rest = { baselineValue: null, candidateValue: null, judgeFailures: [], judgeTokens: 0 };

describe('replayed calls as paired comparisons', () => {
  const item: ReplayItem = { rolloutId: 'ro_1', seq: 2, agent: 'solver', model: 'm', messages: convo, task: null };
  const answer = (text: string | null) => ({ text, tokens: 3, latencyMs: 5 });
  const ids = { baselineSet: 'rs_b', candidateSet: 'rs_c', evalRunId: 'ev_1' };

  it('scores against the reference when the task has one, by reward difference', async () => {
    const task = { id: 't1', prompt: 'What is 2 + 2?', reference: '4', metadata: {}, source: 'x' };
    const rewards = configSchema.parse({ rewards: { weights: { exact: 1 } } }).rewards;
    const s = await scoreItem({ ...item, task }, answer('5'), answer('4'), { rewards });
    expect(s).toMatchObject({ kind: 'reference', score: 1, baselineValue: 0, candidateValue: 1, agreed: null });
    const pair = replayPair({ ...item, task }, 1, s!, { baseline: answer('5'), candidate: answer('4') }, ids);
    expect([pair.baseline.reward, pair.candidate.reward, pair.taskId, pair.category]).toEqual([0, 1, 't1', 'solver']);
  });

  it('a side that fails to answer loses without asking the judge; both failing is no pair', async () => {
    const judge = scriptedJudge(() => '{"winner": "A"}');
    const rewards = { weights: {}, judge: {} } as never;
    expect(await scoreItem(item, answer(null), answer('4'), { rewards, judge })).toMatchObject({ score: 1 });
    expect(await scoreItem(item, answer('4'), answer(null), { rewards, judge })).toMatchObject({ score: 0 });
    expect(await scoreItem(item, answer(null), answer(null), { rewards, judge })).toBeNull();
    expect(judge.calls).toHaveLength(0);
    await expect(scoreItem(item, answer('a'), answer('b'), { rewards })).rejects.toThrow(/judge_model/);
  });

  it('a judged win rate is the candidate reward against an even 0.5 baseline', () => {
    const scores = [1, 1, 0.5, 0, 1];
    const pairs = scores.map((score, i) =>
      replayPair(
        { ...item, seq: i },
        1,
        { kind: 'judge', score, agreed: true, ...rest },
        {
          baseline: answer('b'),
          candidate: answer('c'),
        },
        ids,
      ),
    );
    const reward = compare(pairs, BOOT).overall.find((m) => m.metric === 'reward')!;
    expect(reward.baseline).toBe(0.5);
    expect(reward.candidate).toBeCloseTo(0.7);
    expect(reward.diff!.mean).toBeCloseTo(0.2);
    expect(reward.counts).toEqual({ wins: 3, ties: 1, losses: 1 });
  });
});
