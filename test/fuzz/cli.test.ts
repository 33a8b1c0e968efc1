import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES } from '../helpers.js';
import { configArgs, configCaseArb, confine, mutateYaml } from './support/config-cases.js';
import { execute, type CaseSpec } from './support/execute.js';
import { errorText, pool, type CaseOutcome } from './support/harness.js';
import { applyFsOp, layoutLogs, massgenCaseArb } from './support/massgen-cases.js';
import {
  copyMassgenFixtures,
  makeSpecial,
  massgenFilesRead,
  specialCaseArb,
  type SpecialCase,
} from './support/non-regular.js';
import { caseIndexes, generateCase, SETTINGS, type Target } from './support/settings.js';
import { FuzzStats } from './support/stats.js';
import { formatOf, mutateTaskFile, taskCaseArb } from './support/task-cases.js';
import { toBytes } from './support/text-ops.js';
import { caseDir, makeWorld, PROJECT_FILES, TASK_FIXTURES, type World } from './support/world.js';

/**
 * The fuzz suite: the built CLI, run as a user runs it, on mutated configs, task files and MassGen log
 * directories, and on non-regular files where it expects input files. Every case must exit 0, 1 or 2,
 * never print a stack, name a file:line, config field, flag or the input file in an exit-2 message,
 * leave every file (the store included) as it was on exit 2, and exit within FUZZ_CASE_TIMEOUT_MS.
 * Seeded (FUZZ_SEED); FUZZ_CASES sets the number of cases (a few hundred by default, thousands on demand);
 * a failure prints the seed, the case and the mutated input, and FUZZ_ONLY=target:case re-runs it.
 */
let world: World;
let massgenRead: string[];
const stats = new FuzzStats();

beforeAll(async () => {
  world = await makeWorld(SETTINGS.caseTimeoutMs);
  massgenRead = massgenFilesRead(fs.mkdtempSync(path.join(world.root, 'scan-')));
}, 300_000);

afterAll(async () => {
  stats.write();
  await world?.close();
});

async function runTarget(target: Target, make: (index: number) => CaseSpec): Promise<CaseOutcome[]> {
  const outcomes = await pool(caseIndexes(target), SETTINGS.parallel, async (index) => {
    let spec: CaseSpec;
    try {
      spec = make(index);
    } catch (err) {
      // A bug of the suite itself: reported with the case, as a failure, instead of ending the whole target.
      const failure = `could not build the case: ${(err as Error).stack ?? String(err)}`;
      console.log(`FUZZ FAILURE ${target}:${index} (seed ${SETTINGS.seed}): ${failure}`);
      return {
        target,
        index,
        run: { exitCode: null, signal: null, timedOut: false, stdout: '', stderr: '', ms: 0 },
        failures: [failure],
      };
    }
    return execute(world, spec);
  });
  for (const o of outcomes) stats.add(o);
  return outcomes;
}

const failuresOf = (outcomes: CaseOutcome[]) =>
  outcomes.filter((o) => o.failures.length).map((o) => `${o.target}:${o.index}: ${o.failures.join('; ')}`);
const LONG = { timeout: 4 * 3600_000 };

describe('fuzz: the CLI on mutated input', () => {
  it(
    'runs every unmutated base config to a completed collect (so the mutations start from valid input)',
    LONG,
    async () => {
      for (const base of world.configs) {
        const dir = caseDir(world, `base-${base.name}`, { ...PROJECT_FILES, 'massgen-rl.yaml': base.text }, true);
        const o = await execute(world, {
          target: 'base',
          index: 0,
          dir,
          args: ['collect', '--n', '1', '--split', 'all'],
          inputs: [],
          mutation: base.name,
          inputFile: 'massgen-rl.yaml',
        });
        expect(o.failures, base.name).toEqual([]);
        expect(o.run.exitCode, `${base.name}: ${o.run.stderr}`).toBe(0);
      }
    },
  );

  it('configs: mutated keys, values, types, limits, aliases, nesting, encodings', LONG, async () => {
    const outcomes = await runTarget('config', (index) => {
      const c = generateCase('config', index, configCaseArb);
      const base = world.configs[c.base % world.configs.length]!;
      const served =
        c.serve === 'ok' ? base.text : base.text.replaceAll(world.server.baseUrl, world.failing[c.serve].baseUrl);
      const text = confine(mutateYaml(served, c.tree, c.text));
      const dir = caseDir(
        world,
        `config-${index}`,
        { ...PROJECT_FILES, 'massgen-rl.yaml': toBytes(text) },
        c.withStore,
      );
      return {
        target: 'config',
        index,
        dir,
        args: configArgs(c),
        inputs: ['massgen-rl.yaml'],
        mutation: { baseName: base.name, ...c },
        inputFile: 'massgen-rl.yaml',
      };
    });
    expect(failuresOf(outcomes)).toEqual([]);
  });

  it(
    'task files: JSONL, YAML and JSON with the same mutations, duplicate ids, huge numbers, deep metadata',
    LONG,
    async () => {
      const outcomes = await runTarget('tasks', (index) => {
        const c = generateCase('tasks', index, taskCaseArb);
        const baseName = TASK_FIXTURES[c.base % TASK_FIXTURES.length]!;
        const text = mutateTaskFile(
          fs.readFileSync(path.join(FIXTURES, 'tasks', baseName), 'utf8'),
          formatOf(baseName),
          c,
        );
        const name = `mutated${c.ext ?? path.extname(baseName)}`;
        const config = world.configs.find((b) => b.name === 'refusals')!.text;
        const dir = caseDir(
          world,
          `tasks-${index}`,
          { ...PROJECT_FILES, 'massgen-rl.yaml': config, [name]: toBytes(text) },
          c.withStore,
        );
        return {
          target: 'tasks',
          index,
          dir,
          args: ['collect', '--tasks', name, '--n', '1', '--split', 'all'],
          inputs: [name],
          mutation: { baseName, ...c },
          inputFile: name,
        };
      });
      expect(failuresOf(outcomes)).toEqual([]);
    },
  );

  it(
    'MassGen logs: corrupt JSON/YAML, timestamps, labels, deleted files, links in and out, FIFOs, directories for files',
    LONG,
    async () => {
      const outcomes = await runTarget('massgen', (index) => {
        const c = generateCase('massgen', index, massgenCaseArb);
        const dir = caseDir(
          world,
          `massgen-${index}`,
          { 'massgen-rl.yaml': 'project:\n  name: fuzz\n', 'outside/secret.txt': 'a file outside the logs\n' },
          c.withStore,
        );
        const { root, arg } = layoutLogs(dir, c);
        const touched = c.ops.flatMap((op) => applyFsOp(root, op, path.join(dir, 'outside', 'secret.txt')));
        const args = ['traces', 'import', '--massgen-logs', arg, ...(c.skipInvalid ? ['--skip-invalid'] : [])];
        return { target: 'massgen', index, dir, args, inputs: [arg, ...touched], mutation: c };
      });
      expect(failuresOf(outcomes)).toEqual([]);
    },
  );
});

describe('property: a non-regular file in place of any input file is refused, naming it, never a hang', () => {
  /** Where the special file goes, the command that reads it, and the name the message must contain. */
  function place(dir: string, c: SpecialCase): { file: string; args: string[]; name: string } {
    const at = (rel: string) => path.join(dir, rel);
    switch (c.position) {
      case 'config':
        return { file: at('massgen-rl.yaml'), args: ['status'], name: 'massgen-rl.yaml' };
      case 'config-flag':
        return {
          file: at('conf/special.yaml'),
          args: ['--config', 'conf/special.yaml', 'status'],
          name: 'special.yaml',
        };
      case 'task-config':
        return { file: at('a.jsonl'), args: ['collect', '--n', '1'], name: 'a.jsonl' };
      case 'task-flag':
        return {
          file: at('in/tasks.jsonl'),
          args: ['collect', '--tasks', 'in/tasks.jsonl', '--n', '1'],
          name: 'tasks.jsonl',
        };
      case 'prompt':
        return { file: at('solver.md'), args: ['collect', '--n', '1'], name: 'solver.md' };
      case 'massgen': {
        copyMassgenFixtures(at('massgen_logs'));
        const rel = massgenRead[c.pick % massgenRead.length]!;
        return {
          file: at(path.join('massgen_logs', rel)),
          args: ['traces', 'import', '--massgen-logs', 'massgen_logs'],
          name: rel,
        };
      }
    }
  }

  it(
    'FIFO, link to a FIFO, device, directory, link loop or dangling link as config, task, prompt or MassGen file',
    LONG,
    async () => {
      expect(massgenRead.length).toBeGreaterThan(10);
      const outcomes = await runTarget('non-regular', (index) => {
        const c = generateCase('non-regular', index, specialCaseArb);
        const config = world.configs.find((b) => b.name === 'refusals')!.text;
        const dir = caseDir(
          world,
          `non-regular-${index}`,
          { ...PROJECT_FILES, 'massgen-rl.yaml': config, 'conf/.keep': '', 'in/.keep': '' },
          index % 2 === 0,
        );
        const { file, args, name } = place(dir, c);
        makeSpecial(dir, file, c);
        const expectRefusal = (o: CaseOutcome) => [
          ...(o.run.exitCode === 2 ? [] : [`expected exit 2, got ${o.run.exitCode}`]),
          ...(errorText(o.run.stderr).includes(name) ? [] : [`the message does not name ${name}`]),
        ];
        return { target: 'non-regular', index, dir, args, inputs: [name], mutation: c, expect: expectRefusal };
      });
      expect(failuresOf(outcomes)).toEqual([]);
    },
  );
});
