import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { hasStack, runCli, tempDir } from '../helpers.js';

/** A project whose collect.source is the default (orchestrate): --source gateway overrides it. */
function project(): string {
  return tempDir({
    'massgen-rl.yaml': `models:\n  stub: { base_url: "http://127.0.0.1:9/v1", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }
rewards:\n  weights: { human: 1 }
gateway: { holdout: 0 }
`,
  });
}

/** One finished gateway session with one chat call. */
function capture(dir: string): string {
  const store = openStore(loadConfig({ cwd: dir }));
  try {
    const id = store.rollouts.start({ source: GATEWAY_SOURCE, metadata: { client: 'app', session: 's1' } });
    const payload = {
      turn_id: 'c1',
      round: 0,
      attempt: 1,
      request: { model: 'stub', messages: [{ role: 'user', content: 'Hi?' }] },
      response: { content: 'Hello!', tool_calls: [], finish_reason: 'stop' },
      usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 },
      latency_ms: 3,
    };
    store.spans.append(id, [{ type: 'prompt', name: 'chat', agent: null, payload }]);
    store.rollouts.finish(id, { status: 'completed', tokens: 4, messages: 1, wallMs: 3 });
    return id;
  } finally {
    store.close();
  }
}

describe('massgen-rl collect --source gateway', () => {
  it('reports the counts as JSON: nothing captured is no error; a session with feedback is taken', async () => {
    const dir = project();
    const empty = await runCli(['collect', '--source', 'gateway', '--json'], { cwd: dir });
    expect(empty.exitCode, empty.stderr).toBe(0);
    expect(JSON.parse(empty.stdout)).toMatchObject({ ok: true, source: 'gateway', taken: 0, since: null });

    const id = capture(dir);
    const waiting = await runCli(['collect', '--source', 'gateway', '--json'], { cwd: dir });
    expect(JSON.parse(waiting.stdout)).toMatchObject({ taken: 0, waiting: 1 });

    expect((await runCli(['feedback', id, '--score', '1'], { cwd: dir })).exitCode).toBe(0);
    const taken = await runCli(['collect', '--source', 'gateway'], { cwd: dir });
    expect(taken.exitCode, taken.stderr).toBe(0);
    expect(taken.stdout).toMatch(/taken[\s\S]*\b1\b/);
    expect(hasStack(taken.stdout + taken.stderr)).toBe(false);

    const refused = await runCli(['collect', '--source', 'gateway', '--tasks', 'x.jsonl'], { cwd: dir });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/--source gateway takes captured sessions/);
  });
});
