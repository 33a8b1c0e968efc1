// massgen-rl against MassGen itself, both driven by the same zero-latency OpenAI-compatible stub (its own process):
// orchestrations per second, LLM calls per orchestration and framework CPU ms per LLM call, 3 agents on the same
// tasks, the variants interleaved round by round in one run.
//
//   massgen-rl: collect(rt, { concurrency }) from dist/ (one runtime per sample), a fresh SQLite store per sample (spans, rewards, runs
//     recorded as in production), native tool mode at concurrency 1 and 4, text mode at 4.
//   MassGen: massgen.run(query, config_dict) from its Python API in one long-lived process (interpreter start-up
//     and `import massgen` are paid once and reported apart), sequentially and 4 at a time (asyncio); plus the
//     `massgen --automation` CLI, one process per task as it is used from scripts, on a few tasks.
//
// CPU: process CPU time while the framework runs (Node: process.cpuUsage; Python: time.process_time plus
// children) divided by the LLM calls the stub answered in that window. The stub's own CPU is not included.
// Needs the MassGen venv: scripts/setup-massgen-venv.sh (or MASSGEN_VENV=/path/to/venv; MASSGEN_BENCH_VENV still works).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../dist/config/load.js';
import { collect } from '../dist/pipeline/collect/collect.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { MASSGEN_VENV, massgenEnv } from './lib/massgen-env.mjs';
import { createRng } from './lib/random.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { describe, median, pairedRatio, roundTo } from './lib/stats.mjs';
import { startStub } from './lib/stub-openai.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';
import { collectGarbage, runInterleaved } from './lib/timing.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const VENV = MASSGEN_VENV;
const MODEL = 'gpt-4o-mini'; // a name in MassGen's (LiteLLM's) pricing table, so its cost tracking takes its normal path
const AGENTS = ['agent_a', 'agent_b', 'agent_c'];
const TARGET_RATIO = 20;
const TARGET_CPU_MS_PER_CALL = 1;
const SIZES = {
  full: { tasks: 100, rounds: 3, rlWarmupTasks: 30, massgenWarmupTasks: 3, cliTasks: 3 },
  quick: { tasks: 10, rounds: 1, rlWarmupTasks: 10, massgenWarmupTasks: 1, cliTasks: 1 },
};

/** The same 100 (or 10) simple prompts for both systems. */
function makeTasks(n) {
  const rng = createRng(20240611);
  const ops = [
    ['+', (a, b) => a + b],
    ['-', (a, b) => a - b],
    ['x', (a, b) => a * b],
  ];
  return Array.from({ length: n }, (_, i) => {
    const [sym, fn] = rng.pick(ops);
    const a = rng.int(2, 99);
    const b = rng.int(2, 99);
    return {
      id: `t${String(i).padStart(3, '0')}`,
      prompt: `What is ${a} ${sym} ${b}?`,
      reference: String(fn(a, b)),
      category: 'arithmetic',
    };
  });
}

// ---------------------------------------------------------------------------------------------- massgen-rl

function rlConfigYaml(baseUrl, toolMode) {
  return [
    'project: { name: vs-massgen }',
    'models:',
    `  stub: { base_url: "${baseUrl}", model: ${MODEL}, api_key_env: BENCH_STUB_KEY }`,
    'agents:',
    ...AGENTS.map((id) => `  - { id: ${id}, model: stub, tool_mode: ${toolMode} }`),
    'tasks:',
    '  sources: [{ file: tasks.jsonl }]',
    'collect: { split: all }',
    '',
  ].join('\n');
}

/** One sample: a fresh project and store, then the timed collect() over every task. */
async function rlSample(stub, tasks, { toolMode, concurrency }) {
  const dir = makeTempDir('vs-massgen-rl');
  try {
    fs.writeFileSync(path.join(dir, 'massgen-rl.yaml'), rlConfigYaml(stub.baseUrl, toolMode));
    fs.writeFileSync(path.join(dir, 'tasks.jsonl'), `${tasks.map((t) => JSON.stringify(t)).join('\n')}\n`);
    const loaded = loadConfig({ cwd: dir, env: { ...process.env, BENCH_STUB_KEY: 'sk-bench-dummy' } });
    await stub.reset();
    collectGarbage();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const summary = await withRuntime(loaded, (rt) => collect(rt, { concurrency, split: 'all' }));
    const wallS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const stats = await stub.stats();
    return {
      wallS,
      cpuMs: (cpu.user + cpu.system) / 1000,
      cpuSysMs: cpu.system / 1000,
      calls: stats.requests,
      connections: stats.connections,
      orchestrations: tasks.length,
      completed: summary.completed,
      correctRate: summary.correctRate,
      consensusRate: summary.consensusRate,
      byKind: stats.byKind,
      stubCpuMs: stats.cpuMs,
    };
  } finally {
    removeTempDir(dir);
  }
}

// ------------------------------------------------------------------------------------------------- MassGen

function massgenConfig(baseUrl) {
  return {
    agents: AGENTS.map((id) => ({ id, backend: { type: 'chatcompletion', model: MODEL, base_url: baseUrl } })),
    ui: { display_type: 'simple', logging_enabled: false },
  };
}

/** Environment for every MassGen process: the stub as the only endpoint, a dummy key (lib/massgen-env.mjs). */
function stubEnv(stub, home, egressLog) {
  return massgenEnv(home, egressLog, { OPENAI_API_KEY: 'sk-bench-dummy', OPENAI_BASE_URL: stub.baseUrl });
}

/** The long-lived Python process running bench/lib/massgen_runner.py; MassGen's own output goes to a log file. */
async function startMassgenRunner(env, cwd, logFile) {
  const python = path.join(VENV, 'bin', 'python');
  if (!fs.existsSync(python)) {
    progress(`no MassGen venv at ${VENV}: creating it once (scripts/setup-massgen-venv.sh)`);
    const setup = spawnSync('sh', [path.join(HERE, '..', 'scripts', 'setup-massgen-venv.sh')], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, MASSGEN_VENV: VENV },
    });
    if (setup.status !== 0) throw new Error(`could not create the MassGen venv at ${VENV} (exit ${setup.status})`);
  }
  const log = fs.openSync(logFile, 'a');
  const child = spawn(python, [path.join(HERE, 'lib', 'massgen_runner.py')], {
    cwd,
    env,
    stdio: ['pipe', 'pipe', log],
  });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`MassGen runner exited (${child.exitCode ?? child.signalCode}); see ${logFile}`);
    const msg = JSON.parse(value);
    if (msg.error) throw new Error(`MassGen runner: ${msg.error}`);
    return msg;
  };
  const ready = await next();
  return {
    ready,
    send: (cmd) => {
      child.stdin.write(`${JSON.stringify(cmd)}\n`);
      return next();
    },
    stop: async () => {
      if (child.exitCode === null) {
        child.stdin.write('{"cmd":"exit"}\n');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      fs.closeSync(log);
    },
  };
}

async function massgenSample(stub, runner, cmd, orchestrations, egressLog) {
  await stub.reset();
  const r = await runner.send(cmd);
  const stats = await stub.stats();
  const egress = fs.existsSync(egressLog) ? fs.readFileSync(egressLog, 'utf8').split('\n').filter(Boolean) : [];
  const failed = r.results.filter((x) => !x.ok);
  return {
    wallS: r.wallS,
    cpuMs: (r.cpuS + r.childCpuS) * 1000,
    cpuSysMs: r.sysS === undefined ? null : r.sysS * 1000,
    calls: stats.requests,
    connections: stats.connections,
    orchestrations,
    completed: r.results.length - failed.length,
    firstError: failed[0]?.error ?? failed[0]?.tail ?? null,
    selected: countBy(r.results.map((x) => x.selected ?? 'none')),
    byKind: stats.byKind,
    streamed: stats.streamed,
    egress,
    stubCpuMs: stats.cpuMs,
    ...(r.results[0]?.wallS !== undefined ? { perTaskWallS: r.results.map((x) => roundTo(x.wallS, 3)) } : {}),
  };
}

function countBy(values) {
  return values.reduce((acc, v) => ({ ...acc, [v]: (acc[v] ?? 0) + 1 }), {});
}

// ------------------------------------------------------------------------------------------------- report

function summarize(samples) {
  const perSample = (s) => ({
    orchPerSec: s.orchestrations / s.wallS,
    cpuMsPerCall: s.cpuMs / s.calls,
    callsPerOrch: s.calls / s.orchestrations,
    cpuMsPerOrch: s.cpuMs / s.orchestrations,
    wallMsPerOrch: (s.wallS * 1000) / s.orchestrations,
  });
  return Object.fromEntries(
    Object.entries(samples).map(([name, list]) => {
      const m = list.map(perSample);
      const med = (k) => median(m.map((x) => x[k]));
      return [
        name,
        {
          orchPerSec: roundTo(med('orchPerSec'), 2),
          wallMsPerOrch: roundTo(med('wallMsPerOrch'), 2),
          callsPerOrch: roundTo(med('callsPerOrch'), 2),
          cpuMsPerCall: roundTo(med('cpuMsPerCall'), 3),
          cpuMsPerOrch: roundTo(med('cpuMsPerOrch'), 2),
          cpuUtilization: roundTo(median(list.map((s) => s.cpuMs / (s.wallS * 1000))), 2),
          orchPerSecRange: describe(m.map((x) => roundTo(x.orchPerSec, 2))),
          samples: list.map((s) => ({
            ...s,
            wallS: roundTo(s.wallS, 3),
            cpuMs: roundTo(s.cpuMs, 1),
            stubCpuMs: roundTo(s.stubCpuMs, 1),
          })),
        },
      ];
    }),
  );
}

function check(name, s) {
  if (s.completed !== s.orchestrations)
    throw new Error(
      `${name}: ${s.orchestrations - s.completed} orchestration(s) did not complete${s.firstError ? `: ${s.firstError}` : ''}`,
    );
  if (s.egress?.length) throw new Error(`${name}: tried to reach ${[...new Set(s.egress)].join(', ')} (refused)`);
  if (!s.byKind.native_vote && !s.byKind.text_vote)
    throw new Error(`${name}: no votes were cast; the stub did not drive a coordination`);
}

async function main() {
  const args = parseBenchArgs();
  const size = args.quick ? SIZES.quick : SIZES.full;
  const loadAtStart = os.loadavg().map((x) => roundTo(x, 2));
  const tasks = makeTasks(size.tasks);
  const prompts = tasks.map((t) => t.prompt);
  const stub = await startStub();
  const work = makeTempDir('vs-massgen');
  const home = path.join(work, 'home');
  fs.mkdirSync(path.join(home, '.massgen'), { recursive: true });
  const mgCwd = path.join(work, 'massgen-cwd');
  fs.mkdirSync(mgCwd);
  const logFile = path.join(os.tmpdir(), 'vs-massgen-massgen.log');
  fs.rmSync(logFile, { force: true });
  const egressLog = path.join(work, 'egress.log');
  const env = stubEnv(stub, home, egressLog);
  const config = massgenConfig(stub.baseUrl);
  let runner;
  try {
    progress(`MassGen venv ${VENV}; starting the runner (imports massgen once)`);
    runner = await startMassgenRunner(env, mgCwd, logFile);
    const { version, python, importS, importCpuS } = runner.ready;
    progress(`massgen ${version} (Python ${python}) imported in ${importS.toFixed(1)} s`);

    const rlVariants = [
      { name: 'massgen-rl/native/c1', toolMode: 'native', concurrency: 1 },
      { name: 'massgen-rl/native/c4', toolMode: 'native', concurrency: 4 },
      { name: 'massgen-rl/text/c4', toolMode: 'text', concurrency: 4 },
    ];
    const mgVariants = [
      { name: 'massgen/api/c1', concurrency: 1 },
      { name: 'massgen/api/c4', concurrency: 4 },
    ];
    // Warm-up, untimed: JIT, imports on first use, connection pools; also checks both systems complete.
    for (const v of rlVariants) check(`${v.name} warm-up`, await rlSample(stub, tasks.slice(0, size.rlWarmupTasks), v));
    for (const v of mgVariants) {
      check(
        `${v.name} warm-up`,
        await massgenSample(
          stub,
          runner,
          { cmd: 'run', tasks: prompts.slice(0, size.massgenWarmupTasks), config, concurrency: v.concurrency },
          size.massgenWarmupTasks,
          egressLog,
        ),
      );
    }
    progress(`warm-up done; ${size.rounds} round(s) of ${tasks.length} tasks per variant`);

    const variants = [
      ...rlVariants.map((v) => ({ name: v.name, run: () => rlSample(stub, tasks, v) })),
      ...mgVariants.map((v) => ({
        name: v.name,
        run: () =>
          massgenSample(
            stub,
            runner,
            { cmd: 'run', tasks: prompts, config, concurrency: v.concurrency },
            tasks.length,
            egressLog,
          ),
      })),
    ];
    const samples = await runInterleaved(variants, size.rounds, (name, round, s) => {
      check(name, s);
      progress(
        `round ${round + 1} ${name.padEnd(22)} ${(s.orchestrations / s.wallS).toFixed(2).padStart(8)} orch/s  ${(s.calls / s.orchestrations).toFixed(2)} calls/orch  ${(s.cpuMs / s.calls).toFixed(3)} CPU ms/call`,
      );
    });

    // The CLI, one process per task (interpreter start-up and imports every time); a few tasks only.
    const cfgFile = path.join(work, 'massgen-config.yaml');
    fs.writeFileSync(cfgFile, `${JSON.stringify(config, null, 2)}\n`); // JSON is YAML
    const cliCmd = {
      cmd: 'cli',
      tasks: prompts.slice(0, size.cliTasks),
      argv: [path.join(VENV, 'bin', 'massgen'), '--automation', '--no-session-registry', '--config', cfgFile],
      env,
    };
    const cli = await massgenSample(stub, runner, cliCmd, size.cliTasks, egressLog);
    check('massgen/cli', cli);
    progress(`massgen/cli: ${(cli.wallS / size.cliTasks).toFixed(1)} s per task`);
    samples['massgen/cli/c1'] = [cli];

    const results = summarize(samples);
    const ratio = (a, b) =>
      roundTo(
        pairedRatio(
          samples[a].map((s) => s.orchestrations / s.wallS),
          samples[b].map((s) => s.orchestrations / s.wallS),
        ),
        1,
      );
    const ratios = {
      'native c1 / MassGen api c1': ratio('massgen-rl/native/c1', 'massgen/api/c1'),
      'native c4 / MassGen api c4': ratio('massgen-rl/native/c4', 'massgen/api/c4'),
      'native c4 / MassGen api c1': ratio('massgen-rl/native/c4', 'massgen/api/c1'),
      'text c4 / MassGen api c4': ratio('massgen-rl/text/c4', 'massgen/api/c4'),
      'native c1 / MassGen cli (per task)': roundTo(
        results['massgen-rl/native/c1'].orchPerSec / results['massgen/cli/c1'].orchPerSec,
        1,
      ),
      'CPU per orchestration, MassGen api c1 / native c1': roundTo(
        results['massgen/api/c1'].cpuMsPerOrch / results['massgen-rl/native/c1'].cpuMsPerOrch,
        1,
      ),
    };
    const rl = results['massgen-rl/native/c1'];
    const rl4 = results['massgen-rl/native/c4'];
    const mg = results['massgen/api/c1'];
    const ratioLine = (label, value) => ({
      label,
      value,
      unit: '×',
      target: `>= ${TARGET_RATIO}`,
      ok: value >= TARGET_RATIO,
    });
    writeResult(args.out, {
      benchmark: 'vs-massgen',
      quick: args.quick,
      // Other work on this 2-core machine skews absolute figures; the variants are interleaved so ratios suffer less.
      loadAverage: { start: loadAtStart, end: os.loadavg().map((x) => roundTo(x, 2)) },
      sizes: { ...size, agents: AGENTS.length, model: MODEL },
      massgen: {
        version,
        python,
        venv: VENV,
        importS: roundTo(importS, 2),
        importCpuS: roundTo(importCpuS, 2),
        mode: 'massgen.run(query, config_dict) in one process; CLI: massgen --automation --no-session-registry --config FILE QUESTION',
        log: logFile,
      },
      results,
      ratios,
      headline: [
        headline('massgen-rl native c1: orchestrations/s', rl.orchPerSec, 'orch/s'),
        headline('massgen-rl native c4: orchestrations/s', rl4.orchPerSec, 'orch/s'),
        headline('MassGen api c1: orchestrations/s', mg.orchPerSec, 'orch/s'),
        headline('MassGen api c4: orchestrations/s', results['massgen/api/c4'].orchPerSec, 'orch/s'),
        ratioLine('throughput ratio native c1 / MassGen c1', ratios['native c1 / MassGen api c1']),
        ratioLine('throughput ratio native c4 / MassGen c4', ratios['native c4 / MassGen api c4']),
        headline('massgen-rl native c1: CPU ms per LLM call', rl.cpuMsPerCall, 'ms', TARGET_CPU_MS_PER_CALL),
        headline('massgen-rl native c4: CPU ms per LLM call', rl4.cpuMsPerCall, 'ms', TARGET_CPU_MS_PER_CALL),
        headline('MassGen api c1: CPU ms per LLM call', mg.cpuMsPerCall, 'ms'),
        headline('massgen-rl native c1: LLM calls per orchestration', rl.callsPerOrch, 'calls'),
        headline('MassGen api c1: LLM calls per orchestration', mg.callsPerOrch, 'calls'),
        headline(
          'MassGen CLI: seconds per task (one process each)',
          roundTo(results['massgen/cli/c1'].wallMsPerOrch / 1000, 2),
          's',
        ),
      ],
    });
  } finally {
    await runner?.stop();
    await stub.stop();
    removeTempDir(work);
  }
}

main().catch((err) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
