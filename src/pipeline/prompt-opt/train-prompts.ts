import type { RLConfig } from '../../config/schema.js';
import { NotEnoughData, UserError } from '../../errors.js';
import { settingsHash, taskHash } from '../../evaluation/keys.js';
import { rolloutDigest } from '../../rollouts/rollout-digest.js';
import { scoreBatch } from '../../rollouts/score-batch.js';
import { checkTeamInputs, setupTeam, type TeamSetup } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { ResourceSet } from '../../store/index.js';
import { tasksForRun } from '../../tasks/for-run.js';
import { Rng } from '../../tasks/prng.js';
import type { Task } from '../../tasks/types.js';
import { createToolRunner } from '../../tools/runner.js';
import { syncProduction } from '../production-sync.js';
import { components, materialize, servedPrompt } from './components.js';
import { findPromptOptRun, newPromptOptState } from './run.js';
import { frontOf, search, valScores } from './search.js';
import type { PromptOptState, CandidateRecord, ProposalRecord } from './state.js';
import { summarize, type PromptOptResult } from './summary.js';

export type { PromptOptResult } from './summary.js';

export interface PromptOptOptions {
  /** The search's settings instead of config `prompt_opt` (a role's apo recipe, with its agents' prompts). */
  settings?: RLConfig['prompt_opt'];
  /** Continue a stopped run (true: the newest one). */
  resume?: boolean | string;
  trigger?: 'cli' | 'loop';
  signal?: AbortSignal;
  onStage?: (message: string) => void;
  /** Called with the run's id as soon as it is recorded (the loop keeps it to resume the run). */
  onRunStart?: (runId: string) => void;
  onStep?: (
    p: ProposalRecord,
    front: { best: string | null; bestMean: number; size: number },
    spent: PromptOptResult['spent'],
  ) => void;
}

/**
 * `train prompts`: optimizes the team's prompts together (each agent's system prompt and the
 * presenter's), GEPA-style: reflective mutations written by an optimizer model from traces (with the
 * vote reasons other agents gave) and merges, accepted on a minibatch, kept on a Pareto front over a
 * validation batch of real orchestrations with fixed tasks and seeds, within hard budgets, resumable.
 */
export async function trainPrompts(rt: Runtime, opts: PromptOptOptions = {}): Promise<PromptOptResult> {
  const { config } = rt;
  const a = opts.settings ?? config.prompt_opt;
  const comps = components(config, a.prompts);
  const optimizerModel = a.optimizer_model ?? config.agents[0]!.model;
  checkTeamInputs(rt);
  rt.checkModel(optimizerModel);
  const tasks = Rng.fromKey(`apo-tasks:${a.seed}`).shuffle(
    tasksForRun(config.tasks, rt.paths.baseDir, { split: 'train' }),
  );
  if (tasks.length < 2)
    throw new NotEnoughData(
      `prompt optimization needs at least 2 train-split tasks; tasks.sources give ${tasks.length}`,
      'add tasks or lower tasks.split.eval_fraction',
    );
  const store = rt.store();
  const started = Date.now();
  const resumed = opts.resume ? findPromptOptRun(store, opts.resume) : undefined;
  const production = syncProduction(rt, opts.trigger ?? 'cli');
  let runId: string;
  let state: PromptOptState;
  if (resumed) {
    ({ runId, state } = resumed);
    store.trainingRuns.reopen(runId);
  } else {
    const val = tasks.slice(0, Math.min(a.val_n, tasks.length - 1));
    state = newPromptOptState(store, production, comps, {
      valTasks: val.map((t) => t.id),
      poolTasks: tasks.slice(val.length).map((t) => t.id),
      seeds: Array.from({ length: a.seeds }, (_, i) => i + 1),
      metric: config.eval.metric === 'success_rate' ? 'success' : 'reward',
      budget: a.budget,
    });
    state.candidates.push({
      id: 'c0',
      setId: production.id,
      prompts: Object.fromEntries(comps.map((c) => [c.name, servedPrompt(production, c)])),
      parents: [],
      edited: null,
      critique: null,
    });
    runId = store.trainingRuns.start(state as unknown as Record<string, unknown>, { algo: 'apo' });
  }
  opts.onRunStart?.(runId);
  const base = store.sets.get(state.baseSet)!;
  // Hashed once: every candidate is scored on these tasks.
  const byId = new Map<string, { task: Task; hash: string }>(tasks.map((t) => [t.id, { task: t, hash: taskHash(t) }]));
  const missing = [...state.valTasks, ...state.poolTasks].filter((id) => !byId.has(id));
  if (missing.length)
    throw new UserError(
      `run ${runId} was started on tasks the config no longer yields (${missing.slice(0, 3).join(', ')}…)`,
      'resume it with the config it was started with, or start a new run',
    );
  store.tasks.upsertMany(tasks);
  const wallBefore = state.spent.wallMs;
  const save = () => {
    state.spent.wallMs = wallBefore + (Date.now() - started);
    store.trainingRuns.setDetail(runId, state as unknown as Record<string, unknown>);
  };
  let rolloutsSpent = store.rollouts.countTagged('apo_run', runId);
  const interrupted = opts.signal ?? new AbortController().signal;
  const signal = AbortSignal.any([
    interrupted,
    AbortSignal.timeout(Math.max(1, state.budget.wallMs - state.spent.wallMs)),
  ]);
  const teams = new Map<string, TeamSetup>();
  const team = async (set: ResourceSet) => {
    if (!teams.has(set.id)) {
      const s = await setupTeam(rt, set, 'eval');
      // Each decision once, as evaluations ask it: extra samples are for training.
      teams.set(set.id, { ...s, team: s.team.map((x) => ({ ...x, samples: 1 })) });
    }
    return teams.get(set.id)!;
  };
  const tools = createToolRunner(config.tools, rt.paths.baseDir);
  const settings = settingsHash(config);
  const score = async (c: CandidateRecord, ids: readonly string[]) => {
    const set = store.sets.get(c.setId)!;
    const r = await scoreBatch({
      store,
      config,
      tools,
      setup: await team(set),
      tasks: ids.map((id) => byId.get(id)!),
      seeds: state.seeds,
      settingsHash: settings,
      evalRunId: state.evalRunId,
      concurrency: a.concurrency ?? config.collect.concurrency,
      signal,
      claim: () => rolloutsSpent < state.budget.rollouts && ++rolloutsSpent > 0,
      metadata: { apo_run: runId, apo_candidate: c.id },
    });
    // Keyed by task id and seed, the same on every candidate.
    return r.complete ? r.results : null;
  };
  const spent = () => ({
    rollouts: rolloutsSpent,
    optimizerTokens: state.spent.optimizerTokens + state.inFlightTokens,
    wallMs: wallBefore + (Date.now() - started),
  });
  try {
    const seed = state.candidates[0]!;
    if (!seed.val) {
      opts.onStage?.(
        `scoring the current prompts on ${state.valTasks.length} validation task(s) × ${state.seeds.length} seed(s)`,
      );
      const scores = await score(seed, state.valTasks);
      if (scores) seed.val = valScores(state.metric, scores);
      else if (!interrupted.aborted)
        Object.assign(state, {
          done: true,
          stopReason: signal.aborted ? 'wall-time budget spent' : 'budget spent while scoring the current prompts',
        });
      save();
    }
    const client = await rt.client(optimizerModel, { logprobs: false });
    const optimizer = rt.model(optimizerModel);
    const edit = a.edit === 'auto' ? (optimizer.local?.weights.startsWith('builtin:') ? 'advice' : 'rewrite') : a.edit;
    await search({
      store,
      state,
      seed: a.seed,
      edit,
      rounds: a.rounds,
      minibatch: a.minibatch,
      examples: a.examples,
      mergeEvery: a.merge_every,
      maxPromptChars: a.max_prompt_chars,
      optimizer: { client, model: optimizer.model, maxTokens: a.max_tokens, temperature: a.temperature },
      signal,
      interrupted,
      score,
      digest: (r) => (r.rolloutId ? rolloutDigest(store, r.rolloutId, byId.get(r.taskId)!.task, config.rewards) : null),
      text: (id) => store.resources.get(id)?.content ?? '',
      create: (input) => {
        const id = `c${state.candidates.length}`;
        const m = materialize(store, config, base, state.components, { runId, candidateId: id, ...input });
        const rec: CandidateRecord = {
          id,
          setId: m.set.id,
          prompts: m.prompts,
          parents: input.parents,
          edited: input.edited,
          critique: input.critique,
        };
        state.candidates.push(rec);
        save();
        return rec;
      },
      save,
      onStep: (p, f) => opts.onStep?.(p, f, spent()),
    });
  } catch (err) {
    save();
    // Interrupted during a call (the optimizer's): stopped like anywhere else, resumable.
    if (!interrupted.aborted) {
      store.trainingRuns.finish(runId, 'failed', undefined, (err as Error).message);
      throw err;
    }
  }
  save();
  if (interrupted.aborted) {
    store.trainingRuns.finish(
      runId,
      'cancelled',
      undefined,
      'interrupted: resume with `massgen-rl train prompts --resume`',
    );
    return summarize(store, runId, state, frontOf(state), spent(), 'cancelled');
  }
  return summarize(store, runId, state, frontOf(state), spent(), 'completed');
}
