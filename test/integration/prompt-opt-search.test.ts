import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { writeReport } from '../../src/pipeline/evaluate/report.js';
import { trainPrompts } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { promptOptProject, promptOptScript, MAGIC } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('train prompts', () => {
  it('finds the better prompt from traces, records its lineage, and it goes through eval and deploy', async () => {
    const calls: ScriptedRequest[] = [];
    server = await startScriptedServer(promptOptScript({ optimizerCalls: calls }));
    const p = promptOptProject(
      server.baseUrl,
      '  rounds: 2\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 40, optimizer_tokens: 5000 }\n',
    );
    const r = await withRuntime(p.load(), (rt) => trainPrompts(rt));
    expect(r.status).toBe('completed');
    expect(r.candidateSet).not.toBeNull();
    expect(r.best!.valMean).toBe(1);
    expect(r.baselineMean).toBeLessThan(1);
    expect(r.spent.rollouts).toBeLessThanOrEqual(40);
    expect(r.spent.optimizerTokens).toBeLessThanOrEqual(5000);
    // The optimizer read the vote reasons the other agents gave.
    expect(String(calls[0]!.messages.at(-1)!.content)).toMatch(
      /vote (FOR|AGAINST)[^\n]*: REASON-team-model-likes-agent\d/,
    );
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
    expect(section).toMatch(/You are a problem solver\. <ins>/);
    expect(section).toMatch(/The agents add wrongly/);
  }, 120_000);
});
