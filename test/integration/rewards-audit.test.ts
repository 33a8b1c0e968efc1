import { afterEach, describe, expect, it } from 'vitest';
import { collect } from '../../src/pipeline/collect/collect.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { configIn, runCli, tempDir } from '../helpers.js';
import { BACKENDS, freshPostgresUrl } from '../support/postgres.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = ['What is 6 x 7?', 'What is 40 + 2?', 'What is 84 / 2?']
  .map((prompt, i) => JSON.stringify({ id: `t${i}`, prompt, reference: '42' }))
  .join('\n');

const ANSWERS: Record<string, string> = { 'good-model': '42', 'also-good-model': '42.0' };

/**
 * Agents a and c answer 42 (in two forms), b 41, each until its own answer is shown; then every voter votes for the
 * first shown answer that says 42: one right answer gets every vote, the other none.
 */
function script(req: ScriptedRequest) {
  const answer = ANSWERS[req.model] ?? '41';
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: `Final answer: ${answer}` };
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  const shown = [...user.matchAll(/<(agent\d+)>\n([\s\S]*?)\n<\/\1>/g)];
  if (!shownLabels(req).length || !shown.some((m) => m[2]!.trim() === answer)) return { content: `ANSWER: ${answer}` };
  return { content: `VOTE: ${shown.find((m) => m[2]!.includes('42'))?.[1] ?? 'agent1'} | it says 42` };
}

/** The three-agent project on the scripted server; `collectKeys` adds collect settings. */
function project(baseUrl: string, backend: string, collectKeys = '') {
  const store = backend === 'postgres' ? `store: { url: "${freshPostgresUrl()}" }\n` : '';
  return configIn(
    `models:
  good: { base_url: "${baseUrl}", model: good-model }
  bad: { base_url: "${baseUrl}", model: bad-model }
  good_too: { base_url: "${baseUrl}", model: also-good-model }
agents:
  - { id: a, model: good, tool_mode: text }
  - { id: b, model: bad, tool_mode: text }
  - { id: c, model: good_too, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1, numeric: 1, peer_vote: 0.2, agreement: 0.2, coordination: 0.1 }
collect: { concurrency: 2, split: all${collectKeys} }
orchestrator: { agent_timeout_s: 5, total_timeout_s: 30 }
${store}`,
    { 'tasks.jsonl': TASKS },
  );
}

describe.each(BACKENDS)('rewards audit (%s)', (backend) => {
  it('scores each family against the verified answers: agreement separates them fully, peer votes partly', async () => {
    server = await startScriptedServer(script);
    const loaded = project(server.baseUrl, backend);
    const summary = await withRuntime(loaded, (rt) => collect(rt));
    expect(summary.completed).toBe(3);

    const cwd = loaded.paths.baseDir;
    const json = await runCli(['--json', 'rewards', 'audit'], { cwd });
    expect(json.exitCode, json.stderr).toBe(0);
    const audit = JSON.parse(json.stdout) as {
      labelled: { turn: number; rollout: number };
      families: { family: string; channel: string; n: number; right: number; coverage: number; auc: number }[];
    };
    // every answer verified: two right and one wrong per task; each final answer the voted one (right)
    expect(audit.labelled).toEqual({ turn: 9, rollout: 3 });
    const row = (family: string, channel = 'turn') =>
      audit.families.find((f) => f.family === family && f.channel === channel);
    // the majority (42, 2 of 3) is the reference here: every right answer agrees, the wrong one does not
    expect(row('agreement')).toMatchObject({ n: 9, right: 6, coverage: 1, auc: 1, readsReference: false });
    expect(row('agreement')).toMatchObject({ precision: { k: 6, n: 6 }, recall: { k: 6, n: 6 } });
    expect(row('agreement', 'rollout')).toMatchObject({ n: 3, right: 3, auc: null });
    // peer votes: the right answer shown first gets all 3, the other right one and the wrong one none
    expect(row('peer_vote')).toMatchObject({ n: 9, right: 6, auc: 0.75, readsReference: false });
    expect(row('peer_vote')).toMatchObject({ precision: { k: 3, n: 3 }, recall: { k: 3, n: 6, value: 0.5 } });
    // both label-free families together by default: the voted right answer 1, the other right one 0.5, the wrong 0
    expect(row('agreement+peer_vote')).toMatchObject({ n: 9, right: 6, coverage: 1, auc: 1, readsReference: false });
    expect(row('agreement+peer_vote')).toMatchObject({ precision: { k: 6, n: 6 }, recall: { k: 6, n: 6 } });
    expect(audit.families.find((f) => f.family === 'coordination')).toMatchObject({
      channel: 'rollout',
      n: 3,
      readsReference: true,
    });

    const text = await runCli(['rewards', 'audit', '--threshold', '0.9'], { cwd });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /agreement\s*│\s*turn\s*│\s*no\s*│\s*9 \(6\)\s*│\s*100\.0 %\s*│\s*1\.000\s*│\s*100\.0 %/,
    );
    expect(text.stdout).toMatch(/peer_vote\s*│\s*turn\s*│\s*no\s*│\s*9 \(6\)\s*│[^│]*│\s*0\.750\s*│/);
    expect(text.stdout).toContain('"value ≥ 0.9"');

    const bad = await runCli(['rewards', 'audit', '--threshold', 'half'], { cwd });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--threshold/);
    expect(bad.stderr).not.toMatch(/\bat \S+\.js:\d+/);

    // a chosen ensemble replaces the default; a family that is not one, or a lone one, is refused
    const chosen = await runCli(['--json', 'rewards', 'audit', '--ensemble', 'peer_vote+coordination'], { cwd });
    const names = (JSON.parse(chosen.stdout) as typeof audit).families.map((f) => f.family);
    expect(names).toContain('peer_vote+coordination');
    expect(names).not.toContain('agreement+peer_vote');
    for (const [spec, message] of [
      ['agreement+peer_votes', /--ensemble agreement\+peer_votes: "peer_votes" is not a reward family/],
      ['agreement', /--ensemble agreement: name two or more families/],
    ] as const) {
      const refused = await runCli(['rewards', 'audit', '--ensemble', spec], { cwd });
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toMatch(message);
      expect(refused.stderr).not.toMatch(/\bat \S+\.js:\d+/);
    }
  }, 60_000);
});

it("agreement counts each decision's extra samples that answer (not those that vote), in collect and in recompute", async () => {
  server = await startScriptedServer(script);
  const loaded = project(server.baseUrl, 'sqlite', ', samples_per_turn: 2');
  expect((await withRuntime(loaded, (rt) => collect(rt))).completed).toBe(3);
  const agreementBySpan = () =>
    withRuntime(loaded, (rt) => {
      const store = rt.store();
      return store.rollouts.list().flatMap((r) => {
        const spans = new Map(store.spans.list(r.id).map((x) => [x.seq, x]));
        return store.rewards
          .list(r.id)
          .filter((w) => w.family === 'agreement' && w.channel === 'turn')
          .map((w) => {
            const span = spans.get(w.targetSeq!)!;
            const text = span.type === 'prompt' ? (span.payload as PromptPayload).response!.content! : 'answer';
            return { name: span.name, text, value: w.value };
          });
      });
    });
  const voteSamples = await withRuntime(loaded, (rt) =>
    rt
      .store()
      .rollouts.list()
      .flatMap((r) => rt.store().spans.list(r.id))
      .filter((x) => x.name === 'sample' && (x.payload as PromptPayload).response?.content?.startsWith('VOTE:')),
  );
  expect(voteSamples.length).toBeGreaterThan(0);
  const before = await agreementBySpan();
  const samples = before.filter((x) => x.name === 'sample');
  expect(samples.length).toBeGreaterThan(0);
  expect(samples.every((x) => x.text.startsWith('ANSWER:'))).toBe(true); // a vote's samples are not answers
  for (const x of samples) expect(x.value).toBe(x.text.includes('41') ? 0 : 1);
  const cwd = loaded.paths.baseDir;
  expect((await runCli(['rewards', 'recompute'], { cwd })).exitCode).toBe(0);
  expect(await agreementBySpan()).toEqual(before);
});

it('rewards audit without a store: exit 2, says so', async () => {
  const r = await runCli(['rewards', 'audit'], { cwd: tempDir({ 'massgen-rl.yaml': 'project: { name: x }\n' }) });
  expect(r.exitCode).toBe(2);
  expect(r.stderr).toMatch(/store/i);
  expect(r.stderr).not.toMatch(/\bat \S+\.js:\d+/);
});
