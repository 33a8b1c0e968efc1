import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { BIN, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Task "ok" completes at once; task "stuck" hangs until the process is stopped. */
async function project() {
  server = await startScriptedServer((req) => {
    const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
    if (user.includes('STUCK')) return { hang: true };
    if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 2' };
    return shownLabels(req).length ? { content: 'VOTE: agent1 | yes' } : { content: 'ANSWER: 2' };
  });
  const dir = tempDir({
    'massgen-rl.yaml': `models:\n  stub: { base_url: "${server.baseUrl}", model: m }\nagents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }\ntasks:\n  sources: [{ file: tasks.jsonl }]\ncollect: { concurrency: 1, split: all }\n`,
    'tasks.jsonl': '{"id":"ok","prompt":"1 + 1?","reference":"2"}\n{"id":"stuck","prompt":"STUCK forever"}\n',
  });
  const child = execa(process.execPath, [BIN, 'collect'], {
    cwd: dir,
    reject: false,
    stdin: 'ignore',
    env: { NO_COLOR: '1' },
  });
  // Wait until the second orchestration is in flight.
  const deadline = Date.now() + 20_000;
  while (!server.requests.some((r) => JSON.stringify(r.messages).includes('STUCK')) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  return { dir, child };
}

describe('stopping collect', () => {
  it('a killed collect leaves completed rollouts intact; the running one is marked failed at the next start', async () => {
    const { dir, child } = await project();
    await new Promise((r) => setTimeout(r, 400));
    child.kill('SIGKILL');
    await child;
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const byTask = Object.fromEntries(store.rollouts.list().map((r) => [r.taskId, r]));
      expect(byTask.ok).toMatchObject({ status: 'completed', finalAnswer: 'Final answer: 2' });
      expect(store.rewards.list(byTask.ok!.id).length).toBeGreaterThan(0);
      expect(byTask.stuck).toMatchObject({
        status: 'failed',
        error: expect.stringMatching(/^interrupted: process \d+ exited while this was running/),
      });
      // Spans are flushed at most 200 ms late, so the stuck rollout's opening round is on disk.
      expect(store.spans.list(byTask.stuck!.id)[0]).toMatchObject({ seq: 1, type: 'coordination', name: 'round' });
      expect(store.collectRuns.latest(1)[0]!.status).toBe('failed');
    } finally {
      store.close();
    }
  });

  it('Ctrl-C finishes cleanly: running rollouts cancelled, summary printed, exit 130', async () => {
    const { dir, child } = await project();
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(String(r.stderr)).toMatch(/stopping: running orchestrations are cancelled/);
    expect(String(r.stdout)).toMatch(/1\/2 \(50%\)/);
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      expect(
        store.rollouts
          .list()
          .map((x) => [x.taskId, x.status])
          .sort(),
      ).toEqual([
        ['ok', 'completed'],
        ['stuck', 'cancelled'],
      ]);
      expect(store.collectRuns.latest(1)[0]!.status).toBe('cancelled');
    } finally {
      store.close();
    }
  });
});
