import { z } from 'zod';

// The decisions and algorithms are declared once, with the config (`thompson` is linear-Gaussian Thompson
// sampling; `beta` is context-free Beta-Bernoulli Thompson sampling).
import { POLICY_ALGORITHMS, POLICY_KINDS, type PolicyAlgorithm, type PolicyKind } from '../config/schema.js';

export { POLICY_ALGORITHMS, POLICY_KINDS, type PolicyAlgorithm, type PolicyKind };

/** Ridge statistics of one arm of a linear policy: A = λI + Σ x xᵀ (d×d), b = Σ r x. */
export interface LinearArmState {
  A: number[][];
  b: number[];
  n: number;
  sum: number;
}

/** Fractional successes and failures of one arm of a `beta` policy (rewards clipped to [0, 1]). */
export interface BetaArmState {
  successes: number;
  failures: number;
  n: number;
}

export type ArmState = LinearArmState | BetaArmState;

export interface PolicySpec {
  format: 1;
  kind: PolicyKind;
  algorithm: PolicyAlgorithm;
  arms: string[];
  /** Feature names; the context dimension is `features.length`. */
  features: string[];
  /** LinUCB confidence width. */
  alpha: number;
  /** Ridge prior: every arm's A starts at λI. */
  lambda: number;
  /** Thompson posterior scale: θ̃ ~ N(θ, noise² A⁻¹). */
  noise: number;
  /** Exploration floor used when deployed. */
  epsilon: number;
  /** One per arm, in the order of `arms`. */
  state: ArmState[];
  trained?: Record<string, unknown>;
}

export const isLinearState = (s: ArmState): s is LinearArmState => 'A' in s;

const count = z.number().min(0);
const linearState = z.object({ A: z.array(z.array(z.number())), b: z.array(z.number()), n: count, sum: z.number() });
const betaState = z.object({ successes: count, failures: count, n: count });

const policySchema = z
  .object({
    format: z.literal(1),
    kind: z.enum(POLICY_KINDS),
    algorithm: z.enum(POLICY_ALGORITHMS),
    arms: z.array(z.string().min(1)).min(1),
    features: z.array(z.string().min(1)),
    alpha: z.number().min(0),
    lambda: z.number().gt(0),
    noise: z.number().min(0),
    epsilon: z.number().min(0).max(1),
    state: z.array(z.unknown()),
    trained: z.record(z.string(), z.unknown()).optional(),
  })
  .superRefine((p, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    if (new Set(p.arms).size !== p.arms.length) issue(['arms'], 'arm names must be distinct');
    if (new Set(p.features).size !== p.features.length) issue(['features'], 'feature names must be distinct');
    const linear = p.algorithm !== 'beta';
    if (linear && !p.features.length) issue(['features'], `a ${p.algorithm} policy needs at least one feature`);
    if (p.state.length !== p.arms.length)
      issue(['state'], `expected one state per arm (${p.arms.length}), got ${p.state.length}`);
    const d = p.features.length;
    p.state.forEach((raw, i) => {
      const parsed = (linear ? linearState : betaState).safeParse(raw);
      if (!parsed.success) {
        for (const is of parsed.error.issues)
          issue(['state', i, ...is.path.map((k) => (typeof k === 'symbol' ? String(k) : k))], is.message);
        return;
      }
      if (!linear) return;
      const s = parsed.data as LinearArmState;
      if (s.A.length !== d) issue(['state', i, 'A'], `expected ${d} rows (one per feature), got ${s.A.length}`);
      s.A.forEach((row, r) => {
        if (row.length !== d) issue(['state', i, 'A', r], `expected ${d} columns (one per feature), got ${row.length}`);
        if (!(row[r]! > 0)) issue(['state', i, 'A', r, r], 'the diagonal must be positive');
      });
      if (s.b.length !== d) issue(['state', i, 'b'], `expected ${d} entries (one per feature), got ${s.b.length}`);
    });
  });

const fieldPath = (path: PropertyKey[]) =>
  path.reduce<string>(
    (acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)),
    '',
  ) || '(policy)';

/** Reads a stored policy (a parsed JSON value, or its JSON text); the error names every bad field. */
export function parsePolicy(json: unknown): PolicySpec {
  let value = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json);
    } catch (e) {
      throw new Error(`invalid policy: not JSON (${(e as Error).message})`);
    }
  }
  const r = policySchema.safeParse(value);
  if (!r.success)
    throw new Error(`invalid policy: ${r.error.issues.map((i) => `${fieldPath(i.path)}: ${i.message}`).join('; ')}`);
  // The arm states were checked against their schema above; parsing again copies them without unknown keys.
  const armSchema = r.data.algorithm === 'beta' ? betaState : linearState;
  return { ...r.data, state: r.data.state.map((s) => armSchema.parse(s)) } as PolicySpec;
}

const sortKeys = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
};

/** Stable JSON: keys sorted at every level, so the same policy always serializes to the same text. */
export function serializePolicy(p: PolicySpec): string {
  return JSON.stringify(sortKeys(p));
}
