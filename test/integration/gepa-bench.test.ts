// The apo benchmark's GEPA side (bench/lib/gepa.mjs → bench/gepa-optimize.py in the GEPA venv) against the
// scripted OpenAI-compatible server: GEPA's own reflection prompt, the budget it spends, the tokens it reports.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error bench/ is plain ESM JavaScript without type declarations
import { ensureGepaVenv } from '../../bench/lib/gepa-venv.mjs';
import { gepaWorstCaseCalls, runGepa } from '../../bench/lib/gepa.mjs';
// @ts-expect-error bench/ is plain ESM JavaScript without type declarations
import { tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedRequest } from '../support/scripted-server.js';

const MODEL = 'scripted-model';
const SEED_PROMPT = 'You are a helpful assistant.';
const BETTER_PROMPT = 'Add the two numbers. Reply with only the final number.';
// The closing line of GEPA's default reflection template (gepa.strategies.instruction_proposal).
const REFLECTION_ASK = 'Provide the new instructions within ``` blocks.';
const REFLECTION_USAGE = { prompt_tokens: 321, completion_tokens: 17 };
const TASK_USAGE = { prompt_tokens: 40, completion_tokens: 5 };

const task = (a: number, b: number) => ({ input: `What is ${a} + ${b}?`, answer: String(a + b) });
const TRAIN = [task(12, 30), task(7, 8), task(50, 25)];
const VAL = [task(3, 4), task(20, 22), task(9, 90)];

const text = (m: ScriptedRequest['messages'][number] | undefined) => String(m?.content ?? '');
const isReflection = (r: ScriptedRequest) => r.messages.some((m) => text(m).includes(REFLECTION_ASK));

/** A model that gets the sums right only under BETTER_PROMPT, and a reflection model that proposes it. */
function script(req: ScriptedRequest) {
  if (isReflection(req))
    return {
      content: `Looking at the feedback, the assistant never gives the sum.\n\`\`\`\n${BETTER_PROMPT}\n\`\`\``,
      usage: REFLECTION_USAGE,
    };
  const system = text(req.messages.find((m) => m.role === 'system'));
  const [, a, b] = /What is (\d+) \+ (\d+)\?/.exec(text(req.messages.find((m) => m.role === 'user')))!;
  return {
    content: system === BETTER_PROMPT ? String(Number(a) + Number(b)) : 'Happy to help with arithmetic!',
    usage: TASK_USAGE,
  };
}

const venv: { ok: true } | { ok: false; reason: string } = await ensureGepaVenv({ log: () => {} }).then(
  () => ({ ok: true as const }),
  (err: Error) => ({ ok: false as const, reason: err.message.split('\n')[0]! }),
);
if (!venv.ok) process.stderr.write(`[gepa] skipping the GEPA benchmark tests: ${venv.reason}\n`);
const describeWithGepa = venv.ok || process.env.CI === 'true' ? describe : describe.skip;

describeWithGepa('GEPA (PyPI gepa, default adapter) for the apo benchmark', () => {
  async function run(maxMetricCalls: number) {
    if (!venv.ok) throw new Error(`the GEPA venv is needed in CI: ${venv.reason}`);
    const server = await startScriptedServer(script);
    try {
      const result = await runGepa({
        baseUrl: server.baseUrl,
        model: MODEL,
        seedPrompt: SEED_PROMPT,
        trainset: TRAIN,
        valset: VAL,
        maxMetricCalls,
        seed: 7,
        reflectionMinibatchSize: 3,
        maxTokens: 64,
      });
      return { result, requests: [...server.requests] };
    } finally {
      await server.close();
    }
  }

  it('optimizes the system prompt through the local server only, one task-model call per metric call', async () => {
    const { result, requests } = await run(12);
    expect(result.bestPrompt).toBe(BETTER_PROMPT);
    expect(result.seedValScore).toBe(0);
    expect(result.bestValScore).toBe(1);
    expect(result.valScores).toEqual([0, 1]);
    // Seed on the valset (3), parent and child on one minibatch (3 + 3), the accepted child on the valset (3).
    expect(result.metricCallsUsed).toBe(12);
    expect(result.reflectionCalls).toBe(1);
    expect(result.reflections[0]).toMatchObject({ hasCodeBlock: true, proposed: BETTER_PROMPT });

    // Every call GEPA made reached this server, named the model, and nothing else was dialled.
    expect(result.egressRefused).toEqual([]);
    expect(requests).toHaveLength(result.metricCallsUsed + result.reflectionCalls);
    expect(new Set(requests.map((r) => r.model))).toEqual(new Set([MODEL]));
    const taskCalls = requests.filter((r) => !isReflection(r));
    expect(taskCalls).toHaveLength(result.metricCallsUsed);
    expect(taskCalls.filter((r) => text(r.messages[0]) === SEED_PROMPT)).toHaveLength(6);
    expect(taskCalls.filter((r) => text(r.messages[0]) === BETTER_PROMPT)).toHaveLength(6);
    expect(taskCalls.every((r) => r.max_tokens === 64)).toBe(true);

    // The reflection prompt carries the seed prompt and the default evaluator's feedback on each example.
    const reflection = text(requests.find(isReflection)!.messages[0]);
    expect(reflection).toContain(`\`\`\`\n${SEED_PROMPT}\n\`\`\``);
    expect(reflection).toContain('The generated response is incorrect.');
    for (const t of TRAIN) expect(reflection).toContain(t.input);

    // Tokens are the server's usage, summed per model.
    expect(result.reflectionTokens).toEqual({ prompt: 321, completion: 17, total: 338 });
    expect(result.taskLmTokens).toEqual({ prompt: 12 * 40, completion: 12 * 5, total: 12 * 45 });
    expect(result.wallS).toBeGreaterThan(0);
    expect(result.versions).toEqual({ gepa: '0.1.4', litellm: '1.91.5' });
  });

  it('checks the budget only between iterations: one call under it still runs a whole iteration', async () => {
    const { result, requests } = await run(4);
    // Seed valset pass: 3 < 4, so iteration 1 runs in full (3 + 3 + 3) and ends 8 calls over the budget.
    expect(result.metricCallsUsed).toBe(12);
    expect(result.metricCallsUsed).toBe(gepaWorstCaseCalls(4, 3, VAL.length));
    expect(requests.filter((r) => !isReflection(r))).toHaveLength(12);
    expect(gepaWorstCaseCalls(3, 3, VAL.length)).toBe(3);
  });

  it('refuses any connection off this machine: a non-loopback base URL fails the run and says so', async () => {
    await expect(
      runGepa({
        baseUrl: 'http://192.0.2.1:9/v1',
        model: MODEL,
        seedPrompt: SEED_PROMPT,
        trainset: TRAIN,
        valset: VAL,
        maxMetricCalls: 3,
      }),
    ).rejects.toThrow(/GEPA run failed[\s\S]*RuntimeError: egress refused: 192\.0\.2\.1:9$/);
  });
});

describe('the GEPA venv', () => {
  it('says which step failed when it cannot be created', async () => {
    const venv = path.join(tempDir(), 'gepa-venv');
    await expect(
      ensureGepaVenv({ env: { ...process.env, GEPA_VENV: venv, PYTHON: 'python-that-is-not-there' }, log: () => {} }),
    ).rejects.toThrow(`could not create the GEPA venv at ${venv}: python-that-is-not-there 3.10+ failed`);
  });
});
