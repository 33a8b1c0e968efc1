import { OpenAI } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { LoadedConfig } from '../../src/config/load.js';
import { rollback } from '../../src/pipeline/deploy/deploy.js';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime, withRuntime } from '../../src/runtime/runtime.js';
import type { Store } from '../../src/store/index.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { heldOutRollout } from '../../src/trace/held-out.js';
import { runCli } from '../helpers.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';
import { pairwiseJudge, prefersRight } from '../support/pairwise-judge.js';
import type { Script } from '../support/scripted-server.js';

const HOLDOUT = 0.3;
const IDLE_MS = 300;
/** The loop's keys for captured traffic, for the in-process runs and the CLI alike. */
const SETS = [
  'collect.source=gateway',
  'eval.source=gateway',
  'eval.seeds=1',
  'eval.replay.judge_model=stub',
  `gateway.holdout=${HOLDOUT}`,
  'rewards.weights.human=1',
  'deploy.rollout=[0.5, 1.0]',
  'deploy.canary.min_rollouts=4',
  'loop.steps=[collect, review, train, eval, deploy]',
];
const QUESTIONS = ['What is 6 x 7?', 'What is 40 + 2?', 'What is 50 - 9?', 'What is the answer to everything?'];
const rightAnswer = (text: string) => (text.includes('50 - 9') ? '41' : '42');

/** Which side answers right: production's base model, and the trained adapters (`base-vN`). */
interface Quality {
  production: boolean;
  adapter: boolean;
}

/**
 * The backend behind the gateway: the team's model, answering right or `7` as `quality` says for the model the
 * request names, and the pairwise judge, which prefers the right answer in whichever position it is shown.
 */
function script(quality: Quality, served: { adapters?: Set<string> }): Script {
  return (req) => {
    const judged = pairwiseJudge(req, prefersRight(rightAnswer));
    if (judged) return judged;
    const last = req.messages.at(-1)?.content ?? '';
    const adapter = /^base-v\d+$/.test(req.model);
    // as vLLM answers a request for an adapter it does not hold (never loaded, or unloaded)
    if (adapter && !served.adapters?.has(req.model))
      return { status: 404, body: { error: { message: `The model \`${req.model}\` does not exist.` } } };
    const good = adapter ? quality.adapter : quality.production;
    return { content: `ANSWER: ${good ? rightAnswer(last) : '7'}` };
  };
}

interface Story {
  project: LoopProject;
  loaded: LoadedConfig;
  rt: Runtime;
  gw: Gateway;
  quality: Quality;
}

let open: Story | undefined;
afterEach(async () => {
  if (!open) return;
  await open.gw.stop();
  await open.rt.close();
  await open.project.server.close();
  open = undefined;
});

async function story(quality: Quality): Promise<Story> {
  const served: { adapters?: Set<string> } = {};
  const project = await loopProject(script(quality, served));
  served.adapters = project.server.adapters;
  const loaded = project.load(SETS);
  const rt = new Runtime(loaded);
  const gw = await gateway(rt, { port: 0, flushMs: 20, armsRefreshMs: 50, sessionIdleMs: IDLE_MS });
  open = { project, loaded, rt, gw, quality };
  return open;
}

interface Answered {
  session: string;
  model: string;
  right: boolean;
}

/**
 * One client session through the gateway with the official SDK: a question, then a follow-up; the
 * client's feedback (1 when the answer was right) unless `feedback` is false.
 */
async function session(s: Story, id: string, i: number, feedback = true): Promise<Answered> {
  const client = new OpenAI({
    baseURL: `${s.gw.url}/v1`,
    apiKey: 'none',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': id, 'x-agent-id': 'a' },
  });
  const from = s.project.server.requests.length;
  const question = `[${id}] ${QUESTIONS[i % QUESTIONS.length]}`;
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: question }];
  const first = await client.chat.completions.create({ model: 'stub', messages });
  const answer = first.choices[0]!.message.content ?? '';
  messages.push({ role: 'assistant', content: answer }, { role: 'user', content: `[${id}] Sure? ${question}` });
  const second = await client.chat.completions.create({ model: 'stub', messages });
  const right = (second.choices[0]!.message.content ?? '').includes(rightAnswer(question));
  if (feedback) {
    const r = await fetch(`${s.gw.url}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: id, score: right ? 1 : 0 }),
    });
    expect(r.status, await r.text()).toBeLessThan(300);
  }
  const mine = s.project.server.requests.slice(from).filter((q) => q.messages[0]?.content?.startsWith(`[${id}]`));
  return { session: id, model: [...new Set(mine.map((q) => q.model))].join(','), right };
}

/** `n` sessions named PREFIX0…, four at a time, every fifth without feedback; waits until all are stored. */
async function traffic(s: Story, prefix: string, n: number): Promise<Answered[]> {
  const out: Answered[] = [];
  const since = Date.now();
  const ids = Array.from({ length: n }, (_, i) => i);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = ids.shift(); i !== undefined; i = ids.shift())
        out.push(await session(s, `${prefix}${i}`, i, i % 5 !== 4));
    }),
  );
  await settled(
    s,
    out.map((a) => a.session),
    since,
  );
  return out.sort((a, b) => a.session.localeCompare(b.session, 'en', { numeric: true }));
}

/** Waits until every named session is a gateway rollout started since `since` and finished. */
async function settled(s: Story, sessions: string[], since: number): Promise<void> {
  const store = s.rt.store();
  for (let t = 0; t < 200; t++) {
    await s.gw.flush();
    const done = new Set(
      captured(store)
        .filter((r) => r.status === 'completed' && r.startedAt >= since)
        .map((r) => r.metadata.session),
    );
    if (sessions.every((x) => done.has(x))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('sessions not stored');
}

/** The captured sessions, oldest first. */
const captured = (store: Store) =>
  store.rollouts
    .list()
    .filter((r) => r.source === GATEWAY_SOURCE)
    .reverse();

function pointers(store: Store) {
  return { production: store.sets.pointer('production')?.setId, canary: store.sets.pointer('canary')?.setId };
}

/** Clients sending sessions (PREFIX0-0, PREFIX0-1, …) until stop() is called, which returns the failures. */
function clients(s: Story, prefix: string) {
  let stop = false;
  const failures: unknown[] = [];
  let served = 0;
  const running = Array.from({ length: 3 }, async (_, c) => {
    for (let n = 0; !stop; n++) {
      await session(s, `${prefix}${c}-${n}`, n).then(
        () => served++,
        (err: unknown) => failures.push(err),
      );
    }
  });
  return async () => {
    stop = true;
    await Promise.all(running);
    return { failures, served };
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const review = (s: Story) => withRuntime(s.project.load([...SETS, 'loop.steps=[review]']), (rt) => runCycle(rt));

/** The first cycle on captured traffic: production answers wrong, the trained adapter right. */
async function firstCycle(s: Story) {
  const before = await traffic(s, 'a', 40);
  expect(before.every((a) => a.model === 'base-model' && !a.right)).toBe(true);
  const cycle = await withRuntime(s.loaded, (rt) => runCycle(rt));
  return { before, cycle };
}

describe('the loop on captured traffic: gateway → collect → train → replay eval → canary in traffic', () => {
  it('trains on rewarded sessions, wins the replay, and stages the canary to production on captured feedback', async () => {
    const s = await story({ production: false, adapter: true });
    const store = s.rt.store();
    const { before, cycle } = await firstCycle(s);
    expect(cycle.status).toBe('completed');
    const sessions = captured(store);
    const held = sessions.filter((r) => heldOutRollout(r.id, HOLDOUT));
    const rewarded = sessions.filter((r) => !heldOutRollout(r.id, HOLDOUT) && r.totalReward !== null);
    expect(held.length).toBeGreaterThan(3);
    expect(cycle.stages.collect).toMatchObject({
      status: 'done',
      completed: rewarded.length,
      captured: {
        taken: rewarded.length,
        held_out: held.length,
        waiting: sessions.length - held.length - rewarded.length,
      },
    });
    expect(cycle.stages.train).toMatchObject({ status: 'done', weights: 'base v1' });
    expect(cycle.stages.eval).toMatchObject({ status: 'done', passed: true, metric: 'reward' });
    expect(cycle.stages.deploy).toMatchObject({ status: 'done', action: 'canary started' });
    const production = pointers(store).production!;
    const candidate = pointers(store).canary!;
    expect(store.sets.pointer('canary')!.fraction).toBe(0.5);
    expect(store.audit.list({ limit: 1 })[0]).toMatchObject({ action: 'canary-start', afterSet: candidate });
    expect(before).toHaveLength(40);

    // Half of the new sessions are answered by the canary's adapter, each session wholly by one arm.
    await sleep(100);
    const half = await traffic(s, 'b', 24);
    const inCanary = half.filter((a) => a.model === 'base-v1');
    expect(half.every((a) => a.model === 'base-v1' || a.model === 'base-model')).toBe(true);
    expect(inCanary.length).toBeGreaterThan(5);
    expect(inCanary.length).toBeLessThan(19);
    expect(half.every((a) => a.right === (a.model === 'base-v1'))).toBe(true);
    const bySession = new Map(captured(store).map((r) => [r.metadata.session as string, r]));
    for (const a of half)
      expect(bySession.get(a.session)!.resourceSetId).toBe(a.model === 'base-v1' ? candidate : production);

    const status = await runCli(['status', '--json', ...SETS.flatMap((x) => ['--set', x])], { cwd: s.project.dir });
    expect(status.exitCode, status.stderr).toBe(0);
    const canaryStatus = JSON.parse(status.stdout).canary;
    expect(canaryStatus).toMatchObject({
      fraction: 0.5,
      stage: { stage: 1, of: 2 },
      arms: {
        canary: { sessions: inCanary.length, rollouts: inCanary.length, meanReward: 1 },
        production: { sessions: half.length - inCanary.length, rollouts: half.length - inCanary.length, meanReward: 0 },
      },
    });

    // The next cycle's collect copies the new rewarded sessions into training data, once each and only them,
    // and its review, counting each session once (not its copy too), advances the canary.
    const next = await withRuntime(s.project.load([...SETS, 'loop.steps=[collect, review]']), (rt) => runCycle(rt));
    const fresh = half.filter((a) => {
      const r = bySession.get(a.session)!;
      return !heldOutRollout(r.id, HOLDOUT) && r.totalReward !== null;
    });
    expect(next.stages.collect).toMatchObject({ status: 'done', completed: fresh.length });

    expect(next.stages.review).toMatchObject({ status: 'done', canary: 'advanced' });
    const rewardedIn = (arm: Answered[]) => arm.filter((a) => bySession.get(a.session)!.totalReward !== null).length;
    const outside = half.filter((a) => a.model === 'base-model');
    expect(next.stages.review!.detail).toContain(
      `${rewardedIn(inCanary)} canary rollout(s), ${rewardedIn(outside)} production rollout(s)`,
    );
    expect(store.audit.list({ limit: 1 })[0]).toMatchObject({ action: 'canary-advance', afterSet: candidate });
    expect(store.sets.pointer('canary')!.fraction).toBe(1);

    await sleep(100);
    const whole = await traffic(s, 'c', 8);
    expect(whole.every((a) => a.model === 'base-v1' && a.right)).toBe(true);
    const promoted = await review(s);
    expect(promoted.stages.review).toMatchObject({ status: 'done', canary: 'promoted' });
    expect(store.audit.list({ limit: 1 })[0]).toMatchObject({ action: 'canary-promote', afterSet: candidate });
    expect(pointers(store)).toEqual({ production: candidate, canary: undefined });

    // Production is the candidate now: every session, new or one the canary never had, gets its adapter.
    await sleep(100);
    const after = await traffic(s, 'b', 8);
    expect(after.map((a) => a.model)).toEqual(after.map(() => 'base-v1'));
    const latest = new Map(captured(store).map((r) => [r.metadata.session as string, r]));
    for (const a of after) expect(latest.get(a.session)!.resourceSetId).toBe(candidate);
    expect(s.project.server.adapters.has('base-v1')).toBe(true);

    // A rollback under load: production's requests move back to the base model, none of them failing.
    const stop = clients(s, 'r');
    await sleep(100);
    await withRuntime(s.loaded, (rt) => rollback(rt, { reason: 'test' }));
    await sleep(200);
    const { failures, served } = await stop();
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(3);
    expect(pointers(store).production).toBe(production);
    // the deploy unloaded the adapter production no longer serves, once the gateway had moved off it
    expect(s.project.server.adapters.has('base-v1')).toBe(false);
    const back = await traffic(s, 'd', 8);
    expect(back.map((a) => a.model)).toEqual(back.map(() => 'base-model'));
  }, 60_000);

  it('rolls back a canary that answers worse in traffic: every session returns to production, no request fails', async () => {
    const s = await story({ production: false, adapter: true });
    const store = s.rt.store();
    const { cycle } = await firstCycle(s);
    expect(cycle.stages.deploy).toMatchObject({ status: 'done', action: 'canary started' });
    const { production, canary: candidate } = pointers(store);
    // In traffic the adapter turns out worse than production.
    Object.assign(s.quality, { production: true, adapter: false });
    await sleep(100);
    const half = await traffic(s, 'b', 24);
    const inCanary = half.filter((a) => a.model === 'base-v1');
    expect(inCanary.length).toBeGreaterThan(5);
    expect(half.every((a) => a.right === (a.model === 'base-model'))).toBe(true);

    // Clients keep coming while review rolls the canary back.
    const stop = clients(s, 'r');
    await sleep(100);
    const rolled = await review(s);
    await sleep(200);
    const { failures, served } = await stop();
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(3);
    expect(rolled.stages.review).toMatchObject({ status: 'done', canary: 'rolled back' });
    expect(store.audit.list({ limit: 1 })[0]).toMatchObject({
      action: 'canary-rollback',
      beforeSet: candidate,
      afterSet: production,
    });
    expect(pointers(store)).toEqual({ production, canary: undefined });
    // the ended canary's adapter was unloaded
    expect(s.project.server.loraCalls.at(-1)).toMatchObject({ action: 'unload', lora_name: 'base-v1' });

    // The sessions the canary had, and every other one, are production's again.
    const again = await traffic(s, 'b', 24);
    expect(again.map((a) => a.model)).toEqual(again.map(() => 'base-model'));

    // `loop --once` says what its collect took of the captured traffic.
    const sets = [...SETS, 'loop.steps=[collect]'].flatMap((x) => ['--set', x]);
    const loop = await runCli(['loop', '--once', ...sets], { cwd: s.project.dir });
    expect(loop.exitCode, loop.stderr).toBe(0);
    expect(loop.stdout).toMatch(/took \d+ captured session\(s\), \d+ held out, \d+ waiting for a reward/);
  }, 60_000);
});
