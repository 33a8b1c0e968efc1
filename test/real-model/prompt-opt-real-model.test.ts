import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { trainPrompts } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { tempDir } from '../helpers.js';

// The real parts: the default local model serving the team and acting as the optimizer, built-in tasks,
// SQLite. One reflective round of prompt optimization, then the proposed prompt version through eval and
// deploy (gates relaxed: the point is the path, not the 135M optimizer's skill).
describe('prompt optimization with the default local model', () => {
  it('runs one round within its budgets, and the proposed prompt goes through eval and deploy', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': [
        'agents:',
        '  - { id: agent_a, model: local, tool_mode: text, implicit_answer: true, max_tokens: 64 }',
        '  - { id: agent_b, model: local, tool_mode: text, implicit_answer: true, max_tokens: 64 }',
        'orchestrator: { max_action_retries: 1, max_rounds: 2, agent_timeout_s: 240, total_timeout_s: 600 }',
        'tasks:',
        '  sources: [{ suite: unit_conversion, n: 12 }]',
        'collect: { concurrency: 2 }',
        'eval: { split: eval, n: 2, seeds: 1, report: false }',
        'deploy: { gates: { min_pairs: 1, ci_lower_above_zero: false, min_improvement: -1, max_category_regression: 1, max_cost_increase: null } }',
        'prompt_opt: { rounds: 1, val_n: 2, minibatch: 2, merge_every: 0, max_tokens: 160, budget: { rollouts: 8, optimizer_tokens: 3000, wall_min: 30 } }',
      ].join('\n'),
    });
    const loaded = loadConfig({ cwd: dir });
    const r = await withRuntime(loaded, (rt) => trainPrompts(rt));
    expect(r.status).toBe('completed');
    expect(r.spent.rollouts).toBeLessThanOrEqual(8);
    expect(r.spent.optimizerTokens).toBeLessThanOrEqual(3000);
    expect(r.proposals).toHaveLength(1);
    const p = r.proposals[0]!;
    expect(p.kind).toBe('reflect');
    expect(p.optimizerTokens).toBeGreaterThan(0);
    const store = openStore(loaded);
    let version: number | undefined;
    try {
      expect(store.rollouts.countTagged('apo_run', r.runId)).toBe(r.spent.rollouts);
      const proposed = store.resources.list('prompt').filter((x) => x.metadata.apo_run === r.runId);
      // The 135M optimizer's reply may be refused (empty, markup…); when it is not, it is a new version of solver.
      if (p.outcome !== 'refused') {
        expect(proposed.map((x) => x.name)).toEqual(['solver']);
        version = proposed[0]!.version;
      }
    } finally {
      store.close();
    }
    if (version === undefined) return;
    const ev = await withRuntime(loaded, (rt) => evaluate(rt, { candidate: `solver@${version}` }));
    expect(ev.status).toBe('completed');
    expect(ev.comparison.pairs).toBe(2);
    const d = await withRuntime(loaded, (rt) => deploy(rt));
    expect(d.action).toBe('promoted');
    const after = openStore(loaded);
    try {
      expect(
        Object.values(after.sets.get(after.sets.pointer('production')!.setId)!.members.agents).every(
          (m) => after.resources.get(m.prompt)!.version === version,
        ),
      ).toBe(true);
    } finally {
      after.close();
    }
  }, 1_800_000);
});
