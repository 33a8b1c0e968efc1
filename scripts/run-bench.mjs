// Runs bench/*.mjs, each in its own Node process (separate memory figures), prints a short summary and
// writes bench-results/<name>.json plus bench-results/summary.json.
// Usage: node scripts/run-bench.mjs [--quick | --large] [--only NAME[,NAME]]  (run `npm run build` first; `npm run bench` does)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BENCH_DIR = path.join(ROOT, 'bench');
const RESULTS_DIR = path.join(ROOT, 'bench-results');
const DIST_ENTRY = path.join(ROOT, 'dist', 'store', 'index.js');

function parseArgs(argv) {
  const args = { quick: false, large: false, only: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') args.quick = true;
    else if (arg === '--large') args.large = true;
    else if (arg === '--only') args.only.push(...requireValue(argv, ++i, arg).split(','));
    else if (arg.startsWith('--only=')) args.only.push(...arg.slice('--only='.length).split(','));
    else throw new Error(`unknown argument ${arg} (expected --quick, --large, --only NAME)`);
  }
  return args;
}

function requireValue(argv, index, flag) {
  const value = argv[index];
  if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value`);
  return value;
}

function discoverBenchmarks(only) {
  const all = fs
    .readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith('.mjs'))
    .map((f) => f.slice(0, -4))
    .sort();
  const unknown = only.filter((name) => !all.includes(name));
  if (unknown.length) throw new Error(`no benchmark named ${unknown.join(', ')} (have: ${all.join(', ')})`);
  return only.length ? all.filter((name) => only.includes(name)) : all;
}

/** Runs one benchmark in a child process; its progress goes straight to our stderr. */
function runBenchmark(name, { quick, large }) {
  const outFile = path.join(RESULTS_DIR, `${name}.json`);
  fs.rmSync(outFile, { force: true });
  const argv = [
    '--expose-gc',
    path.join(BENCH_DIR, `${name}.mjs`),
    '--out',
    outFile,
    ...(quick ? ['--quick'] : []),
    ...(large ? ['--large'] : []),
  ];
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('close', (code, signal) => {
      const seconds = (Date.now() - started) / 1000;
      const result = code === 0 && fs.existsSync(outFile) ? JSON.parse(fs.readFileSync(outFile, 'utf8')) : null;
      resolve({ name, ok: result !== null, exitCode: code, signal, seconds, result });
    });
  });
}

function formatValue(value) {
  if (typeof value !== 'number') return String(value);
  return Math.abs(value) >= 1000 ? Math.round(value).toLocaleString('en-US') : String(value);
}

function printSummary(run) {
  const status = run.ok ? `${run.seconds.toFixed(0)} s` : `FAILED (exit ${run.exitCode ?? run.signal})`;
  console.log(`\n${run.name}  [${status}${run.result ? `, peak RSS ${run.result.peakRssMb.toFixed(0)} MB` : ''}]`);
  for (const line of run.result?.headline ?? []) {
    const target = line.target ? `  target ${line.target}: ${line.ok ? 'ok' : 'MISS'}` : '';
    console.log(`  ${line.label.padEnd(52)} ${formatValue(line.value).padStart(10)} ${line.unit}${target}`);
  }
}

function writeSummary(runs, args, started) {
  const summary = {
    startedAt: new Date(started).toISOString(),
    seconds: (Date.now() - started) / 1000,
    quick: args.quick,
    node: process.version,
    benchmarks: runs.map((r) => ({
      name: r.name,
      ok: r.ok,
      exitCode: r.exitCode,
      seconds: r.seconds,
      peakRssMb: r.result?.peakRssMb ?? null,
      headline: r.result?.headline ?? [],
    })),
  };
  fs.writeFileSync(path.join(RESULTS_DIR, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(DIST_ENTRY))
    throw new Error('dist/ is missing: run `npm run build` first (or use `npm run bench`)');
  const names = discoverBenchmarks(args.only);
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const started = Date.now();
  const runs = [];
  for (const name of names) {
    console.error(`\n== ${name}${args.quick ? ' (quick)' : args.large ? ' (large)' : ''}`);
    runs.push(await runBenchmark(name, args));
  }
  runs.forEach(printSummary);
  const summary = writeSummary(runs, args, started);
  const misses = runs.flatMap((r) => (r.result?.headline ?? []).filter((l) => l.ok === false)).length;
  console.log(
    `\n${runs.length} benchmark(s) in ${summary.seconds.toFixed(0)} s; ${misses} target(s) missed; results in ${path.relative(process.cwd(), RESULTS_DIR) || '.'}/`,
  );
  if (runs.some((r) => !r.ok)) process.exitCode = 1;
}

main().catch((err) => {
  console.error(`run-bench: ${err.message}`);
  process.exitCode = 2;
});
