import { afterEach, describe, expect, it } from 'vitest';
import { promptTokenBound } from '../../src/pipeline/prompt-opt/optimizer.js';
import { trainPrompts } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import {
  promptOptProject,
  promptOptScript,
  isOptimizer,
  measuredTwice,
  tagged,
} from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('train prompts: budgets', () => {
  it('never runs more orchestrations than budget.rollouts, and stops saying so', async () => {
    server = await startScriptedServer(promptOptScript());
    for (const [budget, why] of [
      [7, /budget spent while scoring the child on the minibatch/],
      [1, /budget spent while scoring the current prompts/],
      [5, /budget spent while scoring the parent/],
      [12, /budget spent/],
    ] as const) {
      const p = promptOptProject(
        server.baseUrl,
        `  rounds: 6\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  concurrency: 3\n  budget: { rollouts: ${budget}, optimizer_tokens: 50000 }\n`,
      );
      const r = await withRuntime(p.load(), (rt) => trainPrompts(rt));
      expect(r.status, `budget ${budget}`).toBe('completed');
      expect(r.stopReason, `budget ${budget}`).toMatch(why);
      expect(r.spent.rollouts).toBeLessThanOrEqual(budget);
      expect(r.spent.rollouts).toBe(tagged(p.load(), r.runId));
      // It stopped because the next orchestration did not fit, not before.
      expect(r.spent.rollouts).toBe(budget);
    }
  }, 120_000);

  it("makes no optimizer call when one call's worst case does not fit the token budget", async () => {
    const calls: ScriptedRequest[] = [];
    server = await startScriptedServer(promptOptScript({ optimizerCalls: calls }));
    const p = promptOptProject(
      server.baseUrl,
      '  rounds: 3\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 40, optimizer_tokens: 300 }\n',
    );
    const r = await withRuntime(p.load(), (rt) => trainPrompts(rt));
    expect(r).toMatchObject({ status: 'completed', stopReason: 'optimizer token budget spent', candidateSet: null });
    expect(r.spent.optimizerTokens).toBe(0);
    expect(calls).toHaveLength(0);
    expect(r.proposals).toEqual([expect.objectContaining({ outcome: 'budget', optimizerTokens: 0 })]);
  }, 60_000);

  it("keeps the optimizer's tokens within budget across calls, counting what each call really used", async () => {
    const calls: ScriptedRequest[] = [];
    // The most a byte-level tokenizer could report: a token per byte of the prompt and every completion token allowed.
    const worst = (req: ScriptedRequest) => ({
      prompt_tokens: promptTokenBound(req.messages.map((m) => ({ role: 'user' as const, content: m.content ?? '' }))),
      completion_tokens: Number(req.max_tokens),
    });
    server = await startScriptedServer(promptOptScript({ optimizerCalls: calls, optimizerUsage: worst }));
    const budget = 9000;
    const p = promptOptProject(
      server.baseUrl,
      `  rounds: 20\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  max_tokens: 256\n  budget: { rollouts: 200, optimizer_tokens: ${budget} }\n`,
    );
    const r = await withRuntime(p.load(), (rt) => trainPrompts(rt));
    expect(r.stopReason).toBe('optimizer token budget spent');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    const used = calls.reduce((n, req) => n + worst(req).prompt_tokens + worst(req).completion_tokens, 0);
    expect(r.spent.optimizerTokens).toBe(used);
    expect(r.spent.optimizerTokens).toBeLessThanOrEqual(budget);
    expect(r.proposals.reduce((n, x) => n + x.optimizerTokens, 0)).toBe(used);
    // The last call was cut to what was left.
    expect(Number(calls.at(-1)!.max_tokens)).toBeLessThanOrEqual(256);
    expect(calls.every((req) => isOptimizer(req))).toBe(true);
  }, 120_000);

  it('scores no candidate twice on a task and seed, and a second run reuses what the first measured', async () => {
    server = await startScriptedServer(promptOptScript());
    const p = promptOptProject(
      server.baseUrl,
      '  rounds: 3\n  val_n: 4\n  minibatch: 3\n  seeds: 2\n  merge_every: 0\n  budget: { rollouts: 100, optimizer_tokens: 50000 }\n',
    );
    const first = await withRuntime(p.load(), (rt) => trainPrompts(rt));
    expect(first.status).toBe('completed');
    expect(first.proposals).toHaveLength(3);
    expect(measuredTwice(p.load())).toEqual([]);
    const second = await withRuntime(p.load(), (rt) => trainPrompts(rt));
    expect(second.runId).not.toBe(first.runId);
    expect(second.proposals.map((x) => x.outcome)).toEqual(first.proposals.map((x) => x.outcome));
    expect(second.spent.rollouts).toBeLessThan(first.spent.rollouts);
    // The optimizer is deterministic here: every result the second run needs was measured by the first.
    expect(second.spent.rollouts).toBe(0);
    expect(second.spent.rollouts).toBe(tagged(p.load(), second.runId));
    expect(second.baselineMean).toBe(first.baselineMean);
    expect(second.best?.valMean).toBe(first.best?.valMean);
    expect(measuredTwice(p.load())).toEqual([]);
  }, 120_000);
});
