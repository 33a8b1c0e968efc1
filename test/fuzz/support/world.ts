import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseDocument, stringify } from 'yaml';
import { configSchema } from '../../../src/config/schema.js';
import { FIXTURES } from '../../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../../support/scripted-server.js';
import { shownLabels } from '../../support/team.js';
import { runBounded } from './harness.js';

/**
 * What every fuzz case shares: a scripted OpenAI-compatible endpoint that answers at once in text and in
 * native tool mode, an empty cache directory, the valid configs that mutations start from, and a seed
 * store (a collect and a MassGen import) that refused runs must leave byte-identical.
 */
export interface World {
  root: string;
  server: ScriptedServer;
  /** Endpoints that fail every call: a retriable 500 (Retry-After: 0, so retries cost no time), a 400, and replies without an action. */
  failing: Record<FailingMode, ScriptedServer>;
  cacheDir: string;
  /** Valid configs, each a name and its text; every model points at the scripted server. */
  configs: { name: string; text: string }[];
  seedStore: string;
  close(): Promise<void>;
}

/** Converges in two rounds whatever the team: answer 42, vote for the first shown answer, present, confirm. */
export const fuzzScript: Script = (req) => {
  const system = req.messages[0]?.content ?? '';
  if (system.includes('was selected')) return { content: 'Final answer: 42' };
  if (system.includes('Check the final answer')) return { content: 'CONFIRM' };
  const shown = shownLabels(req);
  // native mode: the workflow tools (only new_answer while there is nothing to vote for)
  if (req.tools?.some((t) => t.function.name === 'vote' || t.function.name === 'new_answer')) {
    return shown.length
      ? { toolCalls: [{ name: 'vote', arguments: { agent_id: shown[0], reason: 'right' } }] }
      : { toolCalls: [{ name: 'new_answer', arguments: { content: '42' } }] };
  }
  return shown.length ? { content: `VOTE: ${shown[0]} | right` } : { content: 'ANSWER: 42' };
};

export const FAILING_MODES = ['status-500', 'status-400', 'no-action'] as const;
export type FailingMode = (typeof FAILING_MODES)[number];

const failingScripts: Record<FailingMode, Script> = {
  'status-500': () => ({
    status: 500,
    headers: { 'retry-after': '0' },
    body: { error: { message: 'scripted failure' } },
  }),
  'status-400': () => ({ status: 400, body: { error: { message: 'scripted bad request' } } }),
  'no-action': () => ({ content: 'I am not sure.' }),
};

export const TASKS = [
  { id: 'mul', prompt: 'What is 6 x 7?', reference: '42', category: 'arithmetic' },
  { id: 'cap', prompt: 'What is the answer to everything?', reference: '42', category: 'trivia' },
]
  .map((t) => JSON.stringify(t))
  .join('\n');

/** Files every config case directory holds next to its config. */
export const PROJECT_FILES: Record<string, string> = {
  'solver.md': 'You solve tasks.\n',
  'tasks.jsonl': `${TASKS}\n`,
  'a.jsonl': `${TASKS}\n`,
};

/** The test projects' configs (collect refusals, the team collect, stored redaction, the loop project), plus native tools and a judge. */
function projectConfigs(url: string): { name: string; text: string }[] {
  const model = `{ base_url: "${url}", model: fuzz-model, api_key_env: FUZZ_KEY }`;
  return [
    {
      name: 'refusals',
      text: `models:\n  stub: ${model}\nprompts:\n  solver: { file: solver.md }\nagents:\n  - { id: a, model: stub, tool_mode: text, system_prompt: solver }\n  - { id: b, model: stub, tool_mode: text, system_prompt: solver }\ntasks:\n  sources: [{ file: a.jsonl }]\n  split: { eval_fraction: 0 }\ncollect: { concurrency: 1, split: all }\nrewards:\n  weights: { exact: 1 }\n`,
    },
    {
      name: 'team',
      text: `models:\n${['a', 'b', 'c'].map((x) => `  stub_${x}: { base_url: "${url}", model: model-${x} }`).join('\n')}\nagents:\n${['a', 'b', 'c'].map((x) => `  - { id: ${x}, model: stub_${x}, tool_mode: text }`).join('\n')}\ntasks:\n  sources: [{ file: tasks.jsonl }]\nrewards:\n  weights: { exact: 1, numeric: 1, coordination: 0.2, voting: 0.5, peer_vote: 0.2 }\ncollect: { concurrency: 1, split: all }\norchestrator: { agent_timeout_s: 5, total_timeout_s: 30 }\n`,
    },
    {
      name: 'redaction',
      text: `models:\n  stub: { base_url: "${url}", model: m }\nagents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }\ntasks:\n  sources: [{ file: tasks.jsonl }]\ncollect: { concurrency: 1, split: all }\nprivacy:\n  redact_patterns: ['\\d{13,16}']\n  redact_env: [FUZZ_KEY]\n`,
    },
    {
      name: 'loop',
      text: `models:\n  stub: { base_url: "${url}", model: base-model, lora: { line: base } }\nagents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }\ntasks:\n  sources: [{ file: tasks.jsonl }]\n  split: { eval_fraction: 0.5, salt: fuzz }\ncollect: { concurrency: 2 }\ntrain: { algo: sft, batch_size: 2, save_steps: 0, check_memory: false }\ndeploy: { gates: { ci_lower_above_zero: false } }\n`,
    },
    {
      name: 'native',
      text: `models:\n  stub: ${model}\ntools:\n  calc: { type: builtin, name: calculator }\nagents:\n  - { id: a, model: stub, tool_mode: native, tools: [calc] }\n  - { id: b, model: stub, tool_mode: native, temperature: 0 }\ntasks:\n  sources: [{ suite: arithmetic, n: 20, seed: 7 }, { file: tasks.jsonl }]\nrewards:\n  weights: { exact: 1, judge: 0.5 }\n  judge: { model: stub, rubric: [{ criterion: correct, weight: 1 }] }\norchestrator: { max_orchestration_restarts: 1, max_rounds: 4 }\n`,
    },
  ];
}

/** The embedded defaults with every key written out, their local model swapped for the scripted endpoint. */
function defaultsConfig(url: string): string {
  const config = configSchema.parse({}) as Record<string, unknown> & { agents: { model: string }[] };
  config.models = { local: { base_url: url, model: 'fuzz-model', api_key_env: 'FUZZ_KEY' } };
  return stringify(config, { aliasDuplicateObjects: false, lineWidth: 0 });
}

export async function makeWorld(timeoutMs: number): Promise<World> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-fuzz-'));
  const cacheDir = path.join(root, 'empty-cache');
  fs.mkdirSync(cacheDir);
  const server = await startScriptedServer(fuzzScript);
  const failing = Object.fromEntries(
    await Promise.all(FAILING_MODES.map(async (m) => [m, await startScriptedServer(failingScripts[m])] as const)),
  ) as Record<FailingMode, ScriptedServer>;
  const run = async (args: string[], cwd: string) => {
    const r = await runBounded(args, cwd, { timeoutMs, cacheDir });
    if (r.exitCode !== 0) throw new Error(`fuzz setup: massgen-rl ${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
  };
  // The commented template as `init --yes` renders it for a remote endpoint.
  const initDir = path.join(root, 'init');
  fs.mkdirSync(initDir);
  await run(
    [
      'init',
      '--yes',
      '--endpoint',
      server.baseUrl,
      '--model',
      'fuzz-model',
      '--api-key-env',
      'FUZZ_KEY',
      '--team-size',
      '3',
    ],
    initDir,
  );
  const configs = [
    { name: 'defaults', text: defaultsConfig(server.baseUrl) },
    { name: 'init', text: fs.readFileSync(path.join(initDir, 'massgen-rl.yaml'), 'utf8') },
    ...projectConfigs(server.baseUrl),
  ];
  for (const c of configs) if (parseDocument(c.text).errors.length) throw new Error(`fuzz base ${c.name} is not YAML`);

  // The seed store: a collect over the task fixtures (so a changed task id conflicts) and one MassGen import.
  const seed = path.join(root, 'seed');
  fs.mkdirSync(seed);
  for (const [name, text] of Object.entries(PROJECT_FILES)) fs.writeFileSync(path.join(seed, name), text);
  for (const f of TASK_FIXTURES) fs.copyFileSync(path.join(FIXTURES, 'tasks', f), path.join(seed, f));
  const base = parseDocument(configs.find((c) => c.name === 'refusals')!.text);
  base.setIn(
    ['tasks', 'sources'],
    ['a.jsonl', ...TASK_FIXTURES].map((file) => ({ file })),
  );
  fs.writeFileSync(path.join(seed, 'massgen-rl.yaml'), String(base));
  await run(['collect', '--split', 'all', '--concurrency', '2'], seed);
  await run(['traces', 'import', '--massgen-logs', path.join(FIXTURES, 'massgen-logs')], seed);
  return {
    root,
    server,
    failing,
    cacheDir,
    configs,
    seedStore: path.join(seed, '.massgen-rl', 'store.sqlite'),
    async close() {
      await Promise.all([server, ...Object.values(failing)].map((s) => s.close()));
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The valid task files the task mutations start from (their ids are all stored in the seed store). */
export const TASK_FIXTURES = ['good.jsonl', 'good.yaml', 'list.json', 'wrapped.yaml'];

/** A fresh case directory: the given files, and a copy of the seed store when asked. */
export function caseDir(
  world: World,
  name: string,
  files: Record<string, string | Buffer>,
  withStore: boolean,
): string {
  const dir = path.join(world.root, 'cases', name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  if (withStore) {
    fs.mkdirSync(path.join(dir, '.massgen-rl'), { recursive: true });
    fs.copyFileSync(world.seedStore, path.join(dir, '.massgen-rl', 'store.sqlite'));
  }
  return dir;
}
