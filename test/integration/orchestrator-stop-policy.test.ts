import { afterEach, describe, expect, it } from 'vitest';
import { orchestrate, type StopState } from '../../src/orchestrator/index.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { baseConfig, MemorySink, noTools, shownLabels, team } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * a answers 41 at once (and would vote for it, slowly); b answers 42 a little later; c votes for agent2 as
 * soon as it sees it; a, once it sees two answers, answers again (43): that ends round 3 while c's vote stands.
 */
const script: Script = (req) => {
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: `Final answer: from ${req.model}` };
  const shown = shownLabels(req);
  if (req.model === 'a')
    return !shown.length
      ? { content: 'ANSWER: 41' }
      : shown.length < 2
        ? { content: 'VOTE: agent1 | mine', delayMs: 900 }
        : { content: 'ANSWER: 43', delayMs: 300 };
  if (req.model === 'b')
    return shown.includes('agent2')
      ? { content: 'VOTE: agent2 | mine', delayMs: 800 }
      : { content: 'ANSWER: 42', delayMs: 30 };
  return shown.includes('agent2')
    ? { content: 'VOTE: agent2 | right' }
    : { content: 'VOTE: agent1 | fine', delayMs: 900 };
};

describe('a stop policy in the coordination protocol', () => {
  it('is asked at the end of every round with what the round shows, and a stop presents the leader of the votes standing then', async () => {
    server = await startScriptedServer(script);
    const sink = new MemorySink();
    const seen: StopState[] = [];
    const result = await orchestrate({
      task: 'What is 6 x 7?',
      team: team(server.baseUrl, ['a', 'b', 'c']),
      config: baseConfig,
      sink,
      tools: noTools,
      stopPolicy: (s) => {
        seen.push(structuredClone(s));
        return {
          stop: s.round >= 3,
          payload: { policy: 'stop', chosen: s.round >= 3 ? 'stop' : 'continue', round: s.round },
        };
      },
    });
    expect(seen.map((s) => s.round)).toEqual([1, 2, 3]);
    expect(seen[1]).toMatchObject({
      answers: ['41', '42'],
      voteCounts: [0, 0],
      teamSize: 3,
      liveAgents: 3,
      maxRounds: baseConfig.max_rounds,
    });
    expect(seen[2]!.answers).toEqual(['43', '42']);
    expect(seen[2]!.voteCounts).toEqual([0, 1]);
    expect(seen[2]!.tokens).toBeGreaterThan(seen[1]!.tokens);
    // Stopped after round 3: c's vote for agent2 still stands, so b presents, not a (first by registration).
    expect(result).toMatchObject({
      status: 'completed',
      stoppedAfterRound: 3,
      winner: 'b',
      finalAnswer: 'Final answer: from b',
      consensus: false,
    });
    expect(sink.named('final_selection')[0]!.payload).toMatchObject({
      winner_agent: 'b',
      reason: 'votes',
      votes: { agent2: 1 },
    });
    expect(sink.named('policy_decision').map((s) => s.payload)).toEqual([
      { policy: 'stop', chosen: 'continue', round: 1 },
      { policy: 'stop', chosen: 'continue', round: 2 },
      { policy: 'stop', chosen: 'stop', round: 3 },
    ]);
    expect(sink.named('round')).toHaveLength(3);
  });

  it('presents the answer the others agree with most when it stops a round nobody has voted in yet', async () => {
    const agreeing: Script = (req) => {
      if ((req.messages[0]?.content ?? '').includes('was selected'))
        return { content: `Final answer: from ${req.model}` };
      const shown = shownLabels(req);
      if (req.model === 'a')
        return shown.length ? { content: 'VOTE: agent1 | mine', delayMs: 900 } : { content: 'ANSWER: 41' };
      if (req.model === 'b')
        return shown.length === 1
          ? { content: 'ANSWER: 42 is the answer', delayMs: 30 }
          : { content: 'VOTE: agent2 | mine', delayMs: 900 };
      return shown.length === 2
        ? { content: 'ANSWER: 42 is the answer too', delayMs: 30 }
        : { content: 'VOTE: agent1 | fine', delayMs: 900 };
    };
    server = await startScriptedServer(agreeing);
    const sink = new MemorySink();
    const result = await orchestrate({
      task: 'What is 6 x 7?',
      team: team(server.baseUrl, ['a', 'b', 'c']),
      config: baseConfig,
      sink,
      tools: noTools,
      stopPolicy: (s) => ({ stop: s.answers.length === 3, payload: { policy: 'stop', round: s.round } }),
    });
    expect(result).toMatchObject({ stoppedAfterRound: 3, winner: 'b' });
    expect(sink.named('final_selection')[0]!.payload).toMatchObject({
      winner_agent: 'b',
      reason: 'agreement',
      votes: {},
    });
  });

  it('changes nothing when the policy declines to decide, or when there is none', async () => {
    server = await startScriptedServer(script);
    const runs = [];
    for (const stopPolicy of [undefined, () => undefined]) {
      const sink = new MemorySink();
      const r = await orchestrate({
        task: 'What is 6 x 7?',
        team: team(server.baseUrl, ['a', 'b', 'c']),
        config: baseConfig,
        sink,
        tools: noTools,
        ...(stopPolicy ? { stopPolicy } : {}),
      });
      runs.push({
        winner: r.winner,
        rounds: r.rounds,
        stopped: r.stoppedAfterRound,
        decisions: sink.named('policy_decision').length,
      });
    }
    expect(runs[0]).toEqual(runs[1]);
    expect(runs[0]).toMatchObject({ stopped: undefined, decisions: 0 });
  });
});
