// The store on PostgreSQL against SQLite: span ingest from 1, 4 and 8 writer processes at once (the same
// rows into each backend, samples interleaved), and the JSONL dataset export (exportRollouts, what
// `traces export` runs) of one synthetic store, copied to PostgreSQL with `store copy`'s copyStore.
// PostgreSQL is a throwaway server on a temp directory (test/support/postgres-server.mjs: fsync off, as
// SQLite's WAL with synchronous=NORMAL does not sync each commit either). --large: bigger sizes.
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { copyStore, Store } from '../dist/store/index.js';
import { storeDb } from '../dist/store/store.js';
import { startPostgres } from '../test/support/postgres-server.mjs';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { describe, pairedRatio, roundTo } from './lib/stats.mjs';
import { buildSyntheticStore } from './lib/synthetic-store.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';
import { runInterleaved, timeSeconds } from './lib/timing.mjs';

const WRITER = fileURLToPath(new URL('./lib/ingest-writer.mjs', import.meta.url));
const EXPORTER = fileURLToPath(new URL('./lib/export-worker.mjs', import.meta.url));
const WRITERS = [1, 4, 8];
const BACKENDS = ['sqlite', 'postgres'];
/** SpanWriter's batch in collect (src/rollouts/rollout.ts). */
const BATCH = 64;
const SPANS_PER_ROLLOUT = 256;
const SIZES = {
  quick: { ingestSpans: 4096, rounds: 1, exportSpans: 10_000 },
  default: { ingestSpans: 32_768, rounds: 3, exportSpans: 50_000 },
  large: { ingestSpans: 131_072, rounds: 5, exportSpans: 300_000 },
};

const execFileAsync = promisify(execFile);

/** A new database on the bench's server (dropped after its sample). */
async function admin(url, sql) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

let databases = 0;
async function freshLocation(backend, server, dir) {
  const name = `bench_${++databases}`;
  if (backend === 'sqlite') {
    const file = path.join(dir, `${name}.sqlite`);
    return {
      location: file,
      drop: async () => ['', '-wal', '-shm'].forEach((end) => fs.rmSync(`${file}${end}`, { force: true })),
    };
  }
  await admin(server.url, `CREATE DATABASE ${name}`);
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return { location: url.toString(), drop: () => admin(server.url, `DROP DATABASE ${name}`) };
}

function startWriter(location, spans, index) {
  const child = spawn(
    process.execPath,
    [WRITER, location, String(spans), String(index), String(SPANS_PER_ROLLOUT), String(BATCH)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = [];
  let buffer = '';
  const waiters = [];
  child.stdout.on('data', (d) => {
    buffer += d;
    for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
      lines.push(buffer.slice(0, at));
      buffer = buffer.slice(at + 1);
      waiters.shift()?.();
    }
  });
  const exited = new Promise((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer ${index} exited with ${code}`)))),
  );
  const line = async (n) => {
    while (lines.length < n)
      await Promise.race([
        new Promise((r) => waiters.push(r)),
        exited.then(() => {
          throw new Error(`writer ${index} ended early`);
        }),
      ]);
    return lines[n - 1];
  };
  return { child, line, exited };
}

/** One sample: W writer processes ready (store open, rollouts created), then timed from "go" until the last has written. */
async function ingestSample(backend, writers, spans, server, dir) {
  const { location, drop } = await freshLocation(backend, server, dir);
  try {
    Store.open({ path: location }).close();
    const procs = Array.from({ length: writers }, (_, i) => startWriter(location, spans / writers, i));
    await Promise.all(procs.map((p) => p.line(1)));
    const seconds = await timeSeconds(async () => {
      for (const p of procs) p.child.stdin.end('go\n');
      await Promise.all(procs.map((p) => p.line(2)));
    });
    await Promise.all(procs.map((p) => p.exited));
    const store = Store.open({ path: location, mustExist: true });
    const rows = storeDb(store).prepare('SELECT COUNT(*) AS n, SUM(LENGTH(payload)) AS chars FROM spans').get();
    store.close();
    if (rows.n !== spans) throw new Error(`${backend} × ${writers} wrote ${rows.n} spans, expected ${spans}`);
    return { seconds, chars: rows.chars };
  } finally {
    await drop();
  }
}

async function exportSample(location, out) {
  const { stdout } = await execFileAsync(process.execPath, [EXPORTER, location, out], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout);
}

function summarizeIngest(samples, spans) {
  const rows = {};
  for (const writers of WRITERS) {
    const rate = (backend) => {
      const d = describe(samples[`${backend}/${writers}`].map((s) => s.seconds));
      return {
        medianS: roundTo(d.median, 3),
        minS: roundTo(d.min, 3),
        maxS: roundTo(d.max, 3),
        spansPerSec: Math.round(spans / d.median),
      };
    };
    const sqlite = rate('sqlite');
    const postgres = rate('postgres');
    const secs = (backend) => samples[`${backend}/${writers}`].map((s) => s.seconds);
    rows[writers] = {
      sqlite,
      postgres,
      postgresOverSqlite: roundTo(postgres.spansPerSec / sqlite.spansPerSec),
      pairedSpeedRatio: roundTo(pairedRatio(secs('sqlite'), secs('postgres'))),
    };
  }
  return rows;
}

function summarizeExport(samples, built) {
  return Object.fromEntries(
    BACKENDS.map((backend) => {
      const d = describe(samples[backend].map((s) => s.seconds));
      return [
        backend,
        {
          medianS: roundTo(d.median, 3),
          rolloutsPerSec: Math.round(built.rollouts / d.median),
          spansPerSec: Math.round(built.spans / d.median),
          mbWritten: roundTo(samples[backend][0].fileBytes / 2 ** 20, 1),
        },
      ];
    }),
  );
}

async function main() {
  const args = parseBenchArgs();
  const sizeName = args.quick ? 'quick' : args.large ? 'large' : 'default';
  const size = SIZES[sizeName];
  const dir = makeTempDir('store');
  const server = await startPostgres();
  process.on('exit', () => server.stop());
  try {
    progress(
      `store: ingest ${size.ingestSpans} spans by ${WRITERS.join('/')} writers into sqlite and postgres, ${size.rounds} round(s), interleaved`,
    );
    const ingestVariants = BACKENDS.flatMap((backend) =>
      WRITERS.map((writers) => ({
        name: `${backend}/${writers}`,
        run: () => ingestSample(backend, writers, size.ingestSpans, server, dir),
      })),
    );
    await ingestSample('postgres', 1, SPANS_PER_ROLLOUT, server, dir);
    const ingest = await runInterleaved(ingestVariants, size.rounds, (name, round, s) => {
      progress(
        `round ${round + 1}/${size.rounds} ingest ${name.padEnd(11)} ${Math.round(size.ingestSpans / s.seconds)} spans/s`,
      );
    });
    const chars = new Set(
      Object.values(ingest)
        .flat()
        .map((s) => s.chars),
    );
    if (chars.size !== 1)
      throw new Error(`the backends stored different payloads (${[...chars].join(', ')} characters)`);

    const file = path.join(dir, 'export.sqlite');
    const built = buildSyntheticStore(file, { spans: size.exportSpans, spansPerRollout: 100, seed: 7 });
    const { location: url } = await freshLocation('postgres', server, dir);
    const source = Store.open({ path: file, mustExist: true });
    let copy;
    const copySeconds = await timeSeconds(async () => {
      copy = await copyStore(source, url);
    });
    source.close();
    if (!copy.ok) throw new Error('the copy to postgres did not verify');
    const copiedRows = copy.tables.reduce((n, t) => n + t.sourceRows, 0);
    progress(`copied ${copiedRows} rows to postgres in ${copySeconds.toFixed(1)} s (with verification)`);
    const locations = { sqlite: file, postgres: url };
    const exports = await runInterleaved(
      BACKENDS.map((backend) => ({
        name: backend,
        run: async () => {
          const s = await exportSample(locations[backend], path.join(dir, `export-${backend}.jsonl`));
          if (s.spans !== built.spans || s.rollouts !== built.rollouts)
            throw new Error(`${backend} exported ${s.rollouts} rollouts / ${s.spans} spans`);
          return s;
        },
      })),
      size.rounds,
      (name, round, s) =>
        progress(
          `round ${round + 1}/${size.rounds} export ${name.padEnd(8)} ${Math.round(built.spans / s.seconds)} spans/s`,
        ),
    );

    const ingestSummary = summarizeIngest(ingest, size.ingestSpans);
    const exportSummary = summarizeExport(exports, built);
    const lines = [];
    for (const w of WRITERS) {
      const r = ingestSummary[w];
      lines.push(headline(`ingest sqlite, ${w} writer(s)`, r.sqlite.spansPerSec, 'spans/s'));
      lines.push(headline(`ingest postgres, ${w} writer(s)`, r.postgres.spansPerSec, 'spans/s'));
      lines.push(headline(`ingest postgres / sqlite, ${w} writer(s)`, r.postgresOverSqlite, 'x'));
    }
    for (const backend of BACKENDS)
      lines.push(headline(`export ${backend} (${built.spans} spans)`, exportSummary[backend].spansPerSec, 'spans/s'));
    lines.push(
      headline(
        'export postgres / sqlite',
        roundTo(exportSummary.postgres.spansPerSec / exportSummary.sqlite.spansPerSec),
        'x',
      ),
    );
    lines.push(
      headline('store copy sqlite → postgres (with verification)', Math.round(copiedRows / copySeconds), 'rows/s'),
    );
    writeResult(args.out, {
      name: 'store',
      size: sizeName,
      params: {
        ...size,
        writers: WRITERS,
        batch: BATCH,
        spansPerRollout: SPANS_PER_ROLLOUT,
        payloadBytes: '600-2000',
        redactor: 'none',
        postgres: 'local server, fsync off',
      },
      ingest: ingestSummary,
      export: { rollouts: built.rollouts, spans: built.spans, ...exportSummary },
      copy: { rows: copiedRows, seconds: roundTo(copySeconds, 2), rowsPerSec: Math.round(copiedRows / copySeconds) },
      headline: lines,
    });
  } finally {
    server.stop();
    removeTempDir(dir);
  }
}

await main();
