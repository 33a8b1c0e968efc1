import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { batchFilling } from '../../src/rollouts/batch-fill.js';

const config = (raw: Record<string, unknown>) => configSchema.parse(raw);

describe('batchFilling', () => {
  it("runs enough orchestrations to fill the team's server batch: one request per agent each", () => {
    expect(batchFilling(config({}), 2)).toBe(6); // the default team: 3 agents on a server batching 16
    const wide = config({ models: { local: { model: 'm', local: { weights: 'builtin:x', max_batch_size: 32 } } } });
    expect(batchFilling(wide, 2)).toBe(11);
  });

  it('never goes below the floor, and gives a remote endpoint 8 at a time', () => {
    const remote = config({
      models: { api: { model: 'm', base_url: 'http://localhost:9/v1' } },
      agents: [{ id: 'a', model: 'api' }],
    });
    expect(batchFilling(remote, 2)).toBe(8);
    expect(batchFilling(config({}), 10)).toBe(10);
  });
});
