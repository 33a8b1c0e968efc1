import { errorMessage, UserError } from '../../errors.js';
import { compare, type Pair } from '../../evaluation/compare.js';
import { checkGates, gatesPass } from '../../evaluation/gates.js';
import type { JudgeCall } from '../../evaluation/pairwise.js';
import { replayItems } from '../../evaluation/replay-items.js';
import { replayPair, replayTally, scoreItem, type ScoredItem } from '../../evaluation/replay-score.js';
import { checkTeamInputs, setupTeam } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import { pool } from '../../util/pool.js';
import { ask, itemDetail, pick } from './replay-calls.js';
import { describeSet, evalSets, seedList, type EvalSummary, type EvaluateOptions } from './sets.js';

/**
 * eval.source gateway: the held-out captured calls (gateway.holdout) sent again, on the same seeds, to the
 * models as the baseline and as the candidate serve them; each pair scored against its task's reference or
 * by the position-swapped judge, and compared like task evaluations (gates, report).
 */
export async function evaluateReplay(rt: Runtime, opts: EvaluateOptions): Promise<EvalSummary> {
  const started = performance.now();
  const { config } = rt;
  const e = config.eval;
  if (opts.tasks !== undefined || opts.split !== undefined)
    throw new UserError('--tasks and --split choose tasks; a replay (--source gateway) replays captured calls instead');
  const seeds = seedList(opts.seeds ?? e.seeds);
  checkTeamInputs(rt);
  const store = rt.store();
  rt.followTelemetry(opts.onStage);
  const { baseline, candidate } = evalSets(rt, opts);
  // A call names its config model (through the gateway) or the name its server answers to (received as spans).
  const configModel = (name: string) =>
    config.models[name] ? name : (Object.keys(config.models).find((k) => config.models[k]!.model === name) ?? name);
  const agentOf = (call: { model: string; agent: string | null }) => {
    const model = configModel(call.model);
    return (
      config.agents.find((a) => a.id === call.agent && a.model === model)
      ?? config.agents.find((a) => a.model === model)
    );
  };
  // The gateway serves a set's weights, not its prompts: only calls whose weights differ between the sets compare.
  const differs = (call: { model: string; agent: string | null }) => {
    const a = agentOf(call);
    return !!a && baseline.members.agents[a.id]?.weights !== candidate.members.agents[a.id]?.weights;
  };
  const max = opts.n ?? e.replay.max_prompts;
  const items = replayItems(store, { holdout: config.gateway.holdout, max, replayable: differs });
  if (!items.length) {
    const sets = `the baseline (set v${baseline.version}) and the candidate (set v${candidate.version})`;
    throw new UserError(
      `no held-out captured call to replay: none of the gateway's held-out sessions (gateway.holdout `
        + `${config.gateway.holdout}) has a call to a model whose weights differ between ${sets}`,
      'capture traffic with `massgen-rl gateway`; a candidate that changes prompts only is evaluated with '
        + '--source tasks',
    );
  }
  const judgeName = e.replay.judge_model ?? config.rewards.judge.model;
  if (!judgeName && items.some((i) => !i.task))
    throw new UserError(
      'eval.replay.judge_model: captured calls without a reference are compared by a judge; '
        + 'name its config model (or set rewards.judge.model)',
    );
  if (judgeName) rt.checkModel(judgeName);
  opts.onStage?.(`starting the baseline (set v${baseline.version}) and candidate (set v${candidate.version}) models`);
  const [baseTeam, candTeam] = [await setupTeam(rt, baseline, 'eval'), await setupTeam(rt, candidate, 'eval')];
  const signal = opts.signal ?? new AbortController().signal;
  const judge: JudgeCall | undefined = judgeName
    ? {
        client: await rt.client(judgeName, { logprobs: false }),
        model: rt.model(judgeName).model,
        attempts: 1 + config.rewards.judge.max_retries,
        signal,
      }
    : undefined;
  const params = {
    source: 'gateway',
    holdout: config.gateway.holdout,
    max_prompts: max,
    prompts: items.length,
    seeds,
    temperature: e.replay.temperature,
    judge_model: judgeName ?? null,
  };
  const evalRunId = store.evaluations.startRun(baseline.id, candidate.id, params, opts.trigger ?? 'cli');
  const jobs = items.flatMap((item) => seeds.map((seed) => ({ item, seed })));
  opts.onStage?.(`replaying ${items.length} captured call(s) × ${seeds.length} seed(s) (eval ${evalRunId})`);
  try {
    const ids = { baselineSet: baseline.id, candidateSet: candidate.id, evalRunId };
    const pairs: Pair[] = [];
    const scored: ScoredItem[] = [];
    let answerFailures = 0;
    let done = 0;
    const one = async ({ item, seed }: (typeof jobs)[number], idx: number) => {
      const agent = agentOf(item)!;
      const [b, c] = await Promise.all([
        ask(pick(baseTeam, agent.id), item, seed, e.replay.temperature, signal),
        ask(pick(candTeam, agent.id), item, seed, e.replay.temperature, signal),
      ]);
      const s = await scoreItem(item, b, c, {
        rewards: config.rewards,
        rewardJudge: baseTeam.judge,
        judge,
        signal,
      });
      done++;
      if (!s) {
        answerFailures++;
        return;
      }
      scored.push(s);
      pairs.push(replayPair(item, seed, s, { baseline: b, candidate: c }, ids));
      store.evaluations.addItem({
        evalRunId,
        idx,
        kind: s.kind,
        rolloutId: item.rolloutId,
        spanSeq: item.seq,
        seed,
        taskId: item.task?.id ?? null,
        score: s.score,
        baselineValue: s.baselineValue,
        candidateValue: s.candidateValue,
        agreed: s.agreed,
        detail: itemDetail(item, agent.id, s, b, c),
      });
      opts.onProgress?.({
        done,
        total: jobs.length,
        measured: done,
        reused: 0,
        last: { side: 'candidate', taskId: `${item.rolloutId}#${item.seq}`, reward: s.score },
      });
    };
    // a call cut short by the cancel ends quietly: the run is reported cancelled
    await pool(jobs, opts.concurrency ?? e.concurrency ?? config.collect.concurrency, signal, (job, idx) =>
      one(job, idx).catch((err: unknown) => {
        if (!signal.aborted) throw err;
      }),
    );
    const cancelled = signal.aborted;
    pairs.sort((x, y) => x.taskId.localeCompare(y.taskId) || x.seed - y.seed);
    const comparison = compare(pairs, e.bootstrap);
    const gates = checkGates(comparison, 'reward', config.deploy.gates);
    const tally = replayTally(scored, e.bootstrap);
    const summary: EvalSummary = {
      evalRunId,
      status: cancelled ? 'cancelled' : 'completed',
      source: 'gateway',
      baseline: describeSet(rt, baseline),
      candidate: describeSet(rt, candidate),
      tasks: items.length,
      seeds,
      measured: done,
      reused: 0,
      metric: 'reward',
      comparison,
      gates,
      passed: !cancelled && gatesPass(gates),
      wallMs: performance.now() - started,
      replay: { prompts: items.length, ...tally, answerFailures, judgeModel: judgeName ?? null },
    };
    store.evaluations.finishRun(evalRunId, summary.status, summary as unknown as Record<string, unknown>);
    return summary;
  } catch (err) {
    store.evaluations.finishRun(evalRunId, 'failed', null, errorMessage(err));
    throw err;
  }
}
