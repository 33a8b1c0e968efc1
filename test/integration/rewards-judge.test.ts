import { afterEach, describe, expect, it } from 'vitest';
import { createLlmClient } from '../../src/llm/client.js';
import { computeRewards } from '../../src/rewards/compute.js';
import { parseJudgeReply } from '../../src/rewards/judge-reply.js';
import { judgeReward, rubricValue } from '../../src/rewards/judge.js';
import type { RewardContext, RewardUsage } from '../../src/rewards/types.js';
import { ctxFor, failedOutcome, mathOutcome, openTask, rewardsConfig } from '../fixtures/rewards/outcomes.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';

const rubric = [
  { criterion: 'correctness', weight: 3 },
  { criterion: 'clarity', weight: 1 },
];
const config = (judge: Record<string, unknown> = {}) => rewardsConfig({ judge: { model: 'judge', rubric, ...judge } });
const VALID = '{"scores": {"correctness": 10, "clarity": 6}, "reason": "right, a bit terse"}';
const EXPECTED = (3 * 10 + 1 * 6) / 40;

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function judgeWith(script: Script, judge: Record<string, unknown> = {}, extra: Partial<RewardContext> = {}) {
  server = await startScriptedServer(script);
  const client = createLlmClient({
    baseUrl: server.baseUrl,
    timeoutMs: 2000,
    maxRetries: 2,
    logprobs: false,
    retryBaseMs: 5,
  });
  const usage: RewardUsage = { judgeTokens: 0, judgeCalls: 0 };
  const rewards = await judgeReward.score(
    ctxFor(mathOutcome(), config(judge), { judge: { client, model: 'judge-model' }, usage, ...extra }),
  );
  return { rewards, usage, requests: server.requests };
}

describe('judge reward against a scripted OpenAI-compatible server', () => {
  it('scores valid JSON as the weighted rubric mean, and counts the tokens', async () => {
    const { rewards, usage, requests } = await judgeWith(() => ({
      content: VALID,
      usage: { prompt_tokens: 120, completion_tokens: 30 },
    }));
    expect(rewards).toEqual([
      {
        channel: 'rollout',
        family: 'judge',
        value: EXPECTED,
        reason: 'correctness 10/10 ×3, clarity 6/10 ×1 → 0.900: right, a bit terse',
      },
    ]);
    expect(usage).toEqual({ judgeTokens: 150, judgeCalls: 1 });
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ model: 'judge-model', temperature: 0 });
    const prompt = requests[0]!.messages.at(-1)!.content!;
    expect(prompt).toContain('What is 6 × 7?');
    expect(prompt).toContain('Reference answer (known to be correct):\n42');
    expect(prompt).toContain('Final answer: 42');
    expect(prompt).toContain('- correctness (weight 3)');
  });

  it('reads JSON in code fences with text around it', async () => {
    const reply = `Here is my verdict:\n\`\`\`json\n${VALID}\n\`\`\`\nLet me know if you need more.`;
    const { rewards } = await judgeWith(() => ({ content: reply }));
    expect(rewards[0]!.value).toBeCloseTo(EXPECTED);
  });

  it('retries a malformed reply, telling the judge what was wrong, and counts every call', async () => {
    const { rewards, usage, requests } = await judgeWith((_, i) =>
      i === 0
        ? { content: 'I would give it a 9.', usage: { prompt_tokens: 100, completion_tokens: 5 } }
        : { content: VALID, usage: { prompt_tokens: 130, completion_tokens: 20 } },
    );
    expect(rewards[0]!.value).toBeCloseTo(EXPECTED);
    expect(usage).toEqual({ judgeTokens: 255, judgeCalls: 2 });
    expect(requests).toHaveLength(2);
    expect(requests[1]!.messages.at(-2)).toMatchObject({ role: 'assistant', content: 'I would give it a 9.' });
    expect(requests[1]!.messages.at(-1)!.content).toMatch(/could not be used: no valid JSON object found/);
  });

  it('returns failure_score with the reason after 1 + max_retries malformed replies', async () => {
    const { rewards, usage, requests } = await judgeWith(
      () => ({ content: '{"scores": {"correctness": 11, "clarity": 5}}' }),
      { max_retries: 2, failure_score: -1 },
    );
    expect(requests).toHaveLength(3);
    expect(usage.judgeCalls).toBe(3);
    expect(rewards).toEqual([expect.objectContaining({ channel: 'rollout', value: -1 })]);
    expect(rewards[0]!.reason).toMatch(
      /judge failed after 3 attempt\(s\): malformed judge reply \(the score for "correctness" is 11, outside 0\.\.10\)/,
    );
  });

  it('lets the client retry an HTTP 500, and retries a call that still fails', async () => {
    const first = await judgeWith((_, i) => (i === 0 ? { status: 500 } : { content: VALID }));
    expect(first.rewards[0]!.value).toBeCloseTo(EXPECTED);
    expect(first.requests).toHaveLength(2);
    await server!.close();
    // The client gives up after 3 requests (max_retries 2); the judge then sends the call again.
    const second = await judgeWith((_, i) => (i < 3 ? { status: 500 } : { content: VALID }), { max_retries: 1 });
    expect(second.rewards[0]!.value).toBeCloseTo(EXPECTED);
    expect(second.requests).toHaveLength(4);
    await server!.close();
    const down = await judgeWith(() => ({ status: 500 }), { max_retries: 0, failure_score: 0.25 });
    expect(down.rewards[0]).toMatchObject({
      value: 0.25,
      reason: expect.stringMatching(/the judge call failed: .*answered 500/),
    });
    expect(down.usage).toEqual({ judgeTokens: 0, judgeCalls: 0 });
  });

  it('does not call the judge without a final answer, and says when no reference exists', async () => {
    const none = await judgeReward.score(ctxFor(failedOutcome(), config()));
    expect(none).toEqual([expect.objectContaining({ value: 0, reason: 'no final answer (rollout failed)' })]);
    server = await startScriptedServer(() => ({ content: VALID }));
    const client = createLlmClient({ baseUrl: server.baseUrl, timeoutMs: 2000, maxRetries: 0, logprobs: false });
    await judgeReward.score(ctxFor(mathOutcome({ task: openTask }), config(), { judge: { client, model: 'j' } }));
    expect(server.requests[0]!.messages.at(-1)!.content).toContain('There is no reference answer');
    await expect(judgeReward.score(ctxFor(mathOutcome(), config()))).rejects.toThrow(/set rewards.judge.model/);
  });

  it('rethrows cancellation instead of scoring it', async () => {
    const controller = new AbortController();
    const pending = judgeWith(() => ({ hang: true }), {}, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop now')), 50);
    await expect(pending).rejects.toThrow(/stop now/);
  });

  it('reports judge tokens from computeRewards', async () => {
    server = await startScriptedServer(() => ({ content: VALID, usage: { prompt_tokens: 40, completion_tokens: 2 } }));
    const client = createLlmClient({ baseUrl: server.baseUrl, timeoutMs: 2000, maxRetries: 0, logprobs: false });
    const result = await computeRewards(ctxFor(mathOutcome(), config(), { judge: { client, model: 'j' } }), {
      judge: 2,
      exact: 1,
    });
    expect(result.judgeTokens).toBe(42);
    expect(result.byFamily).toEqual({ exact: 1, judge: EXPECTED });
    expect(result.total).toBeCloseTo(1 + 2 * EXPECTED);
  });
});

describe('parseJudgeReply', () => {
  it('accepts case-insensitive keys, numeric strings and later candidates', () => {
    expect(parseJudgeReply('{"scores": {"Correctness ": "7", "CLARITY": 3}}', rubric)).toEqual({
      scores: { correctness: 7, clarity: 3 },
      reason: '',
    });
    expect(
      parseJudgeReply(
        'Format: {"scores": {"x": 1}}. Mine: {"scores": {"correctness": 5, "clarity": 5}, "reason": "ok {fine}"}',
        rubric,
      ),
    ).toEqual({ scores: { correctness: 5, clarity: 5 }, reason: 'ok {fine}' });
    expect(rubricValue({ correctness: 5, clarity: 5 }, rubric)).toBe(0.5);
  });

  it('says what is wrong', () => {
    expect(() => parseJudgeReply('', rubric)).toThrow('the reply is empty');
    expect(() => parseJudgeReply('{"scores": {"correctness": 7}}', rubric)).toThrow(
      '"scores" has no number for "clarity"',
    );
    expect(() => parseJudgeReply('{"score": 7}', rubric)).toThrow('the JSON object has no "scores" object');
    expect(() => parseJudgeReply('{scores: {correctness: 7}}', rubric)).toThrow('no valid JSON object found');
  });
});
