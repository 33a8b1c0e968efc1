import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { enqueueCollect } from '../../src/pipeline/collect/enqueue.js';
import { collectWorker } from '../../src/pipeline/collect/worker.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { getSuite } from '../../src/tasks/index.js';
import { suiteLevelOf } from '../../src/tasks/suites/define.js';
import { runCli, tempDir } from '../helpers.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The references of arithmetic's first levels, by prompt: the team answers every task correctly. */
const REFERENCES = new Map(
  ([0, 1] as const).flatMap((difficulty) =>
    getSuite('arithmetic')
      .generate(40, 1, { difficulty })
      .map((t) => [t.prompt, t.reference!] as const),
  ),
);

const solver: Script = (req) => {
  const text = req.messages.map((m) => m.content ?? '').join('\n');
  const right = [...REFERENCES].find(([prompt]) => text.includes(prompt))?.[1] ?? '0';
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: `Final answer: ${right}` };
  return shownLabels(req).length ? { content: 'VOTE: agent1 | agreed' } : { content: `ANSWER: ${right}` };
};

async function project(storeYaml: string) {
  server = await startScriptedServer(solver);
  const yaml = `models:
  stub: { base_url: "${server.baseUrl}", model: stub-model }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
tasks:
  sources: [{ suite: arithmetic, n: 40, seed: 1 }]
  curriculum: { enabled: true, min_tasks: 12, threshold: 0.7, replay: 0.25 }
rewards:
  weights: { exact: 1, numeric: 1 }
collect: { concurrency: 4, n: 12, split: train }
orchestrator: { agent_timeout_s: 10, total_timeout_s: 30 }
${storeYaml}`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml });
  return { dir, loaded: loadConfig({ cwd: dir }) };
}

const levelsOf = (ids: readonly string[]) => ids.map((id) => suiteLevelOf(id)!.level);

describe.each([
  ['SQLite', () => ''],
  ['PostgreSQL', () => `store: { url: "${freshPostgresUrl()}" }`],
])('curriculum collect (%s)', (_name, storeYaml) => {
  it('moves a suite up when production passes the threshold; the next collect draws the next level with replay', async () => {
    const { dir, loaded } = await project(storeYaml());
    const first = await withRuntime(loaded, (rt) => collect(rt));
    expect(first).toMatchObject({ status: 'completed', tasks: 12, correctRate: 1 });
    expect(levelsOf(first.rollouts.map((r) => r.taskId))).toEqual(Array(12).fill(0));
    expect(first.curriculum).toMatchObject({
      recorded: 12,
      advanced: [{ suite: 'arithmetic', fromLevel: 0, level: 1 }],
    });
    expect(first.curriculum!.advanced[0]!.reason).toContain('12/12 correct (100 %) at level 0 ≥ threshold 70 %');

    const second = await withRuntime(loaded, (rt) => collect(rt));
    const levels = levelsOf(second.rollouts.map((r) => r.taskId));
    const replayed = levels.filter((l) => l === 0).length;
    expect(levels.every((l) => l <= 1)).toBe(true);
    expect(replayed).toBeGreaterThanOrEqual(2);
    expect(replayed).toBeLessThanOrEqual(3);
    // Only the current level's results count toward the next move: not yet enough of them.
    expect(second.curriculum).toMatchObject({ recorded: 12 - replayed, advanced: [] });

    const store = openStore(loaded);
    try {
      expect(store.curriculum.levels().get('arithmetic')).toMatchObject({ level: 1, fromLevel: 0 });
      expect(store.curriculum.tally('arithmetic', 1)).toMatchObject({
        trials: 12 - replayed,
        successes: 12 - replayed,
      });
      expect(store.curriculum.tally('arithmetic', 0).trials).toBe(12);
    } finally {
      store.close();
    }

    const json = await runCli(['status', '--json'], { cwd: dir });
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.stdout).curriculum).toEqual([
      expect.objectContaining({ suite: 'arithmetic', level: 1, trials: 12 - replayed, successRate: 1 }),
    ]);
    const text = await runCli(['status'], { cwd: dir });
    expect(text.stdout).toMatch(/curriculum: each suite's level/);
    expect(text.stdout).toMatch(/arithmetic\s*│\s*1\s*│\s*100\.0 %/);
    // A third collect from the CLI, at level 1: its results join the second's, enough now to move up again.
    const third = await runCli(['collect'], { cwd: dir });
    expect(third.exitCode).toBe(0);
    expect(third.stdout).toMatch(/curriculum: \d+ scored result\(s\) of production at the suites' levels/);
    expect(third.stdout).toMatch(
      /curriculum: arithmetic moves up to level 2: \d+\/\d+ correct \(100 %\) at level 1 ≥ threshold 70 %: level 2/,
    );
    const report = await runCli(['report', '--out', 'report.html'], { cwd: dir });
    expect(report.exitCode).toBe(0);
    const html = fs.readFileSync(path.join(dir, 'report.html'), 'utf8');
    expect(html).toContain('<h2>Curriculum</h2>');
    expect(html).toMatch(/<td>arithmetic<\/td><td>2<\/td><td>— \(0\/0\)<\/td>/);
    expect(html).toMatch(/<td>arithmetic<\/td><td>1 → 2<\/td>/);
    expect(html).toMatch(/<td>arithmetic<\/td><td>0 → 1<\/td><td>12\/12 correct \(100 %\) at level 0/);
  });
});

describe('curriculum collect on queue workers', () => {
  it("records the workers' results toward the level, which moves up as in a local collect", async () => {
    const { loaded } = await project(`store: { url: "${freshPostgresUrl()}" }\nqueue: { distributed: true }`);
    const queued = await withRuntime(loaded, (rt) => enqueueCollect(rt));
    expect(queued.tasks).toBe(12);
    const worker = await withRuntime(loaded, (rt) => collectWorker(rt, { concurrency: 4 }));
    expect(worker).toMatchObject({ completed: 12, runsFinished: [queued.runId] });
    const store = openStore(loaded);
    try {
      expect(store.curriculum.tally('arithmetic', 0)).toMatchObject({ trials: 12, successes: 12 });
      expect(store.curriculum.levels().get('arithmetic')).toMatchObject({ level: 1, fromLevel: 0 });
    } finally {
      store.close();
    }
  });
});

describe('curriculum collect across a production change', () => {
  it("counts only the results of the set production is now: an earlier set's do not move the level", async () => {
    const { dir } = await project('');
    const file = path.join(dir, 'massgen-rl.yaml');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('n: 12, split', 'n: 8, split'));
    const first = await withRuntime(loadConfig({ cwd: dir }), (rt) => collect(rt));
    expect(first.curriculum).toMatchObject({ recorded: 8, advanced: [] });
    // a new system prompt makes a new production set: its tally starts at nothing
    fs.appendFileSync(file, 'prompts: { solver: { text: "Solve the task. Reply ANSWER: <number>." } }\n');
    const second = await withRuntime(loadConfig({ cwd: dir }), (rt) => collect(rt));
    expect(second.resourceSet.version).toBeGreaterThan(first.resourceSet.version);
    expect(second.curriculum).toMatchObject({ recorded: 8, advanced: [] });
    const third = await withRuntime(loadConfig({ cwd: dir }), (rt) => collect(rt));
    expect(third.curriculum!.advanced).toEqual([expect.objectContaining({ suite: 'arithmetic', level: 1 })]);
    expect(third.curriculum!.advanced[0]!.reason).toContain('16/16 correct (100 %) at level 0');
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      expect(store.curriculum.tally('arithmetic', 0).trials).toBe(24);
    } finally {
      store.close();
    }
  });
});
