import { afterEach, describe, expect, it } from 'vitest';
import type { SpanInput, Store } from '../../src/store/index.js';
import { storeDb } from '../../src/store/store.js';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

// The repository methods that replaced SQL written outside src/store/, on both backends.

let open: Store | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

/** A rollout of `source` finished with `status` (or left running); its id. */
function rollout(store: Store, source: string, status: 'completed' | 'failed' | 'running' = 'completed'): string {
  const id = store.rollouts.start({ source });
  if (status !== 'running') store.rollouts.finish(id, { status });
  return id;
}

const numOf = (store: Store, id: string) => store.rollouts.get(id)!.num;

describe.each(BACKENDS)('store queries on %s', (backend) => {
  const storeOn = () => (open = openStoreOn(backend, tempDir()));

  it('counts the completed collect and imported rollouts after a watermark, and the non-eval rollouts of a window', () => {
    const store = storeOn();
    const first = rollout(store, 'collect');
    const ids = [
      rollout(store, 'collect'),
      rollout(store, 'eval'),
      rollout(store, 'gateway'),
      rollout(store, 'collect', 'failed'),
      rollout(store, 'collect', 'running'),
      rollout(store, 'collect'),
      rollout(store, 'massgen-import'),
    ];
    const after = numOf(store, first);
    // collect and massgen-import (MassGen's runs are training data as imported), completed
    expect(store.rollouts.countCollectedAfter(after - 1)).toBe(4);
    expect(store.rollouts.countCollectedAfter(after)).toBe(3);
    expect(store.rollouts.countCollectedAfter(numOf(store, ids[5]!))).toBe(1);
    expect(store.rollouts.countCollectedAfter(numOf(store, ids[6]!))).toBe(0);
    // (after, through]: the eval rollout is left out, every other source and status counts.
    expect(store.rollouts.countInWindow(after, numOf(store, ids[4]!))).toBe(4);
    expect(store.rollouts.countInWindow(after - 1, numOf(store, ids[6]!))).toBe(7);
    expect(store.rollouts.countInWindow(after, after)).toBe(0);
  });

  it("sets an imported rollout's timings and clears its owner process", () => {
    const store = storeOn();
    const id = rollout(store, 'massgen-import');
    store.transaction(() => store.rollouts.setImportedTimes(id, 1_000, 4_500));
    expect(store.rollouts.get(id)).toMatchObject({ startedAt: 1_000, finishedAt: 4_500, status: 'completed' });
    const owner = storeDb(store).prepare('SELECT pid, host FROM rollouts WHERE id = ?').get(id);
    expect(owner).toEqual({ pid: null, host: null });
  });

  it('removes computed rewards and their spans, keeping human feedback and every other span', () => {
    const store = storeOn();
    const id = rollout(store, 'collect');
    const other = rollout(store, 'collect');
    const span = (type: SpanInput['type'], name: string): SpanInput => ({ type, name, agent: null, payload: {} });
    for (const r of [id, other]) {
      store.spans.append(r, [
        span('prompt', 'call'),
        span('reward', 'exact'),
        span('reward', 'human'),
        span('coordination', 'vote'),
      ]);
      store.rewards.add(r, [
        { channel: 'rollout', family: 'exact', value: 1 },
        { channel: 'rollout', family: 'human', value: 0.5 },
      ]);
    }
    store.transaction(() => store.rewards.removeComputed(id));
    expect(store.rewards.list(id).map((r) => r.family)).toEqual(['human']);
    expect(store.spans.list(id).map((s) => `${s.type}/${s.name}`)).toEqual([
      'prompt/call',
      'reward/human',
      'coordination/vote',
    ]);
    expect(store.rewards.list(other)).toHaveLength(2);
    expect(store.spans.list(other)).toHaveLength(4);
  });

  it('reads training traces: no eval or gateway rollouts, spans and rewards by rollout', () => {
    const store = storeOn();
    const a = rollout(store, 'collect');
    rollout(store, 'eval');
    rollout(store, 'gateway');
    const b = rollout(store, 'collect', 'running');
    const c = rollout(store, 'massgen-import', 'failed');
    for (const r of [a, c]) {
      store.spans.append(r, [
        { type: 'prompt', name: 'call', agent: 'x', payload: { n: 1 } },
        { type: 'coordination', name: 'vote', agent: 'x', payload: { n: 2 } },
        { type: 'reward', name: 'exact', agent: null, payload: {} },
      ]);
      store.rewards.add(r, [
        { channel: 'rollout', family: 'exact', value: 1 },
        { channel: 'turn', family: 'judge', value: 0.25, targetSeq: 1 },
      ]);
    }
    const traces = store.trainingTraces;
    expect(traces.rollouts(0, 10).map((r) => [r.id, r.status])).toEqual([
      [a, 'completed'],
      [b, 'running'],
      [c, 'failed'],
    ]);
    expect(traces.rollouts(numOf(store, a), 1).map((r) => r.id)).toEqual([b]);
    const spans = traces.spans([c, a]);
    expect([...spans.keys()].sort()).toEqual([a, c].sort());
    expect(spans.get(a)).toEqual([
      { seq: 1, type: 'prompt', name: 'call', agent: 'x', payload: '{"n":1}' },
      { seq: 2, type: 'coordination', name: 'vote', agent: 'x', payload: '{"n":2}' },
    ]);
    expect(
      traces
        .spans([a], true)
        .get(a)!
        .map((s) => s.seq),
    ).toEqual([2]);
    expect(traces.spans([b]).size).toBe(0);
    expect(traces.span(a, 2)).toEqual({ seq: 2, type: 'coordination', name: 'vote', agent: 'x', payload: '{"n":2}' });
    expect(traces.span(a, 9)).toBeUndefined();
    const rewards = traces.rewards([a, b]);
    expect(rewards.get(a)!.map((r) => [r.family, r.value, r.targetSeq])).toEqual([
      ['exact', 1, null],
      ['judge', 0.25, 1],
    ]);
    expect(rewards.has(b)).toBe(false);
  });
});
