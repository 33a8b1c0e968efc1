import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { showSet } from '../../src/pipeline/utilities/resources.js';
import { describeMembers } from '../../src/resources/sets.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { Store } from '../../src/store/index.js';
import { storeDb } from '../../src/store/store.js';
import { runCli, tempDir } from '../helpers.js';
import {
  startScriptedServer,
  type Script,
  type ScriptedRequest,
  type ScriptedServer,
} from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 6 }, (_, i) =>
  JSON.stringify({
    id: `t${i}`,
    prompt: `What is ${40 + i} + ${2 - i}? (#${i})`,
    reference: '42',
    category: 'arithmetic',
  }),
).join('\n');

const PRESENTER_V1 = 'Present the result in one line.';
const PRESENTER_V2 = 'Present the result in one line, and check the arithmetic first.';

const isPresentation = (req: ScriptedRequest) => (req.messages[0]?.content ?? '').includes('was selected');
const systemOf = (req: ScriptedRequest) => req.messages[0]?.content ?? '';

/** Everyone answers 42; the presentation gets it right only when its prompt asks to check the arithmetic. */
const team: Script = (req) => {
  if (isPresentation(req))
    return { content: systemOf(req).includes('check the arithmetic') ? 'Final answer: 42' : 'Final answer: 41' };
  return shownLabels(req).length ? { content: 'VOTE: agent1 | right' } : { content: 'ANSWER: 42' };
};

function project(url: string, presenter: string | null) {
  const yaml = `models:
  stub: { base_url: "${url}", model: stub-model }
prompts:
  solver: { text: "You solve tasks." }
  presenter: { text: "${PRESENTER_V1}" }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1 }
collect: { concurrency: 2, split: all }
orchestrator: { agent_timeout_s: 10, total_timeout_s: 30${presenter ? `, presenter_prompt: ${presenter}` : ''} }
eval: { split: all, seeds: 1, report: false }
deploy:
  gates: { min_pairs: 6, min_improvement: 0.01, max_cost_increase: null }
`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': TASKS });
  return { dir, load: (overrides: string[] = []) => loadConfig({ cwd: dir, overrides }) };
}

function inStore<T>(load: () => ReturnType<typeof loadConfig>, fn: (store: Store) => T): T {
  const store = openStore(load());
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

describe('the presenter prompt, a versioned prompt of the resource set', () => {
  it('collect presents with the configured presenter prompt and records its version on every rollout', async () => {
    server = await startScriptedServer(team);
    const { dir, load } = project(server.baseUrl, 'presenter');
    const summary = await withRuntime(load(), (rt) => collect(rt));
    expect(summary).toMatchObject({ status: 'completed', completed: 6 });

    const presentations = server.requests.filter(isPresentation);
    expect(presentations).toHaveLength(6);
    for (const r of presentations)
      expect(systemOf(r).startsWith(`${PRESENTER_V1}\n\nYour answer (agent1) was selected.`)).toBe(true);
    for (const r of server.requests.filter((x) => !isPresentation(x)))
      expect(systemOf(r).startsWith('You solve tasks.')).toBe(true);

    inStore(load, (store) => {
      const presenter = store.resources.list('prompt').find((p) => p.name === 'presenter')!;
      expect(presenter).toMatchObject({
        version: 1,
        content: PRESENTER_V1,
        metadata: expect.objectContaining({ source: 'config' }),
      });
      const production = store.sets.get(store.sets.pointer('production')!.setId)!;
      expect(production.members).toMatchObject({ presenter: presenter.id, presenter_from_config: true });
      const rollouts = store.rollouts.list({ runId: summary.runId });
      expect(rollouts).toHaveLength(6);
      for (const r of rollouts)
        expect(r.metadata).toMatchObject({ presenter_prompt: presenter.id, resource_set: { id: production.id } });
      expect(describeMembers(store, production.members).at(-1)).toEqual({
        agent: '(presenter)',
        prompt: 'presenter v1',
        weights: "(the winner's)",
      });
      expect(store.resources.production('prompt', 'presenter')?.id).toBe(presenter.id);
    });
    const file = JSON.parse(fs.readFileSync(path.join(dir, '.massgen-rl', 'production.json'), 'utf8')) as {
      presenter?: { prompt: { name: string; version: number } };
    };
    expect(file.presenter?.prompt).toMatchObject({ name: 'presenter', version: 1 });
  }, 60_000);

  it('without a presenter prompt nothing changes: no presenter in the set, none on the rollouts', async () => {
    server = await startScriptedServer(team);
    const { load } = project(server.baseUrl, null);
    const summary = await withRuntime(load(), (rt) => collect(rt, { n: 2 }));
    expect(summary).toMatchObject({ status: 'completed', completed: 2 });
    for (const r of server.requests.filter(isPresentation))
      expect(systemOf(r).startsWith('You solve tasks.\n\nYour answer')).toBe(true);
    inStore(load, (store) => {
      const production = store.sets.get(store.sets.pointer('production')!.setId)!;
      expect(Object.keys(production.members)).toEqual(['agents']);
      for (const r of store.rollouts.list({ runId: summary.runId }))
        expect(r.metadata).not.toHaveProperty('presenter_prompt');
    });
  }, 60_000);

  it("eval --candidate presenter@2 swaps only the presenter; deployed, it stays when the config's text changes", async () => {
    server = await startScriptedServer(team);
    const { dir, load } = project(server.baseUrl, 'presenter');
    // A new version of the presenter prompt, as a prompt optimization would record it.
    const [v1, v2, before] = await withRuntime(load(), async (rt) => {
      const production = syncProduction(rt);
      const store = rt.store();
      const v1 = store.resources.list('prompt').find((p) => p.name === 'presenter')!;
      const v2 = store.resources.add({
        kind: 'prompt',
        name: 'presenter',
        content: PRESENTER_V2,
        parentId: v1.id,
        metadata: { source: 'prompt-opt' },
      });
      return [v1, v2, production] as const;
    });
    expect(v2.version).toBe(2);

    const ev = await withRuntime(load(), (rt) => evaluate(rt, { candidate: 'presenter@2' }));
    expect(ev.status).toBe('completed');
    expect(ev.baseline.id).toBe(before.id);
    expect(ev.candidate.agents).toEqual([
      ...ev.baseline.agents.slice(0, 2),
      { agent: '(presenter)', prompt: 'presenter v2', weights: "(the winner's)" },
    ]);
    inStore(load, (store) => {
      const candidate = store.sets.get(ev.candidate.id)!;
      expect(candidate.members).toEqual({ ...before.members, presenter: v2.id, presenter_from_config: false });
      expect(candidate.origin).toMatchObject({ kind: 'candidate', spec: 'presenter@2', prompt_id: v2.id });
      const rollouts = storeDb(store)
        .prepare("SELECT metadata FROM rollouts WHERE source = 'eval'")
        .pluck()
        .all()
        .map((m) => JSON.parse(m as string) as Record<string, unknown>);
      expect(rollouts).toHaveLength(12);
      const bySet = (id: string) => rollouts.filter((m) => (m.resource_set as { id: string }).id === id);
      expect(bySet(before.id).map((m) => m.presenter_prompt)).toEqual(Array(6).fill(v1.id));
      expect(bySet(candidate.id).map((m) => m.presenter_prompt)).toEqual(Array(6).fill(v2.id));
    });
    const presentations = server.requests.filter(isPresentation);
    expect(presentations.filter((r) => systemOf(r).startsWith(`${PRESENTER_V2}\n\n`))).toHaveLength(6);
    expect(presentations.filter((r) => systemOf(r).startsWith(`${PRESENTER_V1}\n\n`))).toHaveLength(6);
    // Only the presentation changed, and it made the answers right.
    expect(ev.comparison.overall.find((m) => m.metric === 'success')).toMatchObject({ baseline: 0, candidate: 1 });
    expect(ev.passed).toBe(true);

    const d = await withRuntime(load(), (rt) => deploy(rt, {}));
    expect(d.action).toBe('promoted');
    const shown = await withRuntime(load(), async (rt) => showSet(rt, 'production'));
    expect(shown.presenter).toEqual({
      prompt: expect.objectContaining({
        id: v2.id,
        name: 'presenter',
        version: 2,
        source: 'prompt-opt',
        lineage: [expect.objectContaining({ id: v1.id, version: 1 })],
      }),
      followsConfig: false,
    });
    const cli = await runCli(['resources', 'show'], { cwd: dir });
    expect(cli.exitCode, cli.stderr).toBe(0);
    expect(cli.stdout).toContain('presenter: presenter v2 (prompt-opt) ← v1');
    const status = await runCli(['status'], { cwd: dir });
    expect(status.stdout).toMatch(/\(presenter\)\s*│\s*presenter v2 \(prompt-opt\)/);
    // A config edit of the presenter's text makes a v3 but production keeps the deployed v2.
    const edited = load(['prompts.presenter.text=Present it.']);
    const after = await withRuntime(edited, async (rt) => syncProduction(rt));
    expect(after.members).toMatchObject({ presenter: v2.id, presenter_from_config: false });
    inStore(load, (store) =>
      expect(
        store.resources
          .list('prompt')
          .filter((p) => p.name === 'presenter')
          .map((p) => p.version),
      ).toEqual([1, 2, 3]),
    );
  }, 120_000);
});
