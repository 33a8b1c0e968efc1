// The deploy gates' error rates from one set measured on the same tasks under several sampling seeds (bench/gates.mjs).
// Each seed is an independent run of the same team, so any two seeds make an A/A comparison: production against
// itself, same settings. A planted regression takes such a comparison and fails every task of one category on the
// candidate's side. The old category rule (a paired-bootstrap CI wholly below 0 per category, no correction) is
// computed beside the current one on the same comparisons.
import { compare } from '../../dist/evaluation/compare.js';
import { checkGates } from '../../dist/evaluation/gates.js';

/** Results by task id, each a map seed → result; tasks missing a seed are left out. */
export function bySeed(results, seeds) {
  const tasks = new Map();
  for (const r of results) {
    const m = tasks.get(r.taskId) ?? new Map();
    m.set(r.seed, r);
    tasks.set(r.taskId, m);
  }
  return [...tasks.values()].filter((m) => seeds.every((s) => m.has(s)));
}

/** Every ordered pair of distinct seeds: the baseline's run and the candidate's. */
export function seedPairs(seeds) {
  return seeds.flatMap((a) => seeds.filter((b) => b !== a).map((b) => [a, b]));
}

/**
 * An A/A comparison with the two runs drawn per task: each task's baseline and candidate are two distinct seeds
 * picked at random for that task. Every call of one run shares its seed's random stream across tasks, so two whole
 * runs on different seeds differ systematically; drawn per task, the two sides are exchangeable task by task.
 */
export function drawnPairs(tasks, seeds, rng) {
  const next = () => rng.next();
  return tasks.map((m) => {
    const a = seeds[Math.floor(next() * seeds.length)];
    const others = seeds.filter((s) => s !== a);
    return pairOf(m, a, others[Math.floor(next() * others.length)]);
  });
}

const pairOf = (m, a, b) => {
  const base = m.get(a);
  return { taskId: base.taskId, category: base.category, seed: 1, baseline: base, candidate: m.get(b) };
};

/** The paired comparison of run `a` (baseline) against run `b` (candidate), task by task. */
export function aaPairs(tasks, a, b) {
  return tasks.map((m) => pairOf(m, a, b));
}

/**
 * The candidate fails every task of `category`: success 0, and the reward of a wrong answer to that task (the
 * lowest any failed run of it got; a task no run failed takes the category's lowest failed reward, else 0).
 */
export function plant(pairs, category, tasks) {
  const failed = (m) => [...m.values()].filter((r) => !r.success).map((r) => r.reward ?? 0);
  const inCategory = tasks.filter((m) => m.values().next().value.category === category);
  const pool = inCategory.flatMap(failed);
  const floor = pool.length ? Math.min(...pool) : 0;
  const wrong = new Map(
    inCategory.map((m) => {
      const own = failed(m);
      return [m.values().next().value.taskId, own.length ? Math.min(...own) : floor];
    }),
  );
  return pairs.map((p) =>
    p.category === category ? { ...p, candidate: { ...p.candidate, success: 0, reward: wrong.get(p.taskId) ?? 0 } } : p,
  );
}

/** The old category rule: any category losing more than the tolerance with its bootstrap CI wholly below 0. */
export function oldCategoryRefuses(cmp, metric, tolerance) {
  return cmp.categories.some((c) => {
    const d = c.metrics.find((m) => m.metric === metric)?.diff;
    return d && d.mean < -tolerance && d.high < 0;
  });
}

/** One comparison held to the gates: which refuse, by the current and the old category rule. */
export function judge(pairs, metric, gates, boot) {
  const cmp = compare(pairs, boot);
  const checks = checkGates(cmp, metric, gates);
  const by = Object.fromEntries(checks.map((c) => [c.gate, c]));
  return {
    promoted: checks.every((c) => c.passed),
    category: !by.max_category_regression.passed,
    categoryOld: oldCategoryRefuses(cmp, metric, gates.max_category_regression),
    cost: by.max_cost_increase ? !by.max_cost_increase.passed : false,
    ciLower: by.ci_lower_above_zero ? by.ci_lower_above_zero.passed : null,
    categories: cmp.categories.map((c) => ({ category: c.category, pairs: c.pairs })),
  };
}

/** k of n with its exact (Clopper–Pearson) 95 % interval. */
export function rate(k, n) {
  const inv = (target, upper) => {
    let lo = 0;
    let hi = 1;
    for (let i = 0; i < 60; i++) {
      const mid = (lo + hi) / 2;
      const tail = upper ? binomCdf(k, n, mid) : 1 - binomCdf(k - 1, n, mid);
      if (upper ? tail > target : tail < target) lo = mid;
      else hi = mid;
    }
    return (lo + hi) / 2;
  };
  return {
    k,
    n,
    rate: n ? k / n : null,
    low: k === 0 ? 0 : inv(0.025, false),
    high: k === n ? 1 : inv(0.025, true),
  };
}

/** P(X ≤ k) for X ~ Binomial(n, p), summed in log space (the terms underflow for n in the hundreds). */
function binomCdf(k, n, p) {
  if (k < 0) return 0;
  if (k >= n || p <= 0) return 1;
  if (p >= 1) return 0;
  let log = n * Math.log1p(-p);
  const logs = [log];
  for (let i = 1; i <= k; i++) {
    log += Math.log((n - i + 1) / i) + Math.log(p / (1 - p));
    logs.push(log);
  }
  const top = Math.max(...logs);
  return Math.min(1, Math.exp(top) * logs.reduce((sum, l) => sum + Math.exp(l - top), 0));
}
