import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { serve } from '../../src/pipeline/serve/serve.js';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { withAgentWeights } from '../../src/resources/sets.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { FIXTURES, configIn, runCli } from '../helpers.js';
import { freePort } from '../support/free-port.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { runMassgen } from '../support/massgen.js';

// Roles on real parts: two agents of the bundled model get different LoRA adapters. `resources export-massgen`
// points each agent at its own (the served name, or its adapter by name), `massgen-rl serve` loads them all on one
// llama.cpp server, the real MassGen 0.1.97 runs the export with both agents acting, and a deploy that changes one
// agent's adapter is followed by the running server (the new one loaded by name, the old one unloaded).
const LINE = 'smollm2-135m-instruct';
const MAKE_ADAPTER = path.join(FIXTURES, 'trainers', 'make_lora_adapter.py');
// small random adapters: each answers differently, and all still follow MassGen's prompt as the base does
const ADAPTER_SCALE = '0.1';

/** A greedy reply and its tokens' logprobs: other weights give other logprobs, even where the text is the same. */
async function greedy(baseUrl: string, model: string): Promise<{ status: number; text: string; logprobs: number[] }> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      temperature: 0,
      max_tokens: 16,
      logprobs: true,
      messages: [{ role: 'user', content: 'Hi!' }],
    }),
  });
  const body = (await res.json()) as {
    choices?: { message: { content: string }; logprobs: { content: { logprob: number }[] } }[];
  };
  const choice = body.choices?.[0];
  return {
    status: res.status,
    text: choice?.message.content ?? '',
    logprobs: choice?.logprobs.content.map((t) => t.logprob) ?? [],
  };
}

async function exportedAgents(dir: string, file: string): Promise<{ id: string; model: string; url: string }[]> {
  const exported = await runCli(['resources', 'export-massgen', file], { cwd: dir });
  expect(exported.exitCode, exported.stderr).toBe(0);
  const config = parse(fs.readFileSync(file, 'utf8')) as {
    agents: { id: string; backend: { model: string; base_url: string } }[];
  };
  return config.agents.map((a) => ({ id: a.id, model: a.backend.model, url: a.backend.base_url }));
}

describeWithMassgen('roles: each agent its own adapter through the MassGen export', () => {
  it('exports, serves and runs two agents on two adapters of one base, and follows a deploy of one role', async () => {
    const port = await freePort();
    const loaded = configIn(`models:
  local: { model: ${LINE}, local: { weights: "builtin:${LINE}", engine: llama.cpp, port: ${port} } }
agents:
  - { id: solver, model: local, temperature: 0.7, max_tokens: 160 }
  - { id: checker, model: local, temperature: 0.7, max_tokens: 160 }
orchestrator: { max_new_answers_per_agent: 1, total_timeout_s: 1200 }
`);
    const dir = loaded.paths.baseDir;
    const adapters = await Promise.all(
      [1, 2, 3].map(async (seed) => {
        const out = path.join(dir, `lora-${seed}`);
        const args = [MAKE_ADAPTER, loaded.paths.defaultModelDir, out, String(seed), ADAPTER_SCALE];
        await execa(venvPython(loaded.paths.venvDir), args, { env: pythonEnv() });
        return out;
      }),
    );
    // the solver's line gets adapter 1; the checker's line adapter 2, then (its version 2) adapter 3
    const sets = await withRuntime(loaded, (rt) => {
      const store = rt.store();
      const production = syncProduction(rt);
      const base = store.resources.get(production.members.agents.solver!.weights!)!;
      const register = (p: string, name: string) =>
        registerCheckpoint(store, {
          path: p,
          name,
          algo: 'sft',
          adapter: true,
          baseModel: `builtin:${LINE}`,
          baseResourceId: base.id,
          basePath: loaded.paths.defaultModelDir,
        }).resource.id;
      const [solver, checker1, checker2] = [
        register(adapters[0]!, 'solver'),
        register(adapters[1]!, 'checker'),
        register(adapters[2]!, 'checker'),
      ];
      const roles = withAgentWeights(withAgentWeights(production.members, ['solver'], solver), ['checker'], checker1);
      const first = store.sets.add(roles, { kind: 'candidate' }, production.id);
      const second = store.sets.add(withAgentWeights(roles, ['checker'], checker2), { kind: 'candidate' }, first.id);
      return [first.version, second.version];
    });
    await withRuntime(loaded, (rt) => deploy(rt, { candidate: `set:${sets[0]}`, force: true }));

    const mgConfig = path.join(dir, 'mg.yaml');
    const url = `http://127.0.0.1:${port}/v1`;
    expect(await exportedAgents(dir, mgConfig)).toEqual([
      { id: 'solver', model: LINE, url },
      { id: 'checker', model: 'checker-v1', url },
    ]);
    const served = await withRuntime(loaded, (rt) => serve(rt, { model: 'local', logFile: false }));
    try {
      expect(served.weights.resource).toMatchObject({ name: 'solver', version: 1 });
      expect(served.adapters).toEqual([{ name: 'checker-v1', weights: 'checker v1' }]);
      const [solverReply, checkerReply] = [await greedy(url, LINE), await greedy(url, 'checker-v1')];
      expect([solverReply.status, checkerReply.status]).toEqual([200, 200]);
      expect(checkerReply).not.toEqual(solverReply); // two random adapters answer differently

      const run = await runMassgen({
        cwd: dir,
        configFile: mgConfig,
        question: 'What is 2 + 3?',
        timeoutMs: 1_200_000,
      });
      expect(run.egress).toEqual([]);
      expect(run.logDir, run.stderr.slice(-3000)).toBeTruthy();
      const status = JSON.parse(
        fs.readFileSync(path.join(run.logDir!, 'turn_1', 'attempt_1', 'status.json'), 'utf8'),
      ) as { is_complete: boolean; agents: Record<string, { answer_count: number; vote_cast: unknown }> };
      expect(status.is_complete).toBe(true);
      // an agent whose model name the server did not know would have failed every call: both adapters answered
      const stats = (await (await fetch(`http://127.0.0.1:${port}/stats`)).json()) as {
        adapters: { name: string; requests: number }[];
      };
      expect(stats.adapters).toEqual([
        expect.objectContaining({ name: 'solver-v1', requests: expect.any(Number) }),
        expect.objectContaining({ name: 'checker-v1', requests: expect.any(Number) }),
      ]);
      for (const a of stats.adapters) expect(a.requests, a.name).toBeGreaterThan(0);

      // a deploy gives the checker its line's next adapter: the running server loads it and unloads the old one
      const deployed = await withRuntime(loaded, (rt) => deploy(rt, { candidate: `set:${sets[1]}`, force: true }));
      const swap = deployed.published!.servers.find((s) => s.pid === served.pid)!;
      expect(swap.action).toBe('swapped');
      expect(swap.calls.map((c) => [c.action, c.loraName, c.ok])).toEqual([
        ['load', 'checker-v2', true],
        ['unload', 'checker-v1', true],
      ]);
      const models = (await (await fetch(`${url}/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((m) => m.id)).toEqual([LINE, 'solver-v1', 'checker-v2']);
      expect((await greedy(url, 'checker-v2')).status).toBe(200);
      expect(await exportedAgents(dir, mgConfig)).toEqual([
        { id: 'solver', model: LINE, url },
        { id: 'checker', model: 'checker-v2', url },
      ]);
    } finally {
      await served.stop();
    }
  }, 2_400_000);
});
