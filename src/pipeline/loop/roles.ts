import { roleScopes } from '../../resources/role-variants.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { CycleState, StageContext, StageRecord, StageResult } from '../../scheduler/cycles.js';
import type { EvalSummary } from '../evaluate/evaluate.js';
import { evaluateRoleCredit } from '../evaluate/roles.js';
import { trainRoles, type RoleTrained } from '../train/roles.js';

type RoleRecord = NonNullable<StageRecord<'train'>['roles']>[number];

const record = (r: RoleTrained): RoleRecord => ({
  role: r.role,
  status: r.status,
  ...(r.reason ? { reason: r.reason } : {}),
  ...(r.trainingRunId ? { training_run_id: r.trainingRunId, checkpoint_id: r.checkpointId } : {}),
});

/**
 * The loop's train stage with config `roles`: every role with a weight recipe trains its own line; a role
 * whose run completed before the cycle was interrupted is taken as it is.
 */
export async function trainRolesStage(
  rt: Runtime,
  state: CycleState,
  c: StageContext<'train'>,
): Promise<StageResult<'train'>> {
  const prior = state.stages.train?.roles ?? [];
  const reuse = Object.fromEntries(prior.flatMap((r) => (r.training_run_id ? [[r.role, r.training_run_id]] : [])));
  const done: RoleRecord[] = [];
  const r = await trainRoles(rt, {
    reuse,
    signal: c.signal,
    onStage: c.note,
    onProgress: (p) =>
      c.note(`step ${p.step}${p.totalSteps ? `/${p.totalSteps}` : ''} loss ${p.loss?.toFixed(4) ?? '—'}`),
    onRole: (x) => {
      done.push(record(x));
      c.save({ roles: [...done] });
    },
  });
  const roles = r.roles.map(record);
  if (!r.candidateSet) {
    const why = roles.map((x) => `${x.role}: ${(x.reason ?? '').split('\n')[0]}`).join('; ');
    return { status: 'skipped', reason: `no role was trained (${why})`, roles };
  }
  return { status: 'done', candidate_set: r.candidateSet.id, roles };
}

/**
 * The loop's eval stage with config `roles`: the team's candidate and each changed role's own effect against
 * production. With deploy.role_gates the stage's candidate is what passes per role (production plus those
 * roles), else the team's.
 */
export async function evalRolesStage(
  rt: Runtime,
  candidate: string,
  c: StageContext<'eval'>,
): Promise<StageResult<'eval'>> {
  const credit = await evaluateRoleCredit(rt, {
    candidate,
    roles: roleScopes(rt.config.roles!),
    trigger: 'loop',
    signal: c.signal,
    onStage: c.note,
    onProgress: (p) => c.note(`${p.done}/${p.total} (${p.reused} reused), last ${p.last?.taskId ?? ''}`),
  });
  const all = [credit.team, ...credit.roles.map((r) => r.summary)];
  if (all.some((s) => s?.status === 'cancelled')) throw c.signal.reason ?? new Error('evaluation interrupted');
  const perRole = rt.config.deploy.role_gates;
  const deployable = perRole ? credit.promotable?.summary : credit.team;
  const changed = credit.roles.filter((r) => r.changed);
  const promoted = perRole ? (credit.promotable?.roles ?? []) : credit.team.passed ? changed.map((r) => r.role) : [];
  return {
    ...evalRecord(deployable ?? credit.team),
    passed: deployable?.passed ?? false,
    team_set: credit.team.candidate.id,
    promoted_roles: promoted,
    roles: changed.map((r) => ({
      role: r.role,
      set: r.set,
      eval_run_id: r.summary!.evalRunId,
      passed: r.passed,
      diff: primary(r.summary!)?.diff ?? null,
      failed_gates: r.summary!.gates.filter((g) => !g.passed).map((g) => g.gate),
    })),
    ...(deployable ? {} : { reason: 'no changed role passed the deploy gates on its own effect' }),
  };
}

const primary = (s: EvalSummary) => s.comparison.overall.find((m) => m.metric === s.metric);

/** The eval stage's record of an evaluation: its sets, verdict, primary metric and failed gates. */
export function evalRecord(s: EvalSummary): StageResult<'eval'> {
  const p = primary(s);
  return {
    status: 'done',
    eval_run_id: s.evalRunId,
    candidate_set: s.candidate.id,
    baseline_set: s.baseline.id,
    passed: s.passed,
    metric: s.metric,
    baseline: p?.baseline ?? null,
    candidate: p?.candidate ?? null,
    diff: p?.diff ?? null,
    failed_gates: s.gates.filter((g) => !g.passed).map((g) => g.gate),
  };
}
