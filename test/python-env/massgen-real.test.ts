import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import type { NewAnswerPayload, SelectionPayload, VotePayload } from '../../src/trace/payloads.js';
import { FIXTURES, runCli, tempDir } from '../helpers.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { SAMPLE_PLAN, SAMPLE_QUESTION, teamConfig, teamScript, type TeamPlan } from '../support/massgen-team.js';
import { runMassgen, validateMassgenConfig } from '../support/massgen.js';
import { startScriptedServer } from '../support/scripted-server.js';

const REAL = path.join(FIXTURES, 'massgen-real');
const json = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, any>;

/** Imports the MassGen logs under dir with the CLI, as a user would, into a fresh project. */
async function importWithCli(dir: string) {
  const project = tempDir({ 'massgen-rl.yaml': 'project:\n  name: real-massgen\n' });
  const r = await runCli(['--json', 'traces', 'import', '--massgen-logs', dir], { cwd: project });
  expect(r.exitCode, r.stderr).toBe(0);
  return {
    project,
    summary: JSON.parse(r.stdout),
    store: () => Store.open({ path: path.join(project, '.massgen-rl', 'store.sqlite') }),
  };
}

/**
 * What MassGen recorded in logDir (its coordination events, snapshots, final answer and metrics) and what
 * the plan made the agents do must be what the import stored.
 */
async function expectFaithfulImport(logDir: string, plan: TeamPlan) {
  const attempt = path.join(logDir, 'turn_1', 'attempt_1');
  const events = json(path.join(attempt, 'coordination_events.json'));
  const metrics = json(path.join(attempt, 'metrics_summary.json'));
  const winner = events.session_metadata.final_winner as string;
  const agents = Object.keys(plan.models);
  const label = (a: string) => `agent${agents.indexOf(a) + 1}`;
  const { project, summary, store: open } = await importWithCli(logDir);
  expect(summary).toMatchObject({ ok: true, failed: [], skipped: [] });
  expect(summary.imported).toEqual([
    expect.objectContaining({
      log: path.basename(logDir),
      turn: 1,
      attempt: 1,
      status: 'completed',
      winner: plan.votesFor,
      answers: agents.length,
    }),
  ]);

  const store = open();
  try {
    const r = store.rollouts.get(summary.imported[0].rollout_id)!;
    expect(winner).toBe(plan.votesFor);
    expect(r.winner).toBe(winner);
    expect(r.finalAnswer).toBe(plan.presentation(winner));
    expect(r.finalAnswer).toBe(fs.readFileSync(path.join(logDir, 'turn_1', 'final', winner, 'answer.txt'), 'utf8'));
    expect(r.metadata).toMatchObject({
      original_task: SAMPLE_QUESTION,
      agents,
      models: plan.models,
      massgen_version: '0.1.97',
      attempt: 1,
      restarted: false,
    });
    expect(events.session_metadata.user_prompt).toBe(SAMPLE_QUESTION);
    // The config's anchor comes back as PyYAML aliases, which the import reads (models above).
    expect(fs.readFileSync(path.join(attempt, 'execution_metadata.yaml'), 'utf8')).toMatch(/&id001[\s\S]*\*id001/);

    // Tokens: MassGen's totals (the API's usage, summed over agents), per agent in the metadata.
    const { input_tokens, output_tokens } = metrics.totals;
    expect(input_tokens).toBeGreaterThan(0);
    expect(r.tokens).toBe(input_tokens + output_tokens);
    expect(r.toolCalls).toBe(0);
    const byAgent = r.metadata.massgen_usage as {
      by_agent: Record<string, { input_tokens: number; output_tokens: number }>;
    };
    expect(byAgent.by_agent).toEqual(
      Object.fromEntries(
        agents.map((a) => [
          a,
          {
            input_tokens: metrics.agents[a].token_usage.input_tokens,
            output_tokens: metrics.agents[a].token_usage.output_tokens,
          },
        ]),
      ),
    );

    const spans = store.spans.list(r.id);
    const answers = spans
      .filter((s) => s.name === 'new_answer')
      .map((s) => [s.agent, (s.payload as NewAnswerPayload).content]);
    expect(Object.fromEntries(answers)).toEqual(plan.answers);
    expect(answers.length).toBe(agents.length);
    const votes = spans.filter((s) => s.name === 'vote').map((s) => [s.agent, (s.payload as VotePayload).target_agent]);
    const cast = events.events
      .filter((e: any) => e.event_type === 'vote_cast')
      .map((e: any) => [e.agent_id, e.context.voted_for]);
    expect(votes).toEqual(cast);
    expect(votes.map(([, t]) => t)).toEqual(agents.map(() => plan.votesFor));
    const selection = spans.find((s) => s.name === 'final_selection')!.payload as SelectionPayload;
    expect(selection).toMatchObject({
      winner_agent: winner,
      votes: { [label(winner)]: agents.length },
      consensus: true,
      reason: 'votes',
    });
    // Every agent's first prompt (context.txt) carries the task.
    for (const a of agents) {
      const ctx = spans.find((s) => s.name === 'context' && s.agent === a)!.payload as {
        messages: { role: string; content: string }[];
      };
      expect(ctx.messages.find((m) => m.role === 'user')!.content).toContain(SAMPLE_QUESTION);
    }

    const shown = await runCli(['traces', 'show', r.id], { cwd: project });
    expect(shown.stdout).toContain(`task "${SAMPLE_QUESTION}"`);
    expect(shown.stdout).toContain(`${r.tokens} tokens`);
    return r;
  } finally {
    store.close();
  }
}

describe('a log directory written by the real MassGen 0.1.97 (test/fixtures/massgen-real)', () => {
  it('imports answers, votes, winner, task text and token counts', async () => {
    const [log] = fs.readdirSync(REAL);
    const r = await expectFaithfulImport(path.join(REAL, log!), SAMPLE_PLAN);
    expect(r.tokens).toBe(118_514); // what the scripted server served when the fixture was made (test/fixtures/README.md)
  });
});

describeWithMassgen('the real MassGen 0.1.97 against the scripted server', () => {
  it('runs a three-agent team whose logs import faithfully, with the tokens the server served', async () => {
    const { script, served } = teamScript(SAMPLE_PLAN);
    const server = await startScriptedServer(script);
    try {
      const cwd = tempDir({ 'team.yaml': teamConfig(SAMPLE_PLAN, server.baseUrl) });
      const run = await runMassgen({ cwd, configFile: 'team.yaml', question: SAMPLE_QUESTION });
      expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.egress).toEqual([]);
      expect(run.winner).toBe(SAMPLE_PLAN.votesFor);
      expect(run.logDir).not.toBeNull();
      // MassGen streams every call and offers its workflow tools.
      expect(server.requests.every((q) => q.stream === true)).toBe(true);
      expect(server.requests.some((q) => q.tools?.some((t) => t.function.name === 'vote'))).toBe(true);
      expect(served.filter((s) => s.kind === 'presentation').map((s) => s.agent)).toEqual([SAMPLE_PLAN.votesFor]);

      const r = await expectFaithfulImport(run.logDir!, SAMPLE_PLAN);
      const delivered = served.filter((s) => !server.aborted.includes(server.requests[s.index]!));
      expect(r.tokens).toBe(delivered.reduce((n, s) => n + s.usage.prompt_tokens + s.usage.completion_tokens, 0));
      const perAgent = (r.metadata.massgen_usage as { by_agent: Record<string, { input_tokens: number }> }).by_agent;
      for (const agent of Object.keys(SAMPLE_PLAN.models)) {
        expect(perAgent[agent]!.input_tokens).toBe(
          delivered.filter((s) => s.agent === agent).reduce((n, s) => n + s.usage.prompt_tokens, 0),
        );
      }
    } finally {
      await server.close();
    }
  }, 300_000);

  it('validates configs with massgen --validate (the harness other tests use)', async () => {
    const dir = tempDir({
      'team.yaml': teamConfig(SAMPLE_PLAN, 'http://127.0.0.1:9/v1'),
      'broken.yaml': 'agents:\n  - id: alpha\n    backend: { model: m }\n',
    });
    const [ok, bad] = await Promise.all([
      validateMassgenConfig(path.join(dir, 'team.yaml')),
      validateMassgenConfig(path.join(dir, 'broken.yaml')),
    ]);
    expect(ok, ok.stderr).toMatchObject({ exitCode: 0, valid: true });
    expect(bad).toMatchObject({ exitCode: 1, valid: false });
    expect(bad.report?.errors.length).toBeGreaterThan(0);
  }, 300_000);
});
