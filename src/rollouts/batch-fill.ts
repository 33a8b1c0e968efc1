import type { RLConfig } from '../config/schema.js';

/** Sequences a remote endpoint is given at a time per arm when it states no batch size of its own. */
const REMOTE_BATCH = 8;

/**
 * Orchestrations at a time that keep the batch of each arm's model server full: every orchestration has one
 * request per agent in flight, so a team of 3 on a server batching 16 rows needs 6 of them (the default
 * evaluation: measured 1.5× faster than 2 at a time). Never fewer than `floor`.
 */
export function batchFilling(config: RLConfig, floor: number): number {
  const batches = config.agents.map((a) => config.models[a.model]?.local?.max_batch_size ?? REMOTE_BATCH);
  const batch = Math.max(...batches);
  return Math.max(floor, Math.ceil(batch / config.agents.length));
}
