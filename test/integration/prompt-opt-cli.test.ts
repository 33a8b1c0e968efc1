import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import type { PromptOptResult } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { trainPrompts } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { hasStack, runCli, sha } from '../helpers.js';
import { promptOptProject, promptOptScript, type PromptOptProject } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SETTINGS =
  '  rounds: 3\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 40, optimizer_tokens: 5000 }\n';

/** The store's files, as bytes: a refused command leaves them as they were. */
const stored = (p: PromptOptProject) =>
  ['store.sqlite', 'store.sqlite-wal'].map((f) => sha(path.join(p.dir, '.massgen-rl', f)));

function withSettings(p: PromptOptProject, lines: string): void {
  const file = path.join(p.dir, 'massgen-rl.yaml');
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('prompt_opt:\n', `prompt_opt:\n${lines}`));
}

describe('massgen-rl train prompts', () => {
  it("--json prints the run's result; without it, a progress line per round on stderr and the candidate table on stdout", async () => {
    server = await startScriptedServer(promptOptScript());
    const p = promptOptProject(server.baseUrl, SETTINGS);
    const json = await runCli(['--json', 'train', 'prompts'], { cwd: p.dir });
    expect(json.exitCode, json.stderr).toBe(0);
    const r = JSON.parse(json.stdout) as PromptOptResult;
    expect(r).toMatchObject({
      algo: 'apo',
      status: 'completed',
      metric: 'reward',
      stopReason: null,
      budget: { rollouts: 40, optimizerTokens: 5000 },
    });
    expect(r.runId).toMatch(/\S/);
    expect(r.proposals).toHaveLength(3);
    expect(r.candidates[0]).toMatchObject({
      id: 'c0',
      parents: [],
      onFront: expect.any(Boolean),
      prompts: [{ name: 'solver', version: 1 }],
    });
    expect(r.best).toMatchObject({ valMean: 1, prompts: [{ name: 'solver', version: 2 }] });
    expect(r.candidateSet).toMatchObject({ id: expect.any(String), version: expect.any(Number) });
    expect(r.spent.rollouts).toBeGreaterThan(0);
    expect(r.spent.rollouts).toBeLessThanOrEqual(40);

    // A second project (the first's results would be reused): the human output, under the old spelling.
    const q = promptOptProject(server.baseUrl, SETTINGS);
    const text = await runCli(['train', '--algo', 'apo'], { cwd: q.dir });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stderr.split('\n').filter((l) => /deprecated/.test(l))).toEqual([
      'warning train --algo apo is deprecated: use massgen-rl train prompts',
    ]);
    const rounds = text.stderr.split('\n').filter((l) => /^round \d+\/3: /.test(l));
    expect(rounds.map((l) => l.slice(0, 12))).toEqual(['round 1/3: r', 'round 2/3: r', 'round 3/3: r']);
    expect(rounds[0]).toMatch(
      /^round 1\/3: reflect on c0 → edit solver: accepted c1 \(minibatch [\d.]+ → 1\.000\); validation 1\.000 .*\| best c1 1\.000, front \d+ \| rollouts \d+\/40, optimizer tokens 340\/5000, .*\/60 min$/,
    );
    expect(text.stdout).not.toMatch(/^round /m);
    expect(text.stdout).toMatch(/candidate.*from.*edited.*validation reward.*front.*prompts/);
    expect(text.stdout).toMatch(/c0 .*current.*solver v1/);
    expect(text.stdout).toMatch(/c1 \(best\).*c0.*solver.*1\.000.*yes.*solver v2/);
    expect(text.stdout).toMatch(/run \S+ completed: 3 proposal\(s\); spent \d+ rollouts, 1020 optimizer tokens/);
    expect(text.stdout).toMatch(
      /best c1: 1\.000 against 0\.\d+ now; evaluate it: massgen-rl eval \(candidate set v\d+\)/,
    );
    expect(hasStack(text.stderr)).toBe(false);
  }, 120_000);

  it('refuses bad input with exit 2 and a message naming it, changing nothing stored', async () => {
    server = await startScriptedServer(promptOptScript());
    const p = promptOptProject(server.baseUrl, SETTINGS, {
      prompts: '  solver: { text: "You are a problem solver." }\n  spare: { text: "Unused." }',
    });
    await withRuntime(p.load(), (rt) => trainPrompts(rt));
    const before = stored(p);
    expect(before[0]).not.toBe('<missing>');
    const requests = server.requests.length;

    const flags = await runCli(['train', 'prompts', '--from', 'x'], { cwd: p.dir });
    expect(flags.exitCode).toBe(2);
    expect(flags.stderr).toMatch(/unknown option '--from'/);

    withSettings(p, '  prompts: [nope]\n');
    const unknown = await runCli(['train', 'prompts'], { cwd: p.dir });
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/prompt_opt\.prompts\[0\]: unknown prompt "nope"/);
    expect(unknown.stderr).toContain('massgen-rl.yaml');

    const file = path.join(p.dir, 'massgen-rl.yaml');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('prompts: [nope]', 'prompts: [solver, spare]'));
    await expect(withRuntime(p.load(), (rt) => trainPrompts(rt))).rejects.toThrow(UserError);
    const unused = await runCli(['train', 'prompts'], { cwd: p.dir });
    expect(unused.exitCode).toBe(2);
    expect(unused.stderr).toMatch(
      /prompt_opt\.prompts\[1\]: prompt "spare" is the system prompt of no agent; prompts in use: solver/,
    );

    for (const r of [flags, unknown, unused]) expect(hasStack(r.stderr), r.stderr).toBe(false);
    expect(stored(p)).toEqual(before);
    expect(server.requests.length).toBe(requests);
  }, 120_000);
});
