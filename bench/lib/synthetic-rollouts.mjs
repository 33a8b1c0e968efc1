// Shared by the benchmarks' synthetic trace stores (bench/dataset-build.mjs, bench/lib/train-overhead-store.mjs):
// the team, prompt span payloads in the shape `collect` records them, and the rows of one completed rollout.

export const AGENTS = ['a', 'b', 'c'];
export const LABEL = { a: 'agent1', b: 'agent2', c: 'agent3' };

/**
 * A prompt span's payload; reply null is a cancelled call. With `vocabulary`, per-token logprobs and token ids
 * (as from vLLM) drawn from it; without, none (an endpoint that does not return them).
 */
export function promptPayload(rng, { turnId, round, messages, reply, model, vocabulary }) {
  const tokens = reply === null ? 0 : Math.max(4, Math.round(reply.length / 4));
  const detail = reply !== null && vocabulary;
  return {
    turn_id: turnId,
    round,
    attempt: 1,
    request: { model, messages, temperature: 0.7, max_tokens: 512 },
    response: reply === null ? null : { content: reply, tool_calls: [], finish_reason: 'stop' },
    usage: { prompt_tokens: 300, completion_tokens: tokens, total_tokens: 300 + tokens },
    latency_ms: rng.int(200, 4000),
    logprobs: detail
      ? Array.from({ length: tokens }, () => ({
          token: rng.pick(vocabulary),
          logprob: -Math.round(rng.next() * 3000) / 1000,
        }))
      : null,
    token_ids: detail ? Array.from({ length: tokens }, () => rng.int(3, 151_000)) : null,
    ...(reply === null ? { cancelled: true } : {}),
  };
}

/**
 * Inserts rollouts straight into a store's tables (ids ro_bench000000001…, a minute apart from 2025-01-01):
 * returns insert(task, o) for o = { status, final, winner, total, spans: [type, name, agent, payload][],
 * rewards: [channel, family, value, agent, targetSeq][] }, which returns the number of spans written.
 */
export function rolloutInserter(db, solverId) {
  const insRollout =
    db.prepare(`INSERT INTO rollouts (id, task_id, source, status, final_answer, winner, total_reward, tokens, messages, wall_ms, metadata, started_at, finished_at)
    VALUES (?, ?, 'bench', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const insSpan = db.prepare(
    'INSERT INTO spans (rollout_id, seq, parent_seq, type, name, agent, started_at, duration_ms, payload) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?)',
  );
  const insReward = db.prepare(
    'INSERT INTO rewards (rollout_id, channel, family, value, reason, agent, target_seq, created_at) VALUES (?, ?, ?, ?, NULL, ?, ?, ?)',
  );
  const prompts = { a: solverId, b: solverId, c: solverId };
  let rollouts = 0;
  return (task, o) => {
    const id = `ro_bench${String(++rollouts).padStart(9, '0')}`;
    const t0 = Date.UTC(2025, 0, 1) + rollouts * 60_000;
    const metadata = { agents: AGENTS, labels: LABEL, prompts, category: task.category };
    insRollout.run(
      id,
      task.id,
      o.status,
      o.final,
      o.winner,
      o.total,
      4000,
      o.spans.length,
      30_000,
      JSON.stringify(metadata),
      t0,
      t0 + 30_000,
    );
    o.spans.forEach(([type, name, agent, payload], k) =>
      insSpan.run(id, k + 1, type, name, agent, t0 + k * 100, 50, JSON.stringify(payload)),
    );
    for (const [channel, family, value, agent, target] of o.rewards)
      insReward.run(id, channel, family, value, agent, target, t0 + 30_000);
    return o.spans.length;
  };
}
