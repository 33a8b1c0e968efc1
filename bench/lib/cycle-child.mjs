// One `loop --once` of the cycle benchmark (bench/cycle.mjs) in its own process, on the build in --dist:
// a fresh store in --root (its massgen-rl.yaml written by the parent). Writes the cycle's result, each stage's
// record with its profile (builds without profiles: the stage's times only), to --result as JSON.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cpuSeconds } from './efficacy-report.mjs';

const flag = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || !process.argv[i + 1]) throw new Error(`cycle-child: --${name} is required`);
  return process.argv[i + 1];
};
const [dist, root, resultFile] = [flag('dist'), flag('root'), flag('result')];
const load = (m) => import(pathToFileURL(path.join(dist, m)).href);
const [{ loadConfig }, { runCycle }, { withRuntime }, { openStore }] = await Promise.all([
  load('config/load.js'),
  load('pipeline/loop/loop.js'),
  load('runtime/runtime.js'),
  load('runtime/store.js'),
]);

const t0 = performance.now();
const c0 = cpuSeconds();
const r = await withRuntime(loadConfig({ cwd: root }), (rt) =>
  runCycle(rt, { onStage: (stage, m) => process.stderr.write(`    [${stage}] ${m}\n`) }),
);
const result = {
  status: r.status,
  outcome: r.outcome,
  stages: r.stages,
  suites: suiteResults(r.stages.eval?.eval_run_id),
  wallSeconds: (performance.now() - t0) / 1000,
  // this process and every descendant still running or reaped (servers stopped by then are reaped)
  cpuSeconds: cpuSeconds() - c0,
};
fs.writeFileSync(resultFile, JSON.stringify(result));

/** The evaluation's success per suite (category): baseline, candidate and the difference with its 95 % CI. */
function suiteResults(evalRunId) {
  if (!evalRunId) return null;
  const store = openStore(loadConfig({ cwd: root }));
  try {
    const comparison = store.evaluations.run(evalRunId)?.summary?.comparison;
    return (comparison?.categories ?? []).map(({ category, pairs, metrics }) => {
      const m = metrics.find((x) => x.metric === 'success');
      return { category, pairs, baseline: m?.baseline ?? null, candidate: m?.candidate ?? null, diff: m?.diff ?? null };
    });
  } finally {
    store.close();
  }
}
