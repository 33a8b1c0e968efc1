import Ajv2020 from 'ajv/dist/2020.js';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { massgenRolloutId, parseMassgenLogs, writeImportedRollout } from '../../src/interop/massgen/import.js';
import { findJsonSyntaxError } from '../../src/interop/massgen/json-locate.js';
import { importMassgenLogs } from '../../src/pipeline/utilities/import-massgen.js';
import { outcomeFromSpans } from '../../src/rollouts/outcome.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { Store, type Span } from '../../src/store/index.js';
import type { NewAnswerPayload, RoundPayload, SelectionPayload, VotePayload } from '../../src/trace/payloads.js';
import { FIXTURES, configIn, hasStack, runCli, tempDir } from '../helpers.js';

const LOGS = path.join(FIXTURES, 'massgen-logs');
const L1 = 'log_20251104_191641_482913';
const L2 = 'log_20251106_093015_117204';
const ID = {
  l1t1: massgenRolloutId(L1, 1, null),
  l1t2: massgenRolloutId(L1, 2, null),
  l2a1: massgenRolloutId(L2, 1, 1),
  l2a2: massgenRolloutId(L2, 1, 2),
};
const read = (...p: string[]) => fs.readFileSync(path.join(LOGS, ...p), 'utf8');
const json = (...p: string[]) => JSON.parse(read(...p)) as Record<string, any>;

function copyLogs(): string {
  const dir = tempDir();
  fs.cpSync(LOGS, path.join(dir, 'massgen_logs'), { recursive: true });
  return path.join(dir, 'massgen_logs');
}

async function importFixtures(dir = LOGS) {
  const loaded = configIn('project:\n  name: import-test\n');
  const summary = await withRuntime(loaded, (rt) => importMassgenLogs(rt, { dir }));
  return { loaded, summary, open: () => Store.open({ path: loaded.paths.storePath }) };
}

const shape = (spans: Span[]) =>
  spans.map(
    (s) => `${s.seq} ${s.type}:${s.name}${s.agent ? `@${s.agent}` : ''}${s.parentSeq ? `^${s.parentSeq}` : ''}`,
  );
const named = <T>(spans: Span[], name: string) =>
  spans.filter((s) => s.name === name).map((s) => ({ agent: s.agent, seq: s.seq, ...(s.payload as T) }));

describe('traces import --massgen-logs (MassGen log directories)', () => {
  it('imports each turn and attempt as one rollout with our span vocabulary', async () => {
    const { summary, open } = await importFixtures();
    expect(summary.failed).toEqual([]);
    expect(summary.skipped).toEqual([]);
    expect(
      summary.imported.map((u) => [
        u.log,
        u.turn,
        u.attempt,
        u.rollout_id,
        u.status,
        u.winner,
        u.answers,
        u.votes,
        u.rounds,
      ]),
    ).toEqual([
      [L1, 1, null, ID.l1t1, 'completed', 'gemini2.5flash', 2, 3, 3],
      [L1, 2, null, ID.l1t2, 'completed', 'gpt5nano', 3, 4, 4],
      [L2, 1, 1, ID.l2a1, 'completed', 'agent_b', 2, 2, 3],
      [L2, 1, 2, ID.l2a2, 'completed', 'agent_a', 1, 2, 2],
    ]);

    const store = open();
    try {
      const r = store.rollouts.get(ID.l1t1)!;
      const events = json(L1, 'turn_1', 'coordination_events.json');
      expect(r).toMatchObject({
        source: 'massgen-import',
        status: 'completed',
        taskId: null,
        runId: null,
        winner: 'gemini2.5flash',
        finalAnswer: read(L1, 'turn_1', 'final', 'gemini2.5flash', 'answer.txt'),
        tokens: 0,
        toolCalls: 0,
        messages: 10,
        startedAt: Math.round(events.session_metadata.start_time * 1000),
        finishedAt: Math.round(events.session_metadata.end_time * 1000),
      });
      expect(r.wallMs).toBeCloseTo((events.session_metadata.end_time - events.session_metadata.start_time) * 1000, 3);
      expect(r.metadata).toEqual({
        massgen_log: L1,
        turn: 1,
        attempt: null,
        original_task: 'What is the sum of the first 50 positive odd numbers? Show the reasoning briefly.',
        massgen_dir: `${L1}/turn_1`,
        agents: ['gpt5nano', 'gemini2.5flash', 'grok3mini'],
        labels: { gpt5nano: 'agent1', 'gemini2.5flash': 'agent2', grok3mini: 'agent3' },
        models: { gpt5nano: 'gpt-5-nano', 'gemini2.5flash': 'gemini-2.5-flash', grok3mini: 'grok-3-mini' },
        massgen_version: '0.1.11',
        restarted: false,
      });

      const spans = store.spans.list(r.id);
      expect(shape(spans)).toEqual([
        '1 coordination:round',
        '2 message:context@gpt5nano^1',
        '3 message:context@gemini2.5flash^1',
        '4 message:context@grok3mini^1',
        '5 coordination:new_answer@gemini2.5flash^1',
        '6 coordination:round',
        '7 message:context@gemini2.5flash^6',
        '8 message:update@gpt5nano^6',
        '9 message:update@grok3mini^6',
        '10 coordination:new_answer@grok3mini^6',
        '11 coordination:round',
        '12 message:context@grok3mini^11',
        '13 message:update@gpt5nano^11',
        '14 message:update@gemini2.5flash^11',
        '15 coordination:vote@gpt5nano^11',
        '16 coordination:vote@gemini2.5flash^11',
        '17 coordination:vote@grok3mini^11',
        '18 coordination:final_selection@gemini2.5flash^11',
        '19 message:context@gemini2.5flash^11',
        '20 coordination:presentation@gemini2.5flash^11',
      ]);
      expect(
        named<RoundPayload>(spans, 'round').map(({ round, answer_labels, trigger }) => ({
          round,
          answer_labels,
          trigger,
        })),
      ).toEqual([
        { round: 1, answer_labels: [], trigger: 'start' },
        { round: 2, answer_labels: ['agent2'], trigger: 'new_answer' },
        { round: 3, answer_labels: ['agent2', 'agent3'], trigger: 'new_answer' },
      ]);
      const snap = json(L1, 'turn_1', 'snapshot_mappings.json');
      expect(named<NewAnswerPayload>(spans, 'new_answer')).toEqual([
        {
          agent: 'gemini2.5flash',
          seq: 5,
          turn_id: 'gemini2.5flash#1',
          label: 'agent2',
          round: 1,
          answer_labels_seen: [],
          prompt_seq: 3,
          content: read(L1, 'turn_1', snap['agent2.1'].path),
          massgen_label: 'agent2.1',
          snapshot: `${L1}/turn_1/${snap['agent2.1'].path}`,
        },
        {
          agent: 'grok3mini',
          seq: 10,
          turn_id: 'grok3mini#1',
          label: 'agent3',
          round: 2,
          answer_labels_seen: ['agent2'],
          prompt_seq: 4,
          content: read(L1, 'turn_1', snap['agent3.1'].path),
          massgen_label: 'agent3.1',
          snapshot: `${L1}/turn_1/${snap['agent3.1'].path}`,
        },
      ]);
      expect(
        named<VotePayload>(spans, 'vote').map(
          ({
            agent,
            voter_label,
            target_label,
            target_agent,
            reason,
            round,
            answer_labels_seen,
            prompt_seq,
            massgen_target_label,
          }) => ({
            agent,
            voter_label,
            target_label,
            target_agent,
            reason,
            round,
            answer_labels_seen,
            prompt_seq,
            massgen_target_label,
          }),
        ),
      ).toEqual([
        {
          agent: 'gpt5nano',
          voter_label: 'agent1',
          target_label: 'agent2',
          target_agent: 'gemini2.5flash',
          reason: 'agent2 gives the n^2 identity and verifies it by pairing; clear and correct.',
          round: 3,
          answer_labels_seen: ['agent2', 'agent3'],
          prompt_seq: 2,
          massgen_target_label: 'agent2.1',
        },
        {
          agent: 'gemini2.5flash',
          voter_label: 'agent2',
          target_label: 'agent2',
          target_agent: 'gemini2.5flash',
          reason: 'Both answers are correct; mine also explains the general identity.',
          round: 3,
          answer_labels_seen: ['agent2', 'agent3'],
          prompt_seq: 7,
          massgen_target_label: 'agent2.1',
        },
        {
          agent: 'grok3mini',
          voter_label: 'agent3',
          target_label: 'agent2',
          target_agent: 'gemini2.5flash',
          reason: 'agent2.1 is correct and states the general pattern, which is more useful than my series formula.',
          round: 3,
          answer_labels_seen: ['agent2', 'agent3'],
          prompt_seq: 12,
          massgen_target_label: 'agent2.1',
        },
      ]);
      const selection = spans[17]!.payload as SelectionPayload & { vote_summary: string };
      expect(selection).toMatchObject({
        winner_agent: 'gemini2.5flash',
        winner_label: 'agent2',
        votes: { agent2: 3 },
        consensus: true,
        reason: 'votes',
        rounds: 3,
      });
      expect(selection.vote_summary).toBe(
        events.events.find((e: any) => e.event_type === 'final_agent_selected').context.vote_summary,
      );
      expect(spans[19]!.payload).toEqual({
        content: r.finalAnswer,
        prompt_seq: 19,
        massgen_label: 'agent2.final',
        snapshot: `${L1}/turn_1/final/gemini2.5flash/answer.txt`,
      });
      expect(spans[19]!.durationMs).toBeGreaterThan(6000);

      // Context spans carry the prompt MassGen saved next to the action (context.txt), with the labels it showed.
      const ctx = json(L1, 'turn_1', path.dirname(snap['agent3.1'].path), 'context.txt');
      expect(spans[3]!.payload).toMatchObject({
        turn_id: 'grok3mini#1',
        kind: 'context',
        round: 1,
        answer_labels_seen: [],
        messages: [
          { role: 'system', content: ctx.system_message },
          { role: 'user', content: ctx.user_message },
        ],
        tools: ['new_answer', 'vote'],
        source: `${L1}/turn_1/${path.dirname(snap['agent3.1'].path)}/context.txt`,
      });
      expect(spans[11]!.payload).toMatchObject({
        answer_labels_seen: ['agent2', 'agent3'],
        massgen_labels_seen: ['agent2.1', 'agent3.1'],
        prompt_labels: { agent1: 'agent2', agent2: 'agent3' },
      });
      expect((spans[18]!.payload as { messages: { role: string }[] }).messages.map((m) => m.role)).toEqual([
        'system',
        'user',
      ]);
    } finally {
      store.close();
    }
  });

  it("labels agents by registration order (MassGen's tracker), not vote.json's sorted mapping, and keeps only standing votes", async () => {
    const { open } = await importFixtures();
    const store = open();
    try {
      const spans = store.spans.list(ID.l1t2);
      // vote.json numbers agents by sorted id: there gpt5nano is "agent2"; in the tracker (and here) it is agent1.
      const voteFile = json(L1, 'turn_2', json(L1, 'turn_2', 'snapshot_mappings.json')['agent1.vote1'].path);
      expect(voteFile).toMatchObject({
        voter_id: 'gpt5nano',
        voter_anon_id: 'agent2',
        voted_for: 'gpt5nano',
        voted_for_anon: 'agent2',
      });
      const votes = named<VotePayload>(spans, 'vote').map((v) => [
        v.agent,
        v.voter_label,
        v.target_agent,
        v.target_label,
        v.round,
      ]);
      expect(votes).toEqual([
        ['grok3mini', 'agent3', 'gemini2.5flash', 'agent2', 3], // cast before agent1.2 arrived: invalidated
        ['gemini2.5flash', 'agent2', 'gpt5nano', 'agent1', 4],
        ['grok3mini', 'agent3', 'gpt5nano', 'agent1', 4],
        ['gpt5nano', 'agent1', 'gpt5nano', 'agent1', 4],
      ]);
      expect(named<NewAnswerPayload>(spans, 'new_answer').map((a) => [a.label, a.massgen_label, a.round])).toEqual([
        ['agent1', 'agent1.1', 1],
        ['agent2', 'agent2.1', 2],
        ['agent1', 'agent1.2', 3],
      ]);
      expect(named<SelectionPayload>(spans, 'final_selection')[0]).toMatchObject({
        winner_agent: 'gpt5nano',
        winner_label: 'agent1',
        votes: { agent1: 3 },
        consensus: true,
        rounds: 4,
      });
      // The reward view rebuilt from the imported spans agrees.
      const outcome = outcomeFromSpans(store.rollouts.get(ID.l1t2)!, spans, null);
      expect(outcome).toMatchObject({
        winner: 'gpt5nano',
        consensus: true,
        rounds: 4,
        labels: { gpt5nano: 'agent1', 'gemini2.5flash': 'agent2', grok3mini: 'agent3' },
      });
      expect(outcome.votes.map((v) => [v.voter, v.target])).toEqual([
        ['gemini2.5flash', 'gpt5nano'],
        ['grok3mini', 'gpt5nano'],
        ['gpt5nano', 'gpt5nano'],
      ]);
      expect(outcome.answers.map((a) => a.content)).toEqual([
        read(L1, 'turn_2', 'gpt5nano', '20251104_191949_042411', 'answer.txt'),
        read(L1, 'turn_2', 'gemini2.5flash', '20251104_191953_822211', 'answer.txt'),
        read(L1, 'turn_2', 'gpt5nano', '20251104_192000_153811', 'answer.txt'),
      ]);
      const first = spans.find((s) => s.name === 'context' && s.agent === 'gpt5nano')!.payload as {
        messages: { content: string }[];
      };
      expect(first.messages[1]!.content).toContain('<CONVERSATION_HISTORY>');
    } finally {
      store.close();
    }
  });

  it('imports restart attempts: the restarted attempt ends in a restart span, the next one starts from its feedback', async () => {
    const { open } = await importFixtures();
    const store = open();
    try {
      const a1 = store.rollouts.get(ID.l2a1)!;
      const a2 = store.rollouts.get(ID.l2a2)!;
      expect(a1.metadata).toMatchObject({
        massgen_log: L2,
        turn: 1,
        attempt: 1,
        restarted: true,
        original_task:
          'Write a Python function is_palindrome(s) that ignores case and any non-alphanumeric characters.',
      });
      expect(a2.metadata).toMatchObject({ massgen_log: L2, turn: 1, attempt: 2, restarted: false });
      expect(a2.finalAnswer).toBe(read(L2, 'turn_1', 'final', 'agent_a', 'answer.txt'));
      expect(a1.finalAnswer).toBe(read(L2, 'turn_1', 'attempt_1', 'final', 'agent_b', 'answer.txt'));

      const s1 = store.spans.list(a1.id);
      expect(shape(s1).slice(0, 6)).toEqual([
        '1 coordination:round',
        '2 message:context@agent_a^1',
        '3 message:context@agent_b^1',
        '4 coordination:drop@agent_b^1',
        '5 message:context@agent_b^1',
        '6 coordination:new_answer@agent_a^1',
      ]);
      expect(s1[3]!.payload).toEqual({
        kind: 'error',
        reason: 'Stream error - Connection reset by peer',
        round: 1,
        massgen_event: 'agent_error',
      });
      // agent_b errored before acting: MassGen saved no context for that start.
      expect(s1[2]!.payload).toMatchObject({ turn_id: 'agent_b#1', messages: null, source: null });
      const restart = s1[s1.length - 1]!;
      expect(restart).toMatchObject({ type: 'coordination', name: 'restart', agent: 'agent_b' });
      const feedback = restart.payload as { restart: number; feedback: string };
      expect(feedback.restart).toBe(1);
      expect(feedback.feedback).toMatch(
        /^The previous orchestration attempt was restarted because:\nThe function treats 'é' and 'E' as different/,
      );
      expect(feedback.feedback).toContain('**Instructions for this attempt:**\nNormalize with unicodedata');
      expect(a2.metadata.restart_feedback).toBe(feedback.feedback);

      const s2 = store.spans.list(a2.id);
      expect(s2[0]!.payload).toEqual({ round: 1, answer_labels: [], trigger: 'restart' });
      expect(s2.some((s) => s.name === 'restart')).toBe(false);
      expect(named<SelectionPayload>(s2, 'final_selection')[0]).toMatchObject({
        winner_agent: 'agent_a',
        winner_label: 'agent1',
        votes: { agent1: 2 },
        consensus: true,
        rounds: 2,
      });
    } finally {
      store.close();
    }
  });

  it('is idempotent: re-importing the same logs (from any of the accepted paths) adds nothing', async () => {
    const { loaded, open } = await importFixtures();
    const before = open();
    const counts = before.stats().counts;
    before.close();
    const again = await withRuntime(loaded, (rt) => importMassgenLogs(rt, { dir: LOGS }));
    expect(again.imported).toEqual([]);
    expect(again.skipped.map((s) => [s.rollout_id, s.reason])).toEqual(
      Object.values(ID).map((id) => [id, 'already imported']),
    );
    // The same log directory named directly, or through the project's .massgen/massgen_logs, has the same keys.
    const project = tempDir();
    fs.cpSync(path.join(LOGS, L2), path.join(project, '.massgen', 'massgen_logs', L2), { recursive: true });
    expect(
      (await withRuntime(loaded, (rt) => importMassgenLogs(rt, { dir: path.join(LOGS, L1) }))).skipped.length,
    ).toBe(2);
    expect(
      (await withRuntime(loaded, (rt) => importMassgenLogs(rt, { dir: project }))).skipped.map((s) => s.rollout_id),
    ).toEqual([ID.l2a1, ID.l2a2]);
    const after = open();
    expect(after.stats().counts).toEqual(counts);
    after.close();
  });

  it('skips turns MassGen never finished (no coordination_events.json) and reports them', async () => {
    const dir = copyLogs();
    fs.rmSync(path.join(dir, L1, 'turn_2', 'coordination_events.json'));
    const { summary } = await importFixtures(dir);
    expect(summary.imported.map((u) => u.rollout_id)).toEqual([ID.l1t1, ID.l2a1, ID.l2a2]);
    expect(summary.skipped).toEqual([
      expect.objectContaining({ log: L1, turn: 2, attempt: null, rollout_id: null, reason: 'incomplete' }),
    ]);
  });

  it('writes a rollout in one transaction: a failure part-way leaves nothing of it', async () => {
    const parsed = parseMassgenLogs(LOGS);
    const loaded = configIn('project:\n  name: tx\n');
    const store = Store.open({ path: loaded.paths.storePath });
    try {
      const good = parsed.converted[0]!.rollout;
      const broken = { ...good, spans: [...good.spans.slice(0, 5), { ...good.spans[5]!, type: 'bogus' as never }] };
      expect(() => writeImportedRollout(store, broken)).toThrow(/CHECK constraint/);
      expect(store.rollouts.get(good.id)).toBeUndefined();
      expect(store.stats().counts.spans).toBe(0);
      expect(writeImportedRollout(store, good)).toBe(true);
      expect(writeImportedRollout(store, good)).toBe(false);
      expect(store.spans.list(good.id).length).toBe(good.spans.length);
    } finally {
      store.close();
    }
  });

  it('reads logs without snapshot_mappings.json, and maps timeouts, cancellations, unknown vote targets and missing files', async () => {
    const t = 1762000000;
    const ev = (
      dt: number,
      event_type: string,
      agent_id: string | null,
      details: string,
      context: Record<string, unknown> = {},
    ) => ({ timestamp: t + dt, event_type, agent_id, details, context: { ...context, iteration: 1, round: 0 } });
    const events = {
      session_metadata: {
        user_prompt: 'Name a prime above 10.',
        agent_ids: ['zed', 'amy', 'bob'],
        start_time: t,
        end_time: t + 30,
        final_winner: 'zed',
      },
      events: [
        ev(0, 'session_start', null, "Started with agents: ['zed', 'amy', 'bob']"),
        ...['zed', 'amy', 'bob'].map((a, i) =>
          ev(0.01 * (i + 1), 'context_received', a, 'Received context with 0 answers', {
            available_answers: [],
            available_answer_labels: [],
            answer_count: 0,
            has_conversation_history: false,
          }),
        ),
        ev(5, 'new_answer', 'zed', 'Provided answer agent1.1', { label: 'agent1.1' }),
        ev(5.001, 'restart_triggered', 'zed', 'Triggered restart affecting 3 agents', {
          affected_agents: ['zed', 'amy', 'bob'],
          triggering_agent: 'zed',
        }),
        ev(6, 'new_answer', 'amy', 'Provided answer agent2.1', { label: 'agent2.1' }),
        ev(6.001, 'restart_triggered', 'amy', 'Triggered restart affecting 3 agents', {
          affected_agents: ['zed', 'amy', 'bob'],
          triggering_agent: 'amy',
        }),
        ev(9, 'vote_cast', 'amy', 'Voted for unknown', {
          voted_for: 'carol',
          voted_for_label: 'unknown',
          reason: 'carol is best',
          available_answers: ['agent1.1', 'agent2.1'],
        }),
        ev(10, 'vote_cast', 'zed', 'Voted for agent1.1', {
          voted_for: 'zed',
          voted_for_label: 'agent1.1',
          reason: '13 is prime',
          available_answers: ['agent1.1', 'agent2.1'],
        }),
        ev(20, 'agent_timeout', 'bob', 'TIMEOUT: Time limit exceeded (20.0s/20s)'),
        ev(20.1, 'agent_cancelled', 'amy', 'CANCELLED: All agents voted - coordination complete'),
        ev(21, 'final_round_start', 'zed', 'Starting final presentation round 2', {
          round_type: 'final',
          final_round: 2,
        }),
        ev(21.001, 'final_agent_selected', 'zed', 'Selected as final presenter', {
          vote_summary: 'You received 1 vote(s)',
          all_answers: ['agent1.1', 'agent2.1'],
          answers_for_context: { 'agent1.1': '13', 'agent2.1': '11' },
        }),
        ev(29, 'final_answer', 'zed', 'Presented final answer agent1.final', { label: 'agent1.final' }),
        ev(30, 'session_end', null, 'Session completed in 30.0s'),
      ],
    };
    const dir = tempDir({
      [`${L1}/turn_1/coordination_events.json`]: JSON.stringify(events, null, 2),
      // zed's answer directory has answer.txt; amy's lost it (answers_for_context is the fallback); zed's vote directory follows.
      [`${L1}/turn_1/zed/20251101_120005_000000/answer.txt`]: '13',
      [`${L1}/turn_1/zed/20251101_120005_000000/context.txt`]: 'plain text context',
      [`${L1}/turn_1/zed/20251101_120010_000000/vote.json`]: JSON.stringify({
        voter_id: 'zed',
        voted_for: 'zed',
        reason: '13 is prime',
      }),
      [`${L1}/turn_1/amy/20251101_120006_000000/context.txt`]: JSON.stringify({
        system_message: 's',
        user_message: 'u',
        tools: [],
      }),
    });
    const { summary, open } = await importFixtures(dir);
    expect(summary.failed).toEqual([]);
    const store = open();
    try {
      const r = store.rollouts.get(ID.l1t1)!;
      // No final/ directory: the winner's latest answer stands in for the presentation.
      expect(r).toMatchObject({ status: 'completed', winner: 'zed', finalAnswer: '13' });
      expect(r.metadata).toMatchObject({
        labels: { zed: 'agent1', amy: 'agent2', bob: 'agent3' },
        original_task: 'Name a prime above 10.',
      });
      const spans = store.spans.list(r.id);
      expect(
        named<NewAnswerPayload>(spans, 'new_answer').map((a) => [a.agent, a.label, a.content, a.round, a.snapshot]),
      ).toEqual([
        ['zed', 'agent1', '13', 1, `${L1}/turn_1/zed/20251101_120005_000000/answer.txt`],
        ['amy', 'agent2', '11', 2, null],
      ]);
      expect(spans.find((s) => s.name === 'context' && s.agent === 'zed')!.payload).toMatchObject({
        messages: [{ role: 'user', content: 'plain text context' }],
      });
      expect(named(spans, 'invalid_action')).toEqual([
        expect.objectContaining({ agent: 'amy', kind: 'unknown_target', reason: 'carol is best' }),
      ]);
      expect(named<VotePayload>(spans, 'vote')).toEqual([
        expect.objectContaining({
          agent: 'zed',
          target_agent: 'zed',
          target_label: 'agent1',
          round: 3,
          snapshot: `${L1}/turn_1/zed/20251101_120010_000000/vote.json`,
        }),
      ]);
      expect(named(spans, 'drop')).toEqual([
        expect.objectContaining({ agent: 'bob', kind: 'timeout', reason: 'Time limit exceeded (20.0s/20s)', round: 3 }),
      ]);
      expect(named(spans, 'cancel')).toEqual([
        expect.objectContaining({ agent: 'amy', reason: 'superseded', round: 3 }),
      ]);
      expect(named<SelectionPayload>(spans, 'final_selection')[0]).toMatchObject({
        winner_agent: 'zed',
        votes: { agent1: 1 },
        consensus: false,
        reason: 'votes',
        rounds: 3,
      });
    } finally {
      store.close();
    }
  });

  describe('via the CLI', () => {
    const project = () => tempDir({ 'massgen-rl.yaml': 'project:\n  name: cli-import\n' });

    it('prints a summary (--json) and exports the imported rollouts as valid orchestration traces', async () => {
      const cwd = project();
      const first = await runCli(['--json', 'traces', 'import', '--massgen-logs', LOGS], { cwd });
      expect(first.exitCode).toBe(0);
      const summary = JSON.parse(first.stdout);
      expect(summary).toMatchObject({ ok: true, logs: 2, failed: [], skipped: [] });
      expect(summary.imported.map((u: { rollout_id: string }) => u.rollout_id)).toEqual(Object.values(ID));
      const second = await runCli(['traces', 'import', '--massgen-logs', LOGS], { cwd });
      expect(second.exitCode).toBe(0);
      expect(second.stdout).toContain('0 imported, 4 already present, 0 failed');

      const out = await runCli(['traces', 'export', '--format', 'orchestration-trace'], { cwd });
      expect(out.exitCode).toBe(0);
      const traces = out.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(traces.map((t) => t.trace_id)).toEqual(Object.values(ID));
      const ajv = new Ajv2020({ allErrors: true });
      const validate = ajv.compile(
        JSON.parse(fs.readFileSync(path.join(FIXTURES, 'orchestration-trace.schema.json'), 'utf8')),
      );
      for (const t of traces) {
        expect(validate(t), JSON.stringify(validate.errors)).toBe(true);
        const ids = new Set(t.events.map((e: { id: string }) => e.id));
        expect(ids.size).toBe(t.events.length);
        for (const e of t.edges) expect(ids.has(e.src) && ids.has(e.dst), JSON.stringify(e)).toBe(true);
        expect(Object.values(t.costs).every((v) => (v as number) >= 0)).toBe(true);
        expect(t.topology).toBe('debate');
        expect(t.system).toBe('massgen');
      }
      // No raw text leaves: answers appear only as hashes.
      expect(out.stdout).not.toContain('2500');
      expect(out.stdout).not.toContain('is_palindrome');
    });

    it('refuses a malformed log with exit 2, naming the file, line and column, and writes nothing', async () => {
      const dir = copyLogs();
      const file = path.join(dir, L2, 'turn_1', 'attempt_1', 'coordination_events.json');
      const text = fs.readFileSync(file, 'utf8');
      const at = text.indexOf('"event_type": "vote_cast",');
      fs.writeFileSync(file, text.replace('"event_type": "vote_cast",', '"event_type": "vote_cast"'));
      const line = text.slice(0, at).split('\n').length + 1;
      const column = /^ */.exec(text.split('\n')[line - 1]!)![0].length + 1;

      const cwd = project();
      const r = await runCli(['traces', 'import', '--massgen-logs', dir], { cwd });
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain(
        `${L2}/turn_1/attempt_1/coordination_events.json:${line}:${column}: invalid JSON: expected "," or "}" after a property value`,
      );
      expect(r.stderr).toContain('nothing was imported');
      expect(hasStack(r.stderr)).toBe(false);
      expect(fs.existsSync(path.join(cwd, '.massgen-rl'))).toBe(false);

      // With a store already there, it stays as it was.
      expect((await runCli(['traces', 'import', '--massgen-logs', path.join(LOGS, L1)], { cwd })).exitCode).toBe(0);
      const storeFile = path.join(cwd, '.massgen-rl', 'store.sqlite');
      const count = () => {
        const s = Store.open({ path: storeFile });
        try {
          return s.stats().counts;
        } finally {
          s.close();
        }
      };
      const before = count();
      const again = await runCli(['--json', 'traces', 'import', '--massgen-logs', dir], { cwd });
      expect(again.exitCode).toBe(2);
      expect(JSON.parse(again.stdout)).toMatchObject({ ok: false, error: { exitCode: 2 } });
      expect(count()).toEqual(before);
    });

    it('names schema problems in vote.json by path and position; --skip-invalid imports the rest', async () => {
      const dir = copyLogs();
      const rel = json(L1, 'turn_1', 'snapshot_mappings.json')['agent1.vote1'].path as string;
      const file = path.join(dir, L1, 'turn_1', rel);
      fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('"voted_for": "gemini2.5flash"', '"voted_for": 2'));
      const cwd = project();
      const r = await runCli(['traces', 'import', '--massgen-logs', dir], { cwd });
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(`${L1}/turn_1/${rel.replace(/\./g, '\\.')}:4:16: not a MassGen vote\\.json: voted_for: `),
      );

      const skip = await runCli(['--json', 'traces', 'import', '--massgen-logs', dir, '--skip-invalid'], { cwd });
      expect(skip.exitCode).toBe(0);
      const summary = JSON.parse(skip.stdout);
      expect(summary.imported.map((u: { rollout_id: string }) => u.rollout_id)).toEqual([ID.l1t2, ID.l2a1, ID.l2a2]);
      expect(summary.failed).toEqual([
        {
          log: L1,
          turn: 1,
          attempt: null,
          file: `${L1}/turn_1/${rel}`,
          line: 4,
          column: 16,
          message: expect.stringContaining('voted_for'),
        },
      ]);
    });

    it('explains a directory without MassGen logs', async () => {
      const r = await runCli(['traces', 'import', '--massgen-logs', tempDir({ 'notes.txt': 'x' })], { cwd: project() });
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(/no MassGen log directories found/);
    });
  });
});

describe('JSON error positions', () => {
  it.each([
    ['{\n  "a": 1,\n}', 3, 1, 'trailing comma before "}"'],
    ['{\n  "a": NaN\n}', 2, 8, "unexpected character 'N'"],
    ['{"a": "x', 1, 7, 'unterminated string'],
    ['[1, 2', 1, 6, 'expected "," or "]" after an array element, found end of file'],
    ['{"a": 1}\n{"b": 2}', 2, 1, "unexpected content after the JSON value: '{'"],
    ['{"a": "tab\there"}', 1, 11, 'control character in string'],
  ])('%j: line %i, column %i', (text, line, column, message) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(findJsonSyntaxError(text)).toEqual({
      message: expect.stringContaining(message),
      position: expect.objectContaining({ line, column }),
    });
  });

  it('agrees with JSON.parse on every truncation and single-character deletion of a real log file', () => {
    const text = read(L2, 'turn_1', 'attempt_2', 'coordination_events.json').slice(0, 4000);
    const variants = [
      text,
      ...Array.from({ length: 200 }, (_, i) => text.slice(0, i * 20)),
      ...Array.from({ length: 200 }, (_, i) => text.slice(0, i * 20 + 3) + text.slice(i * 20 + 4)),
    ];
    for (const v of variants) {
      let ok = true;
      try {
        JSON.parse(v);
      } catch {
        ok = false;
      }
      expect(findJsonSyntaxError(v) === undefined, JSON.stringify(v.slice(-40))).toBe(ok);
    }
  });
});
