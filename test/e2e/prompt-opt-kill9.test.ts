import Database from 'better-sqlite3';
import { execa, type ResultPromise } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { promptTokenBound } from '../../src/pipeline/prompt-opt/optimizer.js';
import type { PromptOptState } from '../../src/pipeline/prompt-opt/state.js';
import type { PromptOptResult } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { openStore } from '../../src/runtime/store.js';
import { ResourceSetRepository } from '../../src/store/resource-sets.js';
import { storeDb } from '../../src/store/store.js';
import { BIN, sqliteOf } from '../helpers.js';
import { promptOptProject, promptOptScript, isOptimizer, measuredTwice } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const BUDGET = { rollouts: 40, optimizerTokens: 20_000 };
const SETTINGS = `  rounds: 3\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  concurrency: 2\n  budget: { rollouts: ${BUDGET.rollouts}, optimizer_tokens: ${BUDGET.optimizerTokens} }\n`;

const cli = (dir: string, args: string[]) =>
  execa(process.execPath, [BIN, ...args], { cwd: dir, reject: false, stdin: 'ignore', env: { NO_COLOR: '1' } });

async function until(what: string, child: ResultPromise, ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!ready()) {
    if (child.exitCode !== null) {
      const r = await child;
      throw new Error(`the run ended (exit ${r.exitCode}) before ${what}: ${String(r.stderr)}${String(r.stdout)}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Read as the killed process left the file (read-only, no recovery). */
function promptOptRollouts(storePath: string, status = '%'): number {
  if (!fs.existsSync(storePath)) return 0;
  const db = new Database(storePath, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare("SELECT COUNT(*) FROM rollouts WHERE json_extract(metadata, '$.apo_run') IS NOT NULL AND status LIKE ?")
      .pluck()
      .get(status) as number;
  } catch {
    return 0; // not migrated yet
  } finally {
    db.close();
  }
}

const claimed = (req: ScriptedRequest) =>
  promptTokenBound(req.messages.map((m) => ({ role: 'user' as const, content: m.content ?? '' })))
  + Number(req.max_tokens);

describe('kill -9 in the middle of train prompts', () => {
  it('resumes the same run to its end within its budgets, with nothing measured twice and a full score table for every front candidate', async () => {
    let optimizerDelay = 0;
    server = await startScriptedServer(
      promptOptScript({ delayMs: () => 40 + Math.floor(Math.random() * 40), optimizerDelayMs: () => optimizerDelay }),
    );
    const p = promptOptProject(server.baseUrl, SETTINGS);
    const storePath = path.join(p.dir, '.massgen-rl', 'store.sqlite');

    // Killed while the current prompts are being scored (4 tasks, 2 at a time): some rollouts stored, others running.
    const first = cli(p.dir, ['train', 'prompts']);
    await until('two prompt-optimization rollouts were stored', first, () => promptOptRollouts(storePath) >= 2);
    first.kill('SIGKILL');
    expect((await first).signal).toBe('SIGKILL');
    // What the kill cut off (rollouts whose first spans were stored).
    const cutOff = promptOptRollouts(storePath, 'running');

    const afterFirst = openStore(p.load());
    const runs = afterFirst.trainingRuns.latest(10).filter((r) => r.detail.algo === 'apo');
    afterFirst.close();
    expect(runs).toHaveLength(1);
    expect(runs[0]!.status).toBe('failed'); // the next open found its process gone
    const runId = runs[0]!.id;
    const seedSet = (runs[0]!.detail as unknown as PromptOptState).candidates[0]!.setId;

    // Killed during an optimizer call: its worst case was claimed before the call.
    optimizerDelay = 10_000;
    const sent = server.requests.length;
    const second = cli(p.dir, ['train', 'prompts', '--resume']);
    await until('an optimizer call', second, () => server!.requests.slice(sent).some(isOptimizer));
    second.kill('SIGKILL');
    expect((await second).signal).toBe('SIGKILL');
    const killedCall = server.requests.slice(sent).find(isOptimizer)!;
    const store2 = openStore(p.load());
    const midway = store2.trainingRuns.get(runId)!.detail as unknown as PromptOptState;
    store2.close();
    expect(midway.inFlightTokens).toBe(claimed(killedCall));

    optimizerDelay = 0;
    const last = await cli(p.dir, ['--json', 'train', 'prompts', '--resume']);
    expect(last.exitCode, String(last.stderr)).toBe(0);
    const r = JSON.parse(String(last.stdout)) as PromptOptResult;
    expect(r).toMatchObject({ runId, status: 'completed', stopReason: null });
    expect(r.proposals).toHaveLength(3);
    expect(r.best!.valMean).toBe(1);

    await expect.poll(() => server!.aborted.filter(isOptimizer).length).toBe(1);
    const optimizerCalls = server.requests.filter(isOptimizer);
    expect(r.spent.optimizerTokens).toBe(claimed(killedCall) + 340 * (optimizerCalls.length - 1));
    expect(r.spent.optimizerTokens).toBeLessThanOrEqual(BUDGET.optimizerTokens);

    const store = openStore(p.load());
    try {
      expect(sqliteOf(store).pragma('integrity_check', { simple: true })).toBe('ok');
      const run = store.trainingRuns.get(runId)!;
      expect(run.status).toBe('completed');
      expect(store.trainingRuns.latest(10).filter((x) => x.detail.algo === 'apo')).toHaveLength(1);
      const state = run.detail as unknown as PromptOptState;
      // The same run continued: its seed candidate, and the proposals made before the kill, are kept.
      expect(state.candidates[0]!.setId).toBe(seedSet);
      expect(state.proposals.slice(0, midway.proposals.length)).toEqual(midway.proposals);
      expect(state.inFlightTokens).toBe(0);
      const tagged = store.rollouts.countTagged('apo_run', runId);
      expect(tagged).toBeLessThanOrEqual(BUDGET.rollouts);
      expect(r.spent.rollouts).toBe(tagged);
      // Rollouts the kill cut off are failed, and tagged: they count against the budget.
      expect(
        storeDb(store)
          .prepare("SELECT COUNT(*) FROM rollouts WHERE status = 'failed' AND json_extract(metadata, '$.apo_run') = ?")
          .pluck()
          .get(runId),
      ).toBe(cutOff);
      expect(
        storeDb(store)
          .prepare(
            'SELECT COUNT(*) FROM (SELECT 1 FROM eval_results GROUP BY serving_hash, task_hash, seed, settings_hash HAVING COUNT(*) > 1)',
          )
          .pluck()
          .get(),
      ).toBe(0);
      const keys = state.valTasks.flatMap((t) => state.seeds.map((s) => `${t}:${s}`)).sort();
      const onFront = r.candidates.filter((c) => c.onFront);
      expect(onFront.length).toBeGreaterThan(0);
      for (const c of onFront) {
        const rec = state.candidates.find((x) => x.id === c.id)!;
        expect(Object.keys(rec.val!).sort(), c.id).toEqual(keys);
        const serving = ResourceSetRepository.servingHash(store.sets.get(rec.setId)!.members);
        const results = storeDb(store)
          .prepare('SELECT task_id AS task, seed FROM eval_results WHERE serving_hash = ?')
          .all(serving) as { task: string; seed: number }[];
        expect(
          keys.every((k) => results.some((x) => `${x.task}:${x.seed}` === k)),
          c.id,
        ).toBe(true);
      }
    } finally {
      store.close();
    }
    expect(measuredTwice(p.load())).toEqual([]);
  }, 120_000);
});

describe('Ctrl-C in the middle of train prompts', () => {
  it('stops cleanly with exit 130, says how to resume, and --resume finishes the same run', async () => {
    server = await startScriptedServer(promptOptScript({ delayMs: () => 50 }));
    const p = promptOptProject(server.baseUrl, SETTINGS);
    const storePath = path.join(p.dir, '.massgen-rl', 'store.sqlite');
    const child = cli(p.dir, ['train', 'prompts']);
    await until('the first prompt-optimization rollouts', child, () => promptOptRollouts(storePath, 'completed') >= 2);
    child.kill('SIGINT');
    const stopped = await child;
    expect(stopped.exitCode).toBe(130);
    expect(String(stopped.stderr)).toMatch(
      /prompt optimization interrupted after \d+ proposal\(s\); resume with `massgen-rl train prompts --resume`/,
    );
    const resumed = await cli(p.dir, ['train', 'prompts', '--resume', '--json']);
    expect(resumed.exitCode).toBe(0);
    const r = JSON.parse(String(resumed.stdout)) as PromptOptResult;
    expect(r.status).toBe('completed');
    expect(r.spent.rollouts).toBeLessThanOrEqual(BUDGET.rollouts);
    expect(measuredTwice(p.load())).toEqual([]);
  }, 120_000);
});
