import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

describe.each(BACKENDS)('span batches on %s', (backend) => {
  it('stores batches of any size whole and in order (several rows per INSERT)', () => {
    const store = openStoreOn(backend, tempDir());
    try {
      for (const size of [1, 2, 3, 127, 128, 129, 300]) {
        const id = store.rollouts.start({ source: `batch-${size}` });
        const spans = Array.from({ length: size }, (_, i) => ({
          type: 'message' as const,
          name: `m${i}`,
          agent: i % 2 ? 'a' : null,
          startedAt: 1000 + i / 4,
          durationMs: i,
          payload: { i, text: `x${'y'.repeat(i)}` },
        }));
        expect(store.spans.append(id, spans)).toEqual(spans.map((_, i) => i + 1));
        expect(store.spans.list(id).map((s) => [s.seq, s.name, s.agent, s.startedAt, s.durationMs, s.payload])).toEqual(
          spans.map((s, i) => [i + 1, s.name, s.agent, s.startedAt, s.durationMs, s.payload]),
        );
      }
      const writer = store.spans.writer(store.rollouts.start(), 200);
      for (let i = 0; i < 450; i++) writer.add({ type: 'tool', name: `t${i}` });
      writer.flush();
      expect(store.spans.list(writer.rolloutId).map((s) => s.name)).toEqual(
        Array.from({ length: 450 }, (_, i) => `t${i}`),
      );
    } finally {
      store.close();
    }
  });
});
