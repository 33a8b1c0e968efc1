import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { collect, type CollectSummary } from '../../src/pipeline/collect/collect.js';
import { evaluate, type EvalSummary } from '../../src/pipeline/evaluate/evaluate.js';
import { switchProduction } from '../../src/resources/production-switch.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { startScriptedServer, type Script, type ScriptedServer } from './scripted-server.js';
import { shownLabels } from './team.js';

/** A category name that is also markup: the report must show it as text and never run it. */
export const TRICKY_CATEGORY = 'geo</script><img src=x onerror="window.__pwned=1">&co';
export const TRICKY_REASON = 'gates passed <b>bold</b> & "quoted" </script><script>window.__pwned=2</script>';
export const CANDIDATE_MARK = 'Double-check the arithmetic';

const TASKS = [
  { id: 'mul', prompt: 'What is 6 x 7?', reference: '42', category: 'arithmetic' },
  { id: 'sub', prompt: 'What is 50 - 8?', reference: '42', category: 'arithmetic' },
  { id: 'cap', prompt: 'What is the answer to everything?', reference: '42', category: TRICKY_CATEGORY },
]
  .map((t) => JSON.stringify(t))
  .join('\n');

/** Agents whose system prompt carries the candidate's mark answer 42 (right); the production prompt gets only 6 x 7 right. */
export const markScript: Script = (req) => {
  const system = req.messages[0]?.content ?? '';
  const careful = system.includes(CANDIDATE_MARK);
  const answer = careful || req.messages.some((m) => m.content?.includes('6 x 7')) ? '42' : '41';
  // The careful prompt costs more tokens.
  const usage = { prompt_tokens: careful ? 14 : 10, completion_tokens: 3 };
  if (system.includes('was selected')) return { content: `Final answer: ${answer}`, usage };
  return shownLabels(req).length
    ? { content: 'VOTE: agent1 | agreed', usage }
    : { content: `ANSWER: ${answer}`, usage };
};

/** Two agents on the scripted model at baseUrl, prompt `solver` v1, tasks.jsonl, exact and numeric rewards. */
export function markTeamYaml(baseUrl: string): string {
  return `models:
  stub: { base_url: "${baseUrl}", model: stub-model }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
prompts:
  solver: { text: "You solve tasks." }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1, numeric: 1 }
orchestrator: { agent_timeout_s: 5, total_timeout_s: 30 }`;
}

export interface ReportStore {
  dir: string;
  loaded: LoadedConfig;
  server: ScriptedServer;
  collect: CollectSummary;
  evaluation: EvalSummary;
  trainingRunId: string;
  auditId: number;
  /** Stops the server and removes the project. */
  close(): Promise<void>;
}

/**
 * A real store built through the programmatic API: one collect of production (prompt v1), an evaluation
 * of prompt v2 against it on every task and two seeds, a training run with step metrics, and a switch
 * of production to the candidate recorded in the audit table. In the project's SQLite file, or on
 * PostgreSQL at storeUrl.
 */
export async function buildReportStore(opts: { storeUrl?: string } = {}): Promise<ReportStore> {
  const server = await startScriptedServer(markScript);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-report-'));
  fs.writeFileSync(path.join(dir, 'tasks.jsonl'), TASKS);
  fs.writeFileSync(
    path.join(dir, 'massgen-rl.yaml'),
    `project: { name: demo-team }
${markTeamYaml(server.baseUrl)}
collect: { concurrency: 2, split: all }
eval: { split: all, seeds: 2, concurrency: 2, bootstrap: { resamples: 2000 } }
${opts.storeUrl ? `store: { url: "${opts.storeUrl}" }\n` : ''}`,
  );
  const loaded = loadConfig({ cwd: dir });
  try {
    return await withRuntime(loaded, async (rt) => {
      const collected = await collect(rt);
      const store = rt.store();
      store.resources.add({
        kind: 'prompt',
        name: 'solver',
        content: `You solve tasks. ${CANDIDATE_MARK} before you answer.`,
        metadata: { source: 'manual' },
      });
      const evaluation = await evaluate(rt, { candidate: 'solver@2', split: 'all' });
      const trainingRunId = store.trainingRuns.start(
        { algo: 'grpo', note: 'step metrics written through the store' },
        { algo: 'grpo' },
      );
      const writer = store.trainingMetrics.writer(trainingRunId);
      for (let step = 1; step <= 40; step++)
        writer.add(step, {
          loss: 2 * Math.exp(-step / 12) + 0.1,
          reward: 0.2 + 0.6 * (1 - Math.exp(-step / 10)),
          learning_rate: 1e-5,
        });
      writer.flush();
      store.trainingRuns.finish(trainingRunId, 'completed', { steps: 40 });
      const auditId = switchProduction(store, rt.paths.dataDir, {
        to: store.sets.get(evaluation.candidate.id)!,
        action: 'deploy',
        trigger: 'cli',
        reason: TRICKY_REASON,
        evalRunId: evaluation.evalRunId,
      });
      return {
        dir,
        loaded,
        server,
        collect: collected,
        evaluation,
        trainingRunId,
        auditId,
        close: async () => {
          await server.close();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    });
  } catch (err) {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Two loop cycles on the built-in arithmetic suite, recorded as the loop records them: an evaluation of the
 * candidate prompt against the first one on three level-0 tasks, one cycle that promoted it and one whose gates
 * refused it. The evaluation is newer than `built.evaluation`: pass that one's id to show it.
 */
export async function addSuiteCycles(built: ReportStore): Promise<void> {
  await withRuntime(built.loaded, async (rt) => {
    const e = await evaluate(rt, { baseline: 'solver@1', candidate: 'solver@2', tasks: 'arithmetic@0', n: 3 });
    const store = rt.store();
    const at = Date.now();
    const gates = e.gates.map((g, i) => ({ gate: g.gate, passed: i > 0, detail: g.detail }));
    for (const [cycle, action] of [
      [1, 'promoted'],
      [2, 'not promoted'],
    ] as const) {
      const stages = {
        eval: { status: 'done', started_at: at, eval_run_id: e.evalRunId, passed: action === 'promoted' },
        deploy: { status: 'done', started_at: at, action, gates: action === 'promoted' ? [] : gates },
      };
      const id = store.loopRuns.start({ cycle, started_at: at, resumed: 0, stages: {} });
      store.loopRuns.setDetail(id, { cycle, started_at: at, resumed: 0, stages, outcome: action }, null);
      store.loopRuns.finish(id, 'completed');
    }
  });
}
