import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MiB } from '../../src/config/input-file.js';
import { hasStack, ROOT, runCli, tempDir } from '../helpers.js';

/**
 * A FIFO, a symlink to a FIFO, a symlink to /dev/zero and a directory, each named like an input file.
 * Reading the first two blocks forever and the third never ends, so every case runs in a child process
 * with a kill timeout: a hang shows up as a failed exit code, not a stuck test run.
 */
async function specials(ext: string): Promise<{ dir: string; cases: [string, RegExp][] }> {
  const dir = tempDir();
  await execa('mkfifo', [path.join(dir, `fifo${ext}`)]);
  fs.symlinkSync(path.join(dir, `fifo${ext}`), path.join(dir, `to-fifo${ext}`));
  fs.symlinkSync('/dev/zero', path.join(dir, `zero${ext}`));
  fs.mkdirSync(path.join(dir, `dir${ext}`));
  const fifo = /a FIFO \(named pipe\), not a regular file/;
  return {
    dir,
    cases: [
      [`fifo${ext}`, fifo],
      [`to-fifo${ext}`, fifo],
      [`zero${ext}`, /a character device, not a regular file/],
      [`dir${ext}`, /directory/],
    ],
  };
}

const KILL_AFTER_MS = 8_000;

describe('non-regular input files: exit 2 naming the file, never a hang', () => {
  it('as the config file (--config)', { timeout: 60_000 }, async () => {
    const { dir, cases } = await specials('.yaml');
    for (const [name, kind] of cases) {
      const r = await runCli(['--config', name, 'status'], { cwd: dir, timeoutMs: KILL_AFTER_MS });
      expect(r.exitCode, name).toBe(2);
      expect(r.stderr).toContain(name);
      expect(r.stderr).toMatch(kind);
      expect(hasStack(r.stderr)).toBe(false);
    }
    expect(fs.existsSync(path.join(dir, '.massgen-rl'))).toBe(false);
  });

  it('as the task file (collect --tasks)', { timeout: 60_000 }, async () => {
    const { dir, cases } = await specials('.jsonl');
    for (const [name, kind] of cases) {
      const r = await runCli(['collect', '--tasks', name], { cwd: dir, timeoutMs: KILL_AFTER_MS });
      expect(r.exitCode, name).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`${name.replace('.', '\\.')}: cannot read task file \\(`));
      expect(r.stderr).toMatch(kind);
      expect(hasStack(r.stderr)).toBe(false);
    }
    expect(fs.existsSync(path.join(dir, '.massgen-rl'))).toBe(false);
  });

  it('as the store (store.path): refused before SQLite opens it, nothing created', { timeout: 60_000 }, async () => {
    const { dir, cases } = await specials('.sqlite');
    fs.symlinkSync('moved-away.sqlite', path.join(dir, 'dangling.sqlite'));
    const all: [string, RegExp][] = [
      ...cases,
      ['/dev/null', /a character device, not a regular file/],
      ['dangling.sqlite', /a link to moved-away\.sqlite, which leads nowhere/],
    ];
    const journalBefore = fs.existsSync('/dev/null-journal');
    for (const [name, kind] of all) {
      fs.writeFileSync(path.join(dir, 'massgen-rl.yaml'), `project:\n  name: x\nstore:\n  path: ${name}\n`);
      // status reads an existing store only: a link to nowhere is no store yet, for it.
      const imports = ['traces', 'import', '--massgen-logs', path.join(ROOT, 'test', 'fixtures', 'massgen-logs')];
      for (const args of name === 'dangling.sqlite' ? [imports] : [['status'], imports]) {
        const r = await runCli(args, { cwd: dir, timeoutMs: KILL_AFTER_MS });
        expect(r.exitCode, `${name}: ${args[0]}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toMatch(new RegExp(`store path \\S*${name.replace('.', '\\.')} is `));
        expect(r.stderr).toMatch(kind);
        expect(r.stderr).toContain('store.path');
        expect(hasStack(r.stderr)).toBe(false);
      }
    }
    expect(fs.readdirSync(dir).sort()).toEqual([
      'dangling.sqlite',
      'dir.sqlite',
      'fifo.sqlite',
      'massgen-rl.yaml',
      'to-fifo.sqlite',
      'zero.sqlite',
    ]);
    expect(fs.existsSync('/dev/null-journal')).toBe(journalBefore);
  });

  it('as a prompt file (read when the team is set up)', { timeout: 60_000 }, async () => {
    const { dir, cases } = await specials('.md');
    const prompts = pathToFileURL(path.join(ROOT, 'dist', 'resources', 'prompts.js')).href;
    // The prompt is read before the store is touched, so no store is needed to show the read.
    const script = `import { checkPromptFiles } from ${JSON.stringify(prompts)};
try { checkPromptFiles({ solver: { file: process.argv[1] } }, process.cwd()); }
catch (err) { console.error(err.message); process.exit(err.exitCode ?? 70); }`;
    for (const [name, kind] of cases) {
      const r = await execa(process.execPath, ['--input-type=module', '-e', script, name], {
        cwd: dir,
        reject: false,
        timeout: KILL_AFTER_MS,
        stdin: 'ignore',
      });
      expect(r.exitCode, name).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`prompt file .*${name.replace('.', '\\.')}: `));
      expect(r.stderr).toMatch(kind);
    }
  });
});

describe('a task prompt over tasks.max_prompt_chars: exit 2 naming the file and line', () => {
  it('a 50 MB prompt on one line (JSONL, YAML) is refused at once, in bounded memory, before it runs', async () => {
    const line = JSON.stringify({ id: 'big', prompt: `What is 6 x 7? ${'x'.repeat(50 * MiB)}`, reference: '42' });
    const dir = tempDir({
      'big.jsonl': `{"id": "small", "prompt": "hi"}\n${line}\n`,
      'big.yaml': `- { id: small, prompt: hi }\n- ${line}\n`,
    });
    for (const name of ['big.jsonl', 'big.yaml']) {
      const started = Date.now();
      // Parsing the YAML whole took 1.9 GB: 256 MB of heap would crash it.
      const env = { NODE_OPTIONS: '--max-old-space-size=256' };
      const r = await runCli(['collect', '--tasks', name], { cwd: dir, env });
      expect(r.exitCode, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`${name.replace('.', '\\.')}:2: .*tasks\\.max_prompt_chars \\(100000\\)`));
      expect(hasStack(r.stderr)).toBe(false);
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    expect(fs.existsSync(path.join(dir, '.massgen-rl'))).toBe(false);
  });

  it('tasks.max_prompt_chars sets the limit (--set too)', async () => {
    const dir = tempDir({ 't.jsonl': `${JSON.stringify({ id: 'a', prompt: 'What is 6 x 7?' })}\n` });
    const r = await runCli(['--set', 'tasks.max_prompt_chars=10', 'collect', '--tasks', 't.jsonl'], { cwd: dir });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toContain('t.jsonl:1: "prompt" is 14 characters, over tasks.max_prompt_chars (10)');
    expect(fs.existsSync(path.join(dir, '.massgen-rl'))).toBe(false);
  });
});
