import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { writeReport } from '../../src/pipeline/evaluate/report.js';
import type { ReportData } from '../../src/report/data.js';
import { esc } from '../../src/report/tables.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { configIn, hasStack, runCli } from '../helpers.js';
import { buildReportStore, TRICKY_CATEGORY, TRICKY_REASON, type ReportStore } from '../support/report-store.js';

let built: ReportStore;
beforeAll(async () => {
  built = await buildReportStore();
});
afterAll(async () => {
  await built?.close();
});

/** The data the page carries, read back from its JSON script element. */
function pageData(html: string): ReportData {
  const json = /<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(html)?.[1];
  expect(json, 'the report data element').toBeDefined();
  return JSON.parse(json!) as ReportData;
}

describe('HTML report (real store: collect, evaluation, training metrics, production switch)', () => {
  it('the fixture has a real difference: the candidate prompt answers right, production does not', () => {
    const reward = built.evaluation.comparison.overall.find((m) => m.metric === 'reward')!;
    expect(reward.n).toBe(6);
    expect(reward.candidate!).toBeGreaterThan(reward.baseline!);
    expect(built.collect.completed).toBe(3);
  });

  it('writes one self-contained page to <data_dir>/reports/eval-<id>.html and records it on the evaluation', async () => {
    const { file, evalRunId } = await withRuntime(built.loaded, (rt) => writeReport(rt));
    const id = built.evaluation.evalRunId;
    expect(evalRunId).toBe(id);
    expect(file).toBe(path.join(built.loaded.paths.dataDir, 'reports', `eval-${id}.html`));
    expect(fs.readdirSync(path.dirname(file))).toEqual([`eval-${id}.html`]);
    const recorded = await withRuntime(built.loaded, (rt) => rt.existingStore().evaluations.run(id)!.reportPath);
    expect(recorded).toBe(file);

    const html = fs.readFileSync(file, 'utf8');
    expect(html).not.toMatch(/\s(?:src|href)\s*=\s*["']?\s*(?:https?:)?\/\//i);
    expect(html).not.toMatch(/<script[^>]*\ssrc=/i);
    expect(html).not.toMatch(/<link[^>]*stylesheet/i);
    expect(html).toContain('Chart.js v4');
    expect(html.match(/<canvas /g)).toHaveLength(4);
    expect(html).not.toContain('No data yet');

    const data = pageData(html);
    expect(data.title).toBe('demo-team');
    expect(data.selected?.id).toBe(id);
    expect(data.cycles.source).toBe('runs');
    expect(data.cycles.points.map((p) => p.kind)).toEqual(['collect', 'eval']);
    expect(data.cycles.points[0]!.collect).toBeCloseTo(built.collect.meanReward!);
    const reward = built.evaluation.comparison.overall.find((m) => m.metric === 'reward')!;
    expect(data.cycles.points[1]).toMatchObject({
      baseline: reward.baseline,
      candidate: reward.candidate,
      evalRunId: id,
    });
    const tricky = data.selected!.categories.find((c) => c.category === TRICKY_CATEGORY)!;
    expect(tricky).toMatchObject({ pairs: 2, baseline: expect.any(Number), candidate: expect.any(Number) });
    expect(data.selected!.categories.map((c) => c.category)).toEqual(['all categories', 'arithmetic', TRICKY_CATEGORY]);
    const all = data.selected!.categories[0]!;
    expect(all.low).toBeCloseTo(reward.baseline! + reward.diff!.low);
    expect(all.high).toBeCloseTo(reward.baseline! + reward.diff!.high);
    expect(data.cost).toHaveLength(1);
    expect(data.cost[0]!.tokens.candidate).toBeGreaterThan(0);
    expect(data.cost[0]!.wallS.baseline).toBeGreaterThanOrEqual(0);
    expect(data.training).toHaveLength(1);
    expect(data.training[0]).toMatchObject({ runId: built.trainingRunId, algo: 'grpo', status: 'completed' });
    expect(data.training[0]!.steps).toHaveLength(40);
    expect(data.training[0]!.steps[0]).toMatchObject({ step: 1, loss: expect.any(Number), reward: expect.any(Number) });
    const deploy = data.history.find((h) => h.id === built.auditId)!;
    expect(deploy).toMatchObject({
      action: 'deploy',
      trigger: 'cli',
      evalRunId: id,
      afterSet: built.evaluation.candidate.id,
      afterVersion: built.evaluation.candidate.version,
    });
    expect(deploy.beforeVersion).toBe(built.evaluation.baseline.version);
    expect(data.production).toEqual({ id: built.evaluation.candidate.id, version: built.evaluation.candidate.version });
  });

  it('escapes everything stored: names and reasons appear as text, never as markup', async () => {
    const html = fs.readFileSync((await withRuntime(built.loaded, (rt) => writeReport(rt))).file, 'utf8');
    expect(html).not.toContain(TRICKY_CATEGORY);
    expect(html).not.toContain(TRICKY_REASON);
    expect(html).not.toContain('<img');
    expect(html).toContain(esc(TRICKY_REASON));
    expect(html).toContain(esc(TRICKY_CATEGORY));
    // Only the three script elements close: the data's "</script>" stays inside its JSON string.
    expect(html.match(/<\/script/gi)).toHaveLength(3);
    expect(html).toContain('geo\\u003c/script>\\u003cimg');
  });

  it('draws reward per loop cycle from loop runs when there are some, reading partial states without failing', async () => {
    const dir = fs.mkdtempSync(path.join(built.dir, 'loop-'));
    const evalRunId = built.evaluation.evalRunId;
    const data = await withRuntime(built.loaded, async (rt) => {
      const store = rt.existingStore();
      const done = store.loopRuns.start({
        cycle: 3,
        stages: {
          collect: { status: 'done', run_id: built.collect.runId, mean_reward: 0.4 },
          train: {
            status: 'done',
            training_run_id: built.trainingRunId,
            checkpoint_id: 'ck_x',
            candidate_set: built.evaluation.candidate.id,
          },
          eval: { status: 'done', eval_run_id: evalRunId, passed: true },
          deploy: { status: 'done', action: 'promoted', audit_id: built.auditId },
        },
      });
      store.loopRuns.finish(done, 'completed');
      const partial = store.loopRuns.start({
        cycle: 4,
        stages: { collect: { status: 'done', run_id: built.collect.runId }, train: { status: 'failed' } },
      });
      store.loopRuns.finish(partial, 'failed', undefined, 'no rows');
      store.loopRuns.finish(store.loopRuns.start({ cycle: 'five', stages: 7 }), 'failed');
      const { file } = await writeReport(rt, { out: path.join(dir, 'r.html') });
      return pageData(fs.readFileSync(file, 'utf8'));
    });
    const reward = built.evaluation.comparison.overall.find((m) => m.metric === 'reward')!;
    expect(data.cycles.source).toBe('loop');
    expect(data.cycles.points).toEqual([
      expect.objectContaining({
        label: 'cycle 3',
        collect: 0.4,
        baseline: reward.baseline,
        candidate: reward.candidate,
        evalRunId,
        note: 'promoted',
      }),
      expect.objectContaining({
        label: 'cycle 4',
        collect: built.collect.meanReward,
        baseline: null,
        candidate: null,
        note: 'train failed',
      }),
    ]);
  });

  it('a store without evaluations or training gets report.html with a "no data yet" note for each empty chart', async () => {
    const loaded = configIn('project: { name: empty }\n');
    const result = await withRuntime(loaded, async (rt) => {
      rt.store();
      return writeReport(rt);
    });
    expect(result).toEqual({ file: path.join(loaded.paths.dataDir, 'reports', 'report.html'), evalRunId: null });
    const html = fs.readFileSync(result.file, 'utf8');
    expect(html).not.toContain('<canvas');
    expect(html.match(/data-empty="/g)).toHaveLength(4);
    expect(pageData(html)).toMatchObject({
      selected: null,
      cost: [],
      training: [],
      history: [],
      cycles: { points: [] },
    });
  });

  it('an unknown --eval or a missing store is an input error', async () => {
    await expect(withRuntime(built.loaded, (rt) => writeReport(rt, { evalRunId: 'ev_nope' }))).rejects.toThrow(
      UserError,
    );
    await expect(withRuntime(built.loaded, (rt) => writeReport(rt, { evalRunId: 'ev_nope' }))).rejects.toThrow(
      /no such evaluation.*\n?/,
    );
    await expect(withRuntime(configIn(''), (rt) => writeReport(rt))).rejects.toThrow(UserError);
  });

  it('massgen-rl report prints the path (--json: file and evaluation); eval writes and names its report', async () => {
    const json = await runCli(['report', '--json'], { cwd: built.dir });
    expect(json.exitCode, json.stderr).toBe(0);
    const id = built.evaluation.evalRunId;
    expect(JSON.parse(json.stdout)).toEqual({
      file: path.join(built.loaded.paths.dataDir, 'reports', `eval-${id}.html`),
      evalRunId: id,
    });

    const out = await runCli(['report', '--eval', id, '-o', 'out/mine.html'], { cwd: built.dir });
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.stdout.trim()).toBe(path.join(built.dir, 'out', 'mine.html'));
    expect(fs.readFileSync(path.join(built.dir, 'out', 'mine.html'), 'utf8')).toContain(`Evaluation ${id}`);

    const bad = await runCli(['report', '--eval', 'ev_nope'], { cwd: built.dir });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--eval ev_nope: no such evaluation');
    expect(hasStack(bad.stderr)).toBe(false);

    // Production is the candidate now, so prompt v1 is the one to evaluate.
    const ev = await runCli(['eval', '--candidate', 'solver@1', '--json'], { cwd: built.dir });
    expect(ev.exitCode, ev.stderr).toBe(0);
    const summary = JSON.parse(ev.stdout) as { evalRunId: string; report: string; measured: number; reused: number };
    expect(summary.measured + summary.reused).toBe(12);
    expect(summary.report).toBe(path.join(built.loaded.paths.dataDir, 'reports', `eval-${summary.evalRunId}.html`));
    expect(fs.readFileSync(summary.report, 'utf8')).toContain(`Evaluation ${summary.evalRunId}`);
  });
});
