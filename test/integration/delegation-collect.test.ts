import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { RolloutIndex } from '../../src/datasets/rollout-index.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { recomputeRewards } from '../../src/pipeline/utilities/rewards.js';
import { totalFromRewards } from '../../src/rewards/total.js';
import { outcomeFromSpans } from '../../src/rollouts/outcome.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { toOrchestrationTrace } from '../../src/trace/orchestration-trace.js';
import type { DelegatePayload, PromptPayload } from '../../src/trace/payloads.js';
import { tempDir } from '../helpers.js';
import { delegateResult, isPresentation, taskOf } from '../support/delegation.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';
import { traceProblems } from '../support/trace-schema.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Task "used": the child's answer ("42") is in the final answer. Task "ignored": the child answers "blue", which the final answer leaves out.
const SUBTASKS: Record<string, { sub: string; childAnswer: string }> = {
  'What is 6 x 7?': { sub: 'Multiply six by seven.', childAnswer: '42' },
  'What is 50 - 8?': { sub: 'Name a colour.', childAnswer: 'blue' },
};
const TASKS = [
  { id: 'used', prompt: 'What is 6 x 7?', reference: '42' },
  { id: 'ignored', prompt: 'What is 50 - 8?', reference: '42' },
]
  .map((t) => JSON.stringify(t))
  .join('\n');

const script: Script = (req) => {
  const task = taskOf(req);
  const child = Object.values(SUBTASKS).find((s) => s.sub === task);
  if (isPresentation(req)) return { content: child ? child.childAnswer : 'Final answer: 42' };
  const labels = shownLabels(req);
  if (labels.length) return { content: 'VOTE: agent1 | ok' };
  if (child) return { content: `ANSWER: ${child.childAnswer}` };
  if (req.model === 'model-b') return { content: 'ANSWER: 41', delayMs: 2000 };
  return delegateResult(req) === undefined
    ? { content: `TOOL: delegate {"task": "${SUBTASKS[task]!.sub}"}` }
    : { content: 'ANSWER: 42' };
};

describe('collect with delegation on', () => {
  it(
    'stores the nested spans, credits each delegation on its delegate span by its use × the rollout outcome, exports a valid trace and recomputes the same credit',
    { timeout: 60_000 },
    async () => {
      server = await startScriptedServer(script);
      const weights = { exact: 1, numeric: 1, coordination: 0.2 };
      const dir = tempDir({
        'massgen-rl.yaml': `models:
${['a', 'b'].map((x) => `  stub_${x}: { base_url: "${server.baseUrl}", model: model-${x} }`).join('\n')}
agents:
  - { id: a, model: stub_a, tool_mode: text }
  - { id: b, model: stub_b, tool_mode: text }
tasks:\n  sources: [{ file: tasks.jsonl }]
rewards:\n  weights: ${JSON.stringify(weights)}
collect: { concurrency: 1, split: all }
orchestrator: { agent_timeout_s: 5, total_timeout_s: 30, delegation: { enabled: true, shape: solo } }
`,
        'tasks.jsonl': TASKS,
      });
      const loaded = loadConfig({ cwd: dir });
      const summary = await withRuntime(loaded, (rt) => collect(rt));
      expect(summary.completed).toBe(2);

      const credit = new Map<
        string,
        { value: number; targetSeq: number | null; agent: string | null; reason: string | null; channel: string }
      >();
      let store = openStore(loaded);
      try {
        for (const r of store.rollouts.list({ runId: summary.runId })) {
          const spans = store.spans.list(r.id);
          const rewards = store.rewards.list(r.id);
          const delegate = spans.find((s) => s.type === 'coordination' && s.name === 'delegate')!;
          expect((delegate.payload as DelegatePayload).task).toBe(
            SUBTASKS[r.taskId === 'used' ? 'What is 6 x 7?' : 'What is 50 - 8?']!.sub,
          );
          const rows = rewards.filter((w) => w.family === 'delegation');
          expect(rows).toHaveLength(1);
          credit.set(r.taskId!, rows[0]!);
          expect(rows[0]).toMatchObject({ channel: 'turn', agent: 'a', targetSeq: delegate.seq });
          expect(rows[0]!.reason).toContain('(verified quality)');
          expect(
            spans.some((s) => s.type === 'reward' && s.name === 'delegation' && s.parentSeq === delegate.seq),
          ).toBe(true);
          // Credit stays out of the total, and the rollout's tokens include the child's.
          expect(r.totalReward).toBeCloseTo(
            totalFromRewards(
              rewards.filter((w) => w.family !== 'delegation'),
              weights,
            ),
            12,
          );
          expect(r.tokens).toBe(
            spans
              .filter((s) => s.type === 'prompt')
              .reduce((n, s) => n + (s.payload as PromptPayload).usage.total_tokens, 0),
          );
          // Rewards read from spans see the team's own rounds and answers only.
          const outcome = outcomeFromSpans(r, spans, store.tasks.get(r.taskId!) ?? null);
          expect(outcome.answers.map((a) => [a.agent, a.content])).toEqual([['a', '42']]);
          expect(outcome.rounds).toBe(2);
          // So do datasets: the team's actions and presentation, not the child's.
          const view = new RolloutIndex(
            {
              rollout: r,
              task: null,
              rewards,
              spans: spans
                .filter((s) => s.type === 'prompt' || s.type === 'coordination')
                .map((s) => ({
                  seq: s.seq,
                  type: s.type as 'prompt' | 'coordination',
                  name: s.name,
                  agent: s.agent,
                  payload: JSON.stringify(s.payload),
                })),
            },
            weights,
          );
          expect(view.actions.map((a) => `${a.kind} ${a.agent} ${a.round}`).sort()).toEqual([
            'answer a 1',
            'vote a 2',
            'vote b 2',
          ]);
          expect(view.presentation!.content).toBe('Final answer: 42');

          const trace = toOrchestrationTrace(r, spans, rewards);
          expect(traceProblems(trace)).toEqual([]);
          expect(trace.topology).toBe('hierarchical');
          const aggregate = trace.events.find((e) => e.role === 'delegate_aggregate')!;
          expect(trace.edges.filter((e) => e.dst === aggregate.id && e.type === 'aggregate')).toHaveLength(
            r.taskId === 'used' ? 1 : 0,
          );
          expect(trace.events.filter((e) => e.role === 'delegation').map((e) => [e.from, e.to])).toEqual([
            ['a', 'a@d1'],
          ]);
        }
      } finally {
        store.close();
      }
      // The final answer "Final answer: 42" (exact: 1) used all of "42" and nothing of "blue".
      expect(credit.get('used')!.value).toBe(1);
      expect(credit.get('ignored')!.value).toBe(0);

      await withRuntime(loaded, (rt) => recomputeRewards(rt));
      store = openStore(loaded);
      try {
        for (const r of store.rollouts.list({ runId: summary.runId })) {
          const rows = store.rewards.list(r.id).filter((w) => w.family === 'delegation');
          expect(rows.map((w) => [w.value, w.targetSeq])).toEqual([
            [credit.get(r.taskId!)!.value, credit.get(r.taskId!)!.targetSeq],
          ]);
        }
      } finally {
        store.close();
      }
    },
  );
});
