import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { ResourceSetRepository } from '../../src/store/resource-sets.js';
import { storeDb } from '../../src/store/store.js';
import { tempDir } from '../helpers.js';
import type { ScriptedReply, ScriptedRequest } from './scripted-server.js';
import { shownLabels } from './team.js';

/** Tasks "What is n + 12?" for n = 30, 31, …, with their reference. */
export function promptOptTasks(count: number): string {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      id: `t${i}`,
      prompt: `What is ${30 + i} + 12?`,
      reference: String(42 + i),
      category: i % 2 ? 'odd' : 'even',
    }),
  ).join('\n');
}

export const MAGIC = 'Check the sum digit by digit.';
export const OPTIMIZER_MODEL = 'optimizer-model';
export const isOptimizer = (req: ScriptedRequest) => req.model === OPTIMIZER_MODEL;
const system = (req: ScriptedRequest) => String(req.messages[0]?.content ?? '');
const userText = (req: ScriptedRequest) =>
  req.messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');

/** The n of the task an orchestration request is about. */
export const taskN = (req: ScriptedRequest) => Number(/What is (\d+) \+ 12\?/.exec(userText(req))?.[1] ?? 0);

/** What an optimizer request asks to edit: the prompt's current text and the agents it serves. */
export function editRequest(req: ScriptedRequest): { current: string; agents: string[] } {
  const text = userText(req);
  const current = /<prompt>\n([\s\S]*?)\n<\/prompt>/.exec(text)?.[1] ?? '';
  const agents = /the system prompt of agent\(s\) ([\w, -]+?)(?: and the prompt|:)/.exec(text)?.[1]?.split(', ') ?? [];
  return { current, agents };
}

export interface PromptOptScriptOptions {
  /** Whether an agent with this system prompt answers task n right (default: MAGIC in it, or n divisible by 3). */
  right?: (system: string, n: number) => boolean;
  /** The optimizer's proposal for a prompt (default: MAGIC appended; the same text again once it holds MAGIC). */
  propose?: (current: string, agents: string[]) => string;
  /** Every optimizer request, in order. */
  optimizerCalls?: ScriptedRequest[];
  /** Delay of every team call (ms). */
  delayMs?: () => number;
  /** Delay of every optimizer call (ms). */
  optimizerDelayMs?: () => number;
  /** The usage an optimizer reply reports (default 300 prompt + 40 completion tokens). */
  optimizerUsage?: (req: ScriptedRequest) => { prompt_tokens: number; completion_tokens: number };
}

/**
 * The team: each agent answers right or wrong by its system prompt; shown the answers, it votes for a
 * right one, gives its own if it is right and none is, else votes for the first (a reason naming the
 * label); the winner presents its own answer. The
 * optimizer (model `optimizer-model`) proposes `propose(current prompt)` and reports 340 tokens used unless told.
 */
export function promptOptScript(o: PromptOptScriptOptions = {}) {
  const right = o.right ?? ((s, n) => s.includes(MAGIC) || n % 3 === 0);
  const propose = o.propose ?? ((current) => (current.includes(MAGIC) ? current : `${current} ${MAGIC}`));
  return (req: ScriptedRequest): ScriptedReply => {
    if (isOptimizer(req)) {
      o.optimizerCalls?.push(req);
      const { current, agents } = editRequest(req);
      return {
        content: `The agents add wrongly.\n<prompt>\n${propose(current, agents)}\n</prompt>`,
        usage: o.optimizerUsage?.(req) ?? { prompt_tokens: 300, completion_tokens: 40 },
        delayMs: o.optimizerDelayMs?.() ?? 0,
      };
    }
    const delayMs = o.delayMs?.() ?? 0;
    const n = taskN(req);
    const answers = new Map(
      [...userText(req).matchAll(/<(agent\d+)>\n([\s\S]*?)\n<\/\1>/g)].map((m) => [m[1]!, m[2]!.trim()]),
    );
    const selected = /Your answer \((agent\d+)\) was selected/.exec(system(req))?.[1];
    if (selected) return { content: `Final answer: ${answers.get(selected) ?? n + 11}`, delayMs };
    const shown = shownLabels(req);
    const mine = right(system(req), n) ? n + 12 : n + 11;
    const good = shown.find((l) => answers.get(l) === String(n + 12));
    // A right answer on the table gets the vote; an agent that knows better answers; otherwise the first answer wins.
    if (good || (shown.length && mine !== n + 12))
      return { content: `VOTE: ${good ?? shown[0]} | REASON-${req.model}-likes-${good ?? shown[0]}`, delayMs };
    return { content: `ANSWER: ${mine}`, delayMs };
  };
}

export interface PromptOptProject {
  dir: string;
  load(overrides?: string[]): LoadedConfig;
}

/**
 * A project of three agents on the scripted server and an optimizer model: by default one prompt
 * (`solver`) for all three; `prompts`/`agents` YAML replace those sections; `promptOptYaml` goes under prompt_opt:.
 */
export function promptOptProject(
  url: string,
  promptOptYaml: string,
  o: { tasks?: number; prompts?: string; agents?: string; extra?: string } = {},
): PromptOptProject {
  const yaml = `models:
  stub: { base_url: "${url}", model: team-model }
  opt: { base_url: "${url}", model: ${OPTIMIZER_MODEL} }
prompts:
${o.prompts ?? '  solver: { text: "You are a problem solver." }'}
agents:
${o.agents ?? '  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }\n  - { id: c, model: stub, tool_mode: text }'}
tasks:
  sources: [{ file: tasks.jsonl }]
  split: { eval_fraction: 0.25 }
rewards:
  weights: { exact: 1 }
collect: { concurrency: 2 }
orchestrator: { agent_timeout_s: 20, total_timeout_s: 60 }
eval: { seeds: 1, report: false, split: eval }
deploy:
  gates: { min_pairs: 3, max_cost_increase: null, max_category_regression: 1 }
${o.extra ?? ''}
prompt_opt:
  optimizer_model: opt
${promptOptYaml}`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': promptOptTasks(o.tasks ?? 16) });
  return { dir, load: (overrides: string[] = []) => loadConfig({ cwd: dir, overrides }) };
}

/** Completed orchestrations per served prompts × task × seed: a result measured twice shows up as a count above 1. */
export function measuredTwice(loaded: LoadedConfig): { key: string; n: number }[] {
  const store = openStore(loaded);
  try {
    const rows = storeDb(store)
      .prepare(
        `SELECT task_id AS task, json_extract(metadata, '$.seed') AS seed, json_extract(metadata, '$.resource_set.id') AS setId
      FROM rollouts WHERE source = 'eval' AND status = 'completed'`,
      )
      .all() as { task: string; seed: number; setId: string }[];
    const counts = new Map<string, number>();
    for (const r of rows) {
      const key = `${ResourceSetRepository.servingHash(store.sets.get(r.setId)!.members)}:${r.task}:${r.seed}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].filter(([, n]) => n > 1).map(([key, n]) => ({ key, n }));
  } finally {
    store.close();
  }
}

/** Rollouts tagged with a prompt-optimization run (any status). */
export function tagged(loaded: LoadedConfig, runId: string): number {
  const store = openStore(loaded);
  try {
    return store.rollouts.countTagged('apo_run', runId);
  } finally {
    store.close();
  }
}
