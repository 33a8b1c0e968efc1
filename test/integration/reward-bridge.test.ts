import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { FIXTURES, tempDir } from '../helpers.js';
import { bridgeFor, PROMPT } from '../support/reward-bridge.js';

async function post(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const request = (items: { text: string; task?: unknown }[]) => ({
  prompts: items.map(() => PROMPT),
  completions: items.map((i) => i.text),
  meta: items.map((i, n) => ({ rollout_id: 'r1', task_id: i.task ?? 'mul', agent: 'a', seq: n, group_id: 'g1' })),
});

describe('reward bridge', () => {
  it('scores each completion against its task: answers, free text, votes, unknown tasks', async () => {
    const { bridge } = await bridgeFor();
    expect(bridge.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rewards$/);
    const r = await post(
      bridge.url,
      request([
        { text: 'Let me think.\nANSWER: 42' },
        { text: 'ANSWER: 41' },
        { text: 'Six times seven is 42.\nFinal answer: 42' },
        { text: 'VOTE: agent1 | it is right' },
        { text: 'ANSWER: 42', task: 'no-such-task' },
        { text: 'ANSWER: 42', task: 'open' },
        { text: 'ANSWER: 42\nANSWER: 41' },
      ]),
    );
    expect(r.status).toBe(200);
    const rewards = r.json.rewards as (number | null)[];
    expect(rewards).toHaveLength(7);
    const [right, wrong, free, vote, unknown, noReference, twoAnswers] = rewards;
    expect(right).toBe(2); // exact 1 + numeric 1; coordination is team-level and left out
    expect(wrong).toBeLessThan(right!);
    expect(free).toBe(right);
    expect([vote, unknown, noReference]).toEqual([null, null, null]);
    expect(twoAnswers).toBe(0); // breaks the protocol: no answer
    expect({ calls: bridge.calls, scored: bridge.scored }).toEqual({ calls: 1, scored: 4 });
  });

  it('answers malformed requests with 400 and a message, other paths and methods with 404/405', async () => {
    const { bridge } = await bridgeFor('', { maxBodyBytes: 4096 });
    const bad = async (body: unknown, message: RegExp) => {
      const r = await post(bridge.url, body);
      expect(r.status).toBe(400);
      expect(r.json.error).toMatch(message);
    };
    await bad('{not json', /not JSON/);
    await bad([1, 2], /not a JSON object/);
    await bad({ prompts: [PROMPT], completions: 'ANSWER: 42', meta: [{}] }, /"completions" must be an array/);
    await bad({ ...request([{ text: 'ANSWER: 42' }]), meta: [] }, /same length, got 1, 1 and 0/);
    await bad({ ...request([{ text: 'ANSWER: 42' }]), completions: [42] }, /completions\[0\] must be a string/);
    await bad({ ...request([{ text: 'ANSWER: 42' }]), meta: ['mul'] }, /meta\[0\] must be an object/);
    const big = await post(bridge.url, request([{ text: 'x'.repeat(5000) }]));
    expect(big).toMatchObject({ status: 413, json: { error: expect.stringMatching(/over 4096 bytes/) } });
    const root = bridge.url.replace(/\/rewards$/, '/other');
    expect((await fetch(root, { method: 'POST', body: '{}' })).status).toBe(404);
    const get = await fetch(bridge.url);
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    expect((await post(bridge.url, request([{ text: 'ANSWER: 42' }]))).json).toEqual({ rewards: [2] }); // still serving
  });

  it('fails a request with 500 and the message when a reward cannot compute, and keeps serving', async () => {
    const crash = path.join(FIXTURES, 'rewards', 'crash.mjs');
    const { bridge } = await bridgeFor(
      `rewards:\n  weights: { exact: 1, custom: 1 }\n  custom: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(crash)}] }\n`,
    );
    const r = await post(bridge.url, request([{ text: 'ANSWER: 42' }, { text: 'VOTE: agent1 | ok' }]));
    expect(r.status).toBe(500);
    expect(r.json.error).toMatch(
      /^reward custom: custom reward command `.*crash\.mjs` exited with code 3: reward script exploded/,
    );
    expect((await post(bridge.url, request([{ text: 'VOTE: agent1 | ok' }]))).json).toEqual({ rewards: [null] });
  });

  it('custom rewards see the completion as the final answer; no single-answer weight is a UserError', async () => {
    const ok = path.join(FIXTURES, 'rewards', 'ok.mjs');
    const { bridge } = await bridgeFor(
      `rewards:\n  weights: { custom: 1 }\n  custom: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(ok)}] }\n`,
    );
    const r = await post(
      bridge.url,
      request([
        { text: 'ANSWER: 42', task: 'open' },
        { text: 'it is 7', task: 'open' },
      ]),
    );
    expect(r.json).toEqual({ rewards: [1, 0] });
    await expect(bridgeFor('rewards:\n  weights: { coordination: 1, voting: 1 }\n')).rejects.toThrow(UserError);
  });

  it('scores at most `concurrency` completions at once, and closes when its signal aborts', async () => {
    // Each run marks itself in runs/ and watches it until it has seen company (or 3 s passed), then records
    // the most runs it saw at once.
    const script = `import fs from 'node:fs';
const dir = new URL('./runs/', import.meta.url);
fs.mkdirSync(dir, { recursive: true });
const mine = new URL(String(process.pid), dir);
fs.writeFileSync(mine, '');
const started = Date.now();
let max = 0;
const timer = setInterval(() => {
  max = Math.max(max, fs.readdirSync(dir).length);
  const elapsed = Date.now() - started;
  if ((max >= 2 && elapsed > 100) || elapsed > 3000) {
    clearInterval(timer);
    fs.rmSync(mine);
    fs.appendFileSync(new URL('./seen.txt', import.meta.url), max + '\\n');
    console.log(1);
  }
}, 10);
`;
    const abort = new AbortController();
    const dir = tempDir({ 'count.mjs': script });
    const command = JSON.stringify([process.execPath, path.join(dir, 'count.mjs')]);
    const { bridge } = await bridgeFor(`rewards:\n  weights: { custom: 1 }\n  custom: { command: ${command} }\n`, {
      concurrency: 2,
      signal: abort.signal,
    });
    const r = await post(bridge.url, request(Array.from({ length: 6 }, () => ({ text: 'ANSWER: 42' }))));
    expect(r.json).toEqual({ rewards: [1, 1, 1, 1, 1, 1] });
    const seen = fs.readFileSync(path.join(dir, 'seen.txt'), 'utf8').trim().split('\n').map(Number);
    expect(seen).toHaveLength(6);
    expect(Math.max(...seen)).toBe(2);
    abort.abort();
    await expect(fetch(bridge.url, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});
