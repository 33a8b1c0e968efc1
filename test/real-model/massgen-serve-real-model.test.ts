import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { serve } from '../../src/pipeline/serve/serve.js';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { Store } from '../../src/store/index.js';
import { FIXTURES, configIn, runCli } from '../helpers.js';
import { freePort } from '../support/free-port.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { runMassgen } from '../support/massgen.js';

// Real parts end to end: the real MassGen 0.1.97 from PyPI runs the config `resources export-massgen` writes,
// unmodified, against `massgen-rl serve` on the bundled model (llama.cpp, streamed, grammar-constrained tool
// calls); then a LoRA adapter is deployed and the server follows production: the served name answers with it.
// MassGen runs on deployed adapters served this way in roles-massgen-real-model.test.ts (and through the gateway in
// gateway-massgen-real-model.test.ts), so a second run here would measure nothing new.
const LINE = 'smollm2-135m-instruct';
const MAKE_ADAPTER = path.join(FIXTURES, 'trainers', 'make_lora_adapter.py');
const QUESTION = 'What is 2 + 3?';

/** MassGen's own record of a run: finished, who answered and voted, and the winner. */
function outcome(logDir: string) {
  const attempt = path.join(logDir, 'turn_1', 'attempt_1');
  const status = JSON.parse(fs.readFileSync(path.join(attempt, 'status.json'), 'utf8'));
  // MassGen exits 0 even when coordination fails: its status says whether it completed (with no winner it
  // writes no coordination events)
  expect(status.is_complete, JSON.stringify(status.rounds)).toBe(true);
  const eventsFile = path.join(attempt, 'coordination_events.json');
  expect(fs.existsSync(eventsFile), `no winner: ${JSON.stringify(status.agents)}`).toBe(true);
  const events = JSON.parse(fs.readFileSync(eventsFile, 'utf8'));
  return { status, winner: events.session_metadata?.final_winner as string | undefined };
}

async function runAndImport(dir: string, mgConfig: string) {
  const run = await runMassgen({ cwd: dir, configFile: mgConfig, question: QUESTION, timeoutMs: 1_200_000 });
  expect(run.egress).toEqual([]);
  expect(run.logDir, run.stderr.slice(-3000)).toBeTruthy();
  const { status, winner } = outcome(run.logDir!);
  const agents = Object.values(status.agents) as { answer_count: number; vote_cast: unknown }[];
  expect(agents.some((a) => a.answer_count > 0)).toBe(true);
  expect(agents.filter((a) => a.vote_cast).length).toBeGreaterThan(0);
  expect(winner).toBeTruthy();
  const imported = await runCli(['--json', 'traces', 'import', '--massgen-logs', run.logDir!], { cwd: dir });
  expect(imported.exitCode, imported.stderr).toBe(0);
  const summary = JSON.parse(imported.stdout);
  expect(summary.imported).toEqual([expect.objectContaining({ status: 'completed', winner })]);
  return { winner, rolloutId: summary.imported[0].rollout_id as string };
}

describeWithMassgen('real MassGen on the weights massgen-rl serves', () => {
  it('completes through real tool calls on the bundled model and imports; a deployed LoRA adapter then answers', async () => {
    const port = await freePort();
    const loaded = configIn(`models:
  local: { model: ${LINE}, local: { weights: "builtin:${LINE}", engine: llama.cpp, port: ${port} } }
agents:
  - { id: agent_a, model: local, temperature: 0.7, max_tokens: 160 }
  - { id: agent_b, model: local, temperature: 0.7, max_tokens: 160 }
orchestrator: { max_new_answers_per_agent: 1, total_timeout_s: 1200 }
`);
    const dir = loaded.paths.baseDir;
    const mgConfig = path.join(dir, 'mg.yaml');
    const exported = await runCli(['resources', 'export-massgen', mgConfig], { cwd: dir });
    expect(exported.exitCode, exported.stderr).toBe(0);
    const served = await withRuntime(loaded, (rt) => serve(rt, { model: 'local', logFile: false }));
    try {
      expect(served.baseUrl).toBe(`http://127.0.0.1:${port}/v1`);
      const first = await runAndImport(dir, mgConfig);
      const store = Store.open({ path: loaded.paths.storePath });
      try {
        const spans = store.spans.list(first.rolloutId);
        expect(spans.filter((s) => s.type === 'coordination' && s.name === 'vote').length).toBeGreaterThan(0);
      } finally {
        store.close();
      }

      // a LoRA adapter of the base becomes production: the running server follows, MassGen's config is unchanged
      const adapterDir = path.join(dir, 'lora');
      // a small random adapter: other weights than the base's, which still follow MassGen's prompt as the base does
      const args = [MAKE_ADAPTER, loaded.paths.defaultModelDir, adapterDir, '1', '0.1'];
      await execa(venvPython(loaded.paths.venvDir), args, {
        env: pythonEnv(),
      });
      const checkpoint = await withRuntime(loaded, (rt) => {
        const base = rt.store().resources.get(syncProduction(rt).members.agents.agent_a!.weights!)!;
        return registerCheckpoint(rt.store(), {
          path: adapterDir,
          algo: 'sft',
          adapter: true,
          baseModel: `builtin:${LINE}`,
          baseResourceId: base.id,
          basePath: loaded.paths.defaultModelDir,
        }).checkpoint;
      });
      const deployed = await withRuntime(loaded, (rt) => deploy(rt, { candidate: checkpoint.id, force: true }));
      expect(deployed.published!.servers).toEqual([expect.objectContaining({ pid: served.pid, action: 'swapped' })]);
      const models = (await (await fetch(`${served.baseUrl}/models`)).json()) as {
        data: { id: string; adapter: string | null }[];
      };
      expect(models.data[0]).toMatchObject({ id: LINE, adapter: `${LINE}-v2` });
      // MassGen's config names the served name: a request to it now runs on the adapter
      const reply = await fetch(`${served.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: LINE, max_tokens: 8, messages: [{ role: 'user', content: QUESTION }] }),
      });
      expect(reply.status).toBe(200);
      const stats = (await (await fetch(`http://127.0.0.1:${port}/stats`)).json()) as {
        adapters: { name: string; requests: number }[];
      };
      expect(stats.adapters).toEqual([expect.objectContaining({ name: `${LINE}-v2`, requests: 1 })]);
    } finally {
      await served.stop();
    }
  }, 2_400_000);
});
