import { describe, expect, it } from 'vitest';
import type { ChatRequest, ChatResult, LlmClient } from '../../src/llm/types.js';
import { callOptimizer, promptTokenBound } from '../../src/pipeline/prompt-opt/optimizer.js';
import {
  blame,
  commonAncestor,
  drawParent,
  mergeTexts,
  paretoFront,
  parseProposal,
  pickComponent,
  reflectionMessages,
  type Blame,
  type Candidate,
  type ChatTurn,
  type Component,
  type RolloutDigest,
  type ScoreTable,
} from '../../src/prompt-opt/index.js';
import { Rng } from '../../src/tasks/prng.js';

const table = (rows: Record<string, Record<string, number>>): ScoreTable =>
  new Map(Object.entries(rows).map(([id, s]) => [id, new Map(Object.entries(s))]));
const KEYS = ['k1', 'k2', 'k3', 'k4'];

describe('the Pareto front', () => {
  it('keeps a candidate that is best on one key, drops one dominated on every key', () => {
    const f = paretoFront(
      table({
        c0: { k1: 1, k2: 1, k3: 0, k4: 0.5 },
        c1: { k1: 0, k2: 0, k3: 1, k4: 0 },
        c2: { k1: 0.5, k2: 0.5, k3: 0.5, k4: 0.4 },
      }),
      KEYS,
    );
    expect([...f.wins.keys()].sort()).toEqual(['c0', 'c1']);
    expect(f.wins.get('c1')).toEqual(['k3']);
    expect(f.wins.get('c0')).toEqual(['k1', 'k2', 'k4']);
    expect(f.best).toBe('c0');
  });

  it('shares a tied key; a candidate whose every win is shared with one winning more drops', () => {
    const twins = paretoFront(table({ c0: { k1: 1, k2: 0 }, c1: { k1: 1, k2: 0 } }), ['k1', 'k2']);
    expect(twins.wins).toEqual(
      new Map([
        ['c0', ['k1', 'k2']],
        ['c1', ['k1', 'k2']],
      ]),
    );
    // c1 only ties c0 on k1, and c0 also wins k2: c1 adds nothing.
    const sub = paretoFront(table({ c0: { k1: 1, k2: 1 }, c1: { k1: 1, k2: 0 } }), ['k1', 'k2']);
    expect([...sub.wins.keys()]).toEqual(['c0']);
  });

  it('always keeps the best mean, even when it wins no key; a missing score is no win', () => {
    const f = paretoFront(table({ c0: { k1: 1, k2: 0 }, c1: { k1: 0, k2: 1 }, c2: { k1: 0.9, k2: 0.9 } }), [
      'k1',
      'k2',
    ]);
    expect(f.best).toBe('c2');
    expect(f.wins.get('c2')).toEqual([]);
    expect(f.wins.has('c0') && f.wins.has('c1')).toBe(true);
    const partial = paretoFront(table({ c0: { k1: 0.2, k2: 0.2 }, c1: { k1: 0.1 } }), ['k1', 'k2']);
    expect(partial.wins).toEqual(new Map([['c0', ['k1', 'k2']]]));
    expect(paretoFront(new Map(), KEYS)).toEqual({ wins: new Map(), best: null });
  });

  it('draws a parent with probability proportional to the keys it wins (at least 1), the same for the same seed', () => {
    const front = {
      wins: new Map([
        ['a', ['k1', 'k2', 'k3']],
        ['b', ['k4']],
        ['c', []],
      ]),
      best: 'a',
    };
    const draws = (seed: number, n: number) => {
      const rng = new Rng(seed);
      return Array.from({ length: n }, () => drawParent(front, rng));
    };
    const n = 20_000;
    const counts = draws(1, n).reduce((m, id) => m.set(id, (m.get(id) ?? 0) + 1), new Map<string, number>());
    expect(counts.get('a')! / n).toBeCloseTo(3 / 5, 1);
    expect(counts.get('b')! / n).toBeCloseTo(1 / 5, 1);
    expect(counts.get('c')! / n).toBeCloseTo(1 / 5, 1);
    expect(draws(42, 50)).toEqual(draws(42, 50));
    expect(draws(42, 50)).not.toEqual(draws(43, 50));
    expect(() => drawParent({ wins: new Map(), best: null }, new Rng(1))).toThrow(/empty/);
  });
});

const P1: Component = { name: 'p1', agents: ['a', 'b'], presenter: false };
const P2: Component = { name: 'p2', agents: ['c'], presenter: false };
const PRES: Component = { name: 'pres', agents: [], presenter: true };

function view(over: Partial<RolloutDigest> = {}): RolloutDigest {
  return {
    rolloutId: 'r1',
    taskId: 't1',
    task: 'What is 40 + 2?',
    reference: '42',
    reward: 0,
    success: 0,
    finalAnswer: 'Final answer: 41',
    winner: 'c',
    answers: [
      { agent: 'a', label: 'agent1', content: '41', quality: 0 },
      { agent: 'b', label: 'agent2', content: '42', quality: 1 },
      { agent: 'c', label: 'agent3', content: '41', quality: 0 },
    ],
    votes: [
      { voter: 'a', target: 'c', targetLabel: 'agent3', reason: 'REASON-a-likes-agent3', targetQuality: 0 },
      { voter: 'b', target: 'b', targetLabel: 'agent2', reason: 'REASON-b-likes-agent2', targetQuality: 1 },
      { voter: 'c', target: 'b', targetLabel: 'agent2', reason: 'REASON-c-likes-agent2', targetQuality: 1 },
    ],
    feedback: [],
    ...over,
  };
}

describe('credit from traces', () => {
  it("blames lost votes, votes for wrong answers and wrong answers on the agents' prompt", () => {
    const [p1, p2] = blame([P1, P2], [view()]);
    // a's answer got no vote from b or c; b's got c's; a voted for a wrong answer; a answered wrong.
    expect(p1).toMatchObject({
      component: 'p1',
      lostVotes: 1,
      wrongVotes: 1,
      wrongAnswers: 1,
      badPresentations: 0,
      score: 3,
    });
    // c's answer got a's vote; c voted for the right answer; c answered wrong.
    expect(p2).toMatchObject({
      component: 'p2',
      lostVotes: 0,
      wrongVotes: 0,
      wrongAnswers: 1,
      badPresentations: 0,
      score: 1,
    });
  });

  it('blames the presenter for a wrong final answer, twice as much when a right answer was on the table', () => {
    const noneRight = view({ answers: view().answers.map((a) => ({ ...a, quality: 0 })) });
    expect(blame([PRES], [view()])[0]).toMatchObject({ badPresentations: 2, score: 2 });
    expect(blame([PRES], [noneRight])[0]).toMatchObject({ badPresentations: 1, score: 1 });
    expect(blame([PRES], [view({ success: 1 })])[0]!.score).toBe(0);
    // Without a reference nothing is wrong: no answer, vote or presentation is blamed.
    const unknown = view({
      success: null,
      answers: view().answers.map((a) => ({ ...a, quality: null })),
      votes: view().votes.map((v) => ({ ...v, targetQuality: null })),
    });
    expect(blame([P1, PRES], [unknown]).map((b) => b.wrongAnswers + b.wrongVotes + b.badPresentations)).toEqual([0, 0]);
  });

  it('sums over rollouts, and an agent alone (no other voter) loses no vote', () => {
    const solo = view({
      answers: [{ agent: 'c', label: 'agent3', content: '42', quality: 1 }],
      votes: [{ voter: 'c', target: 'c', targetLabel: 'agent3', reason: '', targetQuality: 1 }],
    });
    expect(blame([P2], [solo])[0]!.lostVotes).toBe(0);
    // Voting for one's own answer does not keep it from losing the others' votes.
    const selfish = view({
      answers: view().answers.slice(0, 2),
      votes: [
        { voter: 'a', target: 'a', targetLabel: 'agent1', reason: '', targetQuality: 0 },
        { voter: 'b', target: 'b', targetLabel: 'agent2', reason: '', targetQuality: 1 },
      ],
    });
    expect(blame([P1], [selfish])[0]!.lostVotes).toBe(2);
    expect(blame([P1], [view(), view()])[0]).toMatchObject({ lostVotes: 2, wrongVotes: 2, wrongAnswers: 2, score: 6 });
  });

  it('picks a component with probability proportional to its blame plus a floor', () => {
    const b = (component: string, score: number): Blame => ({
      component,
      lostVotes: 0,
      wrongVotes: 0,
      wrongAnswers: 0,
      badPresentations: 0,
      score,
    });
    const blames = [b('p1', 3), b('p2', 0), b('pres', 2)]; // weights 3.5, 0.5, 2.5 of 6.5
    expect(pickComponent(blames, 0)).toBe('p1');
    expect(pickComponent(blames, 3.49 / 6.5)).toBe('p1');
    expect(pickComponent(blames, 3.51 / 6.5)).toBe('p2');
    expect(pickComponent(blames, 3.99 / 6.5)).toBe('p2');
    expect(pickComponent(blames, 4.01 / 6.5)).toBe('pres');
    expect(pickComponent(blames, 0.999999)).toBe('pres');
    const rng = new Rng(3);
    const n = 20_000;
    const p2 = Array.from({ length: n }, () => pickComponent(blames, rng.next())).filter((x) => x === 'p2').length;
    expect(p2 / n).toBeCloseTo(0.5 / 6.5, 1);
  });
});

describe("the optimizer's proposal", () => {
  const current = 'You are a problem solver.';
  it('takes the last <prompt> block, and the critique before it', () => {
    expect(parseProposal('The agents add wrongly.\n<prompt>\nYou are careful.\n</prompt>', current, 100)).toEqual({
      critique: 'The agents add wrongly.',
      prompt: 'You are careful.',
    });
    expect(parseProposal('Draft: <prompt>one</prompt> Better: <prompt>two</prompt>', current, 100)).toMatchObject({
      prompt: 'two',
    });
  });

  it('takes a fenced block when there is no tag, and an unclosed tag to the end', () => {
    expect(parseProposal('Critique.\n```text\nYou check sums.\n```\n', current, 100)).toEqual({
      critique: 'Critique.',
      prompt: 'You check sums.',
    });
    expect(parseProposal('Critique.\n<prompt>\nYou check sums twice.', current, 100)).toEqual({
      critique: 'Critique.',
      prompt: 'You check sums twice.',
    });
  });

  it("takes an unmarked reply whole (as GEPA does); refuses an empty, too long, unchanged one, or one with the orchestration's markup", () => {
    expect(parseProposal('Always show the working.', current, 100)).toEqual({
      critique: '',
      prompt: 'Always show the working.',
    });
    expect(parseProposal('x'.repeat(101), current, 100)).toEqual({ refused: 'too_long' });
    expect(parseProposal('<prompt>\n  \n</prompt>', current, 100)).toEqual({ refused: 'empty' });
    expect(parseProposal(`<prompt>${'x'.repeat(101)}</prompt>`, current, 100)).toEqual({ refused: 'too_long' });
    expect(parseProposal(`<prompt>${'x'.repeat(100)}</prompt>`, current, 100)).toMatchObject({
      prompt: 'x'.repeat(100),
    });
    expect(parseProposal(`<prompt>\n  ${current}\n</prompt>`, current, 100)).toEqual({ refused: 'unchanged' });
    expect(parseProposal(`<prompt>${current}</prompt>`, `\n${current}\n\n`, 100)).toEqual({ refused: 'unchanged' });
    expect(parseProposal('<prompt>Answer inside <CURRENT ANSWERS> like agent1.</prompt>', current, 100)).toEqual({
      refused: 'markup',
    });
    expect(parseProposal('<prompt>Copy <agent2> here.</prompt>', current, 100)).toEqual({ refused: 'markup' });
  });
});

const cand = (id: string, texts: Record<string, string>, parents: string[] = []): Candidate => ({
  id,
  texts,
  parents,
  edited: null,
  critique: null,
});

describe('merging two candidates', () => {
  const pool = new Map(
    [
      cand('c0', { p1: 'A0', p2: 'B0' }),
      cand('c1', { p1: 'A1', p2: 'B0' }, ['c0']),
      cand('c2', { p1: 'A0', p2: 'B2' }, ['c0']),
      cand('c3', { p1: 'A3', p2: 'B0' }, ['c1']),
      cand('c4', { p1: 'A4', p2: 'B4' }, ['c0']),
      cand('c5', { p1: 'A1', p2: 'B2' }, ['c1', 'c2']),
    ].map((c) => [c.id, c]),
  );
  const get = (id: string) => pool.get(id)!;

  it('finds the nearest common ancestor along first parents', () => {
    expect(commonAncestor(pool, 'c1', 'c2')?.id).toBe('c0');
    expect(commonAncestor(pool, 'c3', 'c1')?.id).toBe('c1');
    expect(commonAncestor(pool, 'c3', 'c2')?.id).toBe('c0');
    expect(commonAncestor(pool, 'c5', 'c3')?.id).toBe('c1');
    expect(commonAncestor(pool, 'c5', 'c2')?.id).toBe('c0');
    expect(commonAncestor(pool, 'c1', 'nope')).toBeUndefined();
  });

  it('takes each prompt from the candidate that changed it, the better one where both did; null when nothing new', () => {
    expect(mergeTexts(get('c1'), get('c2'), get('c0'), true)).toEqual({ p1: 'A1', p2: 'B2' });
    expect(mergeTexts(get('c2'), get('c1'), get('c0'), false)).toEqual({ p1: 'A1', p2: 'B2' });
    // Both changed p2: the better candidate's p2; c4 changed p1 alone.
    expect(mergeTexts(get('c4'), get('c2'), get('c0'), false)).toEqual({ p1: 'A4', p2: 'B2' });
    expect(mergeTexts(get('c4'), get('c2'), get('c0'), true)).toBeNull(); // that is c4 itself
    // c3 holds every change c1 has since c1.
    expect(mergeTexts(get('c3'), get('c1'), get('c1'), true)).toBeNull();
    expect(mergeTexts(get('c1'), get('c1'), get('c0'), true)).toBeNull();
  });
});

describe('the reflection request', () => {
  it("shows the prompt, the credit, and the reasons of the votes for and against its agents' answers", () => {
    const b = blame([P1], [view()])[0]!;
    const high = view({
      rolloutId: 'r2',
      success: 1,
      reward: 1,
      answers: [{ agent: 'a', label: 'agent1', content: '42', quality: 1 }],
      votes: [{ voter: 'c', target: 'a', targetLabel: 'agent1', reason: 'REASON-c-for-agent1', targetQuality: 1 }],
    });
    const [sys, user] = reflectionMessages(P1, 'You are a problem solver.', b, [view()], [high], 777);
    expect(sys!.role).toBe('system');
    const text = user!.content;
    expect(text).toContain('the system prompt of agent(s) a, b');
    expect(text).toContain('<prompt>\nYou are a problem solver.\n</prompt>');
    expect(text).toContain('lost the vote 1 time(s), were wrong 1 time(s), and voted for a wrong answer 1 time(s)');
    expect(text).toContain('at most 777 characters');
    // Against a's answer: b and c preferred agent2 (right); for b's answer: c's vote; against b's: a's vote for agent3 (wrong).
    expect(text).toMatch(
      /Answer by a \(agent1\) \[wrong\]: 41\n {2}vote AGAINST \(preferred agent2 \[correct\]\) by b: REASON-b-likes-agent2\n {2}vote AGAINST \(preferred agent2 \[correct\]\) by c: REASON-c-likes-agent2/,
    );
    expect(text).toMatch(
      /Answer by b \(agent2\) \[correct\]: 42\n {2}vote AGAINST \(preferred agent3 \[wrong\]\) by a: REASON-a-likes-agent3\n {2}vote FOR by c: REASON-c-likes-agent2/,
    );
    expect(text).toContain('a voted for agent3 [wrong]: REASON-a-likes-agent3');
    expect(text).toContain('vote FOR by c: REASON-c-for-agent1');
    expect(text.indexOf('Example 1')).toBeLessThan(text.indexOf('Example 2'));
    // Another component's agent is not shown as an answer of this prompt.
    expect(text).not.toContain('Answer by c');
    const presenter = reflectionMessages(PRES, 'Present it.', blame([PRES], [view()])[0]!, [view()], [], 100)[1]!
      .content;
    expect(presenter).toContain("the prompt of the agent presenting the team's final answer");
    expect(presenter).toContain('2 presented final answer(s) were wrong');
    expect(presenter).toContain('Final answer (as presented) [wrong]: Final answer: 41');
  });
});

/** An LlmClient double: records each request and answers with the usage `usage` gives for it. */
function scriptedClient(
  usage: (req: ChatRequest) => { promptTokens: number; completionTokens: number; totalTokens?: number } | Error,
) {
  const requests: ChatRequest[] = [];
  const client: LlmClient = {
    async chat(req) {
      requests.push(req);
      const u = usage(req);
      if (u instanceof Error) throw u;
      const result: ChatResult = {
        content: '<prompt>new</prompt>',
        toolCalls: [],
        finishReason: 'stop',
        model: req.model,
        latencyMs: 1,
        attempts: 1,
        logprobs: null,
        tokenIds: null,
        promptTokenIds: null,
        ttftMs: null,
        usage: {
          promptTokens: u.promptTokens,
          completionTokens: u.completionTokens,
          totalTokens: u.totalTokens ?? u.promptTokens + u.completionTokens,
        },
      };
      return result;
    },
  };
  return { client, requests };
}

const utf8 = (messages: readonly ChatTurn[]) => messages.reduce((n, m) => n + Buffer.byteLength(m.content, 'utf8'), 0);

describe('optimizer calls within the token budget', () => {
  const messages: ChatTurn[] = [
    { role: 'system', content: 'You improve prompts.' },
    { role: 'user', content: 'Improve this prompt: be careful.' },
  ];
  const call = (o: { client: LlmClient; left: number; maxTokens?: number; messages?: ChatTurn[] }) => {
    const claims: number[] = [];
    const settled: number[] = [];
    const run = callOptimizer({
      client: o.client,
      model: 'opt',
      messages: o.messages ?? messages,
      maxTokens: o.maxTokens ?? 512,
      temperature: 0.7,
      seed: 1,
      left: o.left,
      signal: new AbortController().signal,
      claim: (w) => claims.push(w),
      settle: (u) => settled.push(u),
    });
    return { run, claims, settled };
  };

  it("bounds a prompt's tokens by its characters and its UTF-8 bytes (a byte-level tokenizer can take one token per byte)", () => {
    expect(promptTokenBound(messages)).toBeGreaterThanOrEqual(messages.reduce((n, m) => n + m.content.length, 0));
    const wide: ChatTurn[] = [{ role: 'user', content: `${'漢'.repeat(200)}${'😀'.repeat(100)}` }];
    expect(promptTokenBound(wide)).toBeGreaterThanOrEqual(utf8(wide));
  });

  it('never claims more than is left, caps the completion to it, and makes no call when the worst case does not fit', async () => {
    const bound = promptTokenBound(messages);
    const { client, requests } = scriptedClient((req) => ({ promptTokens: 20, completionTokens: req.max_tokens! }));
    const roomy = call({ client, left: bound + 10_000 });
    expect(await roomy.run).toEqual({ content: '<prompt>new</prompt>', tokens: 20 + 512 });
    expect(roomy.claims).toEqual([bound + 512]);
    expect(roomy.settled).toEqual([532]);
    expect(requests.at(-1)!.max_tokens).toBe(512);
    const tight = call({ client, left: bound + 100 });
    await tight.run;
    expect(requests.at(-1)!.max_tokens).toBe(100);
    expect(tight.claims).toEqual([bound + 100]);
    const n = requests.length;
    for (const left of [bound + 63, bound, bound - 1, 0, -5]) {
      const none = call({ client, left });
      expect(await none.run).toEqual({ outOfBudget: true });
      expect(none.claims).toEqual([]);
      expect(none.settled).toEqual([]);
    }
    expect(requests).toHaveLength(n);
    // A small max_tokens fits in less.
    expect(await call({ client, left: bound + 10, maxTokens: 10 }).run).toMatchObject({ tokens: 30 });
  });

  it('over many budgets and prompts, even a worst-case tokenizer stays within what was left', async () => {
    const rng = new Rng(11);
    const alphabet = ['a', ' ', 'é', '漢', '😀', '\n'];
    // The worst a byte-level tokenizer can report: a token per UTF-8 byte, plus the chat template's, and every completion token allowed.
    const { client } = scriptedClient((req) => ({
      promptTokens: req.messages.reduce((n, m) => n + Buffer.byteLength(m.content ?? '', 'utf8') + 16, 64),
      completionTokens: req.max_tokens!,
    }));
    let made = 0;
    for (let i = 0; i < 300; i++) {
      const text = Array.from({ length: rng.int(0, 400) }, () => rng.pick(alphabet)).join('');
      const msgs: ChatTurn[] = [
        { role: 'system', content: 'Improve.' },
        { role: 'user', content: text },
      ];
      const left = rng.int(0, 3000);
      const c = call({ client, left, maxTokens: rng.int(1, 600), messages: msgs });
      const r = await c.run;
      if ('outOfBudget' in r) continue;
      made++;
      expect(c.claims[0]).toBeLessThanOrEqual(left);
      expect(r.tokens).toBeLessThanOrEqual(c.claims[0]!);
      expect(c.settled).toEqual([r.tokens]);
    }
    expect(made).toBeGreaterThan(50);
  });

  it('settles the worst case when the call fails or reports no usage', async () => {
    const bound = promptTokenBound(messages);
    const failing = call({ client: scriptedClient(() => new Error('connection reset')).client, left: 10_000 });
    await expect(failing.run).rejects.toThrow('connection reset');
    expect(failing.settled).toEqual([bound + 512]);
    const silent = call({
      client: scriptedClient(() => ({ promptTokens: 0, completionTokens: 0 })).client,
      left: 10_000,
    });
    expect(await silent.run).toMatchObject({ tokens: bound + 512 });
  });
});
