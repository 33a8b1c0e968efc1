import fs from 'node:fs';
import path from 'node:path';
import { changedEntries, errorText, judge, runBounded, snapshot, type CaseOutcome } from './harness.js';
import { SETTINGS } from './settings.js';
import { OUTPUT_DIR } from './stats.js';
import { RawText } from './values.js';
import type { World } from './world.js';

export interface CaseSpec {
  target: string;
  index: number;
  dir: string;
  args: string[];
  /** Names a located exit-2 message may use for the input as a whole (its file, as the CLI shows it). */
  inputs: string[];
  /** What was generated, for the failure report. */
  mutation: unknown;
  /** The mutated input file, relative to dir, shown in the failure report. */
  inputFile?: string;
  /** Extra expectations of this target (e.g. the non-regular files' exit 2 naming the file). */
  expect?: (outcome: CaseOutcome) => string[];
}

/** Runs one case, judges it, and keeps its directory under test-output/fuzz-failures when it failed. */
export async function execute(world: World, spec: CaseSpec): Promise<CaseOutcome> {
  const before = snapshot(spec.dir);
  const run = await runBounded(spec.args, spec.dir, { timeoutMs: SETTINGS.caseTimeoutMs, cacheDir: world.cacheDir });
  const after = snapshot(spec.dir);
  const outcome: CaseOutcome = {
    target: spec.target,
    index: spec.index,
    run,
    failures: judge(run, {
      inputs: [...spec.inputs, ...spec.args.filter((a) => /^--[a-z][\w-]*$/.test(a))],
      before,
      after,
    }),
  };
  outcome.failures.push(...(spec.expect?.(outcome) ?? []));
  if (fs.readdirSync(world.cacheDir).length)
    outcome.failures.push(`wrote into the cache directory: ${fs.readdirSync(world.cacheDir).join(', ')}`);
  if (process.env.FUZZ_VERBOSE)
    console.log(
      `${spec.target}:${spec.index} exit ${run.exitCode} ${Math.round(run.ms)} ms ${errorText(run.stderr).split('\n').slice(0, 3).join(' | ').slice(0, 300)}`,
    );
  if (outcome.failures.length) {
    const kept = path.join(OUTPUT_DIR, 'fuzz-failures', `${spec.target}-${spec.index}`);
    fs.rmSync(kept, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(kept), { recursive: true });
    // FIFOs and other special files cannot be copied; the report says what they were.
    fs.cpSync(spec.dir, kept, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => {
        const st = fs.lstatSync(src);
        return st.isFile() || st.isDirectory() || st.isSymbolicLink();
      },
    });
    fs.rmSync(spec.dir, { recursive: true, force: true });
    console.log(report(spec, outcome, kept, changedEntries(before, after)));
  } else fs.rmSync(spec.dir, { recursive: true, force: true });
  return outcome;
}

const shorten = (_: string, v: unknown) =>
  v instanceof RawText
    ? `<raw ${v.text}>`
    : typeof v === 'number' && !Number.isFinite(v)
      ? String(v)
      : typeof v === 'string' && v.length > 120
        ? `${v.slice(0, 120)}… (${v.length} chars)`
        : v;

function report(spec: CaseSpec, outcome: CaseOutcome, kept: string, changed: string[]): string {
  const { run } = outcome;
  let input = '';
  if (spec.inputFile) {
    try {
      const text = fs.readFileSync(path.join(kept, spec.inputFile), 'utf8');
      input = `\n  input ${spec.inputFile} (${text.length} chars):\n${text.slice(0, 3000)}${text.length > 3000 ? '\n  …' : ''}`;
    } catch (err) {
      input = `\n  input ${spec.inputFile}: ${(err as Error).message}`;
    }
  }
  return [
    `FUZZ FAILURE ${spec.target}:${spec.index} (seed ${SETTINGS.seed}): ${outcome.failures.join('; ')}`,
    `  reproduce: FUZZ_SEED=${SETTINGS.seed} FUZZ_ONLY=${spec.target}:${spec.index} npx vitest run test/fuzz/cli.test.ts`,
    `  command: massgen-rl ${spec.args.join(' ')}   (exit ${run.exitCode}${run.signal ? `, ${run.signal}` : ''}${run.timedOut ? ', timed out' : ''}, ${Math.round(run.ms)} ms)`,
    `  mutation: ${JSON.stringify(spec.mutation, shorten)}`,
    `  case directory kept at ${kept}${changed.length ? `; changed: ${changed.slice(0, 5).join('; ')}` : ''}${input}`,
    `  stderr: ${run.stderr.slice(-2000)}`,
  ].join('\n');
}
