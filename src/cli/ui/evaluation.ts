import type { EvalSummary } from '../../pipeline/evaluate/evaluate.js';
import type { Ui } from './output.js';

const num = (x: number | null | undefined, d = 3) =>
  x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(d);
const signed = (x: number | null | undefined, d = 3) =>
  x === null || x === undefined || Number.isNaN(x) ? '—' : `${x >= 0 ? '+' : ''}${x.toFixed(d)}`;
/** What a replayed call measures: one answer per side has no consensus, rounds or success. */
const REPLAY_METRICS = new Set(['reward', 'tokens', 'wall_ms']);
const pValue = (p: number) => (p < 0.001 ? '<0.001' : p.toFixed(3));

/** The evaluation as tables: every metric overall, reward and success per category, then the gates. */
export function renderEvaluation(ui: Ui, s: EvalSummary): void {
  const partial = s.status === 'cancelled' ? ui.c.yellow(' (interrupted: partial)') : '';
  const sets = `candidate set v${s.candidate.version} vs baseline set v${s.baseline.version}`;
  const title = `${ui.c.bold(`eval ${s.evalRunId}`)}: ${sets}`;
  if (s.replay) {
    const r = s.replay;
    ui.print(
      `${title} on ${r.prompts} replayed gateway call(s) × ${s.seeds.length} seed(s) (source gateway)${partial}`,
    );
    ui.table(
      [
        'prompts',
        'judged',
        'referenced',
        'win/tie/loss',
        'win rate',
        `${Math.round((r.winRate?.level ?? 0.95) * 100)} % CI`,
        'judge agreement',
        'failures',
      ],
      [
        [
          r.prompts,
          r.judged,
          r.referenced,
          `${r.wins}/${r.ties}/${r.losses}`,
          num(r.winRate?.mean),
          r.winRate ? `[${num(r.winRate.low)}, ${num(r.winRate.high)}]` : '—',
          num(r.agreement),
          `${r.judgeFailures} judge, ${r.answerFailures} answer`,
        ],
      ],
    );
  } else {
    ui.print(
      `${title} on ${s.tasks} task(s) × ${s.seeds.length} seed(s); ${s.measured} orchestration(s) run, ${s.reused} reused${partial}`,
    );
  }
  const level = Math.round((s.comparison.overall[0]?.diff?.level ?? 0.95) * 100);
  const row = (label: string, m: EvalSummary['comparison']['overall'][number]) => [
    label,
    m.n,
    num(m.baseline),
    num(m.candidate),
    signed(m.diff?.mean),
    m.diff ? `[${signed(m.diff.low)}, ${signed(m.diff.high)}]` : '—',
    `${m.counts.wins}/${m.counts.ties}/${m.counts.losses}`,
    `${pValue(m.pValue)} (${m.test})`,
  ];
  const head = ['metric', 'pairs', 'baseline', 'candidate', 'difference', `${level} % CI`, 'win/tie/loss', 'p (exact)'];
  ui.table(
    head,
    s.comparison.overall
      .filter((m) => !s.replay || REPLAY_METRICS.has(m.metric))
      .map((m) => row(m.metric === s.metric ? `${m.metric} *` : m.metric, m)),
  );
  if (s.comparison.categories.length > 1) {
    ui.table(
      ['category', ...head],
      s.comparison.categories.flatMap((c) => c.metrics.map((m) => [c.category, ...row(m.metric, m)])),
    );
  }
  if (s.looks) {
    ui.table(
      ['look', 'seeds', 'pairs', 'difference', 'interval', 'decision'],
      s.looks.map((l, i) => [
        l.look,
        l.seeds.length,
        l.pairs,
        signed(l.diff?.mean),
        l.diff ? `${+(l.diff.level * 100).toFixed(2)} % [${signed(l.diff.low)}, ${signed(l.diff.high)}]` : '—',
        l.passed ? 'passes' : i < s.looks!.length - 1 ? 'another look' : 'refused',
      ]),
    );
  }
  for (const g of s.gates) ui.print(`  ${g.passed ? ui.c.green('✓') : ui.c.red('✗')} ${g.gate}: ${g.detail}`);
  ui.print(
    s.passed
      ? ui.c.green('the candidate passes every deploy gate')
      : ui.c.yellow('the candidate does not pass the deploy gates'),
  );
}
