import type { RLConfig } from '../../config/schema.js';
import { compare, compareMetric, type Comparison, type MetricName, type Pair } from '../../evaluation/compare.js';
import { forgettingGate, lowerLevels, type LevelComparison } from '../../evaluation/forgetting.js';
import { categoryRule, checkGates, gatesPass, type GateCheck, type GateLook } from '../../evaluation/gates.js';
import { boundaries, confidenceAt } from '../../evaluation/sequential.js';
import type { Interval } from '../../evaluation/stats.js';
import { runPairs, type PairedRunInput } from '../../rollouts/paired.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { EvalResult } from '../../store/index.js';
import type { SuiteLevels } from '../../tasks/curriculum.js';
import { measureOnWorkers } from './queue.js';

/** One look of a sequential evaluation: the seeds measured so far and the primary metric at the look's level. */
export interface EvalLook {
  look: number;
  seeds: number[];
  pairs: number;
  /** The primary metric's difference, its interval at `diff.level` (stricter than one look's when looks > 1). */
  diff: Interval | null;
  passed: boolean;
}

export interface LooksInput extends Omit<PairedRunInput, 'seeds'> {
  evalRunId: string;
  seedsPerLook: number;
  metric: MetricName;
  levels: SuiteLevels | null;
  onStage?: (message: string) => void;
}

export interface LooksResult {
  seeds: number[];
  measured: number;
  reused: number;
  cancelled: boolean;
  pairs: Pair[];
  comparison: Comparison;
  gates: GateCheck[];
  lowerLevels: LevelComparison[] | null;
  looks: EvalLook[];
}

/**
 * Measures baseline and candidate look by look (eval.sequential): each look adds eval.seeds seeds and holds the
 * pairs so far to the gates, ci_lower_above_zero at the look's boundary. Another look is taken only while the
 * candidate is promising and the interval is all that holds it back; a refusal by any other gate is final.
 */
export async function measureLooks(rt: Runtime, input: LooksInput): Promise<LooksResult> {
  const { config } = rt;
  const maxLooks = config.eval.sequential.max_looks;
  const all = { baseline: [] as EvalResult[], candidate: [] as EvalResult[], measured: 0, reused: 0 };
  const looks: EvalLook[] = [];
  let seeds: number[] = [];
  for (let look = 1; ; look++) {
    const added = Array.from({ length: input.seedsPerLook }, (_, i) => (look - 1) * input.seedsPerLook + i + 1);
    seeds = [...seeds, ...added];
    if (config.queue.distributed) {
      await measureOnWorkers(rt, {
        evalRunId: input.evalRunId,
        baseline: input.baseline.set,
        candidate: input.candidate.set,
        tasks: input.tasks,
        seeds: added,
        settingsHash: input.settingsHash,
        signal: input.signal,
        onStage: input.onStage,
      });
    }
    const r = await runPairs({ ...input, seeds: added });
    all.baseline.push(...r.baseline);
    all.candidate.push(...r.candidate);
    all.measured += r.measured;
    all.reused += r.reused;
    const pairs = pairUp(all.baseline, all.candidate);
    const j = judgeLook(config, pairs, look, input.metric, input.levels);
    const passed = !r.cancelled && j.passed;
    looks.push({ look, seeds: [...seeds], pairs: pairs.length, diff: j.diff, passed });
    const { comparison, gates, lowerLevels } = j;
    const done = { seeds, ...all, cancelled: r.cancelled, pairs, comparison, gates, lowerLevels, looks };
    if (passed || r.cancelled || !j.another) return done;
    input.onStage?.(
      `look ${look} of ${maxLooks}: promising but not clear (${describe(j.diff)}); `
        + `${input.seedsPerLook} more seed(s) for both sets`,
    );
  }
}

export interface LookJudgement {
  comparison: Comparison;
  /** The primary metric's difference with its interval at this look's level. */
  diff: Interval | null;
  gates: GateCheck[];
  lowerLevels: LevelComparison[] | null;
  passed: boolean;
  /** Not passed, looks left, and only the interval holds the candidate back: measure more seeds. */
  another: boolean;
}

/** The pairs measured by look `look` (1-based) held to the deploy gates, ci_lower_above_zero at the look's boundary. */
export function judgeLook(
  config: RLConfig,
  pairs: readonly Pair[],
  look: number,
  metric: MetricName,
  levels: SuiteLevels | null,
): LookJudgement {
  const { max_looks: looks, spending } = config.eval.sequential;
  const boot = config.eval.bootstrap;
  const comparison = compare(pairs, boot);
  // One look is the single test: the comparison's own interval, no second bootstrap.
  let diff = comparison.overall.find((m) => m.metric === metric)!.diff;
  let gateLook: GateLook | undefined;
  if (looks > 1) {
    const confidence = confidenceAt(boundaries((1 - boot.confidence) / 2, looks, spending)[look - 1]!);
    diff = compareMetric(pairs, metric, { ...boot, confidence }).diff;
    gateLook = { look, looks, spending, diff };
  }
  const gates = checkGates(comparison, metric, config.deploy.gates, gateLook);
  const lower = levels ? lowerLevels(pairs, levels, boot) : null;
  if (lower) gates.push(forgettingGate(lower, metric, categoryRule(config.deploy.gates)));
  const passed = gatesPass(gates);
  return {
    comparison,
    diff,
    gates,
    lowerLevels: lower,
    passed,
    another: !passed && look < looks && worthAnotherLook(gates),
  };
}

/** Only ci_lower_above_zero (and min_pairs, which more seeds also answer) fails. */
function worthAnotherLook(gates: readonly GateCheck[]): boolean {
  return gates.every((g) => g.passed || g.gate === 'ci_lower_above_zero' || g.gate === 'min_pairs');
}

const describe = (d: Interval | null) =>
  d ? `${d.mean.toFixed(3)}, ${+(d.level * 100).toFixed(2)} % CI [${d.low.toFixed(3)}, ${d.high.toFixed(3)}]` : '—';

function pairUp(baseline: readonly EvalResult[], candidate: readonly EvalResult[]): Pair[] {
  const key = (r: { taskHash: string; seed: number }) => `${r.taskHash}:${r.seed}`;
  const cand = new Map(candidate.map((r) => [key(r), r]));
  return baseline.flatMap((b) => {
    const c = cand.get(key(b));
    return c
      ? [{ taskId: b.taskId, category: b.category ?? 'uncategorized', seed: b.seed, baseline: b, candidate: c }]
      : [];
  });
}
