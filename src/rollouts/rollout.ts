import { randomInt } from 'node:crypto';
import type { RLConfig } from '../config/schema.js';
import { verifyingFamilies } from '../config/sections/rewards.js';
import { orchestrate } from '../orchestrator/coordinator.js';
import { delegationFromConfig } from '../orchestrator/delegation.js';
import type { ToolRunner } from '../orchestrator/types.js';
import { computeRewards } from '../rewards/compute.js';
import { delegationCredit, verifiedQuality } from '../rewards/delegation-credit.js';
import { referenceCheck } from '../rewards/reference-check.js';
import { sampleRecorder, sampleRewards } from '../rewards/samples.js';
import { rewardSpan } from '../rewards/spans.js';
import { StoreBusyError, type Store } from '../store/index.js';
import { EVAL_SOURCE } from '../store/rollouts.js';
import type { Task } from '../tasks/types.js';
import type { RewardInput } from '../trace/records.js';
import { planRollout } from './decide.js';
import { outcomeFromResult } from './outcome.js';
import type { TeamSetup } from './team.js';

export interface RolloutSummary {
  id: string;
  taskId: string;
  status: 'completed' | 'failed' | 'cancelled';
  reward: number | null;
  quality: number | null;
  /** rewards.references off, an evaluation rollout: the final answer against the withheld reference. */
  checked: number | null;
  winner: string | null;
  consensus: boolean;
  rounds: number;
  tokens: number;
  wallMs: number;
  error?: string;
}

export interface RolloutDeps {
  store: Store;
  /** The collect run (null for evaluation rollouts, which belong to an eval run). */
  runId: string | null;
  setup: TeamSetup;
  config: RLConfig;
  tools: ToolRunner;
  signal: AbortSignal;
  /** `collect` (default) or `eval`: evaluation rollouts never become training data. */
  source?: string;
  /** The sampling seed of this orchestration (evaluations pair teams on it). */
  seed?: number;
  /** Extra rollout metadata (e.g. canary: true). */
  metadata?: Record<string, unknown>;
  /**
   * Writes that must land with the rollout's closing row, in its transaction (an evaluation's result): a crash
   * leaves both or neither. Not called for a cancelled rollout.
   */
  onClose?: (summary: RolloutSummary) => void;
}

/** One task through the team: spans written as they happen, then rewards, then the rollout closed. */
export async function runRollout(task: Task, d: RolloutDeps): Promise<RolloutSummary> {
  const { store, setup } = d;
  // Collect draws its decisions from a fresh seed per rollout; an evaluation from the pair's seed.
  const plan = await planRollout({
    task,
    team: setup.team,
    config: d.config,
    policies: setup.policies,
    embedder: setup.embedder,
    seed: d.seed ?? randomInt(2 ** 31),
    signal: d.signal,
  });
  const agents = plan.team.map((a) => a.id);
  const labels = Object.fromEntries(plan.team.map((a) => [a.id, a.label]));
  const { id, insert } = store.rollouts.prepare({
    runId: d.runId,
    taskId: task.id,
    source: d.source,
    resourceSetId: setup.set.id,
    metadata: {
      agents,
      labels,
      prompts: setup.promptVersions,
      weights: setup.weightVersions,
      ...(setup.presenter ? { presenter_prompt: setup.presenter.id } : {}),
      resource_set: { id: setup.set.id, version: setup.set.version },
      category: task.category ?? null,
      ...(d.seed === undefined ? {} : { seed: d.seed }),
      ...(plan.routing ? { routing: plan.routing } : {}),
      ...d.metadata,
    },
  });
  // Batched, but never more than 200 ms behind: a killed collect loses almost nothing of the running rollout.
  // The rollout's row goes with the first batch (no commit of its own).
  const writer = store.spans.writer(id, 64, 200, insert);
  const base = {
    id,
    taskId: task.id,
    reward: null,
    quality: null,
    checked: null,
    winner: null,
    consensus: false,
    rounds: 0,
    tokens: 0,
    wallMs: 0,
  };
  try {
    const recorder = sampleRecorder((s) => writer.add(s));
    for (const s of plan.spans) recorder.add(s);
    const team =
      d.seed === undefined
        ? plan.team
        : plan.team.map((a) => ({ ...a, seed: d.seed! * 1009 + setup.team.findIndex((t) => t.id === a.id) }));
    const result = await orchestrate({
      task: task.prompt,
      team,
      config: d.config.orchestrator,
      sink: { span: recorder.add },
      tools: d.tools,
      signal: d.signal,
      delegation: plan.delegation ?? delegationFromConfig(d.config.orchestrator.delegation),
      ...(plan.stopPolicy ? { stopPolicy: plan.stopPolicy } : {}),
      ...(setup.presenter ? { presenterPrompt: setup.presenter.prompt } : {}),
    });
    const costs = {
      tokens: result.usage.totalTokens,
      toolCalls: result.usage.toolCalls,
      messages: result.usage.llmCalls,
      wallMs: result.wallMs,
    };
    if (result.status === 'cancelled') {
      await store.write(() => {
        writer.flush();
        store.rollouts.finish(id, { status: 'cancelled', error: 'interrupted', ...costs });
      });
      return { ...base, status: 'cancelled', rounds: result.rounds, tokens: costs.tokens, wallMs: result.wallMs };
    }
    const outcome = { ...outcomeFromResult(id, task, agents, result), samples: recorder.samples };
    const scored = await computeRewards(
      { outcome, config: d.config.rewards, judge: setup.judge, signal: d.signal },
      d.config.rewards.weights,
    );
    // Each delegation is credited on its delegate span, after the total (rewards/delegation-credit.ts).
    const verifying = verifyingFamilies(d.config.rewards);
    scored.rewards.push(...delegationCredit(result.delegations ?? [], scored, verifying));
    // Samples are credited on their own spans and stay out of the total.
    const sampleUsage = { judgeTokens: 0, judgeCalls: 0 };
    scored.rewards.push(
      ...(await sampleRewards(id, recorder.samples, task, {
        config: d.config.rewards,
        judge: setup.judge,
        signal: d.signal,
        usage: sampleUsage,
      })),
    );
    const tokens = costs.tokens + scored.judgeTokens + sampleUsage.judgeTokens;
    const summary: RolloutSummary = {
      ...base,
      status: result.status,
      error: result.error,
      reward: scored.total,
      // Correct when any verifying family (exact or numeric match) says so.
      quality: verifiedQuality(scored.byFamily, verifying),
      // only an evaluation's result keeps it (rollouts/measure.ts)
      checked: d.source === EVAL_SOURCE ? await referenceCheck(outcome, d.config.rewards, d.signal) : null,
      winner: result.winner,
      consensus: result.consensus,
      rounds: result.rounds,
      tokens,
      wallMs: result.wallMs,
    };
    // The closing writes (last spans, rewards, the rollout row, the caller's) land together, once the lock is free.
    await store.write(() => {
      writeRewardSpans(writer, scored.rewards);
      writer.flush();
      store.rewards.add(id, scored.rewards);
      store.rollouts.finish(id, {
        status: result.status,
        error: result.error ?? null,
        finalAnswer: result.finalAnswer,
        winner: result.winner,
        totalReward: scored.total,
        ...costs,
        tokens,
      });
      d.onClose?.(summary);
    });
    return summary;
  } catch (err) {
    // A store locked for good cannot record this rollout either: the caller ends the run.
    if (err instanceof StoreBusyError) throw closeWriter(writer, err);
    const status = d.signal.aborted ? 'cancelled' : 'failed';
    const summary: RolloutSummary = {
      ...base,
      status,
      error: d.signal.aborted ? 'interrupted' : (err as Error).message,
    };
    try {
      await store.write(() => {
        writer.flush();
        // A failed closing transaction may have rolled back the rollout's row with its first spans.
        if (!store.rollouts.get(id)) insert();
        store.rollouts.finish(id, { status, error: summary.error! });
        if (status === 'failed') d.onClose?.(summary);
      });
    } catch (closing) {
      throw closeWriter(writer, closing);
    }
    return summary;
  }
}

function closeWriter(writer: { discard(): void }, err: unknown): unknown {
  writer.discard();
  return err;
}

function writeRewardSpans(
  writer: { add: (s: Parameters<Store['spans']['append']>[1][number]) => number },
  rewards: RewardInput[],
): void {
  for (const r of rewards) writer.add(rewardSpan(r));
}
