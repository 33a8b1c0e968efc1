import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { buildDataset, type DpoRow, type SftRow } from '../../src/datasets/index.js';
import { datasetOptionsFromConfig } from '../../src/datasets/options.js';
import { copyCaptured, trainingCopyId } from '../../src/pipeline/collect/captured-copy.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { addFeedback } from '../../src/pipeline/utilities/rewards.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { Store } from '../../src/store/index.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { heldOutRollout } from '../../src/trace/held-out.js';
import { readRows } from '../fixtures/datasets/team-rollouts.js';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const HOUR = 3_600_000;

/** A project served by a scripted endpoint (agents and, with `judge`, the judge model). */
async function project(
  opts: { judge?: boolean; holdout?: number; custom?: string; labelFree?: boolean } = {},
): Promise<LoadedConfig> {
  server = await startScriptedServer(() => ({
    content: '```json\n{"scores": {"helpfulness": 8}, "reason": "clear"}\n```',
  }));
  const judge = opts.judge
    ? '  judge: { model: stub, rubric: [{ criterion: helpfulness, weight: 1 }] }\n  weights: { human: 1, judge: 1 }'
    : opts.custom
      ? `  custom: { command: [node, -e, ${JSON.stringify(opts.custom)}] }\n  weights: { human: 1, custom: 1 }`
      : opts.labelFree
        ? '  references: off'
        : '  weights: { human: 1 }';
  const yaml = `models:\n  stub: { base_url: "${server.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }
rewards:\n${judge}
collect: { source: gateway }
gateway: { holdout: ${opts.holdout ?? 0} }
`;
  const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }) });
  await withRuntime(loaded, (rt) => syncProduction(rt));
  return loaded;
}

/**
 * One captured session as the gateway stores it: a gateway rollout with a chat call for each answer (the same
 * question asked again), finished `ageMs` ago.
 */
function capture(store: Store, question: string, answer: string | string[], ageMs = HOUR): string {
  const metadata = { client: 'app', session: question };
  // answered by production, as the gateway records it
  const resourceSetId = store.sets.pointer('production')?.setId;
  const id = store.rollouts.start({ source: GATEWAY_SOURCE, metadata, resourceSetId });
  const payload = (answer: string, i: number) => ({
    turn_id: `call-${id}-${i}`,
    round: 0,
    attempt: 1,
    request: { model: 'stub', messages: [{ role: 'user', content: question }] },
    response: { content: answer, tool_calls: [], finish_reason: 'stop' },
    usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
    latency_ms: 4,
    gateway: { client: 'app', backend: 'stub', backend_model: 'm', stream: false, status: 200 },
  });
  const answers = typeof answer === 'string' ? [answer] : answer;
  store.spans.append(
    id,
    answers.map((a, i) => ({ type: 'prompt', name: 'chat', agent: 'bot', payload: payload(a, i) })),
  );
  store.rollouts.finish(id, { status: 'completed', tokens: 8, messages: 1, wallMs: 4 });
  const at = Date.now() - ageMs;
  store.rollouts.setImportedTimes(id, at - 10, at);
  return id;
}

function withStore<T>(loaded: LoadedConfig, fn: (store: Store) => T): T {
  const store = openStore(loaded);
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

const collectGateway = (loaded: LoadedConfig) => withRuntime(loaded, (rt) => collect(rt));

describe('collect.source gateway', () => {
  it('takes rewarded sessions since the watermark, holds reward-less ones back until feedback arrives', async () => {
    const loaded = await project();
    const [good, bad, later] = withStore(loaded, (store) => {
      const ids = [capture(store, 'Capital of France?', 'Paris'), capture(store, 'Capital of France?', 'Lyon')];
      store.transaction(() => {
        store.rewards.add(ids[0]!, [{ channel: 'rollout', family: 'human', value: 0.9 }]);
        store.rollouts.setTotalReward(ids[0]!, 0.9);
        store.rewards.add(ids[1]!, [{ channel: 'rollout', family: 'human', value: 0.1 }]);
        store.rollouts.setTotalReward(ids[1]!, 0.1);
      });
      // a session a MassGen import joined is that import's training data, not a copy's
      const joined = capture(store, 'Capital of Spain?', 'Madrid');
      store.transaction(() => {
        store.rollouts.setTotalReward(joined, 1);
        store.rollouts.mergeMetadata(joined, { joined_into: 'mg_run' });
      });
      return [...ids, capture(store, 'Largest planet?', 'Jupiter')];
    });

    const first = await collectGateway(loaded);
    expect(first.captured).toMatchObject({ since: null, taken: 2, waiting: 1, heldOut: 0, joined: 1, rewarded: 2 });
    expect(first).toMatchObject({ completed: 2, tasks: 2, meanReward: 0.5 });
    expect(first.rollouts.map((r) => r.id)).toEqual([trainingCopyId(good!), trainingCopyId(bad!)]);
    withStore(loaded, (store) => {
      const copy = store.rollouts.get(trainingCopyId(good!))!;
      expect(copy).toMatchObject({ source: 'collect', runId: first.runId, finalAnswer: 'Paris', totalReward: 0.9 });
      expect(copy.metadata).toMatchObject({ captured_from: good, captured_turn: 1 });
      // the session waiting for a reward has no copy: it is in no dataset
      expect(store.rollouts.get(trainingCopyId(later!))).toBeUndefined();
      expect(store.rollouts.countCollectedAfter(0)).toBe(2);
    });

    // A copy is training data only: the canary and the watch count each session once, not its copy too.
    withStore(loaded, (store) => {
      const production = store.sets.pointer('production')!.setId;
      expect(store.rollouts.setRewards(production).sort()).toEqual([0.1, 0.9, 1]);
    });

    // Nothing new: the session waiting for a reward lies before the watermark and is not looked at again.
    const second = await collectGateway(loaded);
    expect(second.captured).toMatchObject({ since: first.captured!.watermark, taken: 0, waiting: 0 });
    expect(second.completed).toBe(0);

    await withRuntime(loaded, (rt) => addFeedback(rt, later!, { score: 1 }));
    const third = await collectGateway(loaded);
    expect(third.captured).toMatchObject({ taken: 1, rewarded: 1, waiting: 0 });
    expect(third.rollouts.map((r) => r.id)).toEqual([trainingCopyId(later!)]);

    // The cycle's data: the copies come after every earlier rollout number, whatever the sessions' own.
    const store = openStore(loaded);
    try {
      const options = { weights: loaded.config.rewards.weights };
      const dataDir = loaded.paths.dataDir;
      const sft = await buildDataset(store, { algo: 'sft', dataDir, options });
      const rows = readRows<SftRow>(sft.dir);
      expect(rows.map((r) => [r.messages.at(-1)!.content, r.meta.kind])).toEqual([
        ['Paris', 'captured_call'],
        ['Jupiter', 'captured_call'],
      ]);
      expect(rows[0]!.messages[0]).toEqual({ role: 'user', content: 'Capital of France?' });
      expect(sft.stats.dropped.below_threshold).toBe(1);
      const dpo = await buildDataset(store, { algo: 'dpo', dataDir, options });
      const pairs = readRows<DpoRow>(dpo.dir);
      expect(pairs).toHaveLength(1);
      expect(pairs[0]).toMatchObject({
        prompt: [{ role: 'user', content: 'Capital of France?' }],
        chosen: [{ role: 'assistant', content: 'Paris' }],
        rejected: [{ role: 'assistant', content: 'Lyon' }],
        meta: { kind: 'cross_rollout' },
      });
      expect(pairs[0]!.margin).toBeCloseTo(0.8);
    } finally {
      store.close();
    }
  });

  it('keeps the held-out share out and judges the sessions without a reward', async () => {
    const loaded = await project({ judge: true, holdout: 0.5 });
    const ids = withStore(loaded, (store) =>
      Array.from({ length: 12 }, (_, i) => capture(store, `Question ${i}?`, `Answer ${i}`)),
    );
    const held = ids.filter((id) => heldOutRollout(id, 0.5));
    expect(held.length).toBeGreaterThan(0);
    expect(held.length).toBeLessThan(ids.length);
    const s = await collectGateway(loaded);
    expect(s.captured).toMatchObject({
      taken: ids.length - held.length,
      heldOut: held.length,
      scored: ids.length - held.length,
    });
    expect(s.rollouts.every((r) => r.reward === 0.8)).toBe(true);
    // the judge saw the conversation and the answer
    expect(server!.requests).toHaveLength(ids.length - held.length);
    expect(server!.requests[0]!.messages.at(-1)!.content).toContain('user: Question');
    withStore(loaded, (store) => {
      for (const id of held) expect(store.rollouts.get(trainingCopyId(id))).toBeUndefined();
      const scored = ids.find((id) => !held.includes(id))!;
      expect(store.rollouts.get(scored)!.totalReward).toBeCloseTo(0.8);
      expect(store.rewards.list(scored).map((r) => r.family)).toEqual(['judge']);
    });
  });

  it('scores the sessions without a reward with rewards.custom, which sees the last call and its answer', async () => {
    // the command reads the outcome on stdin: 1 when the answer names Paris, else 0
    const script = "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(/Paris/.test(s)?1:0))";
    const loaded = await project({ custom: script });
    const [paris, lyon] = withStore(loaded, (store) => [
      capture(store, 'Capital of France?', 'Paris'),
      capture(store, 'Capital of France?', 'Lyon'),
    ]);
    const s = await collectGateway(loaded);
    expect(s.captured).toMatchObject({ taken: 2, scored: 2, waiting: 0 });
    withStore(loaded, (store) => {
      expect(store.rollouts.get(paris!)!.totalReward).toBe(1);
      expect(store.rollouts.get(lyon!)!.totalReward).toBe(0);
      expect(store.rewards.list(paris!).map((w) => w.family)).toEqual(['custom']);
    });
  });

  it('label-free: agreement among the sessions and samples of one prompt scores them, pairs follow the majority', async () => {
    const loaded = await project({ labelFree: true });
    expect(loaded.config.rewards.weights).toMatchObject({ agreement: 1 });
    const ids = withStore(loaded, (store) => ({
      paris: ['Paris', 'The capital is Paris.\nANSWER: Paris', 'paris'].map((a) =>
        capture(store, 'Capital of France?', a),
      ),
      lyon: capture(store, 'Capital of France?', 'Lyon'),
      // one session sampling its prompt three times: its own samples make the majority
      sampled: capture(store, 'What is 6 times 7?', ['41', '42.0', '42']),
      alone: capture(store, 'Largest planet?', 'Jupiter'),
      tied: [capture(store, 'Best color?', 'red'), capture(store, 'Best color?', 'blue')],
    }));
    const s = await collectGateway(loaded);
    expect(s.captured).toMatchObject({ taken: 5, scored: 5, noMajority: 3, waiting: 0 });
    withStore(loaded, (store) => {
      for (const id of ids.paris) expect(store.rollouts.get(id)!.totalReward).toBe(1);
      expect(store.rollouts.get(ids.lyon)!.totalReward).toBe(0);
      const rewards = store.rewards.list(ids.lyon);
      expect(rewards.map((w) => [w.channel, w.family, w.value])).toEqual([
        ['turn', 'agreement', 0],
        ['rollout', 'agreement', 0],
      ]);
      expect(rewards[1]!.reason).toContain('3 of 4 answers and samples say "paris"');
      // every sample of the sampling session is scored on its own span; its final answer is its last
      const sampled = store.rewards.list(ids.sampled).filter((w) => w.channel === 'turn');
      expect(sampled.map((w) => [w.targetSeq, w.value])).toEqual([
        [1, 0],
        [2, 1],
        [3, 1],
      ]);
      expect(store.rollouts.get(ids.sampled)!.totalReward).toBe(1);
      for (const id of [ids.alone, ...ids.tied]) {
        expect(store.rollouts.get(id)!.totalReward).toBeNull();
        expect(store.rollouts.get(trainingCopyId(id))).toBeUndefined();
      }
    });
    const store = openStore(loaded);
    try {
      const options = { weights: loaded.config.rewards.weights };
      const dpo = await buildDataset(store, { algo: 'dpo', dataDir: loaded.paths.dataDir, options });
      const pairs = readRows<DpoRow>(dpo.dir).map((p) => [
        p.prompt.at(-1)!.content,
        p.chosen[0]!.content,
        p.rejected[0]!.content,
      ]);
      // across the sessions of one prompt, and among the samples of one session, the majority is chosen
      expect(pairs.filter(([q]) => q === 'Capital of France?').map(([, c, r]) => [/paris/i.test(c!), r])).toEqual([
        [true, 'Lyon'],
        [true, 'Lyon'],
        [true, 'Lyon'],
      ]);
      expect(
        pairs
          .filter(([q]) => q === 'What is 6 times 7?')
          .map(([, c, r]) => [c, r])
          .sort(),
      ).toEqual([
        ['42', '41'],
        ['42.0', '41'],
      ]);
      expect(pairs).toHaveLength(5);
      // correctness pairs: agreement verifies each reply (references off), the agreeing ones against the others
      const verified = datasetOptionsFromConfig(loaded.config.train, loaded.config.rewards);
      const correctness = { ...verified, dpo: { ...verified.dpo, pairs: 'correctness' as const } };
      const built = await buildDataset(store, { algo: 'dpo', dataDir: loaded.paths.dataDir, options: correctness });
      const byAgreement = readRows<DpoRow>(built.dir).map((p) => [p.chosen[0]!.content, p.rejected[0]!.content]);
      expect(byAgreement.sort()).toEqual([
        ['42', '41'],
        ['42.0', '41'],
        ['Paris', 'Lyon'],
        ['The capital is Paris.\nANSWER: Paris', 'Lyon'],
        ['paris', 'Lyon'],
      ]);
      expect(readRows<DpoRow>(built.dir)[0]!.meta).toMatchObject({ kind: 'correctness' });
      // rejection-sampling SFT keeps the replies agreement verified, under the prompt each answered
      const selected = { ...verified, sft: { ...verified.sft, select: 'verified' as const } };
      const sft = await buildDataset(store, { algo: 'sft', dataDir: loaded.paths.dataDir, options: selected });
      const rows = readRows<SftRow>(sft.dir).map((r) => [r.messages[0]!.content, r.messages.at(-1)!.content]);
      expect(rows).toEqual([
        ['Capital of France?', 'Paris'],
        ['Capital of France?', 'The capital is Paris.\nANSWER: Paris'],
        ['Capital of France?', 'paris'],
        ['What is 6 times 7?', '42.0'],
        ['What is 6 times 7?', '42'],
      ]);
      expect(sft.stats.dropped).toMatchObject({ verified_wrong: 2 });
    } finally {
      store.close();
    }
  });

  it('with no captured session says so and the loop goes on with nothing to train', async () => {
    const loaded = await project();
    const notes: string[] = [];
    const s = await withRuntime(loaded, (rt) => collect(rt, { onStage: (m) => notes.push(m) }));
    expect(s).toMatchObject({ status: 'completed', completed: 0, captured: { taken: 0 } });
    expect(notes.join('\n')).toMatch(/no captured gateway session finished: nothing to train on/);

    const cycle = await withRuntime(
      loadConfig({ cwd: loaded.paths.baseDir, overrides: ['loop.steps=[collect,review,train]'] }),
      (rt) => runCycle(rt),
    );
    expect(cycle.status).toBe('completed');
    expect(cycle.stages.collect).toMatchObject({ status: 'done', completed: 0 });
    expect(cycle.stages.train).toMatchObject({ status: 'skipped' });
  });

  it('a session copied without a reward gives no dataset row: datasets drop reward-less rollouts', async () => {
    const loaded = await project();
    const store = openStore(loaded);
    try {
      const id = capture(store, 'Largest planet?', 'Jupiter');
      const runId = store.collectRuns.start({ source: 'gateway' });
      store.transaction(() => copyCaptured(store, store.rollouts.get(id)!, runId));
      const options = { weights: loaded.config.rewards.weights, sft: { reward_threshold: null } };
      const dataDir = loaded.paths.dataDir;
      const sft = await buildDataset(store, { algo: 'sft', dataDir, options });
      expect(sft.stats).toMatchObject({ rows: 0, dropped: { no_reward: 1 } });
      const dpo = await buildDataset(store, { algo: 'dpo', dataDir, options });
      expect(dpo.stats).toMatchObject({ rows: 0, dropped: { no_reward: 1 } });
    } finally {
      store.close();
    }
  });

  it.each(BACKENDS)(
    '%s: the sessions since a time, by finish or by a reward since; the last gateway run',
    (backend) => {
      const store = openStoreOn(backend, tempDir());
      try {
        const [old, fresh, rewarded] = ['a', 'b', 'c'].map((q, i) => capture(store, q, q, i === 1 ? 0 : HOUR));
        store.rewards.add(rewarded!, [{ channel: 'rollout', family: 'human', value: 1 }]);
        store.rollouts.start({ source: GATEWAY_SOURCE, metadata: { client: 'app', session: 'open' } });
        const since = Date.now() - 60_000;
        expect(store.rollouts.capturedSince(since).map((r) => r.id)).toEqual([rewarded, fresh]);
        expect(store.rollouts.capturedSince(-1).map((r) => r.id)).toEqual([old, rewarded, fresh]);

        expect(store.collectRuns.latestWhere('source', 'gateway')).toBeUndefined();
        const done = store.collectRuns.start({ source: 'gateway' });
        store.collectRuns.finish(done, 'completed', { captured: { watermark: 5 } });
        store.collectRuns.finish(store.collectRuns.start({ source: 'gateway' }), 'failed');
        store.collectRuns.start({ tasks: 'x' });
        expect(store.collectRuns.latestWhere('source', 'gateway')).toMatchObject({
          id: done,
          result: { captured: { watermark: 5 } },
        });
      } finally {
        store.close();
      }
    },
  );
});
