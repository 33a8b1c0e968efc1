import { Store } from '../../dist/store/index.js';
import { storeDb } from '../../dist/store/store.js';
import { agentName, chatPayload } from './payloads.mjs';
import { createRng } from './random.mjs';
import { SPAN_INSERT_SQL, spanRow } from './span-rows.mjs';

const ROLLOUT_INSERT_SQL = `INSERT INTO rollouts (id, source, status, final_answer, winner, total_reward, tokens, tool_calls,
  messages, wall_ms, metadata, started_at, finished_at) VALUES (?, 'bench', 'completed', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const REWARD_INSERT_SQL = `INSERT INTO rewards (rollout_id, channel, family, value, reason, agent, target_seq, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
const SPAN_TYPES = ['prompt', 'tool', 'message', 'prompt', 'coordination'];
const ROLLOUTS_PER_TRANSACTION = 200;
const PAYLOAD_POOL = 4096;

/**
 * Fills a new store (schema created by Store.open) with completed rollouts of spansPerRollout spans each,
 * payloads of 300-500 bytes and two rewards per rollout. Raw inserts in big transactions, so it is fast.
 */
export function buildSyntheticStore(file, { spans, spansPerRollout = 100, seed = 1 }) {
  const rng = createRng(seed);
  const payloads = Array.from({ length: PAYLOAD_POOL }, () =>
    JSON.stringify(chatPayload(rng, { targetBytes: rng.int(300, 500) })),
  );
  const store = Store.open({ path: file });
  try {
    const db = storeDb(store);
    const insertRollout = db.prepare(ROLLOUT_INSERT_SQL);
    const insertSpan = db.prepare(SPAN_INSERT_SQL);
    const insertReward = db.prepare(REWARD_INSERT_SQL);
    const start = Date.UTC(2025, 0, 1);
    const writeRollouts = db.transaction((first, count) => {
      for (let n = first; n < first + count; n++) {
        const id = `ro_bench${String(n).padStart(9, '0')}`;
        const startedAt = start + n * 60_000;
        const reward = roundReward(rng.next());
        insertRollout.run(
          id,
          `answer ${n}`,
          agentName(rng),
          reward,
          rng.int(500, 40_000),
          rng.int(0, 30),
          spansPerRollout,
          rng.int(1000, 90_000),
          JSON.stringify({ task: `t${n % 997}`, seed: n }),
          startedAt,
          startedAt + 55_000,
        );
        for (let seq = 1; seq <= spansPerRollout; seq++) {
          const span = {
            type: SPAN_TYPES[seq % SPAN_TYPES.length],
            name: `step.${seq % 7}`,
            agent: agentName(rng),
            parentSeq: seq > 1 && seq % 3 === 0 ? seq - 1 : null,
            startedAt: startedAt + seq * 250.5,
            durationMs: rng.int(1, 5000),
          };
          insertSpan.run(spanRow(id, seq, span, payloads[(n * spansPerRollout + seq) % payloads.length]));
        }
        insertReward.run(id, 'judge', 'llm', reward, 'synthetic', null, null, startedAt + 56_000);
        insertReward.run(id, 'format', 'rule', 1, null, null, spansPerRollout, startedAt + 56_000);
      }
    });
    const rollouts = Math.ceil(spans / spansPerRollout);
    for (let first = 0; first < rollouts; first += ROLLOUTS_PER_TRANSACTION) {
      writeRollouts.immediate(first, Math.min(ROLLOUTS_PER_TRANSACTION, rollouts - first));
    }
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return { rollouts, spans: rollouts * spansPerRollout };
  } finally {
    store.close();
  }
}

function roundReward(x) {
  return Math.round(x * 1000) / 1000;
}
