import { UserError } from '../../errors.js';
import { latestCandidate } from '../../evaluation/candidates.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { CycleState, Stage, StageContext, StageRecord, StageResult } from '../../scheduler/cycles.js';
import type { CapturedCounts } from '../collect/captured.js';
import { collect } from '../collect/collect.js';
import { enqueueCollect } from '../collect/enqueue.js';
import { awaitQueuedRun } from '../collect/queue-runs.js';
import { deploy, latestEvaluation } from '../deploy/deploy.js';
import type { EvalSummary } from '../evaluate/evaluate.js';
import { evaluateRoleCredit } from '../evaluate/roles.js';
import { syncProduction } from '../production-sync.js';
import { trainPrompts } from '../prompt-opt/train-prompts.js';
import { describeReview, reviewProduction } from '../review/review.js';
import { teamRoles } from '../roles.js';
import { trainRoles, type RoleTrained } from '../train/roles.js';

/**
 * What a stage is handed: ids, never command-line text. `prior` is its own record from an interrupted run of
 * the same cycle (what it takes up again); `candidate` the set this cycle's training or prompt optimization made;
 * `evaluation` the eval stage's record.
 */
export interface StageInput<S extends Stage> {
  prior?: StageRecord<S>;
  candidate?: string;
  evaluation?: StageRecord<'eval'>;
}

/** A stage of a cycle: its inputs in, its record out; a stage with nothing to do returns status skipped and why. */
export type CycleStage<S extends Stage> = (
  rt: Runtime,
  input: StageInput<S>,
  c: StageContext<S>,
) => Promise<StageResult<S>>;

const skipped = (reason: string) => ({ status: 'skipped' as const, reason });

/** The candidate the eval stage takes: prompt optimization's when it found one, else training's. */
export function stageInput<S extends Stage>(state: CycleState, stage: S): StageInput<S> {
  const candidate = (['prompt_opt', 'train'] as const)
    .map((s) => state.stages[s])
    .find((s) => s?.status === 'done' && s.candidate_set)?.candidate_set;
  return {
    prior: state.stages[stage] as StageRecord<S> | undefined,
    ...(candidate ? { candidate } : {}),
    ...(state.stages.eval ? { evaluation: state.stages.eval } : {}),
  };
}

export const STAGES: { [S in Stage]: CycleStage<S> } = {
  async collect(rt, { prior }, c) {
    // Captured traffic is taken here: there are no orchestrations to spread over workers.
    if (rt.config.queue.distributed && rt.config.collect.source !== 'gateway') return collectOnWorkers(rt, prior, c);
    const s = await collect(rt, {
      n: rt.config.loop.collect_n,
      signal: c.signal,
      trigger: 'loop',
      onStage: c.note,
      onProgress: (p) =>
        c.note(
          `${p.done}/${p.total} done, ${p.failed} failed, last ${p.last?.taskId ?? ''} reward ${p.last?.reward?.toFixed(2) ?? '—'}`,
        ),
    });
    if (s.status === 'cancelled') throw c.signal.reason ?? new Error('collect interrupted');
    const advanced = s.curriculum?.advanced.map((a) => ({ suite: a.suite, level: a.level, reason: a.reason }));
    return {
      status: 'done',
      run_id: s.runId,
      tasks: s.tasks,
      completed: s.completed,
      failed: s.failed,
      mean_reward: s.meanReward,
      tokens: s.tokens,
      set: s.resourceSet.version,
      ...(s.captured ? { captured: capturedRecord(s.captured) } : {}),
      ...(s.curriculum ? { curriculum: { recorded: s.curriculum.recorded, advanced: advanced! } } : {}),
    };
  },

  async review(rt) {
    const r = await reviewProduction(rt, 'loop');
    const detail = describeReview(r).join('; ');
    const verdicts = { canary: r.canary?.verdict ?? null, watch: r.watch?.verdict ?? null };
    return { status: 'done', ...verdicts, ...(detail ? { detail } : {}) };
  },

  async train(rt, { prior }, c) {
    const canary = !prior?.training_run_id && !prior?.roles?.length && canaryInProgress(rt);
    if (canary) return skipped(waitForCanary(canary.text));
    const { implicit } = teamRoles(rt.config);
    const runs = implicit
      ? prior?.training_run_id && { team: prior.training_run_id }
      : Object.fromEntries(
          (prior?.roles ?? []).flatMap((r) => (r.training_run_id ? [[r.role, r.training_run_id]] : [])),
        );
    const done: RoleRecord[] = [];
    const r = await trainRoles(rt, {
      ...(runs ? { prior: runs } : {}),
      minNewTraces: rt.config.loop.min_new_traces,
      signal: c.signal,
      onStage: c.note,
      onProgress: (p) =>
        c.note(`step ${p.step}${p.totalSteps ? `/${p.totalSteps}` : ''} loss ${p.loss?.toFixed(4) ?? '—'}`),
      onRunStart: (role, runId) =>
        c.save(
          implicit
            ? { training_run_id: runId }
            : { roles: [...done, { role, status: 'running', training_run_id: runId }] },
        ),
      onRole: (x) => {
        done.push(roleRecord(x));
        if (!implicit) c.save({ roles: [...done] });
      },
    });
    if (implicit) return teamRecord(r.roles[0]!, r.candidateSet?.id ?? null);
    const roles = r.roles.map(roleRecord);
    if (!r.candidateSet) {
      const why = roles.map((x) => `${x.role}: ${(x.reason ?? '').split('\n')[0]}`).join('; ');
      return { status: 'skipped', reason: `no role was trained (${why})`, roles };
    }
    return { status: 'done', candidate_set: r.candidateSet.id, roles };
  },

  async prompt_opt(rt, { prior }, c) {
    const canary = !prior?.training_run_id && canaryInProgress(rt);
    if (canary) return skipped(waitForCanary(canary.text));
    const run = prior?.training_run_id ? rt.store().trainingRuns.get(prior.training_run_id) : undefined;
    if (run?.status === 'completed')
      return {
        status: 'done',
        training_run_id: run.id,
        candidate_set: str(run.result?.candidate_set),
        reason: 'taken from the completed prompt-optimization run',
      };
    const r = await trainPrompts(rt, {
      ...(run && run.status !== 'running' ? { resume: run.id } : {}),
      trigger: 'loop',
      signal: c.signal,
      onStage: c.note,
      onRunStart: (runId) => c.save({ training_run_id: runId }),
      onStep: (p, f, spent) =>
        c.note(
          `round ${p.step + 1}: ${p.kind} ${p.outcome}; best ${f.best ?? '—'} ${Number.isFinite(f.bestMean) ? f.bestMean.toFixed(3) : '—'}; ${spent.rollouts} rollouts`,
        ),
    });
    if (r.status === 'cancelled') throw c.signal.reason ?? new Error('prompt optimization interrupted');
    return {
      status: 'done',
      training_run_id: r.runId,
      candidate_set: r.candidateSet?.id ?? null,
      best: r.best?.id ?? null,
      best_mean: r.best?.valMean ?? null,
      baseline_mean: r.baselineMean,
      rollouts: r.spent.rollouts,
      optimizer_tokens: r.spent.optimizerTokens,
      ...(r.candidateSet ? {} : { reason: 'no candidate beat the current prompts' }),
    };
  },

  async eval(rt, input, c) {
    const candidate = input.candidate ?? newestCandidate(rt);
    if (!candidate) return skipped('no new candidate in this cycle');
    const { implicit, scopes } = teamRoles(rt.config);
    const credit = await evaluateRoleCredit(rt, {
      candidate: { setId: candidate },
      roles: scopes,
      trigger: 'loop',
      signal: c.signal,
      onStage: c.note,
      onProgress: (p) =>
        c.note(
          `${p.done}/${p.total} (${p.reused} reused), last ${p.last?.side ?? ''} ${p.last?.taskId ?? ''} reward ${p.last?.reward?.toFixed(2) ?? '—'}`,
        ),
    });
    const all = [credit.team, ...credit.roles.map((r) => r.summary)];
    if (all.some((s) => s?.status === 'cancelled')) throw c.signal.reason ?? new Error('evaluation interrupted');
    if (implicit) return evalRecord(credit.team);
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
  },

  async deploy(rt, { evaluation: ev }) {
    if (!ev || ev.status !== 'done' || !ev.candidate_set) return skipped('nothing was evaluated in this cycle');
    if (ev.roles && !ev.promoted_roles?.length)
      return { status: 'done', action: 'not promoted', reason: ev.reason ?? 'no changed role passed its gates' };
    const candidate = ev.candidate_set;
    const production = syncProduction(rt, 'loop');
    if (production.id === candidate)
      return { status: 'done', action: 'promoted', reason: 'production is this candidate already' };
    if (!rt.config.deploy.auto)
      return { status: 'skipped', action: 'not promoted', reason: 'deploy.auto is false: evaluated and reported only' };
    if (!latestEvaluation(rt, production, candidate))
      return {
        status: 'done',
        action: 'not promoted',
        reason: `production changed since the evaluation (now set v${production.version}); the next cycle evaluates again`,
      };
    const running = canaryInProgress(rt);
    if (running) {
      const reason =
        running.setId === candidate
          ? `this candidate is the canary already (${running.text}): review takes it on from its stage`
          : `a canary is still in its stages (${running.text}): a cycle does not replace a canary in `
            + 'progress; a later cycle evaluates again once review has ended it';
      return { status: 'done', action: 'not promoted', reason };
    }
    const fraction = rt.config.deploy.canary.fraction;
    const r = await deploy(rt, {
      candidate: { setId: candidate },
      trigger: 'loop',
      // a staged rollout always goes through the canary, from its first stage
      ...(rt.config.deploy.rollout ? { canary: true as const } : fraction > 0 ? { canary: fraction } : {}),
    });
    return {
      status: 'done',
      action: r.action,
      audit_id: r.auditId,
      eval_run_id: r.evalRunId,
      gates: r.gates.map((g) => ({ gate: g.gate, passed: g.passed, detail: g.detail })),
    };
  },
};

/** The canary running now (the set and its share of traffic, for people), or null. */
function canaryInProgress(rt: Runtime): { setId: string; text: string } | null {
  const p = rt.store().sets.pointer('canary');
  if (!p) return null;
  const share = Math.round((p.fraction ?? 0) * 100);
  return { setId: p.setId, text: `set v${rt.store().sets.get(p.setId)?.version}, ${share} % of traffic` };
}

/** Why a cycle makes no candidate while a canary runs: it could not deploy it over the canary. */
const waitForCanary = (canary: string) =>
  `a canary is in its stages (${canary}): a candidate made now could not replace it, so this cycle makes none; `
  + 'the first cycle after review has promoted or ended it does';

/** With neither train nor prompt_opt in loop.steps, the newest candidate (as `eval` without --candidate picks it). */
function newestCandidate(rt: Runtime): string | undefined {
  if (rt.config.loop.steps.includes('train') || rt.config.loop.steps.includes('prompt_opt')) return undefined;
  try {
    return latestCandidate(rt.setContext(), syncProduction(rt, 'loop')).id;
  } catch (err) {
    if (err instanceof UserError) return undefined;
    throw err;
  }
}

type RoleRecord = NonNullable<StageRecord<'train'>['roles']>[number];

const roleRecord = (r: RoleTrained): RoleRecord => ({
  role: r.role,
  status: r.status,
  ...(r.reason ? { reason: r.reason } : {}),
  ...(r.trainingRunId ? { training_run_id: r.trainingRunId, checkpoint_id: r.checkpointId } : {}),
});

/** The train stage's record of the implicit role: its run, checkpoint and weights (or why it was skipped). */
function teamRecord(r: RoleTrained, candidate: string | null): StageResult<'train'> {
  if (r.status === 'skipped') return skipped(r.reason!.split('\n')[0]!);
  const run = { training_run_id: r.trainingRunId!, checkpoint_id: r.checkpointId!, candidate_set: candidate };
  if (!r.result) return { status: 'done', ...run, reason: r.reason ?? 'taken from the completed training run' };
  const { weight, steps, metrics } = r.result;
  return {
    status: 'done',
    ...run,
    weights: `${weight.name} v${weight.version}`,
    steps,
    final_loss: typeof metrics.final_loss === 'number' ? metrics.final_loss : null,
  };
}

const primary = (s: EvalSummary) => s.comparison.overall.find((m) => m.metric === s.metric);

/** The eval stage's record of an evaluation: its sets, verdict, primary metric and failed gates. */
function evalRecord(s: EvalSummary): StageResult<'eval'> {
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

/** The collect stage spread over `collect --worker` machines: the run queued once (its id saved), then waited for. */
async function collectOnWorkers(
  rt: Runtime,
  prior: StageRecord<'collect'> | undefined,
  c: StageContext<'collect'>,
): Promise<StageResult<'collect'>> {
  const store = rt.store();
  let runId = prior?.run_id && store.collectRuns.get(prior.run_id) ? prior.run_id : undefined;
  if (!runId) {
    runId = (await enqueueCollect(rt, { n: rt.config.loop.collect_n, trigger: 'loop' })).runId;
    c.save({ run_id: runId });
  }
  const run = await awaitQueuedRun(store, runId, c.signal, c.note);
  const r = (run.result ?? {}) as Partial<Record<'tasks' | 'completed' | 'failed' | 'tokens', number>> & {
    meanReward?: number | null;
  };
  return {
    status: 'done',
    run_id: runId,
    tasks: r.tasks ?? 0,
    completed: r.completed ?? 0,
    failed: r.failed ?? 0,
    mean_reward: r.meanReward ?? null,
    tokens: r.tokens ?? 0,
    on_workers: true,
  };
}

/** A gateway collect's counts as the loop records them: its tasks are sessions, some held back. */
function capturedRecord(c: CapturedCounts) {
  const { taken, heldOut: held_out, waiting, joined, scored, noMajority: no_majority } = c;
  return { taken, held_out, waiting, joined, scored, no_majority };
}

const str = (x: unknown) => (typeof x === 'string' ? x : null);
