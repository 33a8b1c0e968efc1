// Better every night? From a fresh project on the embedded defaults (the bundled model's team, DPO on correctness
// pairs, the quickstart's four suites and sizes) with tasks.curriculum on, NIGHTS_CYCLES (10) cycles of
// `loop --once`, and after each: production against the base on the eval split (success, level 0 alone, each
// suite at its level) and, when production changed, on the hand-written transfer set (bench/transfer). Per cycle:
// what it trained on (headroom mix of production's tasks, examples, DPO's implicit rewards at the end), the
// candidate against production and the gates' verdict, wall and CPU minutes.
// NIGHTS_SET='key=value;key=value' changes the config as --set does (a recipe to try against the defaults);
// NIGHTS_PER_SUITE (60) the tasks per suite; NIGHTS_DIR=path keeps the project there, and a run stopped part-way
// (killed, or the machine restarted) continues from it when started again with the same NIGHTS_DIR: the cycles
// recorded in NIGHTS_DIR/nights.json stand, and an interrupted cycle resumes at its stage as the loop's do;
// NIGHTS_TRANSFER=0 skips the transfer set.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { suiteLevels } from '../dist/pipeline/collect/curriculum.js';
import { cycleHistory } from '../dist/report/cycle-history.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { againstBase, cycle, datasetCounts, onTransfer, TRANSFER_TASKS } from './lib/cycles.mjs';
import { NIGHTS_SUITES, nightsOverrides, setList } from './lib/nights-config.mjs';
import { nightsHeadlines, nightsLines, trainDiagnostics } from './lib/nights-report.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SUITES = NIGHTS_SUITES;
const CYCLES = Number(process.env.NIGHTS_CYCLES ?? (args.quick ? 2 : 10));
const PER_SUITE = Number(process.env.NIGHTS_PER_SUITE ?? (args.quick ? 8 : 60));
const TRANSFER = process.env.NIGHTS_TRANSFER !== '0' && !args.quick;
const CHANGES = setList(process.env.NIGHTS_SET);
const overrides = nightsOverrides({ perSuite: PER_SUITE, quick: args.quick, changes: CHANGES });

const KEEP = process.env.NIGHTS_DIR ? path.resolve(process.env.NIGHTS_DIR) : null;
const kept = KEEP && path.join(KEEP, 'nights.json');
const resumed = kept && fs.existsSync(kept) ? JSON.parse(fs.readFileSync(kept, 'utf8')) : null;
if (resumed && JSON.stringify(resumed.changes) !== JSON.stringify(CHANGES))
  throw new Error(`NIGHTS_DIR ${KEEP} holds a run with NIGHTS_SET '${resumed.changes.join(';')}'`);
if (!resumed && KEEP && fs.existsSync(KEEP) && fs.readdirSync(KEEP).length)
  throw new Error(`NIGHTS_DIR ${KEEP} is not empty and holds no nights.json to continue`);

const results = resumed ?? {
  benchmark: 'nights',
  quick: args.quick,
  cycles: CYCLES,
  perSuite: PER_SUITE,
  suites: SUITES,
  changes: CHANGES,
  transfer: TRANSFER ? path.relative(process.cwd(), TRANSFER_TASKS) : null,
  base: null,
  perCycle: [],
};
const jsonFile = args.out ?? path.join('bench-results', 'nights.json');
function save() {
  results.headline = nightsHeadlines(results);
  writeResult(jsonFile, results);
  if (kept) writeResult(kept, results);
}

const root = KEEP ? (fs.mkdirSync(KEEP, { recursive: true }), KEEP) : makeTempDir('nights');
// Saved before the first cycle too: a run stopped in it continues it instead of refusing a folder it cannot read.
if (!resumed) save();
const load = () => loadConfig({ cwd: root, overrides });
let transfer = null;
results.cycles = CYCLES;

/** After a cycle: production against the base, and on the transfer set when production changed. */
async function measure(entry) {
  if (results.base === null) return;
  const against = await againstBase(load, results.base);
  entry.production = against.production;
  entry.vsBase = against.comparison;
  if (TRANSFER && against.comparison && against.production !== transfer?.production) {
    progress(`  transfer: set v${against.production} against the base on ${results.transfer}`);
    transfer = {
      production: against.production,
      ...(await onTransfer(load, results.base, against.production, '  transfer')),
    };
  }
  entry.transfer = transfer;
  entry.measured = true;
}

try {
  // A run stopped after a cycle but before its measurements were saved measures that cycle first.
  const last = results.perCycle.at(-1);
  transfer = results.perCycle.findLast((c) => c.transfer)?.transfer ?? null;
  if (last?.measured === false) {
    await measure(last);
    save();
  }
  for (let k = results.perCycle.length + 1; k <= CYCLES; k++) {
    progress(`cycle ${k} of ${CYCLES}${CHANGES.length ? ` (${CHANGES.join(', ')})` : ''}`);
    const c = await cycle(load, `  cycle ${k}`, async (rt, _r, run) => {
      const store = rt.store();
      const history = cycleHistory(store, 1)[0];
      return {
        refusedBy: history?.refusedBy ?? [],
        headroom: history?.headroom ?? null,
        measuredAgainst: history?.production ?? null,
        levels: suiteLevels(rt),
        dataset: run ? datasetCounts(run.detail.dataset?.dir) : null,
        training: run ? trainDiagnostics(store.trainingMetrics.list(run.id)) : null,
      };
    });
    progress(`  cycle ${k}: ${c.outcome}`);
    results.base ??= c.measuredAgainst?.version ?? null;
    const entry = { cycle: k, ...c, measured: false };
    // Saved before its measurements: a stop during them loses no cycle, and a restart measures it.
    results.perCycle.push(entry);
    save();
    await measure(entry);
    save();
  }
} finally {
  if (!KEEP) removeTempDir(root);
}
results.finished = true;
save();
for (const line of nightsLines(results)) progress(line);
progress(`results: ${jsonFile}`);
