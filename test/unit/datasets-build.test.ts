import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDataset, type SftRow } from '../../src/datasets/index.js';
import { InterruptedError, UserError } from '../../src/errors.js';
import { fixtureStore, readRows, teamRollout } from '../fixtures/datasets/team-rollouts.js';

const mul = { taskId: 'mul', first: { agent: 'a' as const, content: '42' } };
const cap = { taskId: 'cap', first: { agent: 'b' as const, content: 'Paris' } };

describe('buildDataset', () => {
  it('writes data.jsonl and a manifest into <data_dir>/datasets/<algo>-<hash12>', async () => {
    const { store, dir } = fixtureStore();
    const r = teamRollout(store, mul);
    const built = await buildDataset(store, { algo: 'sft', dataDir: dir, configHash: 'cfg123' });
    const data = fs.readFileSync(path.join(built.dir, 'data.jsonl'));
    const sha = createHash('sha256').update(data).digest('hex');
    expect(built.dir).toBe(path.join(dir, 'datasets', `sft-${sha.slice(0, 12)}`));
    const manifest = JSON.parse(fs.readFileSync(path.join(built.dir, 'manifest.json'), 'utf8'));
    expect(manifest).toEqual(built.manifest);
    expect(manifest).toMatchObject({
      algo: 'sft',
      hash: sha,
      rows: 2,
      watermark: { from: 0, to: 1 },
      rollouts: 1,
      config_hash: 'cfg123',
      gates: null,
      stats: { rows: 2, rollouts_used: 1, spans: expect.any(Number) },
    });
    expect(new Date(manifest.created_at).toISOString()).toBe(manifest.created_at);
    expect(readRows<SftRow>(built.dir)[0]!.meta.rollout_id).toBe(r.id);
    expect(fs.readdirSync(path.join(dir, 'datasets'))).toEqual([path.basename(built.dir)]);
    store.close();
  });

  it('is content-addressed: the same rows reuse the directory, new rows make a new one', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, mul);
    const first = await buildDataset(store, { algo: 'grpo', dataDir: dir, options: { grpo: { min_group_size: 2 } } });
    const again = await buildDataset(store, { algo: 'grpo', dataDir: dir, configHash: 'other' });
    expect(again).toMatchObject({ dir: first.dir, reused: true });
    expect(again.manifest).toEqual(first.manifest);
    const sftA = await buildDataset(store, { algo: 'sft', dataDir: dir });
    const sftB = await buildDataset(store, { algo: 'sft', dataDir: dir });
    expect(sftB.dir).toBe(sftA.dir);
    expect(fs.readFileSync(path.join(sftB.dir, 'data.jsonl'), 'utf8')).toBe(
      fs.readFileSync(path.join(sftA.dir, 'data.jsonl'), 'utf8'),
    );
    teamRollout(store, cap);
    const sftC = await buildDataset(store, { algo: 'sft', dataDir: dir });
    expect(sftC.dir).not.toBe(sftA.dir);
    expect(sftC.reused).toBe(false);
    expect(fs.readdirSync(path.join(dir, 'datasets')).filter((n) => n.startsWith('.tmp'))).toEqual([]);
    store.close();
  });

  it('reads only rollouts past the watermark unless all, and returns the new watermark', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, mul);
    teamRollout(store, cap);
    const first = await buildDataset(store, { algo: 'sft', dataDir: dir });
    expect(first.watermark).toBe(2);
    expect(first.stats.rows).toBe(4);
    const nothing = await buildDataset(store, { algo: 'sft', dataDir: dir, sinceWatermark: first.watermark });
    expect(nothing).toMatchObject({
      watermark: 2,
      stats: { rows: 0, rollouts_scanned: 0 },
      manifest: { watermark: { from: 2, to: 2 } },
    });
    const r3 = teamRollout(store, { taskId: 'rev', first: { agent: 'c', content: 'cba' } });
    const next = await buildDataset(store, { algo: 'sft', dataDir: dir, sinceWatermark: first.watermark });
    expect(next.watermark).toBe(3);
    expect(next.manifest.watermark).toEqual({ from: 2, to: 3 });
    expect(new Set(readRows<SftRow>(next.dir).map((x) => x.meta.rollout_id))).toEqual(new Set([r3.id]));
    const all = await buildDataset(store, { algo: 'sft', dataDir: dir, sinceWatermark: 3, all: true, pageSize: 1 });
    expect(all).toMatchObject({
      watermark: 3,
      stats: { rows: 6, rollouts_scanned: 3 },
      manifest: { watermark: { from: 0, to: 3 } },
    });
    store.close();
  });

  it('stops before a rollout still running, so the watermark never passes it', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, mul);
    const running = store.rollouts.start({ taskId: 'cap' });
    teamRollout(store, cap);
    const built = await buildDataset(store, { algo: 'sft', dataDir: dir });
    expect(built).toMatchObject({ watermark: 1, stats: { rollouts_scanned: 1 } });
    store.rollouts.finish(running, { status: 'failed', error: 'boom' });
    const later = await buildDataset(store, { algo: 'sft', dataDir: dir, sinceWatermark: built.watermark });
    expect(later).toMatchObject({
      watermark: 3,
      stats: { rollouts_scanned: 2, rollouts_by_status: { completed: 1, failed: 1 } },
    });
    store.close();
  });

  it('reports progress per page, stops on the signal without leaving a temp dir, rejects unknown algorithms', async () => {
    const { store, dir } = fixtureStore();
    for (let i = 0; i < 3; i++) teamRollout(store, mul);
    const seen: number[] = [];
    await buildDataset(store, { algo: 'ppo', dataDir: dir, pageSize: 1, onProgress: (p) => seen.push(p.rollouts) });
    expect(seen).toEqual([1, 2, 3]);
    const ac = new AbortController();
    const run = buildDataset(store, {
      algo: 'ppo',
      dataDir: dir,
      pageSize: 1,
      signal: ac.signal,
      onProgress: () => ac.abort(),
    });
    await expect(run).rejects.toBeInstanceOf(InterruptedError);
    expect(fs.readdirSync(path.join(dir, 'datasets')).filter((n) => n.startsWith('.tmp'))).toEqual([]);
    await expect(buildDataset(store, { algo: 'kto' as 'sft', dataDir: dir })).rejects.toThrow(UserError);
    fs.writeFileSync(path.join(dir, 'not-a-dir'), '');
    await expect(buildDataset(store, { algo: 'sft', dataDir: path.join(dir, 'not-a-dir') })).rejects.toThrow(
      /data directory .*not-a-dir.*datasets is not writable/,
    );
    store.close();
  });

  it('removes temp directories left by builds whose process died', async () => {
    const { store, dir } = fixtureStore();
    const stale = path.join(dir, 'datasets', '.tmp-sft-2147483646-deadbeef');
    const mine = path.join(dir, 'datasets', `.tmp-sft-${process.pid}-cafecafe`);
    fs.mkdirSync(stale, { recursive: true });
    fs.mkdirSync(mine, { recursive: true });
    await buildDataset(store, { algo: 'sft', dataDir: dir });
    expect(fs.existsSync(stale)).toBe(false);
    expect(fs.existsSync(mine)).toBe(true);
    store.close();
  });
});
