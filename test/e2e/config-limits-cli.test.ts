import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, hasStack, runCli, tempDir } from '../helpers.js';

// The limits themselves are checked in test/unit/config-limits.test.ts; here the built CLI meets them.
describe('a path in the config the file system cannot take', () => {
  it('the CLI refuses it (exit 2, naming the field) and creates nothing', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'project:\n  name: x\n  data_dir: "a\\udc00b"\n' });
    const r = await runCli(['traces', 'import', '--massgen-logs', path.join(FIXTURES, 'massgen-logs')], { cwd: dir });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/project\.data_dir: must not contain a lone surrogate/);
    expect(hasStack(r.stderr)).toBe(false);
    expect(fs.readdirSync(dir)).toEqual(['massgen-rl.yaml']);
  });
});

describe('numeric CLI flags have a ceiling', () => {
  it.each([
    [['collect', '--n', '1e12']],
    [['collect', '--concurrency', '100000']],
    [['train', '--max-steps', '1e15']],
    [['traces', 'list', '--limit', '1e30']],
    [['checkpoints', 'list', '--limit', '1e30']],
    [['checkpoints', 'prune', '--keep-last', '1e30']],
  ])('%j exits 2 naming the flag and the limit', { timeout: 30_000 }, async (args) => {
    const dir = tempDir({
      'massgen-rl.yaml':
        'models:\n  m: { base_url: "http://127.0.0.1:9/v1", model: x, max_retries: 0 }\nagents: [{ id: a, model: m }]\n',
    });
    const r = await runCli(args, { cwd: dir, timeoutMs: 20_000 });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`${args.at(-2)} ${args.at(-1)}: at most \\d+`));
    expect(hasStack(r.stderr)).toBe(false);
  });
});
