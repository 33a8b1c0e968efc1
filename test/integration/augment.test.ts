import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildDataset, type DpoRow, type SftRow } from '../../src/datasets/index.js';
import { datasetOptionsFromConfig } from '../../src/datasets/options.js';
import { ConfigError } from '../../src/errors.js';
import { trainAugment } from '../../src/pipeline/train/augment.js';
import { trainRoles } from '../../src/pipeline/train/roles.js';
import { train } from '../../src/pipeline/train/train.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { readRows, seedTasks, teamRollout } from '../fixtures/datasets/team-rollouts.js';
import { FIXTURES, tempDir } from '../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';

// train.sft.rationalize, train.sft.teacher and train.dpo.rationalize against a scripted model: what a hard task gets.
let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const BASE = { 'base/config.json': '{"model_type": "llama"}', 'base/model.safetensors': 'x'.repeat(1024) };
const TRAINER = path.join(FIXTURES, 'trainers', 'protocol_trainer.py');
const RATIONALE = 'The capital of France is the city where the government sits, which is Paris.\nANSWER: Paris';

async function project(sft: string, script: Script, trainYaml = '', dpo = '{}') {
  server = await startScriptedServer(script);
  const yaml = `models:
  mine: { model: smol, base_url: ${server.baseUrl} }
  big: { model: teacher-model, base_url: ${server.baseUrl} }
agents:\n${['a', 'b', 'c'].map((x) => `  - { id: ${x}, model: mine }`).join('\n')}
rewards: { weights: { exact: 1, numeric: 1 } }
train: { sft: ${sft}, dpo: ${dpo}${trainYaml} }
`;
  const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml, ...BASE }) });
  await withRuntime(loaded, (rt) => {
    const store = rt.store();
    seedTasks(store);
    // 'mul' is solved (a's 42); 'cap' is a hard task: b's Lyon was verified wrong and nothing was right.
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' } });
    teamRollout(store, { taskId: 'cap', first: { agent: 'b', content: 'Lyon' } });
  });
  return loaded;
}

async function build(sft: string, script: Script) {
  return withRuntime(await project(sft, script), async (rt) => {
    const store = rt.store();
    const input = {
      algo: 'sft' as const,
      dataDir: rt.paths.dataDir,
      all: true,
      options: datasetOptionsFromConfig(rt.config.train, rt.config.rewards),
    };
    // The same build as before these keys existed, for comparison.
    const plain = await buildDataset(store, input);
    const built = await buildDataset(store, { ...input, augment: trainAugment(rt, 'sft') });
    return { built, plain, rows: readRows<SftRow>(built.dir) };
  });
}

const hinted = (req: { messages: { content: string | null }[] }) =>
  Boolean(req.messages.at(-1)?.content?.includes('Hint:'));

describe('DPO chosen answers for hard tasks', () => {
  it('rationalize: a rationalized reply is chosen against the wrong answers, under the prompt without the hint', async () => {
    const replies = [RATIONALE, 'As the hint says, the answer is Paris.\nANSWER: Paris', 'ANSWER: Lyon'];
    const loaded = await project(
      '{}',
      (_req, i) => ({ content: replies[i]! }),
      '',
      '{ pairs: correctness, rationalize: { samples: 3 } }',
    );
    const { built, plain, rows } = await withRuntime(loaded, async (rt) => {
      const input = {
        algo: 'dpo' as const,
        dataDir: rt.paths.dataDir,
        all: true,
        options: datasetOptionsFromConfig(rt.config.train, rt.config.rewards),
      };
      const plain = await buildDataset(rt.store(), input);
      const built = await buildDataset(rt.store(), { ...input, augment: trainAugment(rt, 'dpo') });
      return { built, plain, rows: readRows<DpoRow>(built.dir) };
    });
    expect(plain.stats.rows).toBe(0);
    expect(server!.requests).toHaveLength(3);
    expect(server!.requests.every((r) => hinted(r) && r.model === 'smol')).toBe(true);
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row!.chosen).toEqual([{ role: 'assistant', content: RATIONALE }]);
    expect(row!.rejected).toEqual([{ role: 'assistant', content: 'Lyon' }]);
    expect(row!.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(row!.prompt.some((m) => /Hint:|Paris/.test(m.content as string))).toBe(false);
    expect(row!.meta).toMatchObject({ kind: 'rationalized', task_id: 'cap', agent: 'b', rejected_agent: 'b' });
    expect(built.stats.counts).toMatchObject({ hard_tasks: 1, rationalized_pairs: 1 });
    expect(built.stats.dropped).toMatchObject({ rationalized_wrong: 1, rationalized_mentions_hint: 1 });
  });

  it('is refused with winner pairs, naming the field', () => {
    const yaml = `models:\n  mine: { model: smol, base_url: http://x/v1 }\nagents:\n  - { id: a, model: mine }\n`;
    const load = (dpo: string) => () =>
      loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': `${yaml}train: { dpo: ${dpo} }\n` }) });
    expect(load('{ rationalize: {} }')).toThrow(/train\.dpo\.rationalize.*pairs: correctness/s);
    expect(load('{ pairs: correctness, rationalize: {} }')).not.toThrow();
  });
});

describe('SFT rows for hard tasks', () => {
  it('rationalize: keeps the replies that reach the reference, under the prompt without the hint', async () => {
    const replies = [
      RATIONALE,
      'I think it is Lyon, a big city in France.\nANSWER: Lyon',
      'As the hint says, the answer is Paris.\nANSWER: Paris',
    ];
    const { built, rows } = await build('{ select: verified, rationalize: { samples: 3 } }', (_req, i) => ({
      content: replies[i]!,
    }));
    expect(server!.requests).toHaveLength(3);
    expect(server!.requests.every((r) => hinted(r) && r.model === 'smol')).toBe(true);
    // capped as the recorded call was (the fixture's max_tokens)
    expect(server!.requests.map((r) => (r as { max_tokens?: number }).max_tokens)).toEqual([64, 64, 64]);
    expect(server!.requests[0]!.messages.at(-1)!.content).toContain('Paris');
    const added = rows.filter((r) => r.meta.source === 'rationalized');
    expect(added).toHaveLength(1);
    const [row] = added;
    expect(row!.messages.at(-1)).toEqual({ role: 'assistant', content: RATIONALE });
    expect(row!.messages.slice(0, -1).some((m) => /Hint:|Paris/.test(m.content))).toBe(false);
    expect(row!.messages[1]!.content).toContain('What is the capital of France?');
    expect(row!.meta).toMatchObject({ task_id: 'cap', agent: 'b', kind: 'rationalized', source_model: 'mine' });
    expect(built.stats.counts).toMatchObject({ hard_tasks: 1, rationalized: 1, verified_answers: 1 });
    expect(built.stats.dropped).toMatchObject({ rationalized_wrong: 1, rationalized_mentions_hint: 1 });
  });

  it("a role's sft recipe asks for its own hard tasks, named by the recipe's key", async () => {
    server = await startScriptedServer(() => ({ content: RATIONALE }));
    const yaml = `models:
  mine: { model: smol, base_url: ${server.baseUrl}, lora: { line: solver, load_adapters: false } }
agents:\n${['a', 'b', 'c'].map((x) => `  - { id: ${x}, model: mine }`).join('\n')}
rewards: { weights: { exact: 1, numeric: 1 } }
train: { base_model: ./base, script: ${TRAINER}, gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 } }
roles:
  solvers:
    agents: [b]
    weights: { lora: solver }
    recipe: { algo: sft, select: verified, rationalize: { samples: 1 }, max_steps: 1 }
`;
    const stages: string[] = [];
    const r = await withRuntime(loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml, ...BASE }) }), async (rt) => {
      const store = rt.store();
      seedTasks(store);
      teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' } });
      teamRollout(store, { taskId: 'cap', first: { agent: 'b', content: 'Lyon' } });
      return trainRoles(rt, { onStage: (m) => stages.push(m) });
    });
    const [solvers] = r.roles;
    expect(solvers).toMatchObject({ role: 'solvers', status: 'trained' });
    // b's hard task (its Lyon was wrong) is asked with the hint; a's solved task is not b's: no row of it.
    expect(server.requests).toHaveLength(1);
    expect(hinted(server.requests[0]!)).toBe(true);
    const rows = readRows<SftRow>(solvers!.result!.dataset.dir);
    expect(rows.map((x) => [x.meta.agent, x.meta.source ?? null, x.meta.task_id])).toEqual([
      ['b', 'rationalized', 'cap'],
    ]);
    expect(stages).toContain('roles.solvers.recipe.rationalize: asking 1 reply each for 1 hard task(s)');
  });

  it('teacher: adds its verified replies, asked without a hint', async () => {
    const { built, plain, rows } = await build(
      '{ select: verified, teacher: { model: big, samples: 2 } }',
      (_req, i) => ({
        content: i === 0 ? 'ANSWER: Paris' : 'ANSWER: Marseille',
      }),
    );
    expect(server!.requests.map((r) => [r.model, hinted(r)])).toEqual([
      ['teacher-model', false],
      ['teacher-model', false],
    ]);
    expect(rows.filter((r) => r.meta.source === 'teacher').map((r) => r.messages.at(-1)!.content)).toEqual([
      'ANSWER: Paris',
    ]);
    expect(built.stats.counts).toMatchObject({ teacher: 1 });
    expect(built.manifest.hash).not.toBe(plain.manifest.hash);
    expect(built.stats.dropped).toMatchObject({ teacher_wrong: 1 });
  });

  it('train builds the dataset with them and trains on it', async () => {
    const trainYaml = `, base_model: ./base, script: ${TRAINER}, gates: { min_examples: 2, min_categories: 1 }`;
    const loaded = await project(
      '{ select: verified, teacher: { model: big } }',
      () => ({ content: 'ANSWER: Paris' }),
      trainYaml,
    );
    const stages: string[] = [];
    const r = await withRuntime(loaded, (rt) =>
      train(rt, { algo: 'sft', maxSteps: 1, onStage: (m) => stages.push(m) }),
    );
    expect(r.dataset.rows).toBe(2);
    const rows = readRows<SftRow>(r.dataset.dir);
    expect(rows.map((x) => x.meta.source ?? 'verified')).toEqual(['verified', 'teacher']);
    expect(stages).toContain('train.sft.teacher: asking 1 reply each for 1 hard task(s)');
  });

  it('a teacher no call reaches is an error naming the key; some failed calls only leave fewer rows', async () => {
    const failing = build('{ select: verified, teacher: { model: big, samples: 2 } }', () => ({
      status: 400,
      body: { error: { message: 'no such model' } },
    }));
    await expect(failing).rejects.toThrow(/train\.sft\.teacher: every call failed \(models\.big: .*\)/);
    await server!.close();
    const { built, rows } = await build('{ select: verified, teacher: { model: big, samples: 2 } }', (_req, i) =>
      i === 0 ? { status: 400, body: { error: { message: 'no such model' } } } : { content: 'ANSWER: Paris' },
    );
    expect(rows.filter((r) => r.meta.source === 'teacher')).toHaveLength(1);
    expect(built.stats.dropped).toMatchObject({ teacher_call_failed: 1 });
  });

  it('with neither key the dataset is what it was: no calls, the same rows and hash', async () => {
    for (const sft of ['{ select: verified }', '{ select: verified, rationalize: { enabled: false } }']) {
      const { built, plain, rows } = await build(sft, () => ({ content: RATIONALE }));
      expect(server!.requests).toHaveLength(0);
      expect(built.manifest.hash).toBe(plain.manifest.hash);
      expect(built.stats).toEqual(plain.stats);
      expect(rows.map((r) => r.meta.source)).toEqual([undefined]);
      await server!.close();
      server = undefined;
    }
  });

  it('refuses the keys without select verified, and an unknown teacher model, naming the field', () => {
    const load = (sft: string) => () =>
      loadConfig({
        cwd: tempDir({
          'massgen-rl.yaml': `models:\n  mine: { model: smol, base_url: http://x/v1 }\nagents:\n  - { id: a, model: mine }\ntrain: { sft: ${sft} }\n`,
        }),
      });
    expect(load('{ rationalize: {} }')).toThrow(/train\.sft\.rationalize.*select: verified/s);
    expect(load('{ select: verified, teacher: { model: nope } }')).toThrow(ConfigError);
    expect(load('{ select: verified, teacher: { model: nope } }')).toThrow(/teacher\.model.*unknown model "nope"/s);
  });
});
