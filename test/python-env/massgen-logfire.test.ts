import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { runCli, tempDir } from '../helpers.js';
import { startGatewayCli } from '../support/gateway-cli.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { SAMPLE_PLAN, SAMPLE_QUESTION, teamConfig, teamScript } from '../support/massgen-team.js';
import { runMassgen } from '../support/massgen.js';
import { startScriptedServer } from '../support/scripted-server.js';

// Real MassGen 0.1.97 tracing itself (`--logfire`, Logfire from its `observability` extra) into the gateway's OTLP
// receiver (LOGFIRE_BASE_URL; Logfire will not start without a token, and any does), its agents on the scripted
// server directly, not through the gateway: what Logfire sends arrives as rollouts of its own, and
// `traces import --massgen-logs` joins their model calls to the imported run, each of MassGen's actions pointing at
// the call that made it, under the agent MassGen's spans name.
describeWithMassgen('real MassGen traced into the OTLP receiver', () => {
  it('sends its model calls, which join the run when its log is imported', async () => {
    const { script } = teamScript(SAMPLE_PLAN);
    const server = await startScriptedServer(script);
    const dir = tempDir({
      'massgen-rl.yaml': `models:\n  m: { model: scripted, base_url: "${server.baseUrl}" }\nagents: [{ id: a1, model: m }]\n`,
    });
    const gw = startGatewayCli(dir);
    try {
      const receiver = (await gw.ready).baseUrl.replace(/\/v1$/, '');
      fs.writeFileSync(path.join(dir, 'team.yaml'), teamConfig(SAMPLE_PLAN, server.baseUrl));
      const run = await runMassgen({
        cwd: dir,
        configFile: 'team.yaml',
        question: SAMPLE_QUESTION,
        args: ['--logfire'],
        env: { MASSGEN_LOGFIRE_ENABLED: 'true', LOGFIRE_TOKEN: 'offline-placeholder', LOGFIRE_BASE_URL: receiver },
      });
      expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.egress).toEqual([]);
      expect(run.winner).toBe(SAMPLE_PLAN.votesFor);

      const r = await runCli(['--json', 'traces', 'import', '--massgen-logs', run.logDir!], { cwd: dir });
      expect(r.exitCode, r.stderr).toBe(0);
      const [unit] = JSON.parse(r.stdout).imported as { rollout_id: string; otlp_calls?: number }[];
      // one call for each request MassGen made (Logfire's start markers and stream openings are not calls)
      expect(unit!.otlp_calls).toBe(server.requests.length);

      const store = Store.open({ path: path.join(dir, '.massgen-rl', 'store.sqlite') });
      try {
        const rollout = store.rollouts.get(unit!.rollout_id)!;
        const spans = store.spans.list(rollout.id);
        const calls = spans.filter((s) => s.type === 'prompt' && (s.payload as { joined_from?: unknown }).joined_from);
        expect(calls).toHaveLength(server.requests.length);
        expect(new Set(calls.map((c) => c.agent))).toEqual(new Set(Object.keys(SAMPLE_PLAN.models)));
        // every answer, vote and presentation points at the call of its agent that made it
        const actions = spans.filter((s) => ['new_answer', 'vote', 'presentation'].includes(s.name));
        expect(actions.length).toBeGreaterThanOrEqual(7);
        expect(rollout.metadata.otlp_linked).toBe(actions.length);
        for (const action of actions) {
          const seq = (action.payload as { prompt_seq: number }).prompt_seq;
          const call = spans.find((s) => s.seq === seq)!;
          expect(call.agent, action.name).toBe(action.agent);
          const reply = (call.payload as PromptPayload).response!;
          if (action.name === 'presentation') expect(reply.content).toBe(SAMPLE_PLAN.presentation(action.agent!));
          else expect(reply.tool_calls?.map((t) => t.function.name)).toContain(action.name);
        }
        // the traces MassGen sent now live on in the imported run; it also sends a session it opens and drops at
        // its start (no log directory, no calls), which stays as it came
        const traced = store.rollouts.list().filter((x) => x.source === 'otlp');
        const withCalls = traced.filter((t) => store.spans.list(t.id).some((s) => s.type === 'prompt'));
        expect(withCalls.length).toBeGreaterThanOrEqual(1);
        for (const t of withCalls) expect(t.metadata.joined_into).toBe(rollout.id);
      } finally {
        store.close();
      }
    } finally {
      gw.child.kill('SIGTERM');
      await gw.child;
      await server.close();
    }
  }, 300_000);
});
