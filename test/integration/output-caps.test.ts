import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { customReward, CustomRewardError } from '../../src/rewards/custom.js';
import { createToolRunner } from '../../src/tools/runner.js';
import { runTrainer } from '../../src/trainers/runner.js';
import { ctxFor, mathOutcome, rewardsConfig } from '../fixtures/rewards/outcomes.js';
import { tempDir } from '../helpers.js';

const MiB = 1024 * 1024;
/** A node child that writes `mib` MiB of `char` to a stream in 1 MiB writes, then runs `then`. */
const flood = (stream: 'stdout' | 'stderr', mib: number, char: string, then = '') =>
  `const b = Buffer.alloc(${MiB}, ${JSON.stringify(char)}); let i = 0;
const next = () => { while (i < ${mib}) { i++; if (!process.${stream}.write(b)) return process.${stream}.once('drain', next); } ${then} };
next();`;

describe('subprocess output is capped in memory', () => {
  it(
    'a trainer printing 600 MiB without a newline: the run ends, the log gets the line cut',
    { timeout: 60_000 },
    async () => {
      const dir = tempDir();
      const logFile = path.join(dir, 'train.log');
      const o = await runTrainer({
        command: process.execPath,
        args: ['-e', flood('stderr', 600, 'z', 'process.exitCode = 3;')],
        logFile,
      });
      expect(o).toMatchObject({ status: 'failed', exitCode: 3 });
      expect(o.error).toMatch(/^z{2000} …$/);
      expect(o.error!.length).toBeLessThan(10_000);
      expect(fs.statSync(logFile).size).toBeLessThan(2 * MiB);
      expect(fs.readFileSync(logFile, 'utf8')).toMatch(/z{1000} …\[\d+ more characters cut\]/);
    },
  );

  it('a custom reward command printing 300 MiB is stopped with a clear error', { timeout: 60_000 }, async () => {
    const ctx = (script: string) =>
      ctxFor(
        mathOutcome(),
        rewardsConfig({ custom: { command: [process.execPath, '-e', script], timeout_ms: 30_000 } }),
      );
    for (const script of [flood('stdout', 300, '7'), flood('stderr', 300, '\n', 'console.log(1);')]) {
      const err = await Promise.resolve(customReward.score(ctx(script))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CustomRewardError);
      expect((err as Error).message).toMatch(/was stopped: it printed more than 1 MiB on stdout or 4 MiB on stderr/);
    }
  });

  it('a command tool printing 300 MiB is stopped; the model sees the start and why', { timeout: 60_000 }, async () => {
    const tools = configSchema.parse({
      tools: { flood: { type: 'command', command: [process.execPath, '-e', flood('stdout', 300, 'q')] } },
    }).tools;
    const r = await createToolRunner(tools, tempDir()).run('flood', {}, new AbortController().signal);
    expect(r).toMatchObject({ success: false, error: 'output too large' });
    expect(r.result).toMatch(/^q{8000}\n\[stopped: the command printed more than 1048576 characters\]$/);
  });
});
