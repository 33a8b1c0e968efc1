// Arm (c) of the label-free benchmark on real MassGen 0.1.97: each night the project's team, exported as a MassGen
// config that sends every agent through `massgen-rl gateway` (resources export-massgen --gateway), answers train tasks
// with the `massgen` CLI, unmodified; `traces import --massgen-logs` joins each run's captured calls to its answers,
// votes and winner; the runs are scored without references (the team's votes: peer_vote, the winner's pairs) and
// the night's `loop --once` trains on them and lets its own label-free gates decide. The references, withheld from
// all of it, then score production against the base as for the other arms.
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { gateway } from '../../dist/pipeline/serve/gateway.js';
import { importMassgenLogs } from '../../dist/pipeline/utilities/import-massgen.js';
import { exportMassgenConfig } from '../../dist/pipeline/utilities/resources.js';
import { recomputeRewards } from '../../dist/pipeline/utilities/rewards.js';
import { labelFreeNights } from './label-free-nights.mjs';
import { MASSGEN_VENV, massgenEnv } from './massgen-env.mjs';

/** What MassGen's runs are scored and trained by without references: the votes, and the winner against the rest. */
export const MASSGEN_ARM = [
  'rewards.references=off',
  'rewards.weights={agreement: 1, peer_vote: 1, coordination: 0.2}',
  'train.dpo.pairs=winner',
  'orchestrator.max_new_answers_per_agent=1',
  // MassGen's ~3,400-token prompts from three agents at once
  'models.local.timeout_ms=600000',
];

/** `tasks` train tasks through MassGen, one CLI run each, in `work`; the runs' log directory and what happened. */
async function drive(rt, tasks, { work, night, note }) {
  const gw = await gateway(rt, { port: 0, flushMs: 100 });
  const cwd = path.join(work, `night-${night}`);
  const home = path.join(cwd, 'home');
  fs.mkdirSync(home, { recursive: true });
  const egressLog = path.join(cwd, 'egress.log');
  const config = path.join(cwd, 'massgen.yaml');
  let completed = 0,
    failed = 0;
  try {
    exportMassgenConfig(rt, config, { set: 'production', gateway: { url: gw.url, session: `night-${night}` } });
    for (const [i, task] of tasks.entries()) {
      const argv = ['--automation', '--no-session-registry', '--config', config, task.prompt];
      const r = await execa(path.join(MASSGEN_VENV, 'bin', 'massgen'), argv, {
        cwd,
        env: massgenEnv(home, egressLog),
        extendEnv: false,
        reject: false,
        timeout: 1_800_000,
        all: true,
      });
      // MassGen exits 0 even when coordination failed: its log is what the import reads and judges
      if (r.exitCode === 0) completed++;
      else failed++;
      if ((i + 1) % 5 === 0 || i + 1 === tasks.length) note(`${i + 1}/${tasks.length} MassGen runs (${failed} failed)`);
    }
    await gw.flush();
  } finally {
    await gw.stop();
  }
  const egress = fs.existsSync(egressLog) ? fs.readFileSync(egressLog, 'utf8').split('\n').filter(Boolean) : [];
  if (egress.length) throw new Error(`MassGen tried to leave the machine: ${egress.slice(0, 3).join('; ')}`);
  return { logs: path.join(cwd, '.massgen', 'massgen_logs'), runs: tasks.length, completed, failed };
}

/**
 * `nights` label-free nights of real MassGen traffic on `perNight` train tasks each (lib/label-free-nights.mjs).
 * `load()` loads the arm's project (MASSGEN_ARM among its overrides); `judge()` loads it with the references on.
 */
export function massgenArm({ load, judge, nights, perNight, transfer, work }) {
  const traffic = async (rt, train, night, note) => {
    // a different slice each night, as new traffic would be
    const start = ((night - 1) * perNight) % Math.max(1, train.length);
    const tasks = [...train.slice(start), ...train.slice(0, start)].slice(0, perNight);
    const runs = await drive(rt, tasks, { work, night, note });
    const summary = importMassgenLogs(rt, { dir: runs.logs, skipInvalid: true });
    const imported = { runs: summary.imported.length, skipped: summary.skipped.length, failed: summary.failed.length };
    const rescored = await recomputeRewards(rt, { source: 'massgen-import' });
    return {
      fields: { traffic: runs, imported },
      summary: `${imported.runs} runs imported (${imported.skipped} incomplete), ${rescored.rollouts} scored`,
    };
  };
  return labelFreeNights(
    { arm: 'massgen', load, judge, nights, transfer, traffic },
    { arm: 'massgen', perNight, nights: [] },
  );
}

/** Whether the MassGen venv is there (scripts/setup-massgen-venv.sh makes it). */
export function massgenInstalled() {
  return fs.existsSync(path.join(MASSGEN_VENV, 'bin', 'massgen'));
}
