// Prompt optimization side by side, on the same tasks, seeds, model endpoint and rollout budget:
// our optimizer (`train prompts`) against GEPA (the `gepa` package from PyPI, its default adapter
// optimizing the same system prompt, its task and reflection calls sent to the same local server) and
// against the unoptimized prompt. Both optimizers use the bundled model as the optimizer as well.
//
// Single-prompt case: one agent, its system prompt. Ours gets budget.rollouts = B orchestrations, GEPA
// max_metric_calls = B (one metric call = one task-model call on one example; an orchestration of one
// agent makes two or three calls: answer, vote, presentation). Both select on the same validation tasks
// (train split); every prompt is then evaluated against the unoptimized one on the held-out eval split,
// same tasks and seeds: mean reward (exact + numeric, the metric both optimize) and success with
// paired-bootstrap 95 % CIs (and ours against GEPA's, paired too).
// Team case: three agents with a prompt each and the presenter's prompt, optimized together; the chosen
// candidate against the current prompts on the eval split.
// APO_CASES=single,team picks the cases; APO_GEPA=0 skips GEPA.
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_SYSTEM_PROMPT } from '../dist/config/defaults.js';
import { loadConfig } from '../dist/config/load.js';
import { evaluate } from '../dist/pipeline/evaluate/evaluate.js';
import { trainPrompts } from '../dist/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { loadTasks } from '../dist/tasks/load.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { gepaWorstCaseCalls, runGepa } from './lib/gepa.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { roundInterval as ci, roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SIZES = {
  full: {
    perSuite: 30,
    evalFraction: 0.4,
    val: 6,
    minibatch: 3,
    rounds: 8,
    budget: 60,
    evalN: 20,
    optimizerTokens: 40000,
  },
  quick: {
    perSuite: 6,
    evalFraction: 0.4,
    val: 2,
    minibatch: 2,
    rounds: 1,
    budget: 8,
    evalN: 3,
    optimizerTokens: 4000,
  },
};
const sz = SIZES[args.quick ? 'quick' : 'full'];
const SUITES = ['unit_conversion', 'arithmetic'];
const CASES = (process.env.APO_CASES ?? 'single,team').split(',');
const SEED = 7;

function yaml(kind) {
  const agents =
    kind === 'single'
      ? [['agent_a', 'solver']]
      : [
          ['agent_a', 'solver_a'],
          ['agent_b', 'solver_b'],
          ['agent_c', 'solver_c'],
        ];
  const prompts = [...new Set(agents.map(([, p]) => p))];
  const text = JSON.stringify(DEFAULT_SYSTEM_PROMPT);
  return [
    'prompts:',
    ...prompts.map((p) => `  ${p}: { text: ${text} }`),
    ...(kind === 'team'
      ? ['  presenter: { text: "You present the team\'s final answer: restate the answer the votes chose, briefly." }']
      : []),
    'agents:',
    ...agents.map(
      ([id, p]) =>
        `  - { id: ${id}, model: local, system_prompt: ${p}, tool_mode: text, implicit_answer: true, max_tokens: 96 }`,
    ),
    `orchestrator: { max_rounds: 2, max_action_retries: 1, agent_timeout_s: 300, total_timeout_s: 900${kind === 'team' ? ', presenter_prompt: presenter' : ''} }`,
    'tasks:',
    `  sources: [${SUITES.map((s) => `{ suite: ${s}, n: ${sz.perSuite} }`).join(', ')}]`,
    `  split: { eval_fraction: ${sz.evalFraction} }`,
    'rewards: { weights: { exact: 1, numeric: 1 } }',
    'collect: { concurrency: 2 }',
    `eval: { split: eval, n: ${sz.evalN}, seeds: 1, report: false }`,
    `prompt_opt: { rounds: ${sz.rounds}, val_n: ${sz.val}, minibatch: ${sz.minibatch}, seed: ${SEED}, merge_every: 3, budget: { rollouts: ${sz.budget}, optimizer_tokens: ${sz.optimizerTokens}, wall_min: 240 } }`,
  ].join('\n');
}

function comparison(ev) {
  const m = (name) => ev.comparison.overall.find((x) => x.metric === name);
  const [reward, success, tokens] = [m('reward'), m('success'), m('tokens')];
  return {
    pairs: ev.comparison.pairs,
    measured: ev.measured,
    reused: ev.reused,
    reward: {
      baseline: roundTo(reward?.baseline ?? NaN, 4),
      candidate: roundTo(reward?.candidate ?? NaN, 4),
      diff: ci(reward?.diff),
    },
    success: {
      baseline: roundTo(success?.baseline ?? NaN, 4),
      candidate: roundTo(success?.candidate ?? NaN, 4),
      diff: ci(success?.diff),
    },
    tokensPerTask: { baseline: roundTo(tokens?.baseline ?? NaN, 1), candidate: roundTo(tokens?.candidate ?? NaN, 1) },
  };
}

const apoSummary = (r) => ({
  runId: r.runId,
  status: r.status,
  stopReason: r.stopReason,
  rolloutsSpent: r.spent.rollouts,
  optimizerTokens: r.spent.optimizerTokens,
  wallSeconds: roundTo(r.spent.wallMs / 1000, 1),
  candidates: r.candidates.length,
  proposals: r.proposals.map((p) => `${p.kind}:${p.outcome}`),
  validation: { current: r.baselineMean, best: r.best?.valMean ?? null },
  chosen: r.candidateSet ? r.best.prompts : null,
});

async function runCase(kind) {
  const dir = makeTempDir(`apo-${kind}`);
  fs.writeFileSync(path.join(dir, 'massgen-rl.yaml'), yaml(kind));
  const load = () => loadConfig({ cwd: dir });
  const started = Date.now();
  try {
    const out = { case: kind, sizes: sz, suites: SUITES };
    progress(`${kind}: train prompts (budget ${sz.budget} rollouts)`);
    const ours = await withRuntime(load(), (rt) =>
      trainPrompts(rt, {
        onStep: (p, f, s) =>
          progress(
            `  round ${p.step + 1}: ${p.kind} ${p.outcome} (${p.detail}); best ${f.best} ${roundTo(f.bestMean, 3)}; ${s.rollouts} rollouts`,
          ),
      }),
    );
    out.ours = apoSummary(ours);
    if (kind === 'team') {
      if (ours.candidateSet) {
        progress(`${kind}: eval of the chosen candidate against the current prompts (${sz.evalN} eval tasks)`);
        out.ours.eval = comparison(
          await withRuntime(load(), (rt) => evaluate(rt, { candidate: `set:${ours.candidateSet.version}` })),
        );
      }
      return { ...out, wallSeconds: roundTo((Date.now() - started) / 1000, 1) };
    }
    const oursPrompt = ours.candidateSet ? ours.best.prompts.find((p) => p.name === 'solver') : null;
    if (process.env.APO_GEPA !== '0') {
      out.gepa = await withRuntime(load(), async (rt) => {
        const store = rt.store();
        const state = store.trainingRuns.get(ours.runId).detail;
        const all = new Map(loadTasks(rt.config.tasks, dir).map((t) => [t.id, t]));
        const item = (id) => ({ input: all.get(id).prompt, answer: all.get(id).reference, additional_context: {} });
        const server = await rt.servers.server('local');
        // GEPA checks its budget between iterations only: give it the largest max_metric_calls whose worst case stays within B.
        let calls = sz.budget;
        while (calls > 1 && gepaWorstCaseCalls(calls, sz.minibatch, state.valTasks.length) > sz.budget) calls--;
        progress(
          `${kind}: GEPA (max_metric_calls ${calls}, worst case ${gepaWorstCaseCalls(calls, sz.minibatch, state.valTasks.length)} ≤ ${sz.budget}) on ${server.baseUrl}`,
        );
        const g = await runGepa({
          baseUrl: server.baseUrl,
          model: rt.model('local').model,
          seedPrompt: DEFAULT_SYSTEM_PROMPT,
          trainset: state.poolTasks.map(item),
          valset: state.valTasks.map(item),
          maxMetricCalls: calls,
          seed: SEED,
          reflectionMinibatchSize: sz.minibatch,
          maxTokens: 96,
          reflectionMaxTokens: rt.config.prompt_opt.max_tokens,
        });
        const parent = store.resources.list('prompt').find((r) => r.name === 'solver' && r.version === 1);
        const r =
          g.bestPrompt.trim() === DEFAULT_SYSTEM_PROMPT
            ? parent
            : store.resources.add({
                kind: 'prompt',
                name: 'solver',
                content: g.bestPrompt,
                parentId: parent.id,
                metadata: { source: 'gepa' },
              });
        return {
          version: r.version,
          maxMetricCalls: calls,
          metricCallsUsed: g.metricCallsUsed,
          reflectionCalls: g.reflectionCalls,
          reflectionTokens: g.reflectionTokens,
          taskLmTokens: g.taskLmTokens ?? null,
          wallSeconds: roundTo(g.wallS, 1),
          validation: { seed: g.seedValScore, best: g.bestValScore },
          prompt: g.bestPrompt,
        };
      });
    }
    const evalOf = async (spec, baseline) =>
      comparison(
        await withRuntime(load(), (rt) => evaluate(rt, { candidate: spec, ...(baseline ? { baseline } : {}) })),
      );
    if (oursPrompt) {
      progress(`${kind}: eval ours (solver v${oursPrompt.version}) against the unoptimized prompt`);
      out.ours.eval = await evalOf(`solver@${oursPrompt.version}`);
    }
    if (out.gepa && out.gepa.version !== 1) {
      progress(`${kind}: eval GEPA's (solver v${out.gepa.version}) against the unoptimized prompt`);
      out.gepa.eval = await evalOf(`solver@${out.gepa.version}`);
      if (oursPrompt && oursPrompt.version !== out.gepa.version)
        out.oursVsGepa = await evalOf(`solver@${oursPrompt.version}`, `solver@${out.gepa.version}`);
    }
    return { ...out, wallSeconds: roundTo((Date.now() - started) / 1000, 1) };
  } finally {
    removeTempDir(dir);
  }
}

const results = { benchmark: 'apo', quick: args.quick, cases: [] };
for (const kind of CASES) {
  try {
    results.cases.push(await runCase(kind));
  } catch (err) {
    progress(`${kind}: ${err.stack ?? err.message}`);
    results.cases.push({ case: kind, error: err.message });
  }
}
writeResult(args.out, results);
