import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { storeDb } from '../../src/store/store.js';
import { configIn, runCli } from '../helpers.js';
import { CANDIDATE_MARK, markTeamYaml } from '../support/report-store.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 30 }, (_, i) =>
  JSON.stringify({ id: `t${i}`, prompt: `What is ${40 + (i % 3)} + ${2 - (i % 3)} (case ${i})?`, reference: '42' }),
).join('\n');

/** A draw in [0, 1) per call seed, task and side: the same seed and task give both sets their own coin. */
const coin = (...parts: unknown[]) => createHash('sha256').update(parts.join('|')).digest().readUInt32BE(0) / 2 ** 32;

/** Production answers right half of the time, the marked candidate `better` of the time, each call on its own coin. */
const chanceScript =
  (better: number): Script =>
  (req) => {
    const system = req.messages[0]?.content ?? '';
    const task = req.messages.find((m) => m.role === 'user')?.content ?? '';
    const marked = system.includes(CANDIDATE_MARK);
    const right = coin(req.seed, task, marked) < (marked ? better : 0.5);
    const answer = right ? '42' : '41';
    if (system.includes('was selected')) return { content: `Final answer: ${answer}` };
    return shownLabels(req).length ? { content: 'VOTE: agent1 | agreed' } : { content: `ANSWER: ${answer}` };
  };

async function run(better: number, sequential: string) {
  server = await startScriptedServer(chanceScript(better));
  const loaded = configIn(
    `${markTeamYaml(server.baseUrl)}
eval: { split: all, seeds: 1, concurrency: 4, report: false, metric: success_rate, sequential: ${sequential} }
deploy: { gates: { min_pairs: 10, min_improvement: 0.02, max_cost_increase: null } }
`,
    { 'tasks.jsonl': TASKS },
  );
  await withRuntime(loaded, (rt) => {
    syncProduction(rt);
    rt.store().resources.add({ kind: 'prompt', name: 'solver', content: `You solve tasks. ${CANDIDATE_MARK}.` });
  });
  const summary = await withRuntime(loaded, (rt) => evaluate(rt, { candidate: 'solver@2' }));
  const measured = await withRuntime(loaded, (rt) =>
    Number(
      (
        storeDb(rt.store())
          .prepare('SELECT COUNT(*) AS n FROM (SELECT DISTINCT set_id, task_id, seed FROM eval_results)')
          .get() as { n: number }
      ).n,
    ),
  );
  return { summary, measured, dir: loaded.paths.baseDir };
}

describe('a sequential evaluation (eval.sequential)', () => {
  it('measures a promising candidate on more seeds until its stricter interval clears 0', async () => {
    const { summary, measured, dir } = await run(0.8, '{ max_looks: 3 }');
    const looks = summary.looks!;
    expect(looks.length).toBeGreaterThan(1);
    expect(looks.map((l) => l.seeds.length)).toEqual(looks.map((_, i) => i + 1));
    // each look's interval is stricter than one look's 95 %; the last decides
    for (const l of looks) expect(l.diff!.level).toBeGreaterThan(0.95);
    expect(looks.slice(0, -1).every((l) => !l.passed)).toBe(true);
    expect(summary.passed).toBe(true);
    expect(looks.at(-1)!.passed).toBe(true);
    const ci = summary.gates.find((g) => g.gate === 'ci_lower_above_zero')!;
    expect(ci.detail).toMatch(new RegExp(`^look ${looks.length} of 3 \\(obrien–fleming spending\\)`));
    expect(summary.seeds).toEqual(looks.at(-1)!.seeds);
    // every task × seed × set measured once
    expect(measured).toBe(30 * looks.length * 2);
    expect(summary.measured).toBe(measured);
    // the CLI on the same project reuses every result and prints the looks
    const cli = await runCli(['eval', '--candidate', 'solver@2', '--no-report'], { cwd: dir });
    expect(cli.exitCode, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/look/);
    expect(cli.stdout).toContain('another look');
    expect(cli.stdout).toMatch(new RegExp(`look ${looks.length} of 3 \\(obrien–fleming spending\\)`));
  }, 120_000);

  it('stops after the first look when the candidate is not promising, and one look is the single test', async () => {
    const worse = await run(0.3, '{ max_looks: 3 }');
    expect(worse.summary.looks!.map((l) => l.passed)).toEqual([false]);
    expect(worse.summary.gates.find((g) => g.gate === 'min_improvement')!.passed).toBe(false);
    expect(worse.measured).toBe(60);

    const once = await run(0.8, '{ max_looks: 1 }');
    expect(once.summary.looks).toBeUndefined();
    expect(once.summary.seeds).toEqual([1]);
    expect(once.summary.gates.find((g) => g.gate === 'ci_lower_above_zero')!.detail).toMatch(/^95 % CI/);
  }, 120_000);
});
