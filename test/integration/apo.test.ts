import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { writeReport } from '../../src/pipeline/report.js';
import { loadConfig } from '../../src/config/load.js';
import { deploy } from '../../src/pipeline/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate.js';
import { trainApo } from '../../src/pipeline/train-apo.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 16 }, (_, i) => JSON.stringify({ id: `t${i}`, prompt: `What is ${30 + i} + 12?`, reference: String(42 + i), category: i % 2 ? 'odd' : 'even' })).join('\n');
const MAGIC = 'Check the sum digit by digit.';
const isOptimizer = (req: ScriptedRequest) => req.model === 'optimizer-model';
const system = (req: ScriptedRequest) => String(req.messages[0]?.content ?? '');
const taskOf = (req: ScriptedRequest) => /What is (\d+) \+ 12\?/.exec(req.messages.map((m) => m.content).join('\n'));

/**
 * Agents answer right only when their system prompt holds MAGIC; otherwise right on every third task.
 * Once all have answered, each votes for the first answer, with a reason the optimizer should read.
 * The optimizer proposes the prompt with MAGIC added.
 */
function script(optimizerCalls: ScriptedRequest[]) {
  return (req: ScriptedRequest) => {
    if (isOptimizer(req)) {
      optimizerCalls.push(req);
      return { content: `The agents add wrongly.\n<prompt>\nYou are a careful problem solver. ${MAGIC}\n</prompt>`, usage: { prompt_tokens: 300, completion_tokens: 40 } };
    }
    const m = taskOf(req);
    const n = Number(m?.[1] ?? 0);
    const right = system(req).includes(MAGIC) || n % 3 === 0;
    if (system(req).includes('was selected')) return { content: `Final answer: ${right ? n + 12 : n + 11}` };
    const shown = shownLabels(req);
    if (shown.length >= 1) return { content: `VOTE: agent1 | REASON-${req.model}-likes-agent1` };
    return { content: `ANSWER: ${right ? n + 12 : n + 11}` };
  };
}

function project(url: string, apoYaml: string) {
  const yaml = `models:
  stub: { base_url: "${url}", model: team-model }
  opt: { base_url: "${url}", model: optimizer-model }
prompts:
  solver: { text: "You are a problem solver." }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
  - { id: c, model: stub, tool_mode: text }
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
apo:
  optimizer_model: opt
${apoYaml}`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': TASKS });
  return { dir, load: (overrides: string[] = []) => loadConfig({ cwd: dir, overrides }) };
}

describe('train --algo apo', () => {
  it('finds the better prompt from traces, records its lineage, and it goes through eval and deploy', async () => {
    const calls: ScriptedRequest[] = [];
    server = await startScriptedServer(script(calls));
    const p = project(server.baseUrl, '  rounds: 2\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 40, optimizer_tokens: 5000 }\n');
    const r = await withRuntime(p.load(), (rt) => trainApo(rt));
    expect(r.status).toBe('completed');
    expect(r.candidateSet).not.toBeNull();
    expect(r.best!.valMean).toBe(1);
    expect(r.baselineMean).toBeLessThan(1);
    expect(r.spent.rollouts).toBeLessThanOrEqual(40);
    expect(r.spent.optimizerTokens).toBeLessThanOrEqual(5000);
    // The optimizer read the vote reasons the other agents gave.
    expect(String(calls[0]!.messages.at(-1)!.content)).toMatch(/REASON-team-model-likes-agent1/);
    const store = openStore(p.load());
    try {
      const v2 = store.resources.list('prompt').find((x) => x.name === 'solver' && x.version === 2)!;
      expect(v2.content).toContain(MAGIC);
      expect(v2.parentId).toBe(store.resources.list('prompt').find((x) => x.name === 'solver' && x.version === 1)!.id);
      expect(v2.metadata.critique).toMatch(/add wrongly/);
      expect(Object.keys(v2.metadata.val_scores as object)).toHaveLength(4);
      expect(store.rollouts.countTagged('apo_run', r.runId)).toBe(r.spent.rollouts);
    } finally {
      store.close();
    }
    const ev = await withRuntime(p.load(), (rt) => evaluate(rt));
    // The newest candidate is the set the run chose (rebuilt on production), not one it only tried.
    expect(ev.candidate.agents.every((x) => x.prompt === 'solver v2')).toBe(true);
    expect(ev.passed).toBe(true);
    const d = await withRuntime(p.load(), (rt) => deploy(rt));
    expect(d.action).toBe('promoted');
    // The report's prompt history shows the promoted version's diff against its parent, and the critique.
    const html = fs.readFileSync((await withRuntime(p.load(), (rt) => writeReport(rt))).file, 'utf8');
    const from = html.indexOf('<h2>Prompt history</h2>');
    const section = html.slice(from, html.indexOf('</section>', from));
    expect(section).toMatch(/solver v1 → v2/);
    expect(section).toMatch(/<ins>[^<]*digit[^<]*<\/ins>/);
    expect(section).toMatch(/You are a <ins>careful <\/ins>problem solver/);
    expect(section).toMatch(/The agents add wrongly/);
  }, 120_000);
});
