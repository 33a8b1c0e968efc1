import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../helpers.js';
import type { CaseOutcome } from './harness.js';
import { SETTINGS } from './settings.js';

interface TargetStats {
  cases: number;
  exitCodes: Record<string, number>;
  stacks: number;
  hangs: number;
  unlocated: number;
  changedOnRefusal: number;
  failed: number;
  /** Summed over the cases (they run `parallel` at a time), and the slowest one. */
  wallMs: number;
  slowestMs: number;
}

export const OUTPUT_DIR = path.join(ROOT, 'test-output');

/** Counts of one fuzz run, per target and in all, printed and written to test-output/fuzz-summary.json. */
export class FuzzStats {
  private readonly targets = new Map<string, TargetStats>();
  private readonly started = performance.now();

  add(outcome: CaseOutcome): void {
    const t = this.targets.get(outcome.target) ?? {
      cases: 0,
      exitCodes: {},
      stacks: 0,
      hangs: 0,
      unlocated: 0,
      changedOnRefusal: 0,
      failed: 0,
      wallMs: 0,
      slowestMs: 0,
    };
    this.targets.set(outcome.target, t);
    const { run, failures } = outcome;
    const code = run.timedOut ? 'hang' : run.signal ? run.signal : String(run.exitCode);
    t.cases++;
    t.exitCodes[code] = (t.exitCodes[code] ?? 0) + 1;
    t.wallMs += run.ms;
    t.slowestMs = Math.max(t.slowestMs, run.ms);
    if (failures.some((f) => f.startsWith('stack'))) t.stacks++;
    if (run.timedOut) t.hangs++;
    if (failures.some((f) => f.startsWith('exit-2 message'))) t.unlocated++;
    if (failures.some((f) => f.startsWith('exit 2 changed'))) t.changedOnRefusal++;
    if (failures.length) t.failed++;
  }

  summary() {
    const total: TargetStats = {
      cases: 0,
      exitCodes: {},
      stacks: 0,
      hangs: 0,
      unlocated: 0,
      changedOnRefusal: 0,
      failed: 0,
      wallMs: 0,
      slowestMs: 0,
    };
    for (const t of this.targets.values()) {
      for (const k of ['cases', 'stacks', 'hangs', 'unlocated', 'changedOnRefusal', 'failed', 'wallMs'] as const)
        total[k] += t[k];
      total.slowestMs = Math.max(total.slowestMs, t.slowestMs);
      for (const [code, n] of Object.entries(t.exitCodes)) total.exitCodes[code] = (total.exitCodes[code] ?? 0) + n;
    }
    const round = (t: TargetStats) => ({ ...t, wallMs: Math.round(t.wallMs), slowestMs: Math.round(t.slowestMs) });
    return {
      seed: SETTINGS.seed,
      requestedCases: SETTINGS.cases,
      only: SETTINGS.only,
      parallel: SETTINGS.parallel,
      caseTimeoutMs: SETTINGS.caseTimeoutMs,
      elapsedMs: Math.round(performance.now() - this.started),
      total: round(total),
      targets: Object.fromEntries([...this.targets].map(([k, t]) => [k, round(t)])),
    };
  }

  /** Prints the summary and writes it to test-output/fuzz-summary.json. */
  write(): void {
    const s = this.summary();
    const line = (name: string, t: TargetStats) =>
      `  ${name.padEnd(12)} ${String(t.cases).padStart(5)} cases  exit ${Object.entries(t.exitCodes)
        .sort()
        .map(([c, n]) => `${c}:${n}`)
        .join(
          ' ',
        )}  stacks ${t.stacks}  hangs ${t.hangs}  unlocated ${t.unlocated}  changed-on-exit-2 ${t.changedOnRefusal}  failed ${t.failed}  slowest ${(t.slowestMs / 1000).toFixed(1)} s`;
    console.log(
      [
        `fuzz summary (seed ${s.seed}, ${(s.elapsedMs / 1000).toFixed(1)} s, ${s.parallel} at a time):`,
        ...Object.entries(s.targets).map(([k, t]) => line(k, t)),
        line('all', s.total),
      ].join('\n'),
    );
    fs.mkdirSync(OUTPUT_DIR, { recursive: true });
    fs.writeFileSync(path.join(OUTPUT_DIR, 'fuzz-summary.json'), `${JSON.stringify(s, null, 2)}\n`);
  }
}
