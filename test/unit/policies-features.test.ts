import { describe, expect, it } from 'vitest';
import {
  STOP_FEATURES,
  TASK_FEATURES,
  projectEmbedding,
  stableHash,
  stopFeatures,
  taskFeatureNames,
  taskFeatures,
} from '../../src/policies/index.js';

const norm = (v: number[]) => Math.hypot(...v);

describe('task features', () => {
  it('have a fixed dimension and the documented values', () => {
    const f = taskFeatures({ prompt: 'What is 12 + 30.5? Answer 42', category: 'Math' });
    expect(f).toHaveLength(TASK_FEATURES.length);
    expect(TASK_FEATURES).toHaveLength(20);
    const at = (name: string) => f[TASK_FEATURES.indexOf(name)]!;
    expect(at('bias')).toBe(1);
    expect(at('log_chars')).toBeCloseTo(Math.log1p(28) / 8, 12);
    expect(at('has_digits')).toBe(1);
    expect(at('numbers')).toBeCloseTo(0.3, 12); // 12, 30.5, 42
    const category = f.slice(4, 12);
    expect(category.reduce((s, v) => s + v, 0)).toBe(1);
    expect(category[stableHash('math') % 8]).toBe(1);
    expect(norm(f.slice(12, 20))).toBeCloseTo(1, 12);
    const plain = taskFeatures({ prompt: 'hello', category: null });
    expect(plain.slice(2, 12).every((v) => v === 0)).toBe(true);
    expect(taskFeatures({ prompt: '' })).toHaveLength(20);
  });

  it('are stable: the same task gives the same vector, category case does not matter, numbers are capped', () => {
    const t = { prompt: 'Sort these words: pear apple fig', category: 'Text' };
    expect(taskFeatures(t)).toEqual(taskFeatures({ ...t }));
    expect(taskFeatures(t)).toEqual(taskFeatures({ ...t, category: ' text ' }));
    // FNV-1a's published test vectors: the buckets are the same on every machine.
    expect([stableHash(''), stableHash('a'), stableHash('foobar')]).toEqual([0x811c9dc5, 0xe40c292c, 0xbf9cf968]);
    const many = taskFeatures({ prompt: Array.from({ length: 30 }, (_, i) => String(i)).join(' ') });
    expect(many[3]).toBe(1);
    // Different words land in different buckets.
    expect(taskFeatures({ prompt: 'alpha beta' }).slice(12)).not.toEqual(
      taskFeatures({ prompt: 'gamma delta epsilon' }).slice(12),
    );
  });

  it('append an embedding, named emb0..', () => {
    const emb = projectEmbedding([0.3, -1, 2, 0.5, 0, 1.5], 4, 7);
    const f = taskFeatures({ prompt: 'x' }, emb);
    expect(f).toHaveLength(24);
    expect(f.slice(20)).toEqual(emb);
    expect(taskFeatureNames(4)).toEqual([...TASK_FEATURES, 'emb0', 'emb1', 'emb2', 'emb3']);
    expect(taskFeatureNames()).toEqual(TASK_FEATURES);
  });

  it('project an embedding with a seeded Gaussian projection, L2-normalized, that keeps similar vectors close', () => {
    const v = Array.from({ length: 64 }, (_, i) => Math.sin(i));
    const p = projectEmbedding(v);
    expect(p).toHaveLength(8);
    expect(norm(p)).toBeCloseTo(1, 12);
    expect(projectEmbedding(v)).toEqual(p);
    expect(projectEmbedding(v, 8, 2)).not.toEqual(p);
    expect(projectEmbedding(v.map((x) => 3 * x))).toEqual(p.map((x) => expect.closeTo(x, 12)));
    const near = projectEmbedding(v.map((x, i) => x + (i === 0 ? 0.01 : 0)));
    const far = projectEmbedding(v.map((x) => -x));
    const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
    expect(cos(p, near)).toBeGreaterThan(0.99);
    expect(cos(p, far)).toBeCloseTo(-1, 12);
    expect(projectEmbedding(new Array(16).fill(0))).toEqual(new Array(8).fill(0));
  });
});

describe('stop features', () => {
  const base = { round: 2, maxRounds: 4, teamSize: 3, liveAgents: 3, tokens: 3000, elapsedMs: 9000 };

  it('have the documented values', () => {
    const f = stopFeatures({ ...base, answers: ['the cat sat', 'the cat ran'], voteCounts: [2, 0] });
    expect(f).toHaveLength(STOP_FEATURES.length);
    expect(f).toEqual([1, 0.5, 2 / 3, 2 / 3, 0.5, Math.log1p(3), Math.log1p(9)]);
  });

  it('vote agreement is 0 with no votes, similarity 1 with one answer, and the mean over pairs with three', () => {
    expect(stopFeatures({ ...base, answers: ['only one'], voteCounts: [0] }).slice(3, 5)).toEqual([0, 1]);
    expect(stopFeatures({ ...base, answers: [], voteCounts: [] }).slice(2, 5)).toEqual([0, 0, 0]);
    const three = stopFeatures({ ...base, liveAgents: 2, answers: ['a b', 'a b', 'c d'], voteCounts: [2, 0, 0] });
    expect(three[3]).toBe(1);
    expect(three[4]).toBeCloseTo(1 / 3, 12); // pairs: 1, 0, 0
  });
});
