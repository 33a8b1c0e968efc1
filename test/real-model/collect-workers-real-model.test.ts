import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { BIN, tempDir } from '../helpers.js';
import { freshPostgresUrl } from '../support/postgres.js';

// The real parts of many collectors: a real PostgreSQL store and its queue, two worker processes each
// serving the converted default model with the project's own server, built-in tasks.
describe('collect workers with the default local model on a PostgreSQL store', () => {
  it('two workers record every queued task once, with complete traces', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': [
        `store: { url: "${freshPostgresUrl()}" }`,
        'agents:',
        '  - { id: agent_a, model: local, tool_mode: text, max_tokens: 48, temperature: 0.7 }',
        'orchestrator: { max_action_retries: 1, max_rounds: 2, agent_timeout_s: 240, total_timeout_s: 600 }',
        'tasks:',
        '  sources: [{ suite: arithmetic, n: 10 }]',
        'collect: { concurrency: 1, n: 4, split: all }',
      ].join('\n'),
    });
    const cli = (args: string[]) =>
      execa(process.execPath, [BIN, ...args], {
        cwd: dir,
        reject: false,
        stdin: 'ignore',
        env: { NO_COLOR: '1', HF_HUB_OFFLINE: '1' },
      });
    const queued = await cli(['collect', '--enqueue', '--json']);
    expect(queued.exitCode, String(queued.stderr)).toBe(0);
    const { runId } = JSON.parse(String(queued.stdout)) as { runId: string };
    const workers = await Promise.all([cli(['collect', '--worker', '--json']), cli(['collect', '--worker', '--json'])]);
    for (const w of workers) expect(w.exitCode, String(w.stderr)).toBe(0);
    const done = workers.map(
      (w) => JSON.parse(String(w.stdout)) as { completed: number; failed: number; runsFinished: string[] },
    );
    expect(done.reduce((a, s) => a + s.completed + s.failed, 0)).toBe(4);
    expect(done.flatMap((s) => s.runsFinished)).toEqual([runId]);

    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const rollouts = store.rollouts.list({ runId });
      expect(new Set(rollouts.map((r) => r.taskId)).size).toBe(4);
      expect(rollouts).toHaveLength(4);
      for (const r of rollouts) {
        expect(['completed', 'failed']).toContain(r.status);
        const p = store.spans.list(r.id).find((s) => s.type === 'prompt')!.payload as PromptPayload;
        expect(p.request.model).toBe('smollm2-135m-instruct');
        expect(p.token_ids!.length).toBe(p.usage.completion_tokens);
        expect(p.logprobs!.length).toBe(p.token_ids!.length);
      }
      expect(store.collectRuns.get(runId)).toMatchObject({ status: 'completed' });
    } finally {
      store.close();
    }
  }, 600_000);
});
