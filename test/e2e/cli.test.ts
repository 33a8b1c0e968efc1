import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { hasStack, runCli, sha, tempDir } from '../helpers.js';

describe('massgen-rl CLI', () => {
  it('prints help with every command and exits 0', async () => {
    const r = await runCli(['--help'], { cwd: tempDir() });
    expect(r.exitCode).toBe(0);
    for (const cmd of [
      'init',
      'doctor',
      'collect',
      'train',
      'eval',
      'report',
      'deploy',
      'review',
      'loop',
      'status',
      'traces',
      'serve',
    ])
      expect(r.stdout).toContain(cmd);
  });

  it('lists the kinds of training under train, each with only its own options', async () => {
    const dir = tempDir();
    const train = await runCli(['train', '--help'], { cwd: dir });
    expect(train.exitCode).toBe(0);
    expect(train.stdout).toMatch(/^\s+weights \[options\]/m);
    expect(train.stdout).toMatch(/^\s+policy <kind>/m);
    expect(train.stdout).toMatch(/^\s+prompts \[options\]/m);
    expect(train.stdout).not.toContain('--algo');
    const weights = (await runCli(['train', 'weights', '--help'], { cwd: dir })).stdout;
    const prompts = (await runCli(['train', 'prompts', '--help'], { cwd: dir })).stdout;
    expect(weights).toContain('--max-steps');
    expect(weights).not.toContain('--policy');
    expect(prompts).toContain('--resume');
    expect(prompts).not.toMatch(/--algo|--all|--from|--max-steps|--machine-rank/);
  });

  it('exits 2 on unknown commands and options', async () => {
    const dir = tempDir();
    expect((await runCli(['frobnicate'], { cwd: dir })).exitCode).toBe(2);
    expect((await runCli(['status', '--frob'], { cwd: dir })).exitCode).toBe(2);
  });

  it('numeric flags are decimal numbers: hex, octal and binary spellings are refused, naming the flag', async () => {
    const dir = tempDir();
    const cases: [string[], RegExp][] = [
      [['feedback', 'ro_x', '--score', '0x10'], /--score 0x10: expected a decimal number/],
      [['feedback', 'ro_x', '--score', '0b1'], /--score 0b1: expected a decimal number/],
      [['feedback', 'ro_x', '--score', '-0o7'], /--score -0o7: expected a decimal number/],
      [['traces', 'list', '--limit', '0x10'], /--limit 0x10: expected a positive whole number/],
      [['traces', 'list', '--min-reward', '0x1'], /--min-reward 0x1: expected a decimal number/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, { cwd: dir });
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(hasStack(r.stderr)).toBe(false);
    }
    expect(fs.existsSync(path.join(dir, '.massgen-rl'))).toBe(false);
  });

  it('deploy, rollback, review and resources need a store, and say so without creating one', async () => {
    const dir = tempDir();
    for (const args of [
      ['deploy', '--candidate', 'x'],
      ['rollback'],
      ['review'],
      ['resources', 'show'],
      ['deploy', '--promote-canary'],
    ]) {
      const r = await runCli(args, { cwd: dir });
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/no store at .*store\.sqlite yet/);
      expect(hasStack(r.stderr)).toBe(false);
      expect(r.stdout).toBe('');
    }
    expect(fs.existsSync(path.join(dir, '.massgen-rl'))).toBe(false);
  });

  it('init --yes writes a valid config and never overwrites without --force', async () => {
    const dir = tempDir();
    const first = await runCli(['init', '--yes'], { cwd: dir });
    expect(first.exitCode).toBe(0);
    const file = path.join(dir, 'massgen-rl.yaml');
    const written = fs.readFileSync(file, 'utf8');
    expect(written).toContain('# massgen-rl configuration');
    fs.appendFileSync(file, '# my edit\n');
    const second = await runCli(['init', '--yes'], { cwd: dir });
    expect(second.exitCode).toBe(2);
    expect(second.stderr).toMatch(/already exists; nothing was written/);
    expect(fs.readFileSync(file, 'utf8')).toContain('# my edit');
    expect((await runCli(['init', '--yes', '--force', '--team-size', '5'], { cwd: dir })).exitCode).toBe(0);
    const status = await runCli(['--json', 'status'], { cwd: dir });
    expect(status.exitCode).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ project: 'my-agent-team', store: null });
  });

  it('init without a terminal and without --yes names the flags it needs', async () => {
    const r = await runCli(['init', '--team-size', '2'], { cwd: tempDir() });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/no terminal to ask: pass --name, --endpoint, --suite, --algo/);
  });

  it('init takes every answer from flags', async () => {
    const dir = tempDir();
    const r = await runCli(
      [
        '--json',
        'init',
        '--name',
        'team',
        '--team-size',
        '2',
        '--endpoint',
        'http://localhost:8000/v1',
        '--model',
        'qwen',
        '--api-key-env',
        'VLLM_KEY',
        '--suite',
        'unit_conversion',
        '--algo',
        'sft',
      ],
      { cwd: dir },
    );
    expect(r.exitCode).toBe(0);
    const text = fs.readFileSync(path.join(dir, 'massgen-rl.yaml'), 'utf8');
    expect(text).toContain('base_url: http://localhost:8000/v1');
    expect(text).toContain('api_key_env: VLLM_KEY');
    expect((await runCli(['init', '--yes', '--force', '--algo', 'magic'], { cwd: dir })).stderr).toMatch(
      /--algo magic: expected one of grpo, sft, dpo, ppo/,
    );
  });

  it.each([
    ['malformed YAML', 'agents: [\n', /massgen-rl\.yaml:\d+:\d+: invalid YAML/],
    ['an unknown key', 'store:\n  pth: x.db\n', /store\.pth: unknown key \(massgen-rl\.yaml:2:3\)/],
    [
      'a wrong type',
      'collect:\n  concurrency: two\n',
      /collect\.concurrency: .*expected number.*\(massgen-rl\.yaml:2:16\)/,
    ],
    [
      'a missing referenced file',
      'prompts:\n  solver:\n    file: nowhere.md\n',
      /prompts\.solver\.file: file not found: .*nowhere\.md \(massgen-rl\.yaml:3:11\)/,
    ],
  ])('rejects %s with exit 2, the location and no stack trace', async (_name, yaml, message) => {
    const dir = tempDir({ 'massgen-rl.yaml': yaml });
    const r = await runCli(['status'], { cwd: dir });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(hasStack(r.stderr)).toBe(false);
    expect(fs.existsSync(path.join(dir, '.massgen-rl'))).toBe(false);
  });

  it('rejects a store file that is not SQLite, or is from a newer version, without changing it', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': 'store:\n  path: data/store.sqlite\n',
      'data/store.sqlite': 'not a database at all, but a very important text file\n',
    });
    const file = path.join(dir, 'data', 'store.sqlite');
    const before = sha(file);
    for (const args of [['status'], ['traces', 'list'], ['doctor']]) {
      const r = await runCli(args, { cwd: dir });
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/is not a SQLite database; it was not changed/);
      expect(hasStack(r.stderr)).toBe(false);
    }
    expect(sha(file)).toBe(before);

    fs.rmSync(file);
    const db = new Database(file);
    db.pragma('user_version = 42');
    db.close();
    const newer = sha(file);
    const r = await runCli(['status'], { cwd: dir });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/schema version 42, newer than this massgen-rl supports/);
    expect(sha(file)).toBe(newer);
  });

  it('rejects a data dir that cannot be written', async () => {
    const dir = tempDir({
      blocker: 'a file where a directory should be',
      'massgen-rl.yaml': 'project:\n  data_dir: blocker/data\n',
    });
    const r = await runCli(['doctor'], { cwd: dir });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/data directory .*blocker\/data is not writable/);
    expect(fs.readFileSync(path.join(dir, 'blocker'), 'utf8')).toBe('a file where a directory should be');
  });

  it('lists, shows and exports traces', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': '' });
    const store = Store.open({ path: path.join(dir, '.massgen-rl', 'store.sqlite') });
    const id = store.rollouts.start({ taskId: null });
    store.spans.append(id, [
      { type: 'coordination', name: 'round', payload: { round: 1 } },
      { type: 'prompt', name: 'chat', agent: 'agent_a', parentSeq: 1, payload: { response: 'ANSWER: 4' } },
      {
        type: 'coordination',
        name: 'vote',
        agent: 'agent_b',
        parentSeq: 1,
        payload: { target: 'agent1', reason: 'correct' },
      },
    ]);
    store.rewards.add(id, [{ channel: 'team', family: 'exact', value: 1, agent: 'agent_a' }]);
    store.rollouts.finish(id, { status: 'completed', totalReward: 1, finalAnswer: '4', tokens: 12 });
    store.close();

    const list = await runCli(['--json', 'traces', 'list', '--min-reward', '0.5'], { cwd: dir });
    expect(list.exitCode).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject({ total: 1, rollouts: [{ id, status: 'completed' }] });
    const show = await runCli(['traces', 'show', id.slice(0, 12)], { cwd: dir });
    expect(show.exitCode).toBe(0);
    expect(show.stdout).toMatch(
      /└─ #1 coordination round[\s\S]*├─ #2 prompt chat \[agent_a\][\s\S]*└─ #3 coordination vote \[agent_b\]/,
    );
    expect(show.stdout).toContain('exact/team [agent_a]: 1.000');
    const out = path.join(dir, 'out.jsonl');
    const exp = await runCli(['traces', 'export', '--out', out], { cwd: dir });
    expect(exp.exitCode).toBe(0);
    expect(JSON.parse(fs.readFileSync(out, 'utf8'))).toMatchObject({ id, spans: [{ seq: 1 }, { seq: 2 }, { seq: 3 }] });
    const stdout = await runCli(['traces', 'export', '--status', 'failed'], { cwd: dir });
    expect(stdout).toMatchObject({ exitCode: 0, stdout: '' });
    expect((await runCli(['traces', 'show', 'nope'], { cwd: dir })).stderr).toMatch(/no rollout "nope"/);
    expect((await runCli(['traces', 'list', '--min-reward', 'high'], { cwd: dir })).exitCode).toBe(2);
  });

  it('doctor --fix with a missing Python exits 2 naming train.python', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'train:\n  python: /nonexistent/python3\n  venv: ./venv\n' });
    const r = await runCli(['doctor', '--fix'], { cwd: dir });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/train\.python "\/nonexistent\/python3" not found \(.*massgen-rl\.yaml\)/);
    expect(hasStack(r.stderr)).toBe(false);
    expect(fs.existsSync(path.join(dir, 'venv'))).toBe(false);
  });

  it('doctor reports a broken virtualenv with its fix, and refuses to touch a directory that is not one', async () => {
    const dir = tempDir({
      'massgen-rl.yaml': 'train:\n  venv: ./venv\n',
      'venv/pyvenv.cfg': 'home = /nowhere\n',
      'venv/bin/python': '#!/bin/sh\necho "broken interpreter" >&2\nexit 1\n',
      'other/notes.txt': 'keep me',
    });
    fs.chmodSync(path.join(dir, 'venv/bin/python'), 0o755);
    const r = await runCli(['--json', 'doctor'], { cwd: dir, timeoutMs: 120_000 });
    expect(r.exitCode).toBe(1);
    const venv = (
      JSON.parse(r.stdout) as { checks: { id: string; status: string; detail: string; fix?: string }[] }
    ).checks.find((c) => c.id === 'venv')!;
    expect(venv).toMatchObject({ status: 'fail', fix: 'massgen-rl doctor --fix' });
    expect(venv.detail).toMatch(/^broken: its interpreter does not run \(broken interpreter\)/);

    const foreign = await runCli(['doctor', '--fix', '--set', 'train.venv=./other'], { cwd: dir, timeoutMs: 120_000 });
    expect(foreign.exitCode).toBe(2);
    expect(foreign.stderr).toMatch(/other exists but is not a virtualenv; refusing to change it/);
    expect(fs.readFileSync(path.join(dir, 'other/notes.txt'), 'utf8')).toBe('keep me');
  });
});
