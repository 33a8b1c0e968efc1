import { jsonText } from '../../src/store/sql.js';
import { look } from './chaos.js';

/** The store's own consistency: rows that point at rows that are not there. */
const DANGLING: Record<string, string> = {
  'span(s) of no rollout':
    'SELECT COUNT(*) FROM spans s WHERE NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.id = s.rollout_id)',
  'reward(s) of no rollout':
    'SELECT COUNT(*) FROM rewards w WHERE NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.id = w.rollout_id)',
  'set pointer(s) to no set':
    'SELECT COUNT(*) FROM set_pointers p WHERE NOT EXISTS (SELECT 1 FROM resource_sets s WHERE s.id = p.set_id)',
  'checkpoint(s) of no training run': `SELECT COUNT(*) FROM checkpoints c WHERE c.training_run_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM training_runs t WHERE t.id = c.training_run_id)`,
};

/** What must hold after every fault (`final`: and at the end of the run): the violations found (empty when none). */
export function invariants(dir: string, final: boolean, pgUrl?: string): string[] {
  return (
    look(
      dir,
      (db) => {
        const v: string[] = [];
        const n = (sql: string) => Number(db.value(sql));
        if (db.dialect === 'sqlite') {
          const integrity = db.value('PRAGMA integrity_check');
          if (integrity !== 'ok') v.push(`integrity_check: ${String(integrity)}`);
        }
        for (const [what, sql] of Object.entries(DANGLING)) if (n(sql)) v.push(`${n(sql)} ${what}`);
        // No task × seed × set measured twice by evaluations.
        const seed = jsonText(db, 'metadata', 'seed');
        const twice = db.values(
          `SELECT resource_set_id || ' ' || task_id || ' seed ' || ${seed} FROM rollouts
          WHERE source = 'eval' AND status = 'completed' GROUP BY resource_set_id, task_id, ${seed} HAVING COUNT(*) > 1`,
        );
        for (const t of twice) v.push(`measured more than once: ${String(t)}`);
        // Every completed evaluation rollout has its result.
        const orphan = n(`SELECT COUNT(*) FROM rollouts r WHERE source = 'eval' AND status = 'completed'
          AND NOT EXISTS (SELECT 1 FROM eval_results e WHERE e.rollout_id = r.id)`);
        if (orphan) v.push(`${orphan} completed evaluation rollout(s) without a result`);
        // Production and the canary are sets some audited action put there (or the first one, from the config).
        const first = db.value('SELECT id FROM resource_sets ORDER BY version LIMIT 1') as string;
        for (const role of ['production', 'canary']) {
          const set = db.value(`SELECT set_id FROM set_pointers WHERE role = '${role}'`) as string | undefined;
          if (set && set !== first && !n(`SELECT COUNT(*) FROM audit WHERE after_set = '${set}'`))
            v.push(`${role} ${set} has no audit record`);
        }
        // Every completed training run registered its checkpoint (a weight run's; prompt search and bandit
        // runs register none).
        const unregistered = n(`SELECT COUNT(*) FROM training_runs t WHERE status = 'completed'
          AND algo NOT IN ('apo', 'bandit')
          AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.training_run_id = t.id)`);
        if (unregistered) v.push(`${unregistered} completed training run(s) without a checkpoint`);
        // Cycles are numbered on, whatever the clock did.
        const cycle = jsonText(db, 'state', 'cycle');
        const reused = db.values(`SELECT ${cycle} FROM loop_runs GROUP BY ${cycle} HAVING COUNT(*) > 1`);
        for (const c of reused) v.push(`cycle number ${String(c)} used twice`);
        if (final) {
          const open = n("SELECT COUNT(*) FROM loop_runs WHERE status = 'running'");
          if (open) v.push(`${open} cycle(s) still running at the end`);
        }
        return v;
      },
      pgUrl,
    ) ?? []
  );
}
