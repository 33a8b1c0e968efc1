/** The spans row layout, shared by the raw-insert baseline and the synthetic store builder. */

export const SPAN_INSERT_SQL = `INSERT INTO spans (rollout_id, seq, parent_seq, type, name, agent, started_at, duration_ms, payload)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** Positional parameters for SPAN_INSERT_SQL, in the same order the store's SpanWriter binds them. */
export function spanRow(rolloutId, seq, span, payloadJson) {
  return [
    rolloutId,
    seq,
    span.parentSeq ?? null,
    span.type,
    span.name,
    span.agent ?? null,
    span.startedAt,
    span.durationMs ?? 0,
    payloadJson,
  ];
}
