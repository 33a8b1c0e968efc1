import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { toOrchestrationTrace } from '../trace/orchestration-trace.js';
import type { Db } from './database.js';
import { groupBy, inListQuery } from './query.js';
import { toRollout, whereClause } from './rollouts.js';
import { storeDb, type Store } from './store.js';
import { parsedSpansOf, rewardsOf } from './trace-pages.js';
import type { Reward, Rollout, RolloutFilter } from './types.js';

export const EXPORT_FORMATS = ['jsonl', 'orchestration-trace'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportOptions extends Omit<RolloutFilter, 'offset'> {
  /** Rollouts read per query page; bounds memory. */
  pageSize?: number;
  /**
   * jsonl (default): one rollout per line with its spans and rewards. orchestration-trace: one
   * orchestration-trace object per line (src/datasets/orchestration-trace.ts).
   */
  format?: ExportFormat;
}

export interface ExportResult {
  rollouts: number;
  spans: number;
  bytes: number;
}

/** Span columns in a fixed order, read as arrays (`raw`): no per-row object, fewer allocations. */
type SpanTuple = [
  rolloutId: string,
  seq: number,
  parentSeq: number | null,
  type: string,
  name: string,
  agent: string | null,
  startedAt: number,
  durationMs: number,
  payload: string,
];
const SPAN_COLUMNS = 'rollout_id, seq, parent_seq, type, name, agent, started_at, duration_ms, payload';

/**
 * Streams rollouts as JSONL, one rollout per line with its spans and rewards, oldest first.
 * Span payloads are stored as JSON text and spliced in without a parse/serialize round trip.
 * Pages are small so each chunk stays a few MB: large pages cost more in GC than they save in queries.
 */
export async function exportRollouts(store: Store, out: Writable, opts: ExportOptions = {}): Promise<ExportResult> {
  const db = storeDb(store);
  const format = opts.format ?? 'jsonl';
  if (!(EXPORT_FORMATS as readonly string[]).includes(format))
    throw new Error(`unknown export format ${String(format)}`);
  if (format === 'jsonl') {
    const spansOf = inListQuery(
      db,
      `SELECT ${SPAN_COLUMNS} FROM spans WHERE rollout_id IN (?) ORDER BY rollout_id, seq`,
      true,
    );
    return streamPages(
      db,
      out,
      opts,
      (ids) => groupBy(spansOf(ids) as SpanTuple[], (s) => s[0]),
      (r, spans, rewards) => rolloutLine(r, spans, rewards),
    );
  }
  // The orchestration-trace mapping reads payloads, so spans are parsed on this path.
  return streamPages(db, out, opts, parsedSpansOf(db), (r, spans, rewards) => {
    return `${JSON.stringify(toOrchestrationTrace(r, spans, rewards))}\n`;
  });
}

/** Pages through matching rollouts (by num), fetching each page's spans and rewards in one query each. */
async function streamPages<S>(
  db: Db,
  out: Writable,
  opts: ExportOptions,
  spansFor: (ids: string[]) => Map<string, S[]>,
  line: (rollout: Rollout, spans: S[], rewards: Reward[]) => string,
): Promise<ExportResult> {
  const pageSize = opts.pageSize ?? 25;
  const { where, params } = whereClause(opts);
  const page = db.prepare(`SELECT * FROM rollouts ${where ? `${where} AND` : 'WHERE'} num > ? ORDER BY num LIMIT ?`);
  const rewardsByRollout = rewardsOf(db);
  const result: ExportResult = { rollouts: 0, spans: 0, bytes: 0 };
  let last = 0;
  let remaining = opts.limit ?? Number.POSITIVE_INFINITY;
  while (remaining > 0) {
    const rows = page.all(...params, last, Math.min(pageSize, remaining)) as Parameters<typeof toRollout>[0][];
    if (!rows.length) break;
    last = rows[rows.length - 1]!.num;
    remaining -= rows.length;
    const ids = rows.map((r) => r.id);
    const spans = spansFor(ids);
    const rewards = rewardsByRollout(ids);
    const lines: string[] = [];
    for (const row of rows) {
      const rollout = toRollout(row);
      const own = spans.get(rollout.id) ?? [];
      lines.push(line(rollout, own, rewards.get(rollout.id) ?? []));
      result.spans += own.length;
    }
    const chunk = lines.join('');
    result.rollouts += rows.length;
    result.bytes += Buffer.byteLength(chunk);
    if (!out.write(chunk)) await once(out, 'drain');
  }
  return result;
}

function rolloutLine(r: Rollout, spans: SpanTuple[], rewards: Reward[]): string {
  const head = JSON.stringify({
    id: r.id,
    num: r.num,
    run_id: r.runId,
    task_id: r.taskId,
    source: r.source,
    status: r.status,
    error: r.error,
    final_answer: r.finalAnswer,
    winner: r.winner,
    total_reward: r.totalReward,
    costs: { tokens: r.tokens, tool_calls: r.toolCalls, messages: r.messages, wall_ms: r.wallMs },
    metadata: r.metadata,
    started_at: r.startedAt,
    finished_at: r.finishedAt,
    rewards,
  });
  return `${head.slice(0, -1)},"spans":[${spans.map(spanJson).join(',')}]}\n`;
}

function spanJson([, seq, parentSeq, type, name, agent, startedAt, durationMs, payload]: SpanTuple): string {
  return `{"seq":${seq},"parent_seq":${parentSeq ?? 'null'},"type":"${type}","name":${JSON.stringify(name)},"agent":${agent === null ? 'null' : JSON.stringify(agent)},"started_at":${startedAt},"duration_ms":${durationMs},"payload":${payload}}`;
}
