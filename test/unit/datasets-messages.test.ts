import { describe, expect, it } from 'vitest';
import {
  agentMatcher,
  chatMessages,
  completionText,
  promptKey,
  resolveDatasetOptions,
} from '../../src/datasets/index.js';
import { logprobValues, tokenIds } from '../../src/datasets/messages.js';
import { UserError } from '../../src/errors.js';

describe('dataset messages', () => {
  it('normalizes request messages, keeping tool-call fields', () => {
    expect(
      chatMessages([
        { role: 'system', content: 's' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calculator', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: '4' },
        'junk',
      ]),
    ).toEqual([
      { role: 'system', content: 's' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calculator', arguments: '{}' } }],
      },
      { role: 'tool', content: '4', tool_call_id: 'c1' },
    ]);
  });

  it('renders the completion: reply text, else native tool calls as <tool_call> blocks, else null', () => {
    expect(completionText({ response: { content: 'ANSWER: 4', tool_calls: [], finish_reason: 'stop' } })).toBe(
      'ANSWER: 4',
    );
    expect(
      completionText({
        response: {
          content: null,
          finish_reason: 'tool_calls',
          tool_calls: [
            { id: 'x', type: 'function', function: { name: 'new_answer', arguments: '{"content":"4"}' } },
            { id: 'y', type: 'function', function: { name: 'vote', arguments: 'not json' } },
          ],
        },
      }),
    ).toBe(
      '<tool_call>\n{"name":"new_answer","arguments":{"content":"4"}}\n</tool_call>\n<tool_call>\n{"name":"vote","arguments":"not json"}\n</tool_call>',
    );
    expect(completionText({ response: null })).toBeNull();
    expect(completionText({ response: { content: '  ', tool_calls: [], finish_reason: 'stop' } })).toBeNull();
  });

  it('keys prompts by canonical messages and tools, not by key order, model or sampling', () => {
    const base = { model: 'm1', messages: [{ role: 'user', content: 'hi' }], temperature: 0.7 };
    expect(promptKey(base)).toBe(
      promptKey({ model: 'm2', messages: [{ content: 'hi', role: 'user' }], temperature: 0 }),
    );
    expect(promptKey(base)).not.toBe(promptKey({ ...base, messages: [{ role: 'user', content: 'hi!' }] }));
    expect(promptKey(base)).not.toBe(promptKey({ ...base, tools: [{ type: 'function', function: { name: 'vote' } }] }));
    expect(promptKey(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('reads logprobs as floats and token ids, or null when missing or unusable', () => {
    expect(
      logprobValues({
        logprobs: [
          { token: 'a', logprob: -0.5 },
          { token: 'b', logprob: 0 },
        ],
      }),
    ).toEqual([-0.5, 0]);
    expect(logprobValues({ logprobs: null })).toBeNull();
    expect(logprobValues({ logprobs: [{ token: 'a', logprob: null as unknown as number }] })).toBeNull();
    expect(logprobValues({ logprobs: [] })).toBeNull();
    expect(tokenIds({ token_ids: [5, 0] })).toEqual([5, 0]);
    expect([[], [1.5], [-1], null].map((ids) => tokenIds({ token_ids: ids }))).toEqual([null, null, null, null]);
  });
});

describe('dataset options', () => {
  it('fills defaults and rejects bad values naming the option', () => {
    const o = resolveDatasetOptions({ ppo: { credit: 'discounted' } });
    expect(o.ppo).toEqual({ credit: 'discounted', gamma: 0.9, agents: null });
    expect(o.sft.reward_threshold).toBe(0.5);
    expect(o.grpo.min_group_size).toBe(2);
    expect(
      resolveDatasetOptions({
        sft: { reward_threshold: undefined, agents: undefined },
        dpo: { system_prompt: undefined },
      }),
    ).toMatchObject({ sft: { reward_threshold: 0.5, agents: null }, dpo: { system_prompt: null } });
    expect(() => resolveDatasetOptions({ grpo: { min_group_size: 1 } })).toThrow(/train\.grpo\.min_group_size/);
    expect(() => resolveDatasetOptions({ ppo: { gamma: 0 } })).toThrow(UserError);
    expect(() => resolveDatasetOptions({ ppo: { credit: 'sometimes' as 'final' } })).toThrow(/train\.ppo\.credit/);
    expect(() => resolveDatasetOptions({ dpo: { min_margin: -1 } })).toThrow(/train\.dpo\.min_margin/);
    expect(() => resolveDatasetOptions({ ppo: { agents: '[' } })).toThrow(/train\.ppo\.agents/);
  });

  it('matches agents by list or unanchored regular expression', () => {
    expect(['a', 'b', 'judge', null].map(agentMatcher(['a', 'judge']))).toEqual([true, false, true, false]);
    expect(['solver_1', 'solver_2', 'critic'].map(agentMatcher('^solver_'))).toEqual([true, true, false]);
    expect(['x', null].map(agentMatcher(null))).toEqual([true, true]);
  });
});
