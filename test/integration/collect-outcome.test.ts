import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { splitOf } from '../../src/tasks/index.js';
import { hasStack, runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const answer42: Script = (req) => {
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42' };
  return shownLabels(req).length ? { content: 'VOTE: agent1 | correct' } : { content: 'ANSWER: 42' };
};

const tasksJsonl = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: `t${i}`, prompt: `What is ${i} + 42 - ${i}?`, reference: '42' }),
  ).join('\n');

function project(baseUrl: string, extra = '', tasks = 3): string {
  return tempDir({
    'massgen-rl.yaml': `models:
  stub: { base_url: "${baseUrl}", model: stub-model, max_retries: 0 }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
collect: { concurrency: 3 }
orchestrator: { agent_timeout_s: 5, total_timeout_s: 30 }
${extra}`,
    'tasks.jsonl': tasksJsonl(tasks),
  });
}

/** A port nothing listens on: connections are refused at once. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

function rolloutStatuses(dir: string): string[] {
  const store = openStore(loadConfig({ cwd: dir }));
  try {
    return store.rollouts.list().map((r) => r.status);
  } finally {
    store.close();
  }
}

describe('collect: the exit code says whether anything succeeded', () => {
  it('exits 1 when every rollout failed, with the reasons counted (JSON: ok false)', { timeout: 60_000 }, async () => {
    const dir = project(`http://127.0.0.1:${await closedPort()}/v1`);
    const json = await runCli(['--json', 'collect', '--split', 'all'], { cwd: dir });
    expect(json.exitCode, json.stderr).toBe(1);
    expect(hasStack(json.stderr)).toBe(false);
    const out = JSON.parse(json.stdout) as {
      ok: boolean;
      completed: number;
      failed: number;
      failureReasons: { error: string; count: number }[];
    };
    expect(out).toMatchObject({ ok: false, completed: 0, failed: 3 });
    expect(out.failureReasons).toHaveLength(1);
    expect(out.failureReasons[0]!.count).toBe(3);
    expect(out.failureReasons[0]!.error).toMatch(/ECONNREFUSED/);
    expect(json.stderr).toMatch(/error: no rollout completed: 3 of 3 failed \(3 × .*ECONNREFUSED/);

    const text = await runCli(['collect', '--split', 'all'], { cwd: dir });
    expect(text.exitCode).toBe(1);
    expect(text.stdout).toMatch(/failed ×3: .*ECONNREFUSED/);
    expect(rolloutStatuses(dir)).toEqual(Array(6).fill('failed'));
  });

  it('exits 0 when some rollouts completed', { timeout: 60_000 }, async () => {
    server = await startScriptedServer((req, i) =>
      i < 2 ? { status: 400, body: { error: { message: 'no' } } } : answer42(req, i),
    );
    const dir = project(server.baseUrl);
    const r = await runCli(['--json', 'collect', '--split', 'all', '--concurrency', '1'], { cwd: dir });
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; completed: number };
    expect(out.ok).toBe(true);
    expect(out.completed).toBeGreaterThan(0);
  });

  it('says when --n asks for more tasks than the split holds, and how to get them', { timeout: 120_000 }, async () => {
    server = await startScriptedServer(answer42);
    const dir = project(server.baseUrl, '', 12);
    const train = Array.from({ length: 12 }, (_, i) => `t${i}`).filter(
      (id) => splitOf(id, 0.2, 'massgen-rl') === 'train',
    ).length;
    expect(train).toBeLessThan(12);
    const r = await runCli(['--json', 'collect', '--n', '12'], { cwd: dir });
    expect(r.exitCode, r.stderr).toBe(0);
    const hint = `--n 12 asks for more tasks than the train split holds (${train}): running ${train}; --split all runs all 12 tasks`;
    expect(JSON.parse(r.stdout)).toMatchObject({
      tasks: train,
      shortfall: { requested: 12, available: train, split: 'train', hint },
    });
    expect(r.stderr).toContain(hint);
    const text = await runCli(['collect', '--n', '12'], { cwd: dir });
    expect(text.stdout).toContain(`note: ${hint}`);
    const fits = await runCli(['--json', 'collect', '--n', String(train)], { cwd: dir });
    expect(JSON.parse(fits.stdout)).toMatchObject({ shortfall: null });
  });

  it(
    'a custom reward command flooding its output fails its rollouts cleanly (none left running)',
    { timeout: 120_000 },
    async () => {
      server = await startScriptedServer(answer42);
      const flood =
        "const b = Buffer.alloc(1 << 20, 'y\\n'); let i = 0; const next = () => { while (i++ < 300) if (!process.stderr.write(b)) return process.stderr.once('drain', next); console.log(1); }; next();";
      const dir = project(
        server.baseUrl,
        `rewards:\n  weights: { exact: 1, custom: 1 }\n  custom: { command: [${JSON.stringify(process.execPath)}, "-e", ${JSON.stringify(flood)}] }\n`,
      );
      const r = await runCli(['--json', 'collect', '--split', 'all'], { cwd: dir, timeoutMs: 100_000 });
      expect(r.exitCode, r.stderr.slice(-2000)).toBe(1);
      expect(hasStack(r.stderr)).toBe(false);
      expect(JSON.parse(r.stdout).failureReasons[0].error).toMatch(
        /custom reward command .* was stopped: it printed more than/,
      );
      expect(rolloutStatuses(dir)).toEqual(['failed', 'failed', 'failed']);
    },
  );
});
