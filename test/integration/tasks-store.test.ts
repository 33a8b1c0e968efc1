import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Redactor, TaskConflictError } from '../../src/store/index.js';
import { storeDb } from '../../src/store/store.js';
import { loadTasks, type SplitTask } from '../../src/tasks/index.js';
import { FIXTURES, tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

const tasks = (): SplitTask[] =>
  loadTasks(
    {
      sources: [{ suite: 'unit_conversion', n: 20, seed: 4, difficulty: 2 }, { file: 'good.jsonl' }],
      split: { eval_fraction: 0.3, salt: 'massgen-rl' },
    },
    path.join(FIXTURES, 'tasks'),
  );

describe.each(BACKENDS)('TaskRepository on %s', (backend) => {
  const storeIn = (dir: string, redactor?: Redactor) => openStoreOn(backend, dir, redactor);

  it('round-trips tasks through upsert, get, list and count', () => {
    const store = storeIn(tempDir());
    const all = tasks();
    expect(store.tasks.upsertMany(all)).toEqual({ inserted: 23, updated: 0, unchanged: 0 });

    const listed = store.tasks.list();
    expect(listed.map(({ createdAt, ...t }) => t)).toEqual(all);
    expect(listed.every((t) => typeof t.createdAt === 'number')).toBe(true);

    const open = store.tasks.get('open-1')!;
    expect(open).toMatchObject({ id: 'open-1', source: 'good.jsonl', metadata: {} });
    expect('reference' in open || 'category' in open).toBe(false);
    expect(store.tasks.get('nope')).toBeUndefined();

    const evalCount = all.filter((t) => t.split === 'eval').length;
    expect(store.tasks.count()).toBe(23);
    expect(store.tasks.count({ split: 'eval' })).toBe(evalCount);
    expect(store.tasks.list({ split: 'train' }).map((t) => t.id)).toEqual(
      all.filter((t) => t.split === 'train').map((t) => t.id),
    );
    expect(store.tasks.list({ source: 'good.jsonl' }).map((t) => t.id)).toEqual(['geo-1', 'math-1', 'open-1']);
    expect(store.tasks.list({ source: 'suite:unit_conversion', split: 'eval', limit: 2 })).toHaveLength(
      Math.min(2, all.slice(0, 20).filter((t) => t.split === 'eval').length),
    );
    expect(store.stats().counts.tasks).toBe(23);
    store.close();
  });

  it('updates labels (source, category, split) and keeps created_at; unchanged rows are left alone', () => {
    const store = storeIn(tempDir());
    const all = tasks();
    store.tasks.upsertMany(all);
    const created = store.tasks.get('geo-1')!.createdAt;
    storeDb(store).prepare('UPDATE tasks SET created_at = 1').run();

    // Same content, metadata keys in another order: nothing to do.
    const reordered = all.map((t) => ({ ...t, metadata: Object.fromEntries(Object.entries(t.metadata).reverse()) }));
    expect(store.tasks.upsertMany(reordered)).toEqual({ inserted: 0, updated: 0, unchanged: 23 });

    const relabelled = all.map((t) =>
      t.id === 'geo-1'
        ? { ...t, source: 'moved.jsonl' }
        : t.id === 'math-1'
          ? { ...t, split: 'eval' as const, category: 'math' }
          : t,
    );
    const extra: SplitTask = {
      id: 'new-1',
      prompt: 'p',
      metadata: { k: [1, { b: 2, a: 1 }] },
      source: 'x.yaml',
      split: 'train',
    };
    expect(store.tasks.upsertMany([...relabelled, extra])).toEqual({ inserted: 1, updated: 2, unchanged: 21 });
    expect(store.tasks.get('geo-1')).toMatchObject({ source: 'moved.jsonl', reference: 'Paris', createdAt: 1 });
    expect(store.tasks.get('math-1')).toMatchObject({ split: 'eval', category: 'math', reference: '42' });
    expect(store.tasks.get('new-1')!.metadata).toEqual({ k: [1, { a: 1, b: 2 }] });
    expect(store.tasks.get('new-1')!.createdAt).toBeGreaterThanOrEqual(created);
    store.close();
  });

  it('refuses a stored id with other content (prompt, reference, metadata), naming what differs, and writes nothing', () => {
    const store = storeIn(tempDir());
    const all = tasks();
    store.tasks.upsertMany(all);
    const geo = all.find((t) => t.id === 'geo-1')!;
    store.rollouts.start({ taskId: 'geo-1' });
    const { reference: _dropped, ...withoutRef } = geo;
    const redefined: SplitTask[] = [
      { ...geo, reference: 'Paris, France', source: 'other.jsonl' },
      { ...all.find((t) => t.id === 'math-1')!, prompt: 'What is 6 × 7 exactly?' },
      { ...all[0]!, metadata: { ...all[0]!.metadata, tolerance: 5 } },
    ];
    const fresh: SplitTask = { id: 'fresh-1', prompt: 'p', metadata: {}, source: 'x.yaml', split: 'train' };
    let error: unknown;
    try {
      store.tasks.upsertMany([fresh, ...redefined]);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(TaskConflictError);
    const message = (error as Error).message;
    expect(message).toMatch(/^3 task ids are already stored with different content; nothing was changed/);
    expect(message).toContain(
      '"geo-1" from other.jsonl (stored from good.jsonl, 1 rollout): reference "Paris" → "Paris, France"',
    );
    expect(message).toMatch(
      /"math-1" from good\.jsonl \(stored from good\.jsonl, 0 rollouts\): prompt ".*" → "What is 6 × 7 exactly\?"/,
    );
    expect(message).toMatch(/"suite:unit_conversion:4:0" .*: metadata\.tolerance [\d.e-]+ → 5$/m);
    expect(store.tasks.get('fresh-1')).toBeUndefined();
    expect(store.tasks.get('geo-1')).toMatchObject({ reference: 'Paris', source: 'good.jsonl' });
    // Clearing an optional field is a change of content too.
    expect(store.tasks.conflicts([withoutRef]).map((c) => c.differs)).toEqual([['reference "Paris" → (none)']]);
    expect(store.tasks.conflicts(all)).toEqual([]);
    store.close();
  });

  it('writes all or nothing', () => {
    const store = storeIn(tempDir());
    const bad = { id: 'b', prompt: 'p', metadata: {}, source: 's', split: 'test' } as unknown as SplitTask;
    const good: SplitTask = { id: 'a', prompt: 'p', metadata: {}, source: 's', split: 'train' };
    expect(() => store.tasks.upsertMany([good, bad])).toThrow(/CHECK constraint failed|violates check constraint/);
    expect(store.tasks.count()).toBe(0);
    store.close();
  });

  it('scrubs secrets from prompts, references and metadata, and lets rollouts refer to tasks', () => {
    const store = storeIn(tempDir(), new Redactor(['hunter2-secret'], []));
    store.tasks.upsertMany([
      {
        id: 's1',
        prompt: 'the password is hunter2-secret',
        reference: 'hunter2-secret',
        metadata: { note: 'hunter2-secret' },
        source: 's',
        split: 'train',
      },
    ]);
    expect(store.tasks.get('s1')).toMatchObject({
      prompt: 'the password is [REDACTED]',
      reference: '[REDACTED]',
      metadata: { note: '[REDACTED]' },
    });
    const rollout = store.rollouts.start({ taskId: 's1' });
    expect(store.rollouts.get(rollout)!.taskId).toBe('s1');
    store.close();
  });
});
