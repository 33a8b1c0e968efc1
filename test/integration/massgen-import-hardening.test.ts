import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { massgenRolloutId } from '../../src/interop/massgen/import.js';
import { Store } from '../../src/store/index.js';
import { FIXTURES, hasStack, runCli, tempDir } from '../helpers.js';

// Hostile or corrupt MassGen logs: each problem fails its own turn with file:line:col (exit 2, nothing
// imported; --skip-invalid imports the other turns), never exit 70, a hang or content from outside the log.

const L1 = 'log_20251104_191641_482913';
const T1 = path.join(L1, 'turn_1');
const OTHERS = [
  massgenRolloutId(L1, 2, null),
  massgenRolloutId('log_20251106_093015_117204', 1, 1),
  massgenRolloutId('log_20251106_093015_117204', 1, 2),
];
const ANSWER = path.join(T1, 'gemini2.5flash', '20251104_191711_938704', 'answer.txt');

function copyLogs(): string {
  const dir = path.join(tempDir(), 'massgen_logs');
  fs.cpSync(path.join(FIXTURES, 'massgen-logs'), dir, { recursive: true });
  return dir;
}

const project = () => tempDir({ 'massgen-rl.yaml': 'project:\n  name: hardening\n' });

/** --skip-invalid: turn 1 of the first log fails with `file` and the message, the other three units import. */
async function expectTurnRefused(
  dir: string,
  file: string,
  message: RegExp,
  position?: { line: number; column?: number },
) {
  const cwd = project();
  const strict = await runCli(['traces', 'import', '--massgen-logs', dir], { cwd, timeoutMs: 30_000 });
  expect(strict.exitCode, strict.stderr).toBe(2);
  expect(strict.stderr).toMatch(message);
  expect(strict.stderr).toContain('nothing was imported');
  expect(hasStack(strict.stderr)).toBe(false);
  expect(fs.existsSync(path.join(cwd, '.massgen-rl'))).toBe(false);

  const r = await runCli(['--json', 'traces', 'import', '--massgen-logs', dir, '--skip-invalid'], {
    cwd,
    timeoutMs: 30_000,
  });
  expect(r.exitCode, r.stderr).toBe(0);
  const summary = JSON.parse(r.stdout);
  expect(summary.imported.map((u: { rollout_id: string }) => u.rollout_id)).toEqual(OTHERS);
  expect(summary.failed).toEqual([
    expect.objectContaining({ log: L1, turn: 1, attempt: null, file, message: expect.stringMatching(message) }),
  ]);
  if (position) expect(summary.failed[0]).toMatchObject(position);
  return { cwd, summary };
}

describe('MassGen import: YAML anchors and aliases in execution_metadata.yaml', () => {
  const meta = (dir: string) => path.join(dir, T1, 'execution_metadata.yaml');
  const withConfig = (dir: string, yaml: string) =>
    fs.writeFileSync(meta(dir), `query: What is 6 * 7?\n${yaml}massgen_version: 0.1.97\n`);

  it('reads the aliases PyYAML writes for a config that shares one backend between agents', async () => {
    const dir = copyLogs();
    // What massgen 0.1.97 writes for a config whose agents share an anchored backend (PyYAML's yaml.dump).
    withConfig(
      dir,
      [
        'config:',
        '  x-backend: &id001',
        '    type: vllm',
        '    model: shared-model',
        '  agents:',
        '  - id: gpt5nano',
        '    backend: *id001',
        '  - id: gemini2.5flash',
        '    backend: *id001',
        '  - id: grok3mini',
        '    backend: *id001',
        '',
      ].join('\n'),
    );
    const cwd = project();
    const r = await runCli(['--json', 'traces', 'import', '--massgen-logs', dir], { cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    const store = Store.open({ path: path.join(cwd, '.massgen-rl', 'store.sqlite') });
    try {
      expect(store.rollouts.get(massgenRolloutId(L1, 1, null))!.metadata.models).toEqual({
        gpt5nano: 'shared-model',
        'gemini2.5flash': 'shared-model',
        grok3mini: 'shared-model',
      });
    } finally {
      store.close();
    }
  });

  const bomb = [
    'config:',
    '  l0: &a0 [x, x, x, x, x, x, x, x, x, x]',
    ...Array.from({ length: 9 }, (_, i) => `  l${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(', ')}]`),
    '',
  ].join('\n');
  it.each([
    [
      'an alias without an anchor',
      'config:\n  agents:\n  - id: a\n    backend: *nope\n',
      /alias \*nope has no anchor &nope before it/,
      5,
      14,
    ],
    [
      'a recursive alias',
      'config: &cfg\n  agents:\n  - id: a\n    backend: [1, *cfg]\n',
      /alias \*cfg is inside the node it names/,
      5,
      18,
    ],
    ['an alias bomb', bomb, /aliases expand the document past 100000 nodes/, 7],
  ])(
    'refuses %s with file:line:col, as a failure of that turn',
    async (_what, yaml, message, line, column?: number) => {
      const dir = copyLogs();
      withConfig(dir, yaml);
      await expectTurnRefused(dir, path.join(T1, 'execution_metadata.yaml'), message, {
        line,
        ...(column ? { column } : {}),
      });
    },
  );
});

describe('MassGen import: files that are not regular files', () => {
  it.each([
    ['a FIFO as answer.txt', (f: string) => execFileSync('mkfifo', [f]), /a FIFO, not a regular file: refused/],
    [
      'a link to a FIFO',
      (f: string) => {
        const fifo = path.join(path.dirname(f), 'pipe');
        execFileSync('mkfifo', [fifo]);
        fs.symlinkSync('pipe', f);
      },
      /a FIFO, not a regular file: refused/,
    ],
    ['a link to a device', (f: string) => fs.symlinkSync('/dev/zero', f), /outside the imported log directory/],
    ['a directory', (f: string) => fs.mkdirSync(f), /a directory, not a regular file: refused/],
  ])('refuses %s without opening it', async (_what, make, message) => {
    const dir = copyLogs();
    const file = path.join(dir, ANSWER);
    fs.rmSync(file);
    make(file);
    await expectTurnRefused(dir, ANSWER, message);
  });

  it.each([
    [
      'a dangling link',
      (f: string) => fs.symlinkSync('moved-away', f),
      /a link to .*moved-away, which leads nowhere \(ENOENT\): refused/,
    ],
    [
      'a link loop',
      (f: string) => {
        fs.symlinkSync(`${path.basename(f)}.loop`, f);
        fs.symlinkSync(path.basename(f), `${f}.loop`);
      },
      /a link to .*\.loop, which leads nowhere \(ELOOP\): refused/,
    ],
  ])('refuses %s instead of reading the file as absent', async (_what, make, message) => {
    for (const rel of [path.join(T1, 'execution_metadata.yaml'), ANSWER]) {
      const dir = copyLogs();
      fs.rmSync(path.join(dir, rel));
      make(path.join(dir, rel));
      await expectTurnRefused(dir, rel, message);
    }
  });

  it('refuses a FIFO as coordination_events.json', async () => {
    const dir = copyLogs();
    const file = path.join(dir, T1, 'coordination_events.json');
    fs.rmSync(file);
    execFileSync('mkfifo', [file]);
    await expectTurnRefused(dir, path.join(T1, 'coordination_events.json'), /a FIFO, not a regular file/);
  });
});

describe('MassGen import: links inside a log directory', () => {
  it('refuses a link to a file outside the log directory, and stores nothing of it', async () => {
    const dir = copyLogs();
    const outside = path.join(tempDir(), 'secret.txt');
    fs.writeFileSync(outside, 'SECRET-OUTSIDE-CONTENT');
    fs.rmSync(path.join(dir, ANSWER));
    fs.symlinkSync(outside, path.join(dir, ANSWER));
    const { cwd } = await expectTurnRefused(dir, ANSWER, /a link to .*secret\.txt, outside the imported log directory/);
    const dump = await runCli(['traces', 'export'], { cwd });
    expect(dump.exitCode).toBe(0);
    expect(dump.stdout).not.toContain('SECRET-OUTSIDE-CONTENT');
  });

  it("refuses a snapshot directory linked to a directory outside, and also another log's files", async () => {
    const dir = copyLogs();
    const snap = path.dirname(path.join(dir, ANSWER));
    const elsewhere = path.join(tempDir(), 'snap');
    fs.cpSync(snap, elsewhere, { recursive: true });
    fs.rmSync(snap, { recursive: true });
    fs.symlinkSync(elsewhere, snap);
    await expectTurnRefused(dir, ANSWER, /outside the imported log directory/);

    const other = copyLogs();
    const target = path.join(other, 'log_20251106_093015_117204', 'turn_1', 'final', 'agent_a', 'answer.txt');
    fs.rmSync(path.join(other, ANSWER));
    fs.symlinkSync(target, path.join(other, ANSWER));
    await expectTurnRefused(other, ANSWER, /outside the imported log directory/);
  });

  it('follows a link that stays inside the log directory', async () => {
    const dir = copyLogs();
    const file = path.join(dir, ANSWER);
    const content = fs.readFileSync(file, 'utf8');
    fs.renameSync(file, path.join(dir, L1, 'kept-answer.txt'));
    fs.symlinkSync(path.join('..', '..', '..', 'kept-answer.txt'), file);
    const cwd = project();
    const r = await runCli(['--json', 'traces', 'import', '--massgen-logs', dir], { cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    const store = Store.open({ path: path.join(cwd, '.massgen-rl', 'store.sqlite') });
    try {
      const answer = store.spans.list(massgenRolloutId(L1, 1, null)).find((s) => s.name === 'new_answer')!;
      expect((answer.payload as { content: string }).content).toBe(content);
    } finally {
      store.close();
    }
  });
});

describe('MassGen import: timestamps', () => {
  const events = (dir: string) => path.join(dir, T1, 'coordination_events.json');
  it.each([
    [
      'milliseconds given as seconds',
      /"start_time": [\d.]+/,
      '"start_time": 1762283821718.2',
      'session_metadata.start_time',
    ],
    ['a negative event time', /"timestamp": [\d.]+/, '"timestamp": -5', 'events[0].timestamp'],
    ['a time past 2100', /"end_time": [\d.]+/, '"end_time": 1e300', 'session_metadata.end_time'],
    ['a non-finite time', /"end_time": [\d.]+/, '"end_time": 1e999', 'session_metadata.end_time'],
  ])('refuses %s as a failure of that turn', async (_what, pattern, replacement, where) => {
    const dir = copyLogs();
    const text = fs.readFileSync(events(dir), 'utf8');
    const at = text.search(pattern);
    fs.writeFileSync(events(dir), text.replace(pattern, replacement));
    const line = text.slice(0, at).split('\n').length;
    const message = new RegExp(`${where.replace(/[.[\]]/g, '\\$&')}: .*(not a plausible time|expected number)`);
    await expectTurnRefused(dir, path.join(T1, 'coordination_events.json'), message, { line });
  });
});

describe('MassGen import: deeply nested JSON', () => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

  it('refuses a valid but deeply nested coordination_events.json, naming the line', async () => {
    const dir = copyLogs();
    const file = path.join(dir, T1, 'coordination_events.json');
    const log = JSON.parse(fs.readFileSync(file, 'utf8'));
    log.events.find((e: { event_type: string }) => e.event_type === 'final_agent_selected').context.all_answers =
      '__DEEP__';
    const text = JSON.stringify(log, null, 2);
    fs.writeFileSync(file, text.replace('"__DEEP__"', deep(50_000)));
    const line = text.slice(0, text.indexOf('"__DEEP__"')).split('\n').length;
    await expectTurnRefused(
      dir,
      path.join(T1, 'coordination_events.json'),
      /invalid JSON: nested deeper than 256 levels/,
      { line },
    );
  });

  it('refuses truncated deep JSON in vote.json and deep content in context.txt', async () => {
    const dir = copyLogs();
    const vote = path.join(T1, 'gpt5nano', '20251104_191720_845704', 'vote.json');
    const truncated = `{"voter_id": "gpt5nano", "x": ${'['.repeat(100_000)}`;
    fs.writeFileSync(path.join(dir, vote), truncated);
    // The object is level 1, so the 256th bracket opens level 257.
    await expectTurnRefused(dir, vote, /invalid JSON: nested deeper than 256 levels/, {
      line: 1,
      column: truncated.indexOf('[') + 256,
    });

    const other = copyLogs();
    const ctx = path.join(T1, 'grok3mini', '20251104_191716_151604', 'context.txt');
    fs.writeFileSync(path.join(other, ctx), `{"messages": [{"role": "user", "content": ${deep(20_000)}}]}`);
    await expectTurnRefused(other, ctx, /invalid JSON: nested deeper than 256 levels/, { line: 1 });
  });
});

describe('MassGen import: deeply nested YAML', () => {
  it('refuses an execution_metadata.yaml too deep for the YAML parser itself, naming the line', async () => {
    const dir = copyLogs();
    const block = (key: string) =>
      `${key}:\n${Array.from({ length: 3000 }, (_, i) => `${' '.repeat(i + 1)}k:`).join('\n')} 1\n`;
    fs.writeFileSync(
      path.join(dir, T1, 'execution_metadata.yaml'),
      `query: What is 6 * 7?\n${block('a')}${block('b')}`,
    );
    await expectTurnRefused(
      dir,
      path.join(T1, 'execution_metadata.yaml'),
      /invalid YAML: nested more than 256 levels deep/,
      { line: 258, column: 257 },
    );
  });
});
