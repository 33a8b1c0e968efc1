import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import {
  describeCheckpoint,
  forkCheckpoint,
  pruneCheckpoints,
  registerCheckpoint,
} from '../../src/resources/checkpoints.js';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn, type Backend } from '../support/postgres.js';

/** A store with a base model weight resource in production, and a helper that registers trained folders under data/. */
function world(backend: Backend) {
  const dir = tempDir();
  const data = path.join(dir, 'data');
  fs.mkdirSync(data, { recursive: true });
  const store = openStoreOn(backend, data);
  const baseDir = path.join(dir, 'cache', 'base');
  fs.mkdirSync(baseDir, { recursive: true });
  const base = store.resources.add({ kind: 'weight', name: 'smol', path: baseDir, metadata: { role: 'base' } });
  store.resources.setProduction(base, 'deploy', 'base model provisioned');
  let n = 0;
  const train = (opts: { parentId?: string; metrics?: Record<string, unknown>; algo?: string; name?: string } = {}) => {
    const folder = path.join(data, 'checkpoints', `run-${++n}`);
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(path.join(folder, 'adapter_config.json'), '{}');
    const run = store.trainingRuns.start({ n }, { algo: opts.algo ?? 'sft' });
    return registerCheckpoint(store, {
      path: folder,
      algo: opts.algo ?? 'sft',
      adapter: true,
      baseModel: 'resource:smol',
      baseResourceId: base.id,
      parentId: opts.parentId,
      name: opts.name,
      trainingRunId: run,
      datasetHash: `hash${n}`.padEnd(64, '0'),
      traceIds: [`r${n}a`, `r${n}b`],
      watermark: n * 10,
      configHash: `cfg${n}`,
      metrics: opts.metrics ?? { loss: 1 / n, reward: n },
    }).checkpoint;
  };
  return { dir, data, store, base, baseDir, train };
}

describe.each(BACKENDS)('checkpoints on %s', (backend) => {
  describe('checkpoint and training metric repositories', () => {
    it('round-trips checkpoints with lineage, filters and prefixes', () => {
      const { store, base } = world(backend);
      const run = store.trainingRuns.start({}, { algo: 'grpo' });
      const a = store.checkpoints.add({
        path: '/w/a',
        algo: 'grpo',
        baseModel: 'builtin:smol',
        resourceId: base.id,
        trainingRunId: run,
        datasetHash: 'd1',
        traceIds: ['t1', 't2'],
        watermark: 7,
        configHash: 'c1',
        metrics: { reward: 0.5 },
      });
      expect(store.checkpoints.get(a.id)).toEqual({
        id: a.id,
        resourceId: base.id,
        resourceName: 'smol',
        resourceVersion: 1,
        parentId: null,
        trainingRunId: run,
        algo: 'grpo',
        baseModel: 'builtin:smol',
        path: '/w/a',
        datasetHash: 'd1',
        traceIds: ['t1', 't2'],
        watermark: 7,
        configHash: 'c1',
        metrics: { reward: 0.5 },
        createdAt: expect.any(Number),
      });
      const b = store.checkpoints.add({ path: '/w/b', algo: 'sft', parentId: a.id });
      const c = store.checkpoints.add({ path: '/w/c', algo: 'grpo', parentId: b.id });
      expect(b).toMatchObject({ resourceId: null, resourceName: null, traceIds: [], metrics: {} });
      expect(store.checkpoints.lineage(c.id).map((x) => x.id)).toEqual([b.id, a.id]);
      expect(store.checkpoints.lineage(a.id)).toEqual([]);
      expect(store.checkpoints.children(a.id).map((x) => x.id)).toEqual([b.id]);
      expect(store.checkpoints.list().map((x) => x.id)).toEqual([c.id, b.id, a.id]);
      expect(store.checkpoints.list({ algo: 'grpo' }).map((x) => x.id)).toEqual([c.id, a.id]);
      expect(store.checkpoints.list({ name: 'smol' }).map((x) => x.id)).toEqual([a.id]);
      expect(store.checkpoints.latest({ algo: 'sft' })?.id).toBe(b.id);
      expect(store.checkpoints.resolve(c.id.slice(0, -3))?.id).toBe(c.id);
      expect(store.checkpoints.resolve('ck_')).toBeUndefined(); // ambiguous
      expect(store.checkpoints.get('nope')).toBeUndefined();
      expect(store.stats().counts.checkpoints).toBe(3);
      store.close();
    });

    it('appends step metrics in batches, replaces repeated steps and lists them by run', () => {
      const { store } = world(backend);
      const run = store.trainingRuns.start({}, { algo: 'sft' });
      const other = store.trainingRuns.start({}, { algo: 'sft' });
      store.trainingMetrics.append(run, [
        { step: 1, metrics: { loss: 2 } },
        { step: 2, metrics: { loss: 1.5 } },
      ]);
      const w = store.trainingMetrics.writer(run, 3);
      w.add(3, { loss: 1.2 });
      w.add(2, { loss: 1.4, resumed: 1 });
      expect(w.pending).toBe(2);
      expect(store.trainingMetrics.count(run)).toBe(2);
      w.add(4, { loss: 1 });
      expect(w.pending).toBe(0);
      w.add(5, { loss: 0.9 });
      w.flush();
      store.trainingMetrics.append(other, [{ step: 1, metrics: { loss: 9 } }]);
      expect(store.trainingMetrics.list(run).map((s) => [s.step, s.metrics.loss])).toEqual([
        [1, 2],
        [2, 1.4],
        [3, 1.2],
        [4, 1],
        [5, 0.9],
      ]);
      expect(store.trainingMetrics.list(run, { fromStep: 4 }).map((s) => s.step)).toEqual([4, 5]);
      expect(store.trainingMetrics.last(run)).toMatchObject({ runId: run, step: 5, metrics: { loss: 0.9 } });
      expect(store.trainingMetrics.last('tr_none')).toBeUndefined();
      expect(store.trainingMetrics.count(other)).toBe(1);
      store.close();
    });
  });

  describe('registerCheckpoint', () => {
    it("adds the next version of the base model's weight resource and the checkpoint with full lineage, together", () => {
      const { store, base, baseDir, train } = world(backend);
      const first = train();
      const res = store.resources.get(first.resourceId!)!;
      expect(res).toMatchObject({ kind: 'weight', name: 'smol', version: 2, parentId: base.id, path: first.path });
      expect(res.metadata).toEqual({ algo: 'sft', adapter: true, base_path: baseDir, checkpoint_id: first.id });
      expect(first).toMatchObject({
        parentId: null,
        baseModel: 'resource:smol',
        datasetHash: expect.stringMatching(/^hash1/),
        traceIds: ['r1a', 'r1b'],
        watermark: 10,
        configHash: 'cfg1',
        metrics: { loss: 1, reward: 1 },
      });
      const second = train({ parentId: first.id, algo: 'grpo' });
      expect(second).toMatchObject({ parentId: first.id, resourceName: 'smol', resourceVersion: 3 });
      expect(store.resources.get(second.resourceId!)).toMatchObject({
        parentId: first.resourceId,
        metadata: { base_path: baseDir, algo: 'grpo' },
      });
      expect(store.resources.production('weight', 'smol')?.id).toBe(base.id); // registering never deploys
      expect(train({ name: 'custom' })).toMatchObject({ resourceName: 'custom', resourceVersion: 1 });
      const detail = describeCheckpoint(store, second.id);
      expect(detail).toMatchObject({ production: false, lineage: [{ id: first.id }], children: [] });
      store.close();
    });

    it('never leaves a half-registered checkpoint, and refuses a missing folder or parent', () => {
      const { store, base, data } = world(backend);
      const folder = path.join(data, 'x');
      fs.mkdirSync(folder);
      const before = store.resources.list('weight').length;
      // The checkpoint row fails (unknown training run): the weight resource added before it is rolled back.
      expect(() =>
        registerCheckpoint(store, {
          path: folder,
          algo: 'sft',
          adapter: false,
          baseModel: 'smol',
          baseResourceId: base.id,
          trainingRunId: 'tr_missing',
        }),
      ).toThrow(/FOREIGN KEY|foreign key/);
      expect(store.resources.list('weight')).toHaveLength(before);
      expect(store.checkpoints.list()).toEqual([]);
      expect(() =>
        registerCheckpoint(store, { path: path.join(data, 'missing'), algo: 'sft', adapter: false, baseModel: 'smol' }),
      ).toThrow(/no folder at/);
      expect(() =>
        registerCheckpoint(store, {
          path: folder,
          algo: 'sft',
          adapter: false,
          baseModel: 'smol',
          parentId: 'ck_nope',
        }),
      ).toThrow(/no parent checkpoint "ck_nope"/);
      const full = registerCheckpoint(store, {
        path: folder,
        algo: 'sft',
        adapter: false,
        baseModel: '/models/My-Model',
      });
      expect(full.resource).toMatchObject({
        name: 'My-Model',
        version: 1,
        metadata: { adapter: false, base_path: null },
      });
      store.close();
    });
  });

  describe('checkpoint deletion and pruning', () => {
    it('delete refuses a parent and production weights; drops or marks the weight resource', () => {
      const { store, train } = world(backend);
      const a = train();
      const b = train({ parentId: a.id });
      expect(() => store.checkpoints.delete(a.id)).toThrow(new RegExp(`is the parent of ${b.id}`));
      expect(() => store.checkpoints.delete('ck_nope')).toThrow(UserError);
      const prodRes = store.resources.get(b.resourceId!)!;
      store.resources.setProduction(prodRes, 'deploy', 'better');
      expect(() => store.checkpoints.delete(b.id)).toThrow(/holds production weights \(smol v3\)/);
      const c = train();
      store.checkpoints.delete(c.id);
      expect(store.resources.get(c.resourceId!)).toBeUndefined(); // nothing referred to it
      // Deployed once (history refers to it): the resource stays, marked pruned.
      const d = train();
      const dRes = store.resources.get(d.resourceId!)!;
      store.resources.setProduction(dRes, 'deploy', 'try');
      store.resources.setProduction(store.resources.get(a.resourceId!)!, 'rollback', 'worse');
      store.resources.setProduction(prodRes, 'deploy', 'again');
      store.checkpoints.delete(d.id);
      expect(store.resources.get(dRes.id)?.metadata.pruned_at).toEqual(expect.any(Number));
      store.close();
    });

    it('keeps the last N and the best, protects production and ancestors, and removes the other folders', () => {
      const { store, data, train } = world(backend);
      const a = train({ metrics: { reward: 0.9, loss: 3 } }); // best reward
      const b = train({ parentId: a.id, metrics: { reward: 0.1, loss: 2 } }); // ancestor of the production one
      const c = train({ parentId: b.id, metrics: { reward: 0.2, loss: 0.1 } }); // production; best loss
      const d = train({ metrics: { reward: 0.3, loss: 5 } });
      const e = train({ metrics: { reward: 0.4, loss: 4 } });
      const f = train({ parentId: e.id, metrics: { reward: 0.5, loss: 6 } });
      store.resources.setProduction(store.resources.get(c.resourceId!)!, 'deploy', 'better');

      const plan = pruneCheckpoints(store, { keepLast: 1, dryRun: true, root: data });
      expect(plan.deleted.map((x) => x.id)).toEqual([d.id]);
      expect(fs.existsSync(d.path)).toBe(true);
      expect(Object.fromEntries(plan.kept.map((k) => [k.id, k.reasons]))).toEqual({
        [f.id]: ['last 1'],
        [e.id]: [`ancestor of ${f.id}`],
        [c.id]: ['production'],
        [b.id]: [`ancestor of ${c.id}`],
        [a.id]: [`ancestor of ${c.id}`],
      });

      const withBest = pruneCheckpoints(store, {
        keepLast: 1,
        keepBest: { metric: 'reward', mode: 'max' },
        root: data,
        dryRun: true,
      });
      expect(withBest.kept.find((k) => k.id === a.id)?.reasons).toEqual(['best reward (max)', `ancestor of ${c.id}`]);
      expect(
        pruneCheckpoints(store, { keepLast: 1, keepBest: { metric: 'loss', mode: 'min' }, dryRun: true }).kept.find(
          (k) => k.id === c.id,
        )?.reasons,
      ).toEqual(['best loss (min)', 'production']);
      expect(() => pruneCheckpoints(store, { keepLast: 1, keepBest: { metric: 'acc', mode: 'max' } })).toThrow(
        /no checkpoint has a numeric "acc" metric/,
      );
      expect(() => pruneCheckpoints(store, { keepLast: 0 })).toThrow(/--keep-last 0/);

      const done = pruneCheckpoints(store, { keepLast: 1, root: data });
      expect(done.deleted).toEqual([{ id: d.id, path: d.path, weight: 'smol v5', filesRemoved: true }]);
      expect(fs.existsSync(d.path)).toBe(false);
      expect(store.checkpoints.get(d.id)).toBeUndefined();
      expect(store.resources.get(d.resourceId!)).toBeUndefined();
      for (const k of [a, b, c, e, f]) expect(fs.existsSync(k.path)).toBe(true);

      // Once production moves on, the old line goes, children before parents; the rollback target (c) stays.
      store.resources.setProduction(store.resources.get(f.resourceId!)!, 'deploy', 'newer');
      expect(
        pruneCheckpoints(store, { keepLast: 1, root: data, dryRun: true }).kept.find((k) => k.id === c.id)?.reasons,
      ).toEqual(['rollback target']);
      store.resources.setProduction(store.resources.get(f.resourceId!)!, 'deploy', 'confirmed');
      const second = pruneCheckpoints(store, { keepLast: 1, root: data });
      expect(second.deleted.map((x) => x.id)).toEqual([c.id, b.id, a.id]);
      expect(store.checkpoints.list().map((x) => x.id)).toEqual([f.id, e.id]);
      for (const k of [a, b, c]) expect(fs.existsSync(k.path)).toBe(false);
      store.close();
    });

    it('leaves folders outside the data dir and folders another checkpoint still uses', () => {
      const { store, dir, data, train } = world(backend);
      const outside = path.join(dir, 'elsewhere');
      fs.mkdirSync(outside);
      const o = registerCheckpoint(store, { path: outside, algo: 'sft', adapter: false, baseModel: 'smol' }).checkpoint;
      const a = train();
      const fork = forkCheckpoint(store, a.id, 'side-line');
      const b = train();
      train();
      const r = pruneCheckpoints(store, { keepLast: 1, root: data });
      expect(r.deleted.map((x) => [x.id, x.filesRemoved, x.filesKept])).toEqual([
        [fork.checkpoint.id, false, 'another checkpoint or resource uses it'],
        [b.id, true, undefined],
        [a.id, true, undefined],
        [o.id, false, `outside ${data}`],
      ]);
      expect(fs.existsSync(outside)).toBe(true);
      expect(fs.existsSync(a.path)).toBe(false);
      store.close();
    });
  });

  describe('forkCheckpoint', () => {
    it('starts a new weight line at version 1 on the same files, with the checkpoint as parent', () => {
      const { store, train } = world(backend);
      const a = train();
      const b = train({ parentId: a.id });
      const { checkpoint, resource } = forkCheckpoint(store, b.id.slice(0, -2), 'experiment');
      expect(resource).toMatchObject({
        kind: 'weight',
        name: 'experiment',
        version: 1,
        path: b.path,
        parentId: b.resourceId,
      });
      expect(resource.metadata).toMatchObject({
        algo: 'sft',
        adapter: true,
        checkpoint_id: checkpoint.id,
        forked_from: b.id,
      });
      expect(checkpoint).toMatchObject({
        parentId: b.id,
        path: b.path,
        resourceName: 'experiment',
        datasetHash: b.datasetHash,
        traceIds: b.traceIds,
        trainingRunId: null,
      });
      expect(store.checkpoints.lineage(checkpoint.id).map((x) => x.id)).toEqual([b.id, a.id]);
      // Training on the fork continues its own line.
      const next = train({ parentId: checkpoint.id });
      expect(next).toMatchObject({ resourceName: 'experiment', resourceVersion: 2 });
      expect(() => forkCheckpoint(store, a.id, 'experiment')).toThrow(/"experiment" already exists \(v2\)/);
      expect(() => forkCheckpoint(store, a.id, 'bad name')).toThrow(/--name "bad name"/);
      expect(() => forkCheckpoint(store, 'ck_nope', 'x')).toThrow(/no checkpoint "ck_nope"/);
      // The original is now an ancestor of a kept checkpoint: pruning keeps it.
      expect(pruneCheckpoints(store, { keepLast: 1, dryRun: true }).deleted).toEqual([]);
      store.close();
    });
  });
});
