import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { hasStack, runCli, tempDir } from '../helpers.js';
import { loopProject } from '../support/loop-project.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

const servers = new Set<ScriptedServer>();
afterEach(async () => {
  await Promise.all([...servers].map((s) => s.close()));
  servers.clear();
});

/** Every agent answers 42 (a little later than at once, so requests overlap), votes for agent1, and the winner presents. */
const answer42: Script = (req) => {
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42', delayMs: 5 };
  return shownLabels(req).length
    ? { content: 'VOTE: agent1 | fine', delayMs: 5 }
    : { content: 'ANSWER: 42', delayMs: 5 };
};

/** A team of three on one model served by `n` scripted replicas (replica i runs scriptFor(i)), on the built-in arithmetic tasks. */
async function replicaProject(scriptFor: (replica: number) => Script, n = 2) {
  const replicas = await Promise.all(Array.from({ length: n }, (_, i) => startScriptedServer(scriptFor(i))));
  replicas.forEach((s) => servers.add(s));
  const yaml = `models:
  stub: { base_urls: [${replicas.map((s) => `"${s.baseUrl}"`).join(', ')}], model: stub-model }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
  - { id: c, model: stub, tool_mode: text }
tasks:
  sources: [{ suite: arithmetic, n: 6 }]
collect: { concurrency: 3, split: all }
orchestrator: { agent_timeout_s: 10, total_timeout_s: 60 }
`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml });
  return { dir, replicas, loaded: loadConfig({ cwd: dir }) };
}

function rolloutsOf(loaded: ReturnType<typeof loadConfig>, runId: string) {
  const store = openStore(loaded);
  try {
    return store.rollouts.list({ runId }).map((r) => {
      const spans = store.spans.list(r.id);
      // A model call that failed is recorded on its prompt span.
      const failedCalls = spans.filter(
        (x) => x.type === 'prompt' && (x.payload as { error?: string }).error !== undefined,
      ).length;
      return { status: r.status, final: r.finalAnswer, spans: spans.length, failedCalls };
    });
  } finally {
    store.close();
  }
}

describe('collect on a model served by replicas (base_urls)', () => {
  it('spreads a collect of the built-in tasks over both replicas, and every rollout completes', async () => {
    const { replicas, loaded } = await replicaProject(() => answer42);
    const summary = await withRuntime(loaded, (rt) => collect(rt));
    expect(summary).toMatchObject({ status: 'completed', tasks: 6, completed: 6, failed: 0 });
    const [a, b] = replicas.map((s) => s.requests.length);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    // Least outstanding with ties in turn: neither replica takes much more than half.
    expect(Math.abs(a! - b!)).toBeLessThanOrEqual(Math.ceil((a! + b!) / 4));
    const rollouts = rolloutsOf(loaded, summary.runId);
    expect(rollouts).toHaveLength(6);
    expect(
      rollouts.every(
        (r) => r.status === 'completed' && r.final === 'Final answer: 42' && r.spans > 0 && r.failedCalls === 0,
      ),
    ).toBe(true);
  });

  it('completes every rollout when a replica stops in the middle of the collect', async () => {
    let stop: (() => void) | undefined;
    // The second replica stops (its connections reset) as its seventh request arrives.
    const { replicas, loaded } = await replicaProject((replica) => (req, i) => {
      if (replica === 1 && i === 6) stop?.();
      return answer42(req, i);
    });
    const [, doomed] = replicas;
    stop = () => {
      stop = undefined;
      servers.delete(doomed!);
      void doomed!.close();
    };
    const summary = await withRuntime(loaded, (rt) => collect(rt));
    expect(summary).toMatchObject({ status: 'completed', tasks: 6, completed: 6, failed: 0 });
    expect(doomed!.requests.length).toBeGreaterThanOrEqual(7);
    expect(replicas[0]!.requests.length).toBeGreaterThan(doomed!.requests.length);
    expect(
      rolloutsOf(loaded, summary.runId).every(
        (r) => r.status === 'completed' && r.final === 'Final answer: 42' && r.failedCalls === 0,
      ),
    ).toBe(true);
  });

  it("a cycle loads the candidate's LoRA adapter on every replica, and the deployed adapter is served by both", async () => {
    const project = await loopProject(undefined, '', { replicas: 2 });
    project.servers.forEach((s) => servers.add(s));
    const loaded = project.load();
    const r = await withRuntime(loaded, (rt) => runCycle(rt));
    expect(r.stages.deploy).toMatchObject({ status: 'done', action: 'promoted' });
    for (const s of project.servers) {
      expect(s.adapters).toEqual(new Set(['base-v1']));
      expect(s.loraCalls.filter((c) => c.action === 'load').map((c) => c.lora_name)).toContain('base-v1');
    }
    const before = project.servers.map((s) => s.requests.length);
    await withRuntime(loaded, (rt) => collect(rt, { n: 2 }));
    project.servers.forEach((s, i) => {
      const later = s.requests.slice(before[i]);
      expect(later.length).toBeGreaterThan(0);
      expect(later.every((q) => q.model === 'base-v1')).toBe(true);
    });
  }, 180_000);

  it('refuses a bad replica list with exit 2, naming the key', async () => {
    const head = 'agents: [{ id: a, model: stub }, { id: b, model: stub }]\nmodels:\n  stub: ';
    const cases: [string, RegExp][] = [
      [
        '{ base_url: "http://h1:8000/v1", base_urls: ["http://h1:8000/v1", "http://h2:8000/v1"], model: m }',
        /models\.stub\.base_urls: base_url and base_urls are exclusive/,
      ],
      [
        '{ base_urls: ["http://h1:8000/v1"], model: m }',
        /models\.stub\.base_urls: list at least 2 replicas \(for one endpoint use base_url\)/,
      ],
      [
        '{ base_urls: ["http://h1:8000/v1", "h2:8000"], model: m }',
        /models\.stub\.base_urls\[1\]: must be an http:\/\/ or https:\/\/ URL/,
      ],
      [
        '{ base_urls: ["http://h1:8000/v1", "http://H1:8000/v1/"], model: m }',
        /models\.stub\.base_urls\[1\]: http:\/\/H1:8000\/v1\/ is listed already \(base_urls\[0\]\)/,
      ],
      [
        '{ base_urls: ["http://h1:8000/v1", "http://h2:8000/v1"], model: m, local: { weights: "builtin:smollm2-135m-instruct" } }',
        /models\.stub\.local: base_urls and local are exclusive/,
      ],
    ];
    for (const [model, message] of cases) {
      const dir = tempDir({ 'massgen-rl.yaml': head + model });
      const out = await runCli(['collect'], { cwd: dir });
      expect(out.exitCode, out.stderr).toBe(2);
      expect(out.stderr).toMatch(message);
      expect(out.stderr).toMatch(/massgen-rl\.yaml:3:\d+/);
      expect(hasStack(out.stderr)).toBe(false);
    }
  });
});
