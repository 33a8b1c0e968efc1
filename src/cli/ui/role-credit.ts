import type { EvalSummary } from '../../pipeline/evaluate/evaluate.js';
import type { RoleCreditSummary } from '../../pipeline/evaluate/roles.js';
import type { Ui } from './output.js';

const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;

function effect(s: EvalSummary): string {
  const m = s.comparison.overall.find((x) => x.metric === s.metric);
  if (!m?.diff) return '—';
  return `${signed(m.diff.mean)} [${signed(m.diff.low)}, ${signed(m.diff.high)}]`;
}

/** Each role's own effect (its leave-one-in set against the baseline) and what a per-role deploy promotes. */
export function renderRoleCredit(ui: Ui, credit: RoleCreditSummary, roleGates: boolean): void {
  const metric = credit.team.metric;
  ui.print(ui.c.bold(`\nper role: only that role's new members against the baseline (${metric})`));
  ui.table(
    ['role', 'changed', 'set', `Δ ${metric} [95 % CI]`, 'gates', 'failed gates'],
    credit.roles.map((r) => [
      r.role,
      r.changed ? 'yes' : 'no',
      r.set === null ? '—' : `v${r.set}`,
      r.summary ? effect(r.summary) : '—',
      r.passed === null ? '—' : r.passed ? ui.c.green('pass') : ui.c.red('fail'),
      r.summary
        ? r.summary.gates
            .filter((g) => !g.passed)
            .map((g) => g.gate)
            .join(', ') || '—'
        : '—',
    ]),
  );
  const p = credit.promotable;
  if (!roleGates) ui.print('deploy.role_gates is false: deploy promotes the whole candidate when its gates pass');
  else if (!p) ui.print('deploy promotes nothing: no changed role passed the gates on its own effect');
  else ui.print(`deploy promotes set v${p.set}: the baseline with the new members of ${p.roles.join(', ')}`);
}

/** The per-role part of `eval --json`. */
export function roleJson(credit: RoleCreditSummary) {
  return {
    roles: credit.roles.map((r) => ({
      role: r.role,
      changed: r.changed,
      set: r.set,
      passed: r.passed,
      evalRunId: r.summary?.evalRunId ?? null,
      comparison: r.summary?.comparison ?? null,
      gates: r.summary?.gates ?? null,
    })),
    promotable: credit.promotable
      ? { set: credit.promotable.set, roles: credit.promotable.roles, evalRunId: credit.promotable.summary.evalRunId }
      : null,
  };
}
