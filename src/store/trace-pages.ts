import type { Db } from './database.js';
import { groupBy, inListQuery } from './query.js';
import { toReward } from './rewards.js';
import { toSpan } from './spans.js';
import type { Reward, Span } from './types.js';

/** Reads the parsed spans of a page of rollouts, by rollout, each rollout's in order. */
export function parsedSpansOf(db: Db): (ids: string[]) => Map<string, Span[]> {
  const spansOf = inListQuery(db, 'SELECT * FROM spans WHERE rollout_id IN (?) ORDER BY rollout_id, seq', false);
  return (ids) => groupBy((spansOf(ids) as Parameters<typeof toSpan>[0][]).map(toSpan), (s) => s.rolloutId);
}

/** Reads the rewards of a page of rollouts, by rollout, in the order they were stored. */
export function rewardsOf(db: Db): (ids: string[]) => Map<string, Reward[]> {
  const rows = inListQuery(db, 'SELECT * FROM rewards WHERE rollout_id IN (?) ORDER BY id', false);
  return (ids) => groupBy((rows(ids) as Parameters<typeof toReward>[0][]).map(toReward), (r) => r.rolloutId);
}
