import { roleChanged, withRoles, type RoleScope } from '../../resources/role-variants.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { ResourceSet } from '../../store/index.js';
import { evaluate, type EvalSummary, type EvaluateOptions } from './evaluate.js';

export interface RoleCreditOptions extends EvaluateOptions {
  /** Each role's part of a set, by role name. */
  roles: Readonly<Record<string, RoleScope>>;
}

/** One role's own effect: the baseline plus only that role's new members, against the baseline. */
export interface RoleCredit {
  role: string;
  /** The candidate serves the role differently from the baseline; an unchanged role is not evaluated. */
  changed: boolean;
  /** The leave-one-in set's version (the candidate's own when the role is all that changed). */
  set: number | null;
  summary: EvalSummary | null;
  /** Every deploy gate passes on the role's own effect. */
  passed: boolean | null;
}

export interface RoleCreditSummary {
  /** The whole candidate team against the baseline. */
  team: EvalSummary;
  roles: RoleCredit[];
  /**
   * What a per-role deploy promotes: the baseline plus the roles that passed (null: none did), with its own
   * evaluation against the baseline (the team's or a role's when it is that set, else one more run).
   */
  promotable: { set: number; roles: string[]; summary: EvalSummary } | null;
}

/**
 * Counterfactual credit per role: the candidate team against the baseline, then for each changed role a
 * leave-one-in variant (the baseline with only that role's new adapter, prompt, presenter or policies)
 * against the same baseline on the same tasks and seeds; the baseline's stored results are reused.
 */
export async function evaluateRoleCredit(rt: Runtime, opts: RoleCreditOptions): Promise<RoleCreditSummary> {
  const { roles: scopes, ...evalOpts } = opts;
  const team = await evaluate(rt, evalOpts);
  const store = rt.store();
  const baseline = store.sets.get(team.baseline.id)!;
  const candidate = store.sets.get(team.candidate.id)!;
  const roles: RoleCredit[] = [];
  for (const [role, scope] of Object.entries(scopes)) {
    if (!roleChanged(baseline.members, candidate.members, scope)) {
      roles.push({ role, changed: false, set: null, summary: null, passed: null });
      continue;
    }
    const variant = variantSet(rt, baseline, candidate, [scope], { leave_one_in: role });
    evalOpts.onStage?.(`role ${role}: set v${variant.version} (only its new members) against the baseline`);
    const summary =
      variant.id === candidate.id
        ? team
        : await evaluate(rt, { ...evalOpts, candidate: { setId: variant.id }, baseline: { setId: baseline.id } });
    roles.push({ role, changed: true, set: variant.version, summary, passed: summary.passed });
  }
  const passing = roles.filter((r) => r.passed).map((r) => r.role);
  let promotable: RoleCreditSummary['promotable'] = null;
  if (passing.length) {
    const set = variantSet(
      rt,
      baseline,
      candidate,
      passing.map((r) => scopes[r]!),
      { roles: passing },
    );
    const known = set.id === candidate.id ? team : roles.find((r) => r.set === set.version)?.summary;
    const summary =
      known ?? (await evaluate(rt, { ...evalOpts, candidate: { setId: set.id }, baseline: { setId: baseline.id } }));
    promotable = { set: set.version, roles: passing, summary };
  }
  return { team, roles, promotable };
}

/** The baseline with the candidate's members for these roles, as a stored set (an identical one is reused). */
function variantSet(
  rt: Runtime,
  baseline: ResourceSet,
  candidate: ResourceSet,
  scopes: readonly RoleScope[],
  origin: Record<string, unknown>,
): ResourceSet {
  const members = withRoles(baseline.members, candidate.members, scopes);
  return rt.store().sets.add(members, { kind: 'candidate', ...origin, from: candidate.id }, baseline.id);
}
