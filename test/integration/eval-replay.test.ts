import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { writeReport } from '../../src/pipeline/evaluate/report.js';
import { withRuntime, type Runtime } from '../../src/runtime/runtime.js';
import type { Store } from '../../src/store/index.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { heldOutRollout } from '../../src/trace/held-out.js';
import { runCli } from '../helpers.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';
import { pairwiseJudge } from '../support/pairwise-judge.js';
import type { Script, ScriptedRequest } from '../support/scripted-server.js';

const HOLDOUT = 0.5;
const JUDGE_SYSTEM = /judge comparing two answers/;

let project: LoopProject | undefined;
afterEach(async () => {
  await project?.server.close();
  project = undefined;
});

/** Rollout ids on the held-out side of gateway.holdout (or the other side). */
function ids(held: boolean, n: number, prefix: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    const id = `ro_${prefix}${i}`;
    if (heldOutRollout(id, HOLDOUT) === held) out.push(id);
  }
  return out;
}

/** A captured gateway session: one chat call per question, as capture.ts writes them. */
function capture(store: Store, id: string, questions: string[], metadata: Record<string, unknown> = {}): void {
  store.rollouts.start({ id, source: GATEWAY_SOURCE, metadata: { client: 'loopback', session: id, ...metadata } });
  store.spans.append(
    id,
    questions.map((q, i) => ({
      type: 'prompt' as const,
      name: 'chat',
      agent: 'a',
      payload: {
        turn_id: `${id}-${i}`,
        round: 0,
        attempt: 1,
        request: {
          model: 'stub',
          messages: [
            { role: 'system', content: 'You are the client agent.' },
            { role: 'user', content: q },
          ],
          temperature: 0.9,
          seed: 77,
          tools: [{ type: 'function', function: { name: 'calc', description: 'calc', parameters: {} } }],
        },
        response: { content: 'captured', tool_calls: [], finish_reason: 'stop' },
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        latency_ms: 1,
        gateway: { client: 'loopback', backend: 'stub', backend_model: 'base-model', stream: false, status: 200 },
      },
    })),
  );
  store.rollouts.finish(id, { status: 'completed', tokens: 2, messages: questions.length, wallMs: 1 });
}

/** The candidate (adapter base-v1) answers 42, production 7; the judge prefers `prefer(a, b)`. */
function script(judge: (a: string, b: string) => string): Script {
  return (req: ScriptedRequest) => {
    return pairwiseJudge(req, judge) ?? { content: req.model === 'base-v1' ? 'ANSWER: 42' : 'ANSWER: 7' };
  };
}

const reads42 = (a: string, b: string) => (a.includes('42') ? 'A' : b.includes('42') ? 'B' : 'tie');

async function replay(judge: ((a: string, b: string) => string) | null, deployAfter = false) {
  project = await loopProject(script(judge ?? reads42));
  const loaded = project.load([
    `gateway.holdout=${HOLDOUT}`,
    'eval.source=gateway',
    'eval.seeds=1',
    ...(judge ? ['eval.replay.judge_model=stub'] : []),
    'deploy.gates.min_pairs=3',
    'eval.metric=success_rate',
  ]);
  return withRuntime(loaded, async (rt: Runtime) => {
    const store = rt.store();
    store.tasks.upsertMany([
      { id: 'q42', prompt: 'What is 6 x 7?', reference: '42', metadata: {}, source: 'test', split: 'eval' },
    ]);
    const [h1, h2, h3] = ids(true, 3, 'held');
    const [kept] = ids(false, 1, 'kept');
    capture(store, h1!, ['What is 6 x 7?', 'And 40 + 2?']);
    capture(store, h2!, ['Name the answer.']);
    // linked to a task with a reference: its last call is scored by the reward families
    capture(store, h3!, ['Think first.', 'What is 6 x 7?'], { task_id: 'q42' });
    capture(store, kept!, ['Training traffic, never replayed.']);
    const weight = store.resources.add({
      kind: 'weight',
      name: 'base',
      path: path.join(project!.dir, 'base'),
      metadata: { adapter: true },
    });
    const summary = await evaluate(rt, { candidate: `resource:base@${weight.version}` });
    const report = await writeReport(rt, { evalRunId: summary.evalRunId });
    // deploy holds today's gates against the replay on reward, whatever eval.metric says
    const deployed = deployAfter ? await deploy(rt, { candidate: `resource:base@${weight.version}` }) : null;
    return {
      deployed,
      summary,
      items: store.evaluations.items(summary.evalRunId),
      report,
      held: [h1!, h2!, h3!],
      kept: kept!,
    };
  });
}

describe('eval --source gateway: replaying held-out captured calls', () => {
  it('replays each held-out call on both sets and scores it by reference or by the position-swapped judge', async () => {
    const { summary, items, report, held, kept, deployed } = await replay(reads42, true);
    const requests = project!.server.requests;
    const replayed = requests.filter((r) => !JUDGE_SYSTEM.test(r.messages[0]?.content ?? ''));
    const judged = requests.filter((r) => JUDGE_SYSTEM.test(r.messages[0]?.content ?? ''));
    // 5 held-out calls, each to production (base-model) and to the candidate (base-v1); nothing of the kept session
    expect(replayed).toHaveLength(10);
    expect(replayed.filter((r) => r.model === 'base-v1')).toHaveLength(5);
    expect(replayed.some((r) => JSON.stringify(r.messages).includes('Training traffic'))).toBe(false);
    // the captured messages and tools, the eval's temperature and seed instead of the captured ones
    expect(replayed.every((r) => r.temperature === 0 && r.seed === 1 && r.tools?.[0]?.function.name === 'calc')).toBe(
      true,
    );
    expect(replayed[0]!.messages[0]).toEqual({ role: 'system', content: 'You are the client agent.' });
    // 4 judged calls asked in both orders; the referenced one not at all
    expect(judged).toHaveLength(8);
    expect(summary).toMatchObject({
      source: 'gateway',
      status: 'completed',
      tasks: 5,
      metric: 'reward',
      replay: {
        prompts: 5,
        judged: 4,
        referenced: 1,
        wins: 5,
        losses: 0,
        ties: 0,
        agreement: 1,
        judgeFailures: 0,
        answerFailures: 0,
        judgeModel: 'stub',
      },
    });
    expect(summary.replay!.winRate!.mean).toBe(1);
    const reward = summary.comparison.overall.find((m) => m.metric === 'reward')!;
    // judged: 0.5 against the candidate's 1; referenced: rewards.weights exact 1 + numeric 1 against 0
    expect(reward.n).toBe(5);
    expect(reward.baseline).toBeCloseTo(0.4);
    expect(reward.candidate).toBeCloseTo(1.2);
    expect(summary.gates.find((g) => g.gate === 'min_pairs')).toMatchObject({ passed: true, value: 5 });
    // the items are stored, newest session first, with both answers and the verdicts
    expect(items.map((i) => i.rolloutId)).toEqual([held[2], held[2], held[1], held[0], held[0]]);
    expect(items.map((i) => i.kind).sort()).toEqual(['judge', 'judge', 'judge', 'judge', 'reference']);
    const ref = items.find((i) => i.kind === 'reference')!;
    expect(ref).toMatchObject({ rolloutId: held[2], taskId: 'q42', score: 2, baselineValue: 0, candidateValue: 2 });
    expect(items.every((i) => held.includes(i.rolloutId!) && i.rolloutId !== kept)).toBe(true);
    const judgedItem = items.find((i) => i.kind === 'judge')!;
    expect(judgedItem).toMatchObject({ score: 1, agreed: true });
    expect(judgedItem.detail).toMatchObject({
      baseline: { answer: 'ANSWER: 7' },
      candidate: { answer: 'ANSWER: 42' },
      verdicts: { candidate_first: 'A', baseline_first: 'B' },
    });
    expect(deployed).toMatchObject({ action: 'promoted', passed: true, evalRunId: summary.evalRunId });
    const html = readFileSync(report.file, 'utf8');
    expect(html).toContain('Replayed gateway traffic');
    expect(html).toMatch(/judge agreement/);
  }, 60_000);

  it('eval --source gateway prints the replay in its table and its JSON', async () => {
    await replay(reads42);
    const args = ['eval', '--source', 'gateway', '--candidate', 'resource:base@1', '--seeds', '1', '--no-report'];
    const sets = ['--set', `gateway.holdout=${HOLDOUT}`, '--set', 'eval.replay.judge_model=stub'];
    const json = await runCli([...args, ...sets, '--json', '--n', '2'], { cwd: project!.dir });
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      source: 'gateway',
      tasks: 2,
      replay: { prompts: 2, wins: 2, ties: 0, losses: 0, agreement: 1 },
      report: null,
    });
    const text = await runCli([...args, ...sets], { cwd: project!.dir });
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toMatch(/on 5 replayed gateway call\(s\) × 1 seed\(s\) \(source gateway\)/);
    expect(text.stdout).toMatch(/judge agreement/);
    expect(text.stdout).toMatch(/5\/0\/0/);
    expect(text.stdout).toMatch(/reward \*/);
    expect(text.stdout).not.toMatch(/consensus/);
    const refused = await runCli([...args, ...sets, '--split', 'all'], { cwd: project!.dir });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/--tasks and --split choose tasks/);
  }, 120_000);

  it('a judge that always prefers the first answer makes every judged call a tie with agreement 0', async () => {
    const { summary } = await replay(() => 'A');
    expect(summary.replay).toMatchObject({ judged: 4, referenced: 1, wins: 1, ties: 4, losses: 0, agreement: 0 });
    expect(summary.replay!.winRate!.mean).toBe(0.5);
    expect(summary.gates.find((g) => g.gate === 'ci_lower_above_zero')?.passed).toBe(false);
    expect(summary.passed).toBe(false);
  }, 60_000);

  it('refuses a replay without a judge for calls that have no reference', async () => {
    await expect(replay(null)).rejects.toThrow(/eval\.replay\.judge_model/);
  }, 60_000);
});
