import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { hasStack, runCli, tempDir } from '../helpers.js';
import { smallCycleConfig } from '../support/small-cycle.js';

// One unattended cycle with the real parts, as a user runs it: the bundled model served by our server,
// a real collect, real TRL training on CPU, a real evaluation of base against the new adapter on the
// same tasks and seeds, the deploy gates, the HTML report. Kept small: the point is the machinery. It runs
// without references (rewards.references off), as on traffic that has none: the label-free rewards, and the
// evaluation's check against the references it withheld.
const CONFIG = smallCycleConfig({
  agentTimeoutS: 240,
  totalTimeoutS: 600,
  maxSteps: 2,
  evalN: 2,
  collectN: 3,
  extra: 'rewards: { references: off }',
});

describe('loop --once with the default local model', () => {
  it('runs collect → train → eval → deploy on CPU and ends promoted or not promoted, with the gates and the report', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': CONFIG });
    const r = await runCli(['loop', '--once', '--json'], { cwd: dir, timeoutMs: 1_500_000 });
    expect(hasStack(r.stderr), r.stderr).toBe(false);
    expect(r.exitCode, r.stderr.slice(-3000)).toBe(0);
    const cycle = JSON.parse(r.stdout) as {
      status: string;
      outcome: string;
      stages: Record<string, Record<string, unknown>>;
    };
    expect(cycle.status).toBe('completed');
    expect(cycle.stages.collect).toMatchObject({ status: 'done', tasks: 3 });
    expect(cycle.stages.train).toMatchObject({ status: 'done', weights: 'smollm2-135m-instruct v2' });
    expect(cycle.stages.eval).toMatchObject({ status: 'done', metric: 'reward' });
    expect(cycle.stages.deploy!.status).toBe('done');
    expect(['promoted', 'not promoted']).toContain(cycle.stages.deploy!.action);
    expect(cycle.outcome).toMatch(/^(promoted|not promoted)/);
    expect(fs.existsSync(cycle.stages.eval!.report as string)).toBe(true);

    const loaded = loadConfig({ cwd: dir });
    const store = openStore(loaded);
    try {
      const ev = store.evaluations.run(cycle.stages.eval!.eval_run_id as string)!;
      expect(ev.status).toBe('completed');
      // Base and adapter each ran the 2 eval tasks with seed 1, through two local servers.
      const results = storeDb(store)
        .prepare('SELECT set_id, COUNT(*) AS n FROM eval_results GROUP BY set_id')
        .all() as { set_id: string; n: number }[];
      expect(results.map((x) => x.n)).toEqual([2, 2]);
      // No reward read a reference; the evaluation checked every final answer against the one it withheld.
      const families = storeDb(store).prepare('SELECT DISTINCT family FROM rewards').all() as { family: string }[];
      expect(families.map((f) => f.family).filter((f) => !['agreement', 'coordination'].includes(f))).toEqual([]);
      const checked = storeDb(store).prepare('SELECT checked FROM eval_results').all() as { checked: number }[];
      expect(checked.map((c) => c.checked).every((c) => c === 0 || c === 1)).toBe(true);
      const gates = (ev.summary as { gates: { gate: string }[] }).gates.map((g) => g.gate);
      expect(gates).toContain('reference_check');
      const production = JSON.parse(fs.readFileSync(path.join(loaded.paths.dataDir, 'production.json'), 'utf8')) as {
        set: { id: string };
      };
      expect(production.set.id).toBe(store.sets.pointer('production')!.setId);
      if (cycle.stages.deploy!.action === 'promoted') expect(production.set.id).toBe(ev.candidateSet);
      else expect(production.set.id).toBe(ev.baselineSet);
    } finally {
      store.close();
    }
    const status = await runCli(['loop', 'status', '--json'], { cwd: dir });
    expect(status.exitCode).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: null, cycles: [{ cycle: 1, status: 'completed' }] });
  }, 1_600_000);
});
