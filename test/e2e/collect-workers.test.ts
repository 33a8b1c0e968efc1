import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { BIN, tempDir } from '../helpers.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 12 }, (_, i) =>
  JSON.stringify({ id: `t${i}`, prompt: `What is ${i} + ${42 - i}?`, reference: '42' }),
).join('\n');

async function project(): Promise<string> {
  server = await startScriptedServer((req, i) => {
    const delayMs = 30 + ((i * 37) % 90);
    if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42', delayMs };
    return shownLabels(req).length ? { content: 'VOTE: agent1 | right', delayMs } : { content: 'ANSWER: 42', delayMs };
  });
  return tempDir({
    'massgen-rl.yaml': `store: { url: "${freshPostgresUrl()}" }
models:\n  stub: { base_url: "${server.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }
tasks:\n  sources: [{ file: tasks.jsonl }]
collect: { concurrency: 2, split: all }\n`,
    'tasks.jsonl': TASKS,
  });
}

const cli = (dir: string, args: string[]) =>
  execa(process.execPath, [BIN, ...args], { cwd: dir, reject: false, stdin: 'ignore', env: { NO_COLOR: '1' } });

async function enqueue(dir: string): Promise<string> {
  const r = await cli(dir, ['collect', '--enqueue', '--json']);
  expect(r.exitCode, String(r.stderr)).toBe(0);
  const out = JSON.parse(String(r.stdout)) as { runId: string; tasks: number };
  expect(out.tasks).toBe(12);
  return out.runId;
}

/** Every task of the run recorded once, completed, and the run finished by the worker that recorded the last one. */
function checkRun(dir: string, runId: string): { attempts: number[] } {
  const store = openStore(loadConfig({ cwd: dir }));
  try {
    const rollouts = store.rollouts.list({ runId });
    expect(rollouts.map((r) => r.taskId).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `t${i}`).sort());
    for (const r of rollouts) {
      expect(r.status, r.id).toBe('completed');
      expect(r.finalAnswer).toBe('Final answer: 42');
      const spans = store.spans.list(r.id);
      expect(spans.map((s) => s.seq)).toEqual(spans.map((_, i) => i + 1));
    }
    const run = store.collectRuns.get(runId)!;
    expect(run.status).toBe('completed');
    expect(run.result).toMatchObject({ tasks: 12, completed: 12 });
    return { attempts: rollouts.map((r) => Number((r.metadata as { attempt?: number }).attempt)) };
  } finally {
    store.close();
  }
}

describe('collect workers on one PostgreSQL store', () => {
  it.each([2, 4])(
    '%i worker processes: every task done exactly once',
    async (n) => {
      const dir = await project();
      const runId = await enqueue(dir);
      const workers = await Promise.all(Array.from({ length: n }, () => cli(dir, ['collect', '--worker', '--json'])));
      const summaries = workers.map((w) => {
        expect(w.exitCode, String(w.stderr)).toBe(0);
        return JSON.parse(String(w.stdout)) as { jobs: number; completed: number; runsFinished: string[] };
      });
      expect(summaries.reduce((a, s) => a + s.completed, 0)).toBe(12);
      expect(summaries.flatMap((s) => s.runsFinished)).toEqual([runId]);
      expect(summaries.filter((s) => s.jobs > 0).length).toBeGreaterThan(1);
      expect(checkRun(dir, runId).attempts.every((a) => a === 1)).toBe(true);
    },
    180_000,
  );

  it('kill -9 of a worker mid-task: another worker runs its task again; nothing duplicated or lost', async () => {
    const dir = await project();
    const runId = await enqueue(dir);
    const victim = cli(dir, ['collect', '--worker']);
    const base = server!.requests.length;
    const deadline = Date.now() + 60_000;
    while (server!.requests.length - base < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    victim.kill('SIGKILL');
    expect((await victim).signal).toBe('SIGKILL');
    const rest = await Promise.all([
      cli(dir, ['collect', '--worker', '--json']),
      cli(dir, ['collect', '--worker', '--json']),
    ]);
    const summaries = rest.map((w) => {
      expect(w.exitCode, String(w.stderr)).toBe(0);
      return JSON.parse(String(w.stdout)) as { completed: number; reaped: number };
    });
    expect(summaries.reduce((a, s) => a + s.reaped, 0)).toBeGreaterThanOrEqual(1);
    const { attempts } = checkRun(dir, runId);
    expect(attempts.some((a) => a > 1)).toBe(true);
  }, 180_000);
});
