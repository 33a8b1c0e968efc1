import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { InvalidActionPayload, PromptPayload } from '../../src/trace/payloads.js';
import { tempDir } from '../helpers.js';

// The real parts end to end: the converted default model (prepared by `npm test` via doctor --fix),
// served by the project's own server, a team in text tool mode, built-in tasks, the SQLite store.
describe('collect with the default local model', () => {
  it('runs built-in tasks offline through the local server and stores complete traces', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': [
        'agents:',
        '  - { id: agent_a, model: local, tool_mode: text, max_tokens: 96, temperature: 0.7 }',
        '  - { id: agent_b, model: local, tool_mode: text, max_tokens: 96, temperature: 0.7 }',
        'orchestrator: { max_action_retries: 1, max_rounds: 4, agent_timeout_s: 240, total_timeout_s: 600 }',
        'tasks:',
        '  sources: [{ suite: arithmetic, n: 10 }]',
        'collect: { concurrency: 2, n: 2, split: all }',
      ].join('\n'),
    });
    const loaded = loadConfig({ cwd: dir });
    const summary = await withRuntime(loaded, (rt) => collect(rt));
    expect(summary.tasks).toBe(2);
    expect(summary.completed + summary.failed).toBe(2);
    expect(summary.tokens).toBeGreaterThan(0);

    const store = openStore(loaded);
    try {
      const rollouts = store.rollouts.list({ runId: summary.runId });
      expect(rollouts).toHaveLength(2);
      for (const r of rollouts) {
        expect(r.status === 'completed' || r.status === 'failed').toBe(true);
        const spans = store.spans.list(r.id);
        const prompts = spans.filter((s) => s.type === 'prompt' && !(s.payload as PromptPayload).cancelled);
        expect(prompts.length).toBeGreaterThan(0);
        const p = prompts[0]!.payload as PromptPayload;
        expect(p.request.model).toBe('smollm2-135m-instruct');
        expect(p.response?.content?.length).toBeGreaterThan(0);
        // Our server returns token ids and logprobs, so trainers never retokenize.
        expect(p.token_ids!.length).toBe(p.usage.completion_tokens);
        expect(p.logprobs!.length).toBe(p.token_ids!.length);
        expect(p.logprobs!.every((t) => Number.isFinite(t.logprob) && t.logprob <= 0)).toBe(true);
        expect(p.prompt_token_ids!.length).toBe(p.usage.prompt_tokens);
        const coordination = new Set(spans.filter((s) => s.type === 'coordination').map((s) => s.name));
        expect(coordination.has('round')).toBe(true);
        expect(coordination.has('new_answer') || coordination.has('invalid_action')).toBe(true);
        expect(coordination.has('final_selection')).toBe(true);
        if (r.status === 'completed') {
          expect(r.finalAnswer).toBeTruthy();
          expect(store.rewards.list(r.id).length).toBeGreaterThan(0);
          expect(r.totalReward).not.toBeNull();
        }
      }
      expect(store.tasks.count()).toBeGreaterThanOrEqual(2);
    } finally {
      store.close();
    }
  }, 900_000);

  it('runs a team in native tool mode: every action a tool call the grammar kept valid, streamed, with its tokens', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': [
        'agents:',
        // room for a whole answer: a call max_tokens cuts is no action, and a run of only those has no answer
        '  - { id: agent_a, model: local, tool_mode: native, max_tokens: 400, temperature: 0.7 }',
        '  - { id: agent_b, model: local, tool_mode: native, max_tokens: 400, temperature: 0.7 }',
        'orchestrator: { max_action_retries: 1, max_rounds: 3, agent_timeout_s: 240, total_timeout_s: 600 }',
        'tasks:',
        '  sources: [{ suite: arithmetic, n: 10 }]',
        'collect: { concurrency: 1, n: 1, split: all }',
      ].join('\n'),
    });
    const loaded = loadConfig({ cwd: dir });
    const summary = await withRuntime(loaded, (rt) => collect(rt));
    expect(summary.tasks).toBe(1);
    const store = openStore(loaded);
    try {
      const [r] = store.rollouts.list({ runId: summary.runId });
      const spans = store.spans.list(r!.id);
      const decisions = spans
        .filter((s) => s.type === 'prompt' && s.name === 'chat')
        .map((s) => s.payload as PromptPayload)
        .filter((p) => p.response); // not the calls cancelled when a round ended
      expect(decisions.length).toBeGreaterThan(0);
      for (const p of decisions) {
        const calls = p.response!.tool_calls ?? [];
        // the request asked for a call; where max_tokens cut one short the reply has none
        if (p.response!.finish_reason === 'length') continue;
        expect(p.response!.finish_reason).toBe('tool_calls');
        expect(['new_answer', 'vote']).toContain(calls[0]!.function.name);
        expect(() => JSON.parse(calls[0]!.function.arguments)).not.toThrow();
        expect(p.token_ids!.length).toBe(p.usage.completion_tokens);
        expect(p.logprobs!.length).toBe(p.token_ids!.length);
        expect(p.ttft_ms).toBeGreaterThan(0);
      }
      const coordination = new Set(spans.filter((s) => s.type === 'coordination').map((s) => s.name));
      expect(coordination.has('new_answer')).toBe(true);
      // the grammar keeps every call well formed (one call of a known tool, a listed target): what is left invalid is
      // what an action means (an answer the same as another's), or a call max_tokens cut short
      const invalid = spans
        .filter((s) => s.name === 'invalid_action')
        .map((s) => (s.payload as InvalidActionPayload).kind);
      const cut = decisions.some((p) => p.response!.finish_reason === 'length');
      for (const kind of invalid) {
        if (!cut)
          expect(['no_action', 'multiple_actions', 'vote_and_answer', 'unknown_target', 'malformed']).not.toContain(
            kind,
          );
      }
    } finally {
      store.close();
    }
  }, 900_000);
});
