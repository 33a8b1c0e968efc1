import { createHash } from 'node:crypto';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { exportRollouts, Store, type SpanInput } from '../../src/store/index.js';
import { storeDb } from '../../src/store/store.js';
import { toOrchestrationTrace, type OrchestrationTrace } from '../../src/trace/orchestration-trace.js';
import type {
  CancelPayload,
  DelegateAggregatePayload,
  DelegatePayload,
  DelegateReturnPayload,
  InvalidActionPayload,
  NewAnswerPayload,
  PresentationPayload,
  PromptPayload,
  RoundPayload,
  SelectionPayload,
  ToolPayload,
  VotePayload,
} from '../../src/trace/payloads.js';
import { tempDir } from '../helpers.js';
import { traceProblems as problems } from '../support/trace-schema.js';

const T0 = 1_700_000_000_000;
const hash = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

function prompt(
  turn: string,
  round: number,
  model: string,
  user: string,
  response: PromptPayload['response'],
  tokens: number,
): PromptPayload {
  return {
    turn_id: turn,
    round,
    attempt: 1,
    request: {
      model,
      messages: [
        { role: 'system', content: 'You are one agent of a team.' },
        { role: 'user', content: user },
      ],
    },
    response,
    usage: { prompt_tokens: tokens - 4, completion_tokens: 4, total_tokens: tokens },
    latency_ms: 400,
    ...(response ? {} : { cancelled: true }),
  };
}
const reply = (content: string | null, toolCalls: unknown[] = []) => ({
  content,
  tool_calls: toolCalls,
  finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
});

/** A two-agent orchestration written the way the orchestrator writes it (src/orchestrator/coordinator.ts, trace-types.ts). */
function synthetic(opts: { tools: boolean }): SpanInput[] {
  const at = (ms: number) => T0 + ms;
  const spans: SpanInput[] = [
    {
      type: 'coordination',
      name: 'round',
      agent: null,
      startedAt: at(0),
      payload: { round: 1, answer_labels: [], trigger: 'start' } satisfies RoundPayload,
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 1,
      startedAt: at(10),
      durationMs: 900,
      payload: prompt(
        't1',
        1,
        'm-a',
        'What is 6 x 7?',
        reply(null, [{ id: 'c1', name: 'calculator', arguments: { expr: '6*7' } }]),
        15,
      ),
    },
    opts.tools
      ? {
          type: 'tool',
          name: 'calculator',
          agent: 'a',
          parentSeq: 2,
          startedAt: at(920),
          durationMs: 5,
          payload: {
            turn_id: 't1',
            name: 'calculator',
            args: { expr: '6*7' },
            result: '42',
            success: true,
          } satisfies ToolPayload,
        }
      : {
          type: 'message',
          name: 'context',
          agent: 'a',
          parentSeq: 1,
          startedAt: at(920),
          payload: { kind: 'context', content: 'the answers so far' },
        },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 1,
      startedAt: at(930),
      durationMs: 800,
      payload: { ...prompt('t1', 1, 'm-a', 'calculator: 42', reply('ANSWER: 42'), 34), ttft_ms: 123.4567 },
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'b',
      parentSeq: 1,
      startedAt: at(12),
      durationMs: 1800,
      payload: prompt('t2', 1, 'm-b', 'What is 6 x 7?', null, 0),
    },
    {
      type: 'coordination',
      name: 'new_answer',
      agent: 'a',
      parentSeq: 1,
      startedAt: at(1731),
      payload: {
        turn_id: 't1',
        label: 'agent1',
        content: '42',
        round: 1,
        answer_labels_seen: [],
        prompt_seq: 4,
      } satisfies NewAnswerPayload,
    },
    {
      type: 'coordination',
      name: 'cancel',
      agent: 'b',
      parentSeq: 1,
      startedAt: at(1732),
      payload: { turn_id: 't2', round: 1, reason: 'superseded' } satisfies CancelPayload,
    },
    {
      type: 'coordination',
      name: 'round',
      agent: null,
      startedAt: at(1733),
      payload: { round: 2, answer_labels: ['agent1'], trigger: 'new_answer' } satisfies RoundPayload,
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'b',
      parentSeq: 8,
      startedAt: at(1740),
      durationMs: 500,
      payload: prompt('t3', 2, 'm-b', '<agent1> 42', reply('VOTE: agent3 | best'), 20),
    },
    {
      type: 'coordination',
      name: 'invalid_action',
      agent: 'b',
      parentSeq: 8,
      startedAt: at(2241),
      payload: {
        turn_id: 't3',
        kind: 'unknown_target',
        detail: 'agent3 is not an answer label',
        correction: 'vote for agent1',
        attempt: 1,
      } satisfies InvalidActionPayload,
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'b',
      parentSeq: 8,
      startedAt: at(2250),
      durationMs: 450,
      payload: prompt('t3', 2, 'm-b', 'vote for agent1', reply('VOTE: agent1 | correct'), 22),
    },
    {
      type: 'coordination',
      name: 'vote',
      agent: 'b',
      parentSeq: 8,
      startedAt: at(2701),
      payload: {
        turn_id: 't3',
        voter_label: 'agent2',
        target_label: 'agent1',
        target_agent: 'a',
        reason: 'correct',
        round: 2,
        answer_labels_seen: ['agent1'],
        prompt_seq: 11,
      } satisfies VotePayload,
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(1741),
      durationMs: 1000,
      payload: prompt('t4', 2, 'm-a', '<agent1> 42', reply('VOTE: agent1 | mine'), 20),
    },
    {
      type: 'coordination',
      name: 'vote',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(2742),
      payload: {
        turn_id: 't4',
        voter_label: 'agent1',
        target_label: 'agent1',
        target_agent: 'a',
        reason: 'mine',
        round: 2,
        answer_labels_seen: ['agent1'],
        prompt_seq: 13,
      } satisfies VotePayload,
    },
    {
      type: 'coordination',
      name: 'final_selection',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(2743),
      payload: {
        winner_agent: 'a',
        winner_label: 'agent1',
        votes: { agent1: 2 },
        consensus: true,
        reason: 'votes',
        rounds: 2,
      } satisfies SelectionPayload,
    },
    {
      type: 'prompt',
      name: 'presentation',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(2750),
      durationMs: 700,
      payload: prompt('presentation', 2, 'm-a', 'present', reply('Final answer: 42'), 30),
    },
    {
      type: 'coordination',
      name: 'presentation',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(3451),
      payload: { content: 'Final answer: 42', prompt_seq: 16 } satisfies PresentationPayload,
    },
  ];
  return spans;
}

function storeWith(opts: { tools: boolean }) {
  const store = Store.open({ path: path.join(tempDir(), 'store.sqlite') });
  const id = store.rollouts.start({
    id: opts.tools ? 'ro_tools' : 'ro_debate',
    metadata: { original_task: 'What is 6 x 7?', agents: ['a', 'b'] },
  });
  expect(store.spans.append(id, synthetic(opts))).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
  store.rewards.add(id, [
    { channel: 'rollout', family: 'exact', value: 1 },
    { channel: 'agent', family: 'voting', value: 0.5, agent: 'a' },
    { channel: 'agent', family: 'voting', value: 0.25, agent: 'b' },
    { channel: 'turn', family: 'coordination', value: 0.1, agent: 'a', targetSeq: 6 },
    { channel: 'turn', family: 'coordination', value: -0.2, agent: 'b', targetSeq: 10 },
  ]);
  store.rollouts.finish(id, {
    status: 'completed',
    finalAnswer: 'Final answer: 42',
    winner: 'a',
    totalReward: 1,
    tokens: 141,
    toolCalls: opts.tools ? 1 : 0,
    messages: 9,
    wallMs: 3451.5,
  });
  storeDb(store).prepare('UPDATE rollouts SET started_at = ? WHERE id = ?').run(T0, id);
  return { store, id };
}

async function exportAll(store: Store): Promise<{ traces: OrchestrationTrace[]; text: string }> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const result = await exportRollouts(store, out, { format: 'orchestration-trace', pageSize: 1 });
  out.end();
  const text = Buffer.concat(chunks).toString('utf8');
  const traces = text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as OrchestrationTrace);
  expect(result.rollouts).toBe(traces.length);
  return { traces, text };
}

describe('orchestration-trace export', () => {
  it('maps a synthetic orchestration onto events, edges, rewards and costs that validate', async () => {
    const { store, id } = storeWith({ tools: true });
    try {
      const { traces, text } = await exportAll(store);
      expect(traces.length).toBe(1);
      const trace = traces[0]!;
      expect(problems(trace)).toEqual([]);
      expect(trace).toEqual(
        toOrchestrationTrace(store.rollouts.get(id)!, store.spans.list(id), store.rewards.list(id)),
      );
      expect(trace).toMatchObject({
        trace_id: 'ro_tools',
        task_id: `task:${hash('What is 6 x 7?').slice(7, 23)}`,
        system: 'massgen-rl',
        topology: 'mixed',
      });
      expect(trace.costs).toEqual({ tokens: 141, wall_clock_s: 3.452, tool_calls: 1, messages: 9 });
      expect(trace.rewards.rollout).toBe(1);
      expect(trace.rewards.agent).toBe(0.75);
      expect(trace.rewards.turn).toBeCloseTo(-0.1, 12);
      expect(trace.metrics).toMatchObject({
        agents: 2,
        rounds: 2,
        answers: 1,
        votes: 2,
        completed: 1,
        consensus: 1,
        total_reward: 1,
      });

      const byId = new Map(trace.events.map((e) => [e.id, e]));
      const ev = (eid: string) => {
        const e = byId.get(eid);
        expect(e, eid).toBeDefined();
        return e!;
      };
      expect(ev('e1')).toMatchObject({
        type: 'orchestrator_decision',
        agent: 'orchestrator',
        decision: 'round',
        round: 1,
        trigger: 'start',
        t: 0,
      });
      expect(ev('e2.req')).toMatchObject({
        type: 'message',
        agent: 'a',
        role: 'request',
        from: 'a',
        to: 'm-a',
        t: 0.01,
      });
      expect(ev('e2.res')).toMatchObject({
        type: 'message',
        role: 'response',
        from: 'm-a',
        to: 'a',
        t: 0.41,
        tokens: 15,
        finish_reason: 'tool_calls',
      });
      expect(ev('e3.call')).toMatchObject({
        type: 'tool_call',
        agent: 'a',
        tool: 'calculator',
        t: 0.92,
        content_ref: `sha256:${createHash('sha256').update('{"expr":"6*7"}').digest('hex')}`,
      });
      expect(ev('e3.result')).toMatchObject({
        type: 'tool_result',
        tool: 'calculator',
        success: true,
        t: 0.925,
        content_ref: hash('42'),
      });
      expect(byId.has('e5.res')).toBe(false); // a cancelled call has no response
      expect(ev('e4.res')).toMatchObject({ role: 'response', ttft_s: 0.123457 }); // a streamed call
      expect(ev('e2.res')).not.toHaveProperty('ttft_s');
      expect(ev('e6')).toMatchObject({
        type: 'return',
        agent: 'a',
        role: 'answer',
        label: 'agent1',
        round: 1,
        content_ref: hash('42'),
      });
      expect(ev('e7')).toMatchObject({
        type: 'orchestrator_decision',
        agent: 'orchestrator',
        decision: 'cancel',
        to: 'b',
        reason: 'superseded',
      });
      expect(ev('e10')).toMatchObject({
        type: 'safety_event',
        agent: 'b',
        role: 'invalid_action',
        kind: 'unknown_target',
      });
      expect(ev('e12')).toMatchObject({
        type: 'aggregate',
        agent: 'b',
        role: 'vote',
        from: 'b',
        to: 'a',
        label: 'agent1',
        content_ref: hash('correct'),
      });
      expect(ev('e15.tally')).toMatchObject({
        type: 'aggregate',
        agent: 'orchestrator',
        role: 'vote_tally',
        votes: { agent1: 2 },
      });
      expect(ev('e15')).toMatchObject({
        type: 'orchestrator_decision',
        decision: 'final_selection',
        to: 'a',
        label: 'agent1',
        rounds: 2,
      });
      expect(ev('e17')).toMatchObject({
        type: 'message',
        agent: 'a',
        role: 'presentation',
        from: 'a',
        to: 'user',
        content_ref: hash('Final answer: 42'),
        t: 3.451,
      });

      const has = (src: string, dst: string, type: string) =>
        trace.edges.some((e) => e.src === src && e.dst === dst && e.type === type);
      expect(has('e2.req', 'e2.res', 'causal')).toBe(true);
      expect(has('e2.res', 'e3.call', 'causal')).toBe(true);
      expect(has('e3.call', 'e3.result', 'tool_dependency')).toBe(true);
      expect(has('e4.res', 'e6', 'causal')).toBe(true); // new_answer.prompt_seq = 4
      expect(has('e9.res', 'e10', 'safety_flow')).toBe(true);
      expect(has('e11.res', 'e12', 'causal')).toBe(true);
      expect(has('e12', 'e15.tally', 'aggregate') && has('e14', 'e15.tally', 'aggregate')).toBe(true);
      expect(has('e15.tally', 'e15', 'causal')).toBe(true);
      expect(has('e6', 'e15', 'return')).toBe(true);
      expect(has('e15', 'e17', 'message')).toBe(true);
      expect(has('e16.res', 'e17', 'causal')).toBe(true);
      expect(has('e1', 's2.a', 'spawn') && has('e1', 's5.b', 'spawn') && has('e8', 's9.b', 'spawn')).toBe(true);
      const temporal = trace.edges.filter((e) => e.type === 'temporal');
      expect(temporal.length).toBe(trace.events.length - 1);
      expect(temporal.every((e, i) => e.src === trace.events[i]!.id && e.dst === trace.events[i + 1]!.id)).toBe(true);

      // Agents spawn and despawn once per round they work in: b stops at its cancel, a at the next round.
      const life = trace.events
        .filter((e) => e.type === 'spawn' || e.type === 'despawn')
        .map((e) => `${e.type}:${e.agent}`);
      expect(life).toEqual([
        'spawn:a',
        'spawn:b',
        'despawn:b',
        'despawn:a', // round 1 (b cancelled; a until round 2 opens)
        'spawn:b',
        'spawn:a',
        'despawn:b',
        'despawn:a', // round 2, until the final selection
        'spawn:a',
        'despawn:a', // the presentation
      ]);
      const despawnB = ev('d7.b');
      expect(despawnB.t).toBeCloseTo(1.812, 6); // the end of b's cancelled call

      // Raw text never leaves the store: every content is a hash.
      for (const secret of ['What is 6 x 7?', 'Final answer: 42', 'VOTE: agent1', 'You are one agent'])
        expect(text).not.toContain(secret);
    } finally {
      store.close();
    }
  });

  it('calls a tool-free team debate "debate", and a rollout without spans still validates', async () => {
    const { store, id } = storeWith({ tools: false });
    try {
      const empty = store.rollouts.start({ id: 'ro_empty' });
      store.rollouts.finish(empty, { status: 'failed', error: 'no agents' });
      const { traces } = await exportAll(store);
      expect(traces.map((t) => t.trace_id)).toEqual([id, 'ro_empty']);
      for (const t of traces) expect(problems(t)).toEqual([]);
      expect(traces[0]!.topology).toBe('debate');
      expect(traces[0]!.events.find((e) => e.id === 'e3')).toMatchObject({
        type: 'message',
        role: 'context',
        from: 'orchestrator',
        to: 'a',
      });
      expect(traces[1]).toMatchObject({
        task_id: 'rollout:ro_empty',
        topology: 'mixed',
        rewards: {},
        events: [{ id: 'start', type: 'orchestrator_decision', t: 0, status: 'failed' }],
        edges: [],
      });
      expect(traces[1]!.costs).toEqual({ tokens: 0, wall_clock_s: 0, tool_calls: 0, messages: 0 });
    } finally {
      store.close();
    }
  });

  it('the extra rules catch what the schema alone lets through', () => {
    const ok = {
      trace_id: 'x',
      task_id: 'y',
      events: [{ id: 'a', t: 0, type: 'spawn', agent: 'p' }],
      edges: [],
      rewards: {},
      costs: { tokens: 0, wall_clock_s: 0 },
    };
    expect(problems(ok)).toEqual([]);
    expect(problems({ ...ok, events: [...ok.events, { id: 'a', t: 1, type: 'despawn', agent: 'p' }] })).toEqual([
      'duplicate event id a',
    ]);
    expect(problems({ ...ok, edges: [{ src: 'a', dst: 'b', type: 'temporal' }] })).toEqual([
      'edge a -> b references a missing event',
    ]);
    expect(problems({ ...ok, costs: { tokens: 0, wall_clock_s: 0, messages: -1 } })).toEqual(
      expect.arrayContaining(['cost messages is negative']),
    );
  });

  it('leaves the jsonl export as it was', async () => {
    const { store } = storeWith({ tools: true });
    try {
      const out = new PassThrough();
      const chunks: Buffer[] = [];
      out.on('data', (c: Buffer) => chunks.push(c));
      await exportRollouts(store, out, {});
      await exportRollouts(store, out, { format: 'jsonl' });
      out.end();
      const [a, b] = Buffer.concat(chunks).toString('utf8').trim().split('\n');
      expect(a).toBe(b);
      expect(JSON.parse(a!)).toMatchObject({
        id: 'ro_tools',
        spans: expect.arrayContaining([expect.objectContaining({ seq: 17, name: 'presentation' })]),
      });
    } finally {
      store.close();
    }
  });
});

/** A team of a and b where a delegates a subtask to a child team of both (depth 1) while b's call runs. */
function delegation(): SpanInput[] {
  const at = (ms: number) => T0 + ms;
  const mark = { depth: 1, delegate_seq: 4 };
  const child = (s: SpanInput): SpanInput => ({ ...s, payload: { ...(s.payload as object), ...mark } });
  return [
    {
      type: 'coordination',
      name: 'round',
      agent: null,
      startedAt: at(0),
      payload: { round: 1, answer_labels: [], trigger: 'start' } satisfies RoundPayload,
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 1,
      startedAt: at(10),
      durationMs: 100,
      payload: prompt('t1', 1, 'm-a', 'What is 6 x 7?', reply('TOOL: delegate {"task": "Multiply six by seven."}'), 20),
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'b',
      parentSeq: 1,
      startedAt: at(12),
      durationMs: 2000,
      payload: prompt('t2', 1, 'm-b', 'What is 6 x 7?', null, 0),
    },
    {
      type: 'coordination',
      name: 'delegate',
      agent: 'a',
      parentSeq: 2,
      startedAt: at(111),
      payload: {
        turn_id: 't1',
        prompt_seq: 2,
        agent: 'a',
        label: 'agent1',
        task: 'Multiply six by seven.',
        child_depth: 1,
        shape: 'team',
        child_agents: ['a', 'b'],
        ordinal: 1,
      } satisfies DelegatePayload,
    },
    child({
      type: 'coordination',
      name: 'round',
      agent: null,
      parentSeq: 4,
      startedAt: at(112),
      payload: { round: 1, answer_labels: [], trigger: 'start' } satisfies RoundPayload,
    }),
    child({
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 5,
      startedAt: at(113),
      durationMs: 100,
      payload: prompt('t1', 1, 'm-a', 'Multiply six by seven.', reply('ANSWER: 42'), 10),
    }),
    child({
      type: 'coordination',
      name: 'new_answer',
      agent: 'a',
      parentSeq: 5,
      startedAt: at(214),
      payload: {
        turn_id: 't1',
        label: 'agent1',
        content: '42',
        round: 1,
        answer_labels_seen: [],
        prompt_seq: 6,
      } satisfies NewAnswerPayload,
    }),
    child({
      type: 'coordination',
      name: 'round',
      agent: null,
      parentSeq: 4,
      startedAt: at(215),
      payload: { round: 2, answer_labels: ['agent1'], trigger: 'new_answer' } satisfies RoundPayload,
    }),
    child({
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(216),
      durationMs: 50,
      payload: prompt('t2', 2, 'm-a', '<agent1> 42', reply('VOTE: agent1 | ok'), 10),
    }),
    child({
      type: 'coordination',
      name: 'vote',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(267),
      payload: {
        turn_id: 't2',
        voter_label: 'agent1',
        target_label: 'agent1',
        target_agent: 'a',
        reason: 'ok',
        round: 2,
        answer_labels_seen: ['agent1'],
        prompt_seq: 9,
      } satisfies VotePayload,
    }),
    child({
      type: 'prompt',
      name: 'chat',
      agent: 'b',
      parentSeq: 8,
      startedAt: at(217),
      durationMs: 60,
      payload: prompt('t3', 2, 'm-b', '<agent1> 42', reply('VOTE: agent1 | yes'), 10),
    }),
    child({
      type: 'coordination',
      name: 'vote',
      agent: 'b',
      parentSeq: 8,
      startedAt: at(278),
      payload: {
        turn_id: 't3',
        voter_label: 'agent2',
        target_label: 'agent1',
        target_agent: 'a',
        reason: 'yes',
        round: 2,
        answer_labels_seen: ['agent1'],
        prompt_seq: 11,
      } satisfies VotePayload,
    }),
    child({
      type: 'coordination',
      name: 'final_selection',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(279),
      payload: {
        winner_agent: 'a',
        winner_label: 'agent1',
        votes: { agent1: 2 },
        consensus: true,
        reason: 'votes',
        rounds: 2,
      } satisfies SelectionPayload,
    }),
    child({
      type: 'prompt',
      name: 'presentation',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(280),
      durationMs: 50,
      payload: prompt('presentation', 2, 'm-a', 'present', reply('It is 42'), 10),
    }),
    child({
      type: 'coordination',
      name: 'presentation',
      agent: 'a',
      parentSeq: 8,
      startedAt: at(331),
      payload: { content: 'It is 42', prompt_seq: 14 } satisfies PresentationPayload,
    }),
    {
      type: 'coordination',
      name: 'delegate_return',
      agent: 'a',
      parentSeq: 4,
      startedAt: at(332),
      payload: {
        turn_id: 't1',
        delegate_seq: 4,
        child_depth: 1,
        status: 'completed',
        stopped: null,
        final_answer: 'It is 42',
        winner_agent: 'a',
        winner_label: 'agent1',
        rounds: 2,
        tokens: 40,
      } satisfies DelegateReturnPayload,
    },
    {
      type: 'tool',
      name: 'delegate',
      agent: 'a',
      parentSeq: 2,
      startedAt: at(111),
      durationMs: 222,
      payload: {
        turn_id: 't1',
        name: 'delegate',
        args: { task: 'Multiply six by seven.' },
        result: 'It is 42',
        success: true,
      } satisfies ToolPayload,
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 1,
      startedAt: at(340),
      durationMs: 60,
      payload: prompt('t1', 1, 'm-a', 'TOOL RESULT (delegate): It is 42', reply('ANSWER: 42'), 30),
    },
    {
      type: 'coordination',
      name: 'new_answer',
      agent: 'a',
      parentSeq: 1,
      startedAt: at(401),
      payload: {
        turn_id: 't1',
        label: 'agent1',
        content: '42',
        round: 1,
        answer_labels_seen: [],
        prompt_seq: 18,
      } satisfies NewAnswerPayload,
    },
    {
      type: 'coordination',
      name: 'cancel',
      agent: 'b',
      parentSeq: 1,
      startedAt: at(402),
      payload: { turn_id: 't2', round: 1, reason: 'superseded' } satisfies CancelPayload,
    },
    {
      type: 'coordination',
      name: 'round',
      agent: null,
      startedAt: at(403),
      payload: { round: 2, answer_labels: ['agent1'], trigger: 'new_answer' } satisfies RoundPayload,
    },
    {
      type: 'prompt',
      name: 'chat',
      agent: 'a',
      parentSeq: 21,
      startedAt: at(404),
      durationMs: 50,
      payload: prompt('t4', 2, 'm-a', '<agent1> 42', reply('VOTE: agent1 | ok'), 10),
    },
    {
      type: 'coordination',
      name: 'vote',
      agent: 'a',
      parentSeq: 21,
      startedAt: at(455),
      payload: {
        turn_id: 't4',
        voter_label: 'agent1',
        target_label: 'agent1',
        target_agent: 'a',
        reason: 'ok',
        round: 2,
        answer_labels_seen: ['agent1'],
        prompt_seq: 22,
      } satisfies VotePayload,
    },
    {
      type: 'coordination',
      name: 'final_selection',
      agent: 'a',
      parentSeq: 21,
      startedAt: at(456),
      payload: {
        winner_agent: 'a',
        winner_label: 'agent1',
        votes: { agent1: 1 },
        consensus: false,
        reason: 'votes',
        rounds: 2,
      } satisfies SelectionPayload,
    },
    {
      type: 'prompt',
      name: 'presentation',
      agent: 'a',
      parentSeq: 21,
      startedAt: at(457),
      durationMs: 50,
      payload: prompt('presentation', 2, 'm-a', 'present', reply('Final answer: 42'), 10),
    },
    {
      type: 'coordination',
      name: 'presentation',
      agent: 'a',
      parentSeq: 21,
      startedAt: at(508),
      payload: { content: 'Final answer: 42', prompt_seq: 25 } satisfies PresentationPayload,
    },
    {
      type: 'coordination',
      name: 'delegate_aggregate',
      agent: 'a',
      parentSeq: 24,
      startedAt: at(509),
      payload: {
        winner_agent: 'a',
        presentation_seq: 26,
        returns: [{ delegate_seq: 4, return_seq: 16, agent: 'a', child_depth: 1, use: 1 / 3 }],
      } satisfies DelegateAggregatePayload,
    },
  ];
}

describe('orchestration-trace export of a delegation', () => {
  it('maps delegate to spawn events, the child into its own scope, delegate_return to a return and the aggregate, and validates', () => {
    const store = Store.open({ path: path.join(tempDir(), 'store.sqlite') });
    try {
      const id = store.rollouts.start({ id: 'ro_delegation', metadata: { agents: ['a', 'b'] } });
      store.spans.append(id, delegation());
      store.rollouts.finish(id, {
        status: 'completed',
        finalAnswer: 'Final answer: 42',
        winner: 'a',
        totalReward: 1,
        tokens: 110,
        toolCalls: 1,
        messages: 9,
        wallMs: 509,
      });
      storeDb(store).prepare('UPDATE rollouts SET started_at = ? WHERE id = ?').run(T0, id);
      const trace = toOrchestrationTrace(store.rollouts.get(id)!, store.spans.list(id), []);
      expect(problems(trace)).toEqual([]);
      expect(trace.topology).toBe('hierarchical');
      expect(trace.metrics).toMatchObject({
        agents: 2,
        rounds: 2,
        answers: 1,
        votes: 1,
        consensus: 0,
        delegations: 1,
        delegation_depth: 1,
      });

      const byId = new Map(trace.events.map((e) => [e.id, e]));
      const ev = (eid: string) => {
        expect(byId.get(eid), eid).toBeDefined();
        return byId.get(eid)!;
      };
      const has = (src: string, dst: string, type: string) =>
        trace.edges.some((e) => e.src === src && e.dst === dst && e.type === type);
      const scope = { depth: 1, scope: 'e4' };
      expect(ev('e4.a@d1')).toMatchObject({
        type: 'spawn',
        role: 'delegation',
        agent: 'a@d1',
        from: 'a',
        to: 'a@d1',
        shape: 'team',
        ...scope,
        content_ref: hash('Multiply six by seven.'),
      });
      expect(ev('e4.b@d1')).toMatchObject({ type: 'spawn', role: 'delegation', from: 'a', to: 'b@d1', ...scope });
      expect(has('e2.res', 'e4.a@d1', 'spawn') && has('e2.res', 'e4.b@d1', 'spawn')).toBe(true);
      expect(has('e4.a@d1', 'e5', 'spawn') && has('e4.b@d1', 'e5', 'spawn')).toBe(true);
      // The child's events are its own: named agents, tagged, with their own round, votes and selection.
      expect(ev('e5')).toMatchObject({
        type: 'orchestrator_decision',
        decision: 'round',
        agent: 'orchestrator@d1',
        ...scope,
      });
      expect(ev('e6.req')).toMatchObject({ agent: 'a@d1', from: 'a@d1', ...scope });
      expect(ev('e10')).toMatchObject({ type: 'aggregate', role: 'vote', agent: 'a@d1', to: 'a@d1', ...scope });
      expect(ev('e13')).toMatchObject({ decision: 'final_selection', to: 'a@d1', agent: 'orchestrator@d1' });
      expect(
        has('e10', 'e13.tally', 'aggregate') && has('e12', 'e13.tally', 'aggregate') && has('e7', 'e13', 'return'),
      ).toBe(true);
      expect(ev('e15')).toMatchObject({
        type: 'message',
        role: 'presentation',
        from: 'a@d1',
        to: 'orchestrator@d1',
        ...scope,
      });
      expect(ev('e16')).toMatchObject({
        type: 'return',
        role: 'delegate_return',
        agent: 'a@d1',
        from: 'a@d1',
        to: 'a',
        status: 'completed',
        rounds: 2,
        tokens: 40,
        content_ref: hash('It is 42'),
        ...scope,
      });
      expect(has('e15', 'e16', 'return') && has('e16', 'e17.result', 'return')).toBe(true);
      // The team's own selection sees only its own answer and vote.
      expect(trace.edges.filter((e) => e.dst === 'e24' && e.type === 'return').map((e) => e.src)).toEqual(['e19']);
      expect(trace.edges.filter((e) => e.dst === 'e24.tally' && e.type === 'aggregate').map((e) => e.src)).toEqual([
        'e23',
      ]);
      expect(ev('e27')).toMatchObject({
        type: 'aggregate',
        role: 'delegate_aggregate',
        agent: 'orchestrator',
        to: 'a',
        uses: { e16: 1 / 3 },
        used: 1,
      });
      expect(ev('e27').depth).toBeUndefined();
      expect(has('e16', 'e27', 'aggregate') && has('e26', 'e27', 'causal')).toBe(true);
      // b's call in the team's round is not ended by the child's rounds: b despawns at its cancel.
      expect(ev('d20.b')).toMatchObject({ type: 'despawn', agent: 'b' });
      for (const e of trace.events.filter((x) => x.agent.endsWith('@d1'))) expect(e).toMatchObject(scope);
    } finally {
      store.close();
    }
  });
});
