// Child process for bench/store.mjs: one writer, as one collect process would be. Opens the store, creates
// its rollouts and builds its spans (untimed), says "ready", waits for "go" on stdin, writes the spans through
// the store's SpanWriter, and prints the seconds it took as JSON.
import { performance } from 'node:perf_hooks';
import { Store } from '../../dist/store/index.js';
import { agentName, chatPayload } from './payloads.mjs';
import { createRng } from './random.mjs';

const [location, spansArg, writerArg, rolloutSpansArg, batchArg] = process.argv.slice(2);
const spans = Number(spansArg);
const spansPerRollout = Number(rolloutSpansArg);
const batchSize = Number(batchArg);
const writer = Number(writerArg);

// The same rows whatever the backend and the number of writers: span j of the run is pool[j % 512], and
// writer w writes spans w·n … (w+1)·n − 1.
const rng = createRng(1000);
const pool = Array.from({ length: 512 }, (_, i) => ({
  type: 'prompt',
  name: 'chat.completion',
  agent: agentName(rng),
  startedAt: Date.UTC(2025, 0, 1) + i * 37.5,
  durationMs: rng.int(80, 9000),
  payload: JSON.parse(JSON.stringify(chatPayload(rng, { targetBytes: rng.int(600, 2000) }))),
}));
const store = Store.open({ path: location, mustExist: true });
const rollouts = Array.from({ length: Math.ceil(spans / spansPerRollout) }, () =>
  store.rollouts.start({ source: `bench-w${writer}` }),
);

process.stdin.once('data', () => {
  const start = performance.now();
  let i = 0;
  for (const id of rollouts) {
    const w = store.spans.writer(id, batchSize);
    for (let k = 0; k < spansPerRollout && i < spans; k++) w.add(pool[(writer * spans + i++) % pool.length]);
    w.flush();
  }
  const seconds = (performance.now() - start) / 1000;
  store.close();
  process.stdout.write(`${JSON.stringify({ seconds, spans: i })}\n`, () => process.exit(0));
});
process.stdout.write('ready\n');
