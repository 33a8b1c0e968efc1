import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { runCli, tempDir } from '../helpers.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { runMassgen } from '../support/massgen.js';

// Real MassGen 0.1.97, unmodified, through the gateway to the bundled model: the config
// `resources export-massgen --gateway` writes names a gateway session and each agent in its base URLs,
// every call is captured with its token ids and logprobs, `traces import --massgen-logs` joins them
// with MassGen's answers, votes and winner in one rollout (each action pointing at the call that made
// it); one DPO step on it, a deploy, and the calls of MassGen's config, unchanged, are answered by the
// new adapter the gateway's server switched to: a call to the same config's agent URL runs on it.
const KEY = 'gw-massgen-key-0123456789abcdef';
const LINE = 'smollm2-135m-instruct';

interface Imported {
  rollout_id: string;
  gateway_calls: number;
  winner: string;
}

describeWithMassgen('real MassGen through the gateway', () => {
  it('is captured and joined on import, trained on, deployed, and its next calls answered by the new adapter', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': `models:
  smol:
    model: ${LINE}
    local: { weights: "builtin:${LINE}", engine: llama.cpp }
    # MassGen's ~3,400-token prompts from three agents at once: minutes a call when other tests share the two cores
    timeout_ms: 600000
agents:
  - { id: agent_a, model: smol, temperature: 0.7, max_tokens: 160 }
  - { id: agent_b, model: smol, temperature: 0.7, max_tokens: 160 }
  - { id: agent_c, model: smol, temperature: 0.7, max_tokens: 160 }
orchestrator: { max_new_answers_per_agent: 1, total_timeout_s: 1200 }
train:
  algo: dpo
  dpo: { max_steps: 1, per_device_train_batch_size: 1, max_length: 1024, save_steps: 0 }
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
gateway: { api_keys_env: [GW_MG_KEY] }
`,
    });
    const env = { ...process.env, GW_MG_KEY: KEY };
    const cli = async (args: string[]) => {
      const r = await runCli(args, { cwd: dir, env, timeoutMs: 1_200_000 });
      expect(r.exitCode, `${args.join(' ')}:\n${r.stderr.slice(-3000)}`).toBe(0);
      return r.stdout;
    };
    const loaded = loadConfig({ cwd: dir, env });
    const rt = new Runtime(loaded);
    const gw = await gateway(rt, { port: 0, flushMs: 20 });
    const mgConfig = path.join(dir, 'mg.yaml');
    const runOnce = async (): Promise<Imported> => {
      // MassGen's vllm backend sends VLLM_API_KEY as its bearer token
      const run = await runMassgen({
        cwd: dir,
        configFile: mgConfig,
        question: 'What is 2 + 3?',
        timeoutMs: 1_200_000,
        env: { VLLM_API_KEY: KEY },
      });
      expect(run.egress, run.egress.join('\n')).toEqual([]);
      expect(run.logDir, run.stderr.slice(-3000)).toBeTruthy();
      const status = JSON.parse(fs.readFileSync(path.join(run.logDir!, 'turn_1', 'attempt_1', 'status.json'), 'utf8'));
      expect(status.is_complete, JSON.stringify(status.rounds)).toBe(true);
      await gw.flush();
      const out = JSON.parse(await cli(['--json', 'traces', 'import', '--massgen-logs', run.logDir!]));
      expect(out.imported, JSON.stringify(out).slice(0, 3000)).toHaveLength(1);
      const [unit] = out.imported as Imported[];
      expect(unit!.winner).toBeTruthy();
      expect(unit!.gateway_calls).toBeGreaterThanOrEqual(3);
      return unit!;
    };
    try {
      await cli(['resources', 'export-massgen', mgConfig, '--gateway', gw.url, '--session', 'mg-1']);
      const exported = fs.readFileSync(mgConfig, 'utf8');
      expect(exported).toContain(`${gw.url}/session/mg-1/agent/agent_a/v1`);
      const first = await runOnce();
      checkJoined(loaded, first);
      console.log(await cli(['traces', 'show', first.rollout_id]));

      // the reward families that apply to it (its votes: coordination) score it; then one DPO step on the
      // joined runs, deployed with --force (no eval): the gateway's server follows production. A DPO pair needs
      // two different standing answers, which a run of the 135M model does not always leave: up to two more runs.
      let trained: { dataset: { rows: number }; checkpoint: { id: string } } | undefined;
      for (let run = 1; !trained; run++) {
        if (run > 1) await runOnce();
        await cli(['rewards', 'recompute']);
        const r = await runCli(['--json', 'train', 'weights', '--algo', 'dpo', '--max-steps', '1'], {
          cwd: dir,
          env,
          timeoutMs: 1_200_000,
        });
        if (r.exitCode === 0) trained = JSON.parse(r.stdout);
        else expect(run < 3 && /no dpo examples/.test(r.stderr), r.stderr.slice(-3000)).toBe(true);
      }
      expect(trained!.dataset.rows).toBeGreaterThanOrEqual(1);
      // the one server running: the one the gateway started for MassGen's calls, on production's weights then
      const [server, ...others] = await rt.servers.running();
      expect(others).toEqual([]);
      await cli(['deploy', '--candidate', trained!.checkpoint.id, '--force', '--reason', 'gateway e2e']);
      const models = (await (await fetch(`${server.baseUrl}/models`)).json()) as { data: { adapter: string | null }[] };
      expect(models.data[0]!.adapter).toBe(`${LINE}-v2`);

      // the same MassGen config, unchanged: a call to an agent's base URL in it now runs on the deployed adapter.
      // (MassGen's calls are plain chat completions to that URL; a whole second run adds nothing but its time.)
      expect(fs.readFileSync(mgConfig, 'utf8')).toBe(exported);
      const agent = (parseYaml(exported) as { agents: { backend: { base_url: string; model: string } }[] }).agents[0]!;
      const res = await fetch(`${agent.backend.base_url}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: agent.backend.model,
          messages: [{ role: 'user', content: 'Hi!' }],
          max_tokens: 8,
        }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
      const callId = res.headers.get('x-request-id');
      await gw.flush();
      const stats = (await (await fetch(`${server.baseUrl.replace(/\/v1$/, '')}/stats`)).json()) as {
        adapters: { name: string; requests: number }[];
      };
      expect(stats.adapters).toEqual([expect.objectContaining({ name: `${LINE}-v2`, requests: 1 })]);
      const store = openStore(loaded);
      try {
        const production = store.sets.pointer('production')!.setId;
        const rollout = store.rollouts
          .list()
          .filter((r) => r.source === 'gateway' && r.metadata.session === 'mg-1')
          .at(-1)!;
        const call = store.spans.list(rollout.id).find((s) => (s.payload as PromptPayload).turn_id === callId);
        expect((call!.payload as PromptPayload).gateway).toMatchObject({ resource_set_id: production, status: 200 });
      } finally {
        store.close();
      }
    } finally {
      await gw.stop();
      await rt.close();
    }
  }, 3_600_000);
});

/** The joined rollout: MassGen's votes, the captured calls with token ids and logprobs, actions linked to calls. */
function checkJoined(loaded: ReturnType<typeof loadConfig>, unit: Imported): void {
  const store = openStore(loaded);
  try {
    const spans = store.spans.list(unit.rollout_id);
    expect(spans.some((s) => s.type === 'coordination' && s.name === 'vote')).toBe(true);
    const calls = spans.filter((s) => s.type === 'prompt');
    expect(calls).toHaveLength(unit.gateway_calls);
    // none refused: the gateway's server gives MassGen's growing prompts (~5k tokens by round 3) their context
    const refused = calls.map((c) => c.payload as PromptPayload).filter((p) => p.gateway!.status >= 400);
    expect(refused.filter((p) => p.gateway!.status !== 499).map((p) => p.error)).toEqual([]);
    expect(new Set(calls.map((s) => s.agent)).size).toBeGreaterThanOrEqual(2);
    // MassGen cancels the calls still running once it has a winner: those are captured without a reply
    const answered = calls.filter((c) => (c.payload as PromptPayload).response !== null);
    expect(answered.length).toBeGreaterThanOrEqual(3);
    for (const c of answered) {
      const p = c.payload as PromptPayload & { joined_from: { rollout_id: string } };
      expect(p.token_ids!.length).toBe(p.usage.completion_tokens);
      expect(p.logprobs!.length).toBe(p.token_ids!.length);
      expect(p.joined_from.rollout_id).toMatch(/^ro_/);
    }
    const tools = answered.flatMap((c) => (c.payload as PromptPayload).response?.tool_calls ?? []);
    expect(tools.map((t) => (t as { function: { name: string } }).function.name)).toEqual(
      expect.arrayContaining(['new_answer', 'vote']),
    );
    // each new answer points at the captured call that made it: what GRPO and PPO read token ids from
    const bySeq = new Map(spans.map((s) => [s.seq, s]));
    const answers = spans.filter((s) => s.type === 'coordination' && s.name === 'new_answer');
    for (const a of answers) {
      const linked = bySeq.get((a.payload as { prompt_seq: number }).prompt_seq)!;
      expect(linked.type).toBe('prompt');
      expect(linked.agent).toBe(a.agent);
      expect((linked.payload as PromptPayload).token_ids!.length).toBeGreaterThan(0);
    }
  } finally {
    store.close();
  }
}
