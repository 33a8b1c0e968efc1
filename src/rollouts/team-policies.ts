import type { PoliciesConfig, PolicyKind } from '../config/schema.js';
import { UserError } from '../errors.js';
import { featureNamesHash, parsePolicy, probabilities, type PolicySpec } from '../policies/index.js';
import type { ResourceSet, Store } from '../store/index.js';
import { Rng } from '../tasks/prng.js';
import type { PolicyDecisionPayload } from '../trace/payloads.js';

/** How decisions are drawn: collect explores (ε floor, UCB/sampling); an evaluation measures the greedy policy. */
export type DecisionMode = 'collect' | 'eval';

interface Loaded {
  id: string;
  version: number;
  spec: PolicySpec;
}

export interface DecisionInput {
  features: number[];
  featureNames: string[];
  /** The arms of this decision, in the order a policy for it is trained on. */
  arms: string[];
  /** The arms open now (default: all). */
  available?: string[];
  seed: number;
  round?: number;
  agent?: string;
}

/**
 * The policies of a resource set, ready to decide: a deployed policy draws from its action distribution;
 * a decision listed in policies.bootstrap with no policy yet is explored uniformly; any other is not taken
 * (the team behaves as it always has). Every decision returns what its `policy_decision` span records.
 */
export class TeamPolicies {
  private constructor(
    private readonly loaded: Map<PolicyKind, Loaded>,
    private readonly bootstrap: Set<PolicyKind>,
    private readonly mode: DecisionMode,
    private readonly epsilon: number,
  ) {}

  static forSet(store: Store, config: PoliciesConfig, set: ResourceSet, mode: DecisionMode): TeamPolicies {
    const loaded = new Map<PolicyKind, Loaded>();
    for (const [kind, id] of Object.entries(set.members.policies ?? {})) {
      const r = store.resources.get(id);
      if (!r || r.kind !== 'policy')
        throw new UserError(`resource set v${set.version} names policy ${id} for ${kind}, which is not in the store`);
      let spec: PolicySpec;
      try {
        spec = parsePolicy(JSON.parse(r.content ?? ''));
      } catch (err) {
        throw new UserError(`policy ${r.name} v${r.version} (${r.id}) cannot be read: ${(err as Error).message}`);
      }
      loaded.set(kind as PolicyKind, { id: r.id, version: r.version, spec });
    }
    // An evaluation measures what is deployed, so nothing is explored there.
    const bootstrap = new Set(mode === 'collect' ? config.bootstrap.filter((k) => !loaded.has(k)) : []);
    return new TeamPolicies(loaded, bootstrap, mode, mode === 'collect' ? config.explore : 0);
  }

  active(kind: PolicyKind): boolean {
    return this.loaded.has(kind) || this.bootstrap.has(kind);
  }

  /** Draws the decision (seeded: the same seed, the same choice) and describes it for the trace. */
  decide(kind: PolicyKind, d: DecisionInput): PolicyDecisionPayload {
    const policy = this.loaded.get(kind);
    const available = d.available ?? d.arms;
    const open = d.arms.map((a) => available.includes(a));
    let probs: number[];
    if (policy) {
      checkCompatible(kind, policy, d);
      const explore = this.mode === 'collect';
      const base = probabilities(policy.spec, d.features, { epsilon: this.epsilon, explore, seed: d.seed });
      probs = d.arms.map((a) => (open[d.arms.indexOf(a)] ? (base[policy.spec.arms.indexOf(a)] ?? 0) : 0));
    } else {
      probs = open.map((o) => (o ? 1 : 0));
    }
    const total = probs.reduce((s, p) => s + p, 0);
    if (!(total > 0)) throw new Error(`${kind} decision: no open arm among ${d.arms.join(', ')}`);
    probs = probs.map((p) => p / total);
    const arm = draw(probs, d.seed);
    return {
      policy: kind,
      policy_id: policy?.id ?? null,
      policy_version: policy?.version ?? null,
      algorithm: policy?.spec.algorithm ?? 'uniform',
      arms: d.arms,
      available,
      chosen: d.arms[arm]!,
      arm,
      propensity: probs[arm]!,
      probabilities: probs,
      epsilon: policy ? this.epsilon : 1,
      explore: this.mode === 'collect',
      feature_names_hash: featureNamesHash(d.featureNames),
      features: d.features,
      seed: d.seed,
      ...(d.round === undefined ? {} : { round: d.round }),
      ...(d.agent === undefined ? {} : { agent: d.agent }),
    };
  }
}

function checkCompatible(kind: PolicyKind, p: Loaded, d: DecisionInput): void {
  const where = `policy ${kind} v${p.version}`;
  if (p.spec.features.join('\n') !== d.featureNames.join('\n')) {
    throw new UserError(
      `${where} was trained on other features (${p.spec.features.length}) than this team computes (${d.featureNames.length})`,
      'train it again on new traces (`massgen-rl train policy ' + kind + '`)',
    );
  }
  const missing = d.arms.filter((a) => !p.spec.arms.includes(a));
  if (missing.length)
    throw new UserError(
      `${where} knows the arms ${p.spec.arms.join(', ')}, not ${missing.join(', ')} (the config changed since it was trained)`,
      `train it again, or deploy a set without it`,
    );
}

function draw(probs: number[], seed: number): number {
  const u = new Rng(seed).next();
  let acc = 0;
  for (let i = 0; i < probs.length; i++) {
    acc += probs[i]!;
    if (u < acc && probs[i]! > 0) return i;
  }
  return probs.findLastIndex((p) => p > 0);
}
