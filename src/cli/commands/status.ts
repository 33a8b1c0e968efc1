import type { SuiteCurriculum } from '../../pipeline/collect/curriculum.js';
import type { CanaryStatus } from '../../pipeline/utilities/status.js';
import type { Register } from '../register.js';
import { formatBytes, formatTime } from '../ui/format.js';
import type { Ui } from '../ui/output.js';

export const registerStatus: Register = (program, ctx) => {
  program
    .command('status')
    .description(
      'store size and counts, latest runs, the production set and where its resources came from, evaluations',
    )
    .action(async () => {
      const { ui, runtime } = ctx();
      const { getStatus } = await import('../../pipeline/utilities/status.js');
      const report = await getStatus(await runtime());
      if (ui.opts.json) return ui.json(report);
      ui.print(`${ui.c.bold(report.project)} — config ${report.config}`);
      if (!report.store) {
        ui.print('store: not created yet (run `massgen-rl doctor --fix` or `massgen-rl collect`)');
        if (report.curriculum) renderCurriculum(ui, report.curriculum);
        return;
      }
      const s = report.store;
      ui.print(`store: ${s.path} (${formatBytes(s.bytes)}, schema v${s.schemaVersion})`);
      ui.table(
        ['table', 'rows'],
        Object.entries(s.counts).map(([k, v]) => [k, v]),
      );
      const statuses = Object.entries(s.rolloutsByStatus)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      if (statuses) ui.print(`rollouts: ${statuses}`);
      const runs = [
        ...report.latest.collect.map((r) => ['collect', r] as const),
        ...report.latest.training.map((r) => ['train', r] as const),
        ...report.latest.loop.map((r) => ['loop', r] as const),
      ];
      if (runs.length)
        ui.table(
          ['run', 'kind', 'status', 'started'],
          runs.map(([k, r]) => [r.id, k, r.status, formatTime(r.startedAt)]),
        );
      const set = report.productionSet;
      if (set) {
        const made = (
          t: {
            name: string;
            version: number;
            source: string;
            trainingRun: { id: string } | null;
            traces: { rollouts: number } | null;
          } | null,
        ) =>
          t
            ? `${t.name} v${t.version} (${t.source}${t.trainingRun ? `, run ${t.trainingRun.id}` : ''}${t.traces ? `, ${t.traces.rollouts} traces` : ''})`
            : 'served elsewhere';
        ui.print(`production: resource set v${set.set.version}`);
        if (report.canary) renderCanary(ui, report.canary);
        ui.table(
          ['agent', 'prompt', 'weights'],
          [
            ...set.agents.map((a) => [a.agent, made(a.prompt), made(a.weights)]),
            ...(set.presenter ? [['(presenter)', made(set.presenter.prompt), "(the winner's)"]] : []),
          ],
        );
      } else {
        ui.print('production: no resource set yet (the first collect, eval or loop creates it from the config)');
      }
      if (report.evaluations.length) {
        ui.table(
          ['evaluation', 'status', 'baseline', 'candidate', 'gates', 'started'],
          report.evaluations.map((e) => [
            e.id,
            e.status,
            e.baseline ? `set v${e.baseline}` : '—',
            e.candidate ? `set v${e.candidate}` : '—',
            e.passed === null ? '—' : e.passed ? 'pass' : 'fail',
            formatTime(e.startedAt),
          ]),
        );
      }
      if (report.curriculum) renderCurriculum(ui, report.curriculum);
    });
};

function renderCurriculum(ui: Ui, suites: SuiteCurriculum[]): void {
  ui.print("curriculum: each suite's level and production's success at it");
  ui.table(
    ['suite', 'level', 'success', 'results', 'since'],
    suites.map((s) => [
      s.suite,
      String(s.level),
      s.successRate === null ? '—' : `${(s.successRate * 100).toFixed(1)} %`,
      `${s.successes}/${s.trials}`,
      s.lastChange ? `${formatTime(s.lastChange.createdAt)} (${s.lastChange.reason})` : 'start_level',
    ]),
  );
}

function renderCanary(ui: Ui, c: CanaryStatus): void {
  const stage = c.stage ? `, stage ${c.stage.stage} of ${c.stage.of}` : '';
  ui.print(
    `canary: set v${c.version} on ${Math.round((c.fraction ?? 0) * 1000) / 10} % of sessions and collects${stage}`,
  );
  const mean = (x: number | null) => (x === null ? '—' : x.toFixed(3));
  ui.table(
    ['arm', 'rollouts', 'gateway sessions', 'rewarded', 'mean reward'],
    (['production', 'canary'] as const).map((arm) => {
      const a = c.arms[arm];
      return [arm, String(a.rollouts), String(a.sessions), String(a.rewarded), mean(a.meanReward)];
    }),
  );
  ui.print(`  since the stage began (${formatTime(c.since)})`);
}
