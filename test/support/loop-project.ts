import path from 'node:path';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { FIXTURES, tempDir } from '../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from './scripted-server.js';
import { shownLabels } from './team.js';

/** Tasks of two categories whose answer is 42, and one whose answer is 41. */
export const LOOP_TASKS = [
  { id: 'mul', prompt: 'What is 6 x 7?', reference: '42', category: 'arithmetic' },
  { id: 'add', prompt: 'What is 40 + 2?', reference: '42', category: 'arithmetic' },
  { id: 'cap', prompt: 'What is the answer to everything?', reference: '42', category: 'trivia' },
  { id: 'sub', prompt: 'What is 50 - 9?', reference: '41', category: 'arithmetic' },
]
  .map((t) => JSON.stringify(t))
  .join('\n');

/**
 * The team answers every task with `good` when the request names a trained adapter (a model `base-vN`,
 * N ≥ 1, served by the LoRA-serving stub) and with `bad` otherwise; agents after the first vote for
 * agent1, and the winner presents its answer. Delays (ms) slow every call, so a test can stop a stage.
 */
export function adapterScript(opts: { good?: (req: { model: string }) => boolean; delayMs?: number } = {}): Script {
  const good = opts.good ?? ((req) => /^base-v\d+$/.test(req.model));
  return (req) => {
    const ok = good(req);
    const right = (req.messages.find((m) => m.role === 'user')?.content ?? '').includes('50 - 9') ? '41' : '42';
    const answer = ok ? right : '7';
    const delayMs = opts.delayMs ?? 0;
    if ((req.messages[0]?.content ?? '').includes('was selected'))
      return { content: `Final answer: ${answer}`, delayMs };
    return shownLabels(req).length
      ? { content: 'VOTE: agent1 | agreed', delayMs }
      : { content: `ANSWER: ${answer}`, delayMs };
  };
}

export const TRAINER = path.join(FIXTURES, 'trainers', 'protocol_trainer.py');

export interface LoopProject {
  dir: string;
  server: ScriptedServer;
  /** Every replica of the model (serverOpts.replicas; just `server` by default). */
  servers: ScriptedServer[];
  /** The project's config, with --set style overrides. */
  load(overrides?: string[]): LoadedConfig;
}

/**
 * A project whose three agents run on one remote model at the scripted server, which serves the `base`
 * line's adapters by name (models.stub.lora); train.script is the protocol stand-in trainer. With
 * serverOpts.replicas the model is served by that many scripted servers (models.stub.base_urls).
 */
export async function loopProject(
  script: Script = adapterScript(),
  extraYaml = '',
  serverOpts: { loraDelayMs?: number; replicas?: number } = {},
): Promise<LoopProject> {
  const servers = await Promise.all(
    Array.from({ length: serverOpts.replicas ?? 1 }, () =>
      startScriptedServer(script, { loraDelayMs: serverOpts.loraDelayMs }),
    ),
  );
  const server = servers[0]!;
  const where =
    servers.length > 1
      ? `base_urls: [${servers.map((x) => `"${x.baseUrl}"`).join(', ')}]`
      : `base_url: "${server.baseUrl}"`;
  const yaml = `models:
  stub: { ${where}, model: base-model, lora: { line: base } }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
  - { id: c, model: stub, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1, numeric: 1 }
collect: { concurrency: 2, split: all }
orchestrator: { agent_timeout_s: 20, total_timeout_s: 60 }
train:
  algo: sft
  base_model: ./base
  script: ${TRAINER}
  save_steps: 1
  sft: { reward_threshold: null }
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
eval: { split: all, seeds: 2, report: false }
deploy:
  gates: { min_pairs: 4, min_improvement: 0.1, max_cost_increase: null }
  watch: { min_rollouts: 4, max_drop: 0.2 }
${extraYaml}`;
  const dir = tempDir({
    'massgen-rl.yaml': yaml,
    'tasks.jsonl': LOOP_TASKS,
    'base/config.json': '{"model_type": "llama"}',
    'base/model.safetensors': 'x'.repeat(64),
  });
  return { dir, server, servers, load: (overrides = []) => loadConfig({ cwd: dir, overrides }) };
}
