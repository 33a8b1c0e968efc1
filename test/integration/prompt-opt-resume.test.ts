import { afterEach, describe, expect, it } from 'vitest';
import { promptTokenBound } from '../../src/pipeline/prompt-opt/optimizer.js';
import type { PromptOptState } from '../../src/pipeline/prompt-opt/state.js';
import { trainPrompts } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import {
  promptOptProject,
  promptOptScript,
  isOptimizer,
  measuredTwice,
  tagged,
  type PromptOptProject,
} from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SETTINGS =
  '  rounds: 3\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 60, optimizer_tokens: 50000, wall_min: 1 }\n';

function runState(p: PromptOptProject, runId: string) {
  const store = openStore(p.load());
  try {
    const run = store.trainingRuns.get(runId)!;
    return { status: run.status, state: run.detail as unknown as PromptOptState };
  } finally {
    store.close();
  }
}

/** A run's time so far set to `leftMs` short of its wall budget (the smallest budget is a minute). */
function nearWallBudget(p: PromptOptProject, runId: string, leftMs: number): void {
  const store = openStore(p.load());
  try {
    const state = store.trainingRuns.get(runId)!.detail as unknown as PromptOptState;
    state.spent.wallMs = state.budget.wallMs - leftMs;
    store.trainingRuns.setDetail(runId, state as unknown as Record<string, unknown>);
  } finally {
    store.close();
  }
}

/** The worst case an optimizer request was claimed at: its prompt bound and the completion tokens it allowed. */
const claimed = (req: ScriptedRequest) =>
  promptTokenBound(req.messages.map((m) => ({ role: 'user' as const, content: m.content ?? '' })))
  + Number(req.max_tokens);

describe('train prompts, interrupted and resumed', () => {
  it('an interrupt during the orchestrations: cancelled, resumable, and resuming finishes every round without measuring anything twice', async () => {
    const controller = new AbortController();
    const calls: ScriptedRequest[] = [];
    const team = promptOptScript({ optimizerCalls: calls, delayMs: () => 10 });
    let afterProposal = 0;
    server = await startScriptedServer((req) => {
      // Mid-way through scoring the first proposal's child.
      if (!isOptimizer(req) && calls.length && ++afterProposal === 10) controller.abort(new Error('interrupted'));
      return team(req);
    });
    const p = promptOptProject(server.baseUrl, SETTINGS);
    const stopped = await withRuntime(p.load(), (rt) => trainPrompts(rt, { signal: controller.signal }));
    expect(stopped).toMatchObject({ status: 'cancelled', stopReason: null, proposals: [] });
    expect(stopped.candidates.map((c) => c.id)).toEqual(['c0', 'c1']);
    const before = runState(p, stopped.runId);
    expect(before).toMatchObject({ status: 'cancelled', state: { done: false, step: 0 } });

    const r = await withRuntime(p.load(), (rt) => trainPrompts(rt, { resume: true }));
    expect(r).toMatchObject({ runId: stopped.runId, status: 'completed', stopReason: null });
    expect(r.proposals).toHaveLength(3);
    expect(r.proposals[0]).toMatchObject({ step: 0, outcome: 'accepted' });
    expect(r.best!.valMean).toBe(1);
    expect(r.baselineMean).toBe(stopped.baselineMean);
    expect(r.spent.rollouts).toBeLessThanOrEqual(60);
    expect(r.spent.rollouts).toBe(tagged(p.load(), r.runId));
    // The rollouts the interrupt cancelled run again; nothing that finished does.
    expect(measuredTwice(p.load())).toEqual([]);
    expect(runState(p, r.runId).status).toBe('completed');
  }, 120_000);

  it('an interrupt during an optimizer call: cancelled with the call counted at its worst case, then resumed', async () => {
    const controller = new AbortController();
    const calls: ScriptedRequest[] = [];
    const team = promptOptScript({ optimizerCalls: calls, optimizerDelayMs: () => (calls.length === 1 ? 2000 : 0) });
    server = await startScriptedServer((req) => {
      if (isOptimizer(req) && !calls.length) setTimeout(() => controller.abort(new Error('interrupted')), 100);
      return team(req);
    });
    const p = promptOptProject(server.baseUrl, SETTINGS);
    const stopped = await withRuntime(p.load(), (rt) => trainPrompts(rt, { signal: controller.signal }));
    expect(stopped.status).toBe('cancelled');
    // The call was cut off (the server sees its client go).
    await expect.poll(() => server!.aborted.filter(isOptimizer).length, { timeout: 3000 }).toBe(1);
    expect(stopped.spent.optimizerTokens).toBe(claimed(calls[0]!));
    expect(runState(p, stopped.runId).state).toMatchObject({
      step: 0,
      done: false,
      inFlightTokens: 0,
      spent: { optimizerTokens: claimed(calls[0]!) },
    });

    const r = await withRuntime(p.load(), (rt) => trainPrompts(rt, { resume: stopped.runId }));
    expect(r).toMatchObject({ runId: stopped.runId, status: 'completed', stopReason: null });
    expect(r.proposals).toHaveLength(3);
    expect(r.spent.optimizerTokens).toBe(claimed(calls[0]!) + 340 * (calls.length - 1));
    expect(measuredTwice(p.load())).toEqual([]);
  }, 120_000);

  it('the wall-time budget ends the run, during an optimizer call or an orchestration, as a budget and not a failure', async () => {
    for (const during of ['optimizer', 'rollouts'] as const) {
      const controller = new AbortController();
      const calls: ScriptedRequest[] = [];
      let slow = false;
      const team = promptOptScript({
        optimizerCalls: calls,
        delayMs: () => (slow && during === 'rollouts' ? 400 : 0),
        optimizerDelayMs: () => (slow && during === 'optimizer' ? 5000 : 0),
      });
      server = await startScriptedServer((req) => {
        if (isOptimizer(req) && !calls.length) controller.abort(new Error('interrupted'));
        return team(req);
      });
      const p = promptOptProject(server.baseUrl, SETTINGS);
      const stopped = await withRuntime(p.load(), (rt) => trainPrompts(rt, { signal: controller.signal }));
      expect(stopped.status).toBe('cancelled');
      nearWallBudget(p, stopped.runId, 300);
      slow = true;
      const r = await withRuntime(p.load(), (rt) => trainPrompts(rt, { resume: true }));
      expect(r, during).toMatchObject({
        runId: stopped.runId,
        status: 'completed',
        stopReason: 'wall-time budget spent',
      });
      expect(r.spent.wallMs).toBeGreaterThanOrEqual(60_000 - 300);
      expect(runState(p, r.runId).status).toBe('completed');
      await server.close();
      server = undefined;
    }
  }, 120_000);
});
