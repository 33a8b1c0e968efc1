import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { hasStack, runCli, sha, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const task = (id: string, prompt: string, reference: string) => `${JSON.stringify({ id, prompt, reference })}\n`;

/** A two-agent team on a scripted endpoint (key in STUB_KEY) that always answers 42. */
async function project(files: Record<string, string> = {}) {
  server = await startScriptedServer((req) => {
    if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42' };
    return shownLabels(req).length ? { content: 'VOTE: agent1 | right' } : { content: 'ANSWER: 42' };
  });
  const dir = tempDir({
    'massgen-rl.yaml': `models:\n  stub: { base_url: "${server.baseUrl}", model: m, api_key_env: STUB_KEY }
prompts:\n  solver: { file: solver.md }
agents:\n  - { id: a, model: stub, tool_mode: text, system_prompt: solver }\n  - { id: b, model: stub, tool_mode: text, system_prompt: solver }
tasks:\n  sources: [{ file: a.jsonl }]\n  split: { eval_fraction: 0 }
collect: { concurrency: 1, split: all }
rewards:\n  weights: { exact: 1 }\n`,
    'solver.md': 'You solve tasks.',
    'a.jsonl': task('t1', 'What is 6 x 7?', '42'),
    ...files,
  });
  return { dir, storePath: path.join(dir, '.massgen-rl', 'store.sqlite') };
}

const KEY = { STUB_KEY: 'sk-test-key-0123456789abcdef' };

/** Every refusal: exit 2, a message, no stack. */
const REFUSALS: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
  ['unset api_key_env', ['collect'], {}, /models\.stub\.api_key_env: environment variable STUB_KEY is not set/],
  [
    'missing task file',
    ['collect', '--tasks', 'missing.jsonl'],
    KEY,
    /--tasks missing\.jsonl: not a built-in suite .* and no such file/,
  ],
  ['bad task file', ['collect', '--tasks', 'bad.jsonl'], KEY, /bad\.jsonl:1: invalid JSON/],
  ['unknown suite', ['collect', '--set', 'tasks.sources.0.suite=nosuch'], KEY, /tasks\.sources\[0\]/],
  ['no tasks in the split', ['collect', '--split', 'eval'], KEY, /no eval-split tasks to run/],
  [
    'a redefined task id',
    ['collect', '--tasks', 'b.jsonl'],
    KEY,
    /"t1" from .*b\.jsonl \(stored from a\.jsonl, 1 rollout\): reference "42" → "41"/,
  ],
];

describe('a refused collect changes nothing', () => {
  it('exit 2 before the first write: no store is created, and an existing store stays byte-identical', async () => {
    const { dir, storePath } = await project({
      'bad.jsonl': '{"id": \n',
      'b.jsonl': task('t1', 'What is 6 x 7?', '41'),
    });
    for (const [what, args, env] of REFUSALS.filter(([what]) => what !== 'a redefined task id')) {
      const r = await runCli(args, { cwd: dir, env });
      expect(r.exitCode, `${what}: ${r.stderr}`).toBe(2);
      expect(fs.existsSync(storePath), `${what} created the store`).toBe(false);
    }
    const first = await runCli(['collect'], { cwd: dir, env: KEY });
    expect(first.exitCode, first.stderr).toBe(0);
    const before = sha(storePath);
    for (const [what, args, env, message] of REFUSALS) {
      const r = await runCli(args, { cwd: dir, env });
      expect(r.exitCode, `${what}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(hasStack(r.stderr)).toBe(false);
      expect(sha(storePath), `${what} changed the store`).toBe(before);
    }
  });

  it('a local model that cannot be served (weights not provisioned, no trainer venv) is refused before the first write', async () => {
    const { dir, storePath } = await project({ 'fake-model/config.json': '{}' });
    expect((await runCli(['collect'], { cwd: dir, env: KEY })).exitCode).toBe(0);
    const before = sha(storePath);
    // An edited prompt and a local model for agent b: the new prompt version must not be stored when the model cannot run.
    fs.writeFileSync(path.join(dir, 'solver.md'), 'You solve tasks, carefully.');
    const config = fs.readFileSync(path.join(dir, 'massgen-rl.yaml'), 'utf8');
    const emptyCache = tempDir();
    for (const [weights, message] of [
      [
        'builtin:smollm2-135m-instruct',
        /^error: models\.loc\.local\.weights: the built-in model smollm2-135m-instruct is not provisioned yet/m,
      ],
      [
        'fake-model',
        /^error: models\.loc\.local: the trainer virtualenv that serves local weights is missing \(.*venv\)/m,
      ],
    ] as const) {
      fs.writeFileSync(
        path.join(dir, 'massgen-rl.yaml'),
        config
          .replace('models:\n', `models:\n  loc: { model: m, local: { weights: ${weights} } }\n`)
          .replace('{ id: b, model: stub', '{ id: b, model: loc'),
      );
      const r = await runCli(['collect'], { cwd: dir, env: { ...KEY, MASSGEN_RL_CACHE_DIR: emptyCache } });
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(hasStack(r.stderr)).toBe(false);
      expect(sha(storePath), `${weights}: the store changed`).toBe(before);
    }
  });

  it('a prompt file that cannot be read once the config was loaded leaves no store behind', async () => {
    const { dir, storePath } = await project();
    const loaded = loadConfig({ cwd: dir, env: { ...process.env, ...KEY } });
    fs.rmSync(path.join(dir, 'solver.md'));
    fs.mkdirSync(path.join(dir, 'solver.md'));
    await expect(withRuntime(loaded, (rt) => collect(rt))).rejects.toThrow(/prompt file .*solver\.md/);
    expect(fs.existsSync(storePath)).toBe(false);
  });
});

describe('a task id names one task for good', () => {
  it('a redefined id is refused, and old rollouts keep being scored against the task they ran', async () => {
    const { dir, storePath } = await project({ 'b.jsonl': task('t1', 'What is 6 x 7?', '41') });
    expect((await runCli(['collect'], { cwd: dir, env: KEY })).exitCode).toBe(0);
    const refused = await runCli(['collect', '--tasks', 'b.jsonl'], { cwd: dir, env: KEY });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/1 task id is already stored with different content; nothing was changed/);
    expect(refused.stderr).toMatch(/give a changed task a new id/);
    const recompute = await runCli(['--json', 'rewards', 'recompute'], { cwd: dir, env: KEY });
    expect(recompute.exitCode, recompute.stderr).toBe(0);
    expect(JSON.parse(recompute.stdout)).toMatchObject({ rollouts: 1, changed: 0, meanAfter: 1 });
    const store = openStore(loadConfig({ cwd: dir, env: { ...process.env, ...KEY } }));
    try {
      expect(store.tasks.get('t1')).toMatchObject({ reference: '42', source: 'a.jsonl' });
    } finally {
      store.close();
    }
    expect(fs.existsSync(storePath)).toBe(true);
  });

  it('a file task that reuses a built-in suite task id is refused', async () => {
    const { dir } = await project();
    expect((await runCli(['collect', '--tasks', 'arithmetic@2', '--n', '1'], { cwd: dir, env: KEY })).exitCode).toBe(0);
    fs.writeFileSync(path.join(dir, 'shadow.jsonl'), task('suite:arithmetic:1:0', 'What is 1 + 1?', '2'));
    const r = await runCli(['collect', '--tasks', 'shadow.jsonl'], { cwd: dir, env: KEY });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(
      /"suite:arithmetic:1:0" from .*shadow\.jsonl \(stored from suite:arithmetic, 1 rollout\): prompt ".*→ "What is 1 \+ 1\?"; reference "60" → "2"; metadata\.answer_type "number" → \(none\); \d+ more differences$/m,
    );
  });
});
