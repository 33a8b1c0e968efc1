import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { gateway } from '../../src/pipeline/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { runCli, tempDir } from '../helpers.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { runMassgen } from '../support/massgen.js';

// Real MassGen 0.1.97, unmodified, through the gateway to the bundled model: the config
// `resources export-massgen --gateway` writes names a gateway session and each agent in its base URLs,
// every call is captured with its token ids and logprobs, and `traces import --massgen-logs` joins
// them with MassGen's answers, votes and winner in one rollout.
const KEY = 'gw-massgen-key-0123456789abcdef';

describeWithMassgen('real MassGen through the gateway', () => {
  it("is captured, and its import joins the captured calls to MassGen's answers and votes", async () => {
    const dir = tempDir({
      'massgen-rl.yaml': `models:
  smol:
    model: smollm2-135m-instruct
    local: { weights: "builtin:smollm2-135m-instruct", engine: llama.cpp, max_batch_size: 2 }
agents:
  - { id: agent_a, model: smol, temperature: 0.7, max_tokens: 160 }
  - { id: agent_b, model: smol, temperature: 0.7, max_tokens: 160 }
orchestrator: { max_new_answers_per_agent: 1, total_timeout_s: 1200 }
gateway: { api_keys_env: [GW_MG_KEY] }
`,
    });
    const env = { ...process.env, GW_MG_KEY: KEY };
    const loaded = loadConfig({ cwd: dir, env });
    const rt = new Runtime(loaded);
    const gw = await gateway(rt, { port: 0, flushMs: 20 });
    let logDir: string;
    try {
      const mgConfig = path.join(dir, 'mg.yaml');
      const exported = await runCli(
        ['resources', 'export-massgen', mgConfig, '--gateway', gw.url, '--session', 'mg-1'],
        { cwd: dir, env },
      );
      expect(exported.exitCode, exported.stderr).toBe(0);
      expect(fs.readFileSync(mgConfig, 'utf8')).toContain(`${gw.url}/session/mg-1/agent/agent_a/v1`);
      // MassGen's vllm backend sends VLLM_API_KEY as its bearer token
      const run = await runMassgen({
        cwd: dir,
        configFile: mgConfig,
        question: 'What is 2 + 3?',
        timeoutMs: 1_200_000,
        env: { VLLM_API_KEY: KEY },
      });
      expect(run.egress).toEqual([]);
      expect(run.logDir, run.stderr.slice(-3000)).toBeTruthy();
      logDir = run.logDir!;
      const status = JSON.parse(fs.readFileSync(path.join(logDir, 'turn_1', 'attempt_1', 'status.json'), 'utf8'));
      expect(status.is_complete, JSON.stringify(status.rounds)).toBe(true);
    } finally {
      await gw.stop();
      await rt.close();
    }

    const imported = await runCli(['--json', 'traces', 'import', '--massgen-logs', logDir], { cwd: dir, env });
    expect(imported.exitCode, imported.stderr).toBe(0);
    const [unit] = JSON.parse(imported.stdout).imported as {
      rollout_id: string;
      gateway_calls: number;
      winner: string;
    }[];
    expect(unit!.winner).toBeTruthy();
    expect(unit!.gateway_calls).toBeGreaterThanOrEqual(3);

    const store = openStore(loaded);
    try {
      const spans = store.spans.list(unit!.rollout_id);
      expect(spans.some((s) => s.type === 'coordination' && s.name === 'vote')).toBe(true);
      const calls = spans.filter((s) => s.type === 'prompt');
      expect(calls).toHaveLength(unit!.gateway_calls);
      expect(new Set(calls.map((s) => s.agent))).toEqual(new Set(['agent_a', 'agent_b']));
      const statuses = calls.map((c) => (c.payload as PromptPayload).gateway!.status);
      console.log(`joined calls by status: ${JSON.stringify(statuses)}`);
      // MassGen cancels the calls still running once it has a winner: those are captured without a reply
      const answered = calls.filter((c) => (c.payload as PromptPayload).response !== null);
      expect(answered.length).toBeGreaterThanOrEqual(3);
      for (const c of calls)
        expect(c.payload).toMatchObject((c.payload as PromptPayload).response ? {} : { cancelled: true });
      for (const c of answered) {
        const p = c.payload as PromptPayload & { joined_from: { rollout_id: string } };
        expect(p.token_ids!.length).toBe(p.usage.completion_tokens);
        expect(p.logprobs!.length).toBe(p.token_ids!.length);
        expect(p.joined_from.rollout_id).toMatch(/^ro_/);
      }
      // MassGen acts through tool calls: the captured responses hold its new_answer and vote calls
      const tools = answered.flatMap((c) => (c.payload as PromptPayload).response?.tool_calls ?? []);
      expect(tools.map((t) => (t as { function: { name: string } }).function.name)).toEqual(
        expect.arrayContaining(['new_answer', 'vote']),
      );
    } finally {
      store.close();
    }
    const shown = await runCli(['traces', 'show', unit!.rollout_id], { cwd: dir, env });
    expect(shown.exitCode, shown.stderr).toBe(0);
    console.log(shown.stdout);
  }, 2_400_000);
});
