import { describe, expect, it } from 'vitest';
import { judge, locates, type CliRun } from './support/harness.js';

/** The fuzz suite's checks catch what they are for (a check that passes everything would hide every finding). */
const run = (over: Partial<CliRun>): CliRun => ({
  exitCode: 0,
  signal: null,
  timedOut: false,
  stdout: '',
  stderr: '',
  ms: 10,
  ...over,
});
const same = new Map([
  ['', 'dir'],
  ['.massgen-rl/store.sqlite', 'abc'],
]);

describe('fuzz harness checks', () => {
  it('an exit-2 message is located by a file:line, a config field, a flag of the command or the input file, not by a URL or prose', () => {
    expect(locates('error: invalid configuration (1 problem):\n  massgen-rl.yaml:3:7: invalid YAML', [])).toBe(true);
    expect(locates('error: log_1/turn_1/vote.json:8:21: invalid JSON', [])).toBe(true);
    expect(locates('error: models.stub.api_key_env: environment variable X is not set', [])).toBe(true);
    expect(
      locates('error: no train-split tasks to run\n  hint: check tasks.sources and tasks.split.eval_fraction', []),
    ).toBe(true);
    expect(locates('error: --tasks x: not a built-in suite', ['--tasks'])).toBe(true);
    expect(locates('error: --tasks-file x', ['--tasks'])).toBe(false);
    expect(
      locates('error: config file /tmp/a/special.yaml: a FIFO (named pipe), not a regular file', ['special.yaml']),
    ).toBe(true);
    expect(locates('error: https://api.example.com:443 answered 500', [])).toBe(false);
    expect(
      locates('error: the trainer virtualenv is missing (/root/.cache/venv)\n  hint: run `massgen-rl doctor --fix`', [
        'massgen-rl.yaml',
        '--n',
      ]),
    ).toBe(false);
  });

  it('flags exit codes other than 0/1/2, signals, hangs, stacks, unlocated exit-2 messages and files changed on exit 2', () => {
    const ctx = { inputs: ['massgen-rl.yaml'], before: same, after: same };
    expect(judge(run({}), ctx)).toEqual([]);
    expect(judge(run({ exitCode: 1 }), ctx)).toEqual([]);
    expect(judge(run({ exitCode: 70, stderr: 'internal error: TypeError: x\n    at f (/src/a.ts:1:2)' }), ctx)).toEqual(
      ['exit code 70', 'stack trace in the output'],
    );
    expect(judge(run({ exitCode: null, signal: 'SIGKILL', timedOut: true, ms: 30_000 }), ctx)).toEqual([
      'hang: still running after 30 s (killed)',
    ]);
    expect(judge(run({ exitCode: null, signal: 'SIGSEGV' }), ctx)).toEqual(['killed by SIGSEGV']);
    expect(judge(run({ exitCode: 2, stderr: 'error: something went wrong' }), ctx)).toEqual([
      'exit-2 message names no file:line, config field, flag or input file',
    ]);
    expect(judge(run({ exitCode: 2 }), ctx)).toEqual(['exit 2 without an error message']);
    const changed = new Map([...same, ['.massgen-rl/store.sqlite', 'def']]);
    expect(judge(run({ exitCode: 2, stderr: 'error: massgen-rl.yaml:1:1: bad' }), { ...ctx, after: changed })).toEqual([
      'exit 2 changed files: .massgen-rl/store.sqlite: abc → def',
    ]);
  });
});
