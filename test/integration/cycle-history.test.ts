import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { writeReport } from '../../src/pipeline/evaluate/report.js';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { loopStatus } from '../../src/pipeline/loop/schedule.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { loadTasks } from '../../src/tasks/load.js';
import { suiteLevelOf } from '../../src/tasks/suites/define.js';
import { runCli } from '../helpers.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';
import { BACKENDS, freshPostgresUrl } from '../support/postgres.js';
import { shownLabels } from '../support/team.js';

let project: LoopProject | undefined;
afterEach(async () => {
  await project?.server.close();
  project = undefined;
});

/**
 * A trained adapter (model `base-vN`) gives each built-in task its reference, the base a wrong number; agents after
 * the first vote for agent1.
 */
function suiteScript(references: Map<string, string>) {
  return (req: { model: string; messages: { role: string; content?: string | null }[] }) => {
    const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
    const reference = [...references].find(([prompt]) => user.includes(prompt))?.[1];
    const answer = /^base-v\d+$/.test(req.model) && reference !== undefined ? reference : '-999';
    if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: `Final answer: ${answer}` };
    return shownLabels(req as never).length ? { content: 'VOTE: agent1 | agreed' } : { content: `ANSWER: ${answer}` };
  };
}

describe.each(BACKENDS)('the loop watched over cycles (%s)', (backend) => {
  it("shows each suite's success at its level per cycle, the outcome with the refusing gate, and the headroom mix", async () => {
    const references = new Map<string, string>();
    project = await loopProject(suiteScript(references) as never);
    const overrides = [
      'tasks.sources=[{suite: arithmetic, n: 4}]',
      ...(backend === 'postgres' ? [`store.url=${freshPostgresUrl()}`] : []),
    ];
    const loaded = project.load(overrides);
    const tasks = loadTasks(loaded.config.tasks, loaded.paths.baseDir);
    for (const t of tasks) references.set(t.prompt, String(t.reference));
    expect(references.size).toBe(4);
    const level = suiteLevelOf(tasks[0]!.id)!.level;

    // cycle 1: the adapter answers every task, the base none: promoted. Cycle 2: no better than production: refused.
    const first = await withRuntime(loaded, (rt) => runCycle(rt));
    expect(first.outcome).toMatch(/^promoted/);
    const second = await withRuntime(project.load(overrides), (rt) => runCycle(rt));
    expect(second.outcome).toMatch(/^not promoted \(failed gates: .*min_improvement/);

    const status = await withRuntime(project.load(overrides), async (rt) => loopStatus(rt));
    const [c1, c2] = status.history;
    expect(status.history.map((r) => [r.cycle, r.promoted, r.production?.version])).toEqual([
      [1, true, 1],
      [2, false, 2],
    ]);
    expect(c1!.outcome).toBe('promoted');
    expect(c2!.outcome).toMatch(/^refused: .*min_improvement/);
    expect(c2!.refusedBy).toContain('min_improvement');
    expect(c1!.suites).toEqual([{ suite: 'arithmetic', level, pairs: 8, production: 0, candidate: 1, after: 1 }]);
    expect(c2!.suites).toEqual([{ suite: 'arithmetic', level, pairs: 8, production: 1, candidate: 1, after: 1 }]);
    // the base never answered right (nothing to pair on); the promoted adapter always did (nothing left to learn)
    expect(c1!.headroom).toMatchObject({ tasks: 4, never: 4, sometimes: 0, always: 0 });
    expect(c2!.headroom).toMatchObject({ tasks: 4, never: 0, sometimes: 0, always: 4 });

    const sets = overrides.flatMap((o) => ['--set', o]);
    const text = await runCli([...sets, 'loop', 'status'], { cwd: project.dir });
    expect(text.exitCode, text.stderr).toBe(0);
    const table = text.stdout.slice(text.stdout.indexOf("production's success per suite"));
    expect(table).toMatch(new RegExp(`arithmetic\\s*│\\s*L${level} 0 % → 100 %\\s*│\\s*L${level} 100 %`));
    expect(table).toMatch(/headroom: never\/sometimes\/always\s*│\s*4\/0\/0\s*│\s*0\/0\/4/);
    const json = await runCli(['--json', ...sets, 'loop', 'status'], { cwd: project.dir });
    expect(JSON.parse(json.stdout).history).toHaveLength(2);

    const { file } = await withRuntime(project.load(overrides), (rt) => writeReport(rt));
    const html = fs.readFileSync(file, 'utf8');
    expect(html).toContain('data-chart="suites"');
    expect(html).toContain('<h2>Cycle by cycle</h2>');
    expect(html).toContain('never 4 · sometimes 0 · always 0');
  }, 120_000);
});
