import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Db } from './database.js';
import { toReward } from './rewards.js';
import { toRollout, whereClause } from './rollouts.js';
import type { Rollout, RolloutFilter } from './types.js';

export interface ExportOptions extends Omit<RolloutFilter, 'offset'> {
  /** Rollouts read per query page; bounds memory. */
  pageSize?: number;
}

export interface ExportResult {
  rollouts: number;
  spans: number;
  bytes: number;
}

interface SpanLine {
  rollout_id: string; seq: number; parent_seq: number | null; type: string; name: string;
  agent: string | null; started_at: number; duration_ms: number; payload: string;
}

/**
 * Streams rollouts as JSONL, one rollout per line with its spans and rewards, oldest first.
 * Span payloads are stored as JSON text and spliced in without a parse/serialize round trip.
 */
export async function exportRollouts(db: Db, out: Writable, opts: ExportOptions = {}): Promise<ExportResult> {
  const pageSize = opts.pageSize ?? 500;
  const { where, params } = whereClause(opts);
  const page = db.prepare(`SELECT * FROM rollouts ${where ? `${where} AND` : 'WHERE'} num > ? ORDER BY num LIMIT ?`);
  const result: ExportResult = { rollouts: 0, spans: 0, bytes: 0 };
  let last = 0;
  let remaining = opts.limit ?? Number.POSITIVE_INFINITY;
  while (remaining > 0) {
    const rows = page.all(...params, last, Math.min(pageSize, remaining)) as Parameters<typeof toRollout>[0][];
    if (!rows.length) break;
    last = rows[rows.length - 1]!.num;
    remaining -= rows.length;
    const ids = rows.map((r) => r.id);
    const marks = ids.map(() => '?').join(',');
    const spans = groupBy(db.prepare(`SELECT * FROM spans WHERE rollout_id IN (${marks}) ORDER BY rollout_id, seq`).all(...ids) as SpanLine[]);
    const rewards = groupBy(db.prepare(`SELECT * FROM rewards WHERE rollout_id IN (${marks}) ORDER BY id`).all(...ids) as Parameters<typeof toReward>[0][]);
    let chunk = '';
    for (const row of rows) {
      const rollout = toRollout(row);
      const own = spans.get(rollout.id) ?? [];
      chunk += rolloutLine(rollout, own, (rewards.get(rollout.id) ?? []).map(toReward));
      result.spans += own.length;
    }
    result.rollouts += rows.length;
    result.bytes += Buffer.byteLength(chunk);
    if (!out.write(chunk)) await once(out, 'drain');
  }
  return result;
}

function rolloutLine(r: Rollout, spans: SpanLine[], rewards: unknown[]): string {
  const head = JSON.stringify({
    id: r.id, num: r.num, run_id: r.runId, task_id: r.taskId, source: r.source, status: r.status, error: r.error,
    final_answer: r.finalAnswer, winner: r.winner, total_reward: r.totalReward,
    costs: { tokens: r.tokens, tool_calls: r.toolCalls, messages: r.messages, wall_ms: r.wallMs },
    metadata: r.metadata, started_at: r.startedAt, finished_at: r.finishedAt, rewards,
  });
  let body = '';
  for (const s of spans) {
    body += `${body ? ',' : ''}{"seq":${s.seq},"parent_seq":${s.parent_seq ?? 'null'},"type":"${s.type}","name":${JSON.stringify(s.name)},"agent":${s.agent === null ? 'null' : JSON.stringify(s.agent)},"started_at":${s.started_at},"duration_ms":${s.duration_ms},"payload":${s.payload}}`;
  }
  return `${head.slice(0, -1)},"spans":[${body}]}\n`;
}

function groupBy<T extends { rollout_id: string }>(rows: T[]): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) {
    const list = map.get(row.rollout_id);
    if (list) list.push(row);
    else map.set(row.rollout_id, [row]);
  }
  return map;
}
