import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { trainPolicy } from '../../src/pipeline/train/policy.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { PolicyDecisionPayload } from '../../src/trace/payloads.js';
import { tempDir } from '../helpers.js';

// The real parts: the default local model served by the project's server, built-in tasks, SQLite. A
// collect explores the stop and routing decisions, a stop policy is fitted on what it logged, and an
// evaluation runs it greedily against production on the same tasks and seeds.
describe('orchestration policies with the default local model', () => {
  it('logs explored decisions, fits a stop policy and evaluates it against no policy', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': [
        'agents:',
        '  - { id: agent_a, model: local, tool_mode: text, implicit_answer: true, max_tokens: 64, temperature: 0.7 }',
        '  - { id: agent_b, model: local, tool_mode: text, implicit_answer: true, max_tokens: 64, temperature: 0.7 }',
        'orchestrator: { max_action_retries: 2, max_rounds: 3, agent_timeout_s: 240, total_timeout_s: 600 }',
        'tasks:',
        '  sources: [{ suite: arithmetic, n: 10 }]',
        'collect: { concurrency: 2, n: 3, split: all }',
        'eval: { split: all, n: 2, seeds: 1, report: false }',
        'policies: { bootstrap: [stop, routing], min_decisions: 1 }',
      ].join('\n'),
    });
    const loaded = loadConfig({ cwd: dir });
    const summary = await withRuntime(loaded, (rt) => collect(rt));
    expect(summary.completed).toBeGreaterThan(0);

    const store = openStore(loaded);
    let stops: PolicyDecisionPayload[];
    try {
      const routing = store.spans.policyDecisions('routing').map((r) => r.payload as PolicyDecisionPayload);
      expect(routing).toHaveLength(summary.completed);
      expect(
        routing.every((d) => d.arms.join() === 'agent_a,agent_b,team' && Math.abs(d.propensity - 1 / 3) < 1e-12),
      ).toBe(true);
      stops = store.spans.policyDecisions('stop').map((r) => r.payload as PolicyDecisionPayload);
      expect(stops.every((d) => d.propensity === 0.5 && d.features.length === 7 && d.round! >= 1)).toBe(true);
    } finally {
      store.close();
    }
    if (!stops.length) return; // every rollout ended before a first answer: nothing to fit (the model decides that)
    const trained = await withRuntime(loaded, (rt) => trainPolicy(rt, { policy: 'stop' }));
    expect(trained.decisions).toBe(stops.length);
    expect(Number.isFinite(trained.ope.dr.mean)).toBe(true);
    const ev = await withRuntime(loaded, (rt) => evaluate(rt, { candidate: `policy:stop@${trained.policy.version}` }));
    expect(ev.status).toBe('completed');
    expect(ev.comparison.pairs).toBe(2);
    expect(ev.candidate.origin).toMatchObject({ kind: 'policy', policy_id: trained.policy.id });
  }, 1_200_000);
});
