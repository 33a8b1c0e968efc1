import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { streamsCompletions } from '../../src/config/schema.js';
import { DEFAULT_ANSWERS, renderConfig } from '../../src/config/template.js';
import { UserError } from '../../src/errors.js';
import { configIn, tempDir } from '../helpers.js';

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('fills every section from the embedded defaults for an empty file', () => {
    const { config, paths, file } = configIn('');
    expect(file).toMatch(/massgen-rl\.yaml$/);
    expect(config.agents.map((a) => a.id)).toEqual(['agent_a', 'agent_b', 'agent_c']);
    expect(config.agents.every((a) => a.tool_mode === 'text' && a.model === 'local')).toBe(true);
    expect(config.models.local!.local!.weights).toBe('builtin:smollm2-135m-instruct');
    expect(config.orchestrator.max_action_retries).toBe(3);
    expect(paths.storePath).toBe(path.join(path.dirname(file!), '.massgen-rl', 'store.sqlite'));
  });

  it("gives the embedded default team its measured layout (independent, the first agent greedy); a team of one's own keeps the protocol layout", () => {
    const { config } = configIn('');
    expect(config.orchestrator.prompt_layout).toBe('independent');
    expect(config.agents.map((a) => a.temperature)).toEqual([0, 0.7, 0.7]);
    expect(configIn('orchestrator:\n  prompt_layout: answers\n').config.orchestrator.prompt_layout).toBe('answers');
    const own = configIn('agents:\n  - id: solo\n    model: local\n    tool_mode: text\n').config;
    expect(own.orchestrator.prompt_layout).toBeUndefined();
    // The init template writes the same team for a local model.
    const rendered = configIn(renderConfig(DEFAULT_ANSWERS)).config;
    expect(rendered.orchestrator.prompt_layout).toBe('independent');
    expect(rendered.agents.map((a) => a.temperature)).toEqual([0, 0.7, 0.7]);
  });

  it('gives the embedded default team its measured recipe (DPO on correctness pairs, 4 completions per decision) unless train.algo is set; set keys win', () => {
    const recipe = {
      pairs: 'correctness',
      loss_type: ['sigmoid', 'sft'],
      rationalize: { enabled: true, samples: 4, max_tasks: 64 },
      max_suite_share: 0.35,
      learning_rate: 2e-4,
      num_train_epochs: 2,
      per_device_train_batch_size: 4,
    };
    const { config } = configIn('');
    expect(config.train).toMatchObject({ algo: 'dpo', dpo: { ...recipe, max_pairs_per_task: 16 } });
    expect(config.train.sft).not.toHaveProperty('learning_rate');
    expect(config.collect.samples_per_turn).toBe(4);
    expect(config.eval.sequential.max_looks).toBe(3);
    expect(configIn('eval:\n  sequential: { max_looks: 1 }\n').config.eval.sequential.max_looks).toBe(1);
    const tuned = configIn(
      'train:\n  dpo: { max_pairs_per_task: 2, learning_rate: 0.001 }\ncollect:\n  samples_per_turn: 2\n',
    ).config;
    expect(tuned.train).toMatchObject({
      algo: 'dpo',
      dpo: { ...recipe, max_pairs_per_task: 2, learning_rate: 0.001 },
    });
    expect(tuned.collect.samples_per_turn).toBe(2);
    const chosen = configIn('train:\n  algo: grpo\n').config;
    expect(chosen.train).toMatchObject({ algo: 'grpo', dpo: { pairs: 'winner' } });
    expect(chosen.train.dpo).not.toHaveProperty('learning_rate'); // the trainer's default
    expect(chosen.collect.samples_per_turn).toBe(1);
    // A team of one's own gets the schema's defaults.
    const own = configIn('agents:\n  - id: solo\n    model: local\n    tool_mode: text\n').config;
    expect(own.train).toMatchObject({ algo: 'grpo', dpo: { pairs: 'winner' } });
    // The init template writes the same recipe for a local model; for a remote one, the selection alone.
    const rendered = configIn(renderConfig(DEFAULT_ANSWERS)).config;
    expect(rendered.train).toMatchObject({ algo: 'dpo', dpo: recipe });
    expect(rendered.collect.samples_per_turn).toBe(4);
    expect(rendered.eval.sequential.max_looks).toBe(3);
    const remote = configIn(
      renderConfig({
        ...DEFAULT_ANSWERS,
        endpoint: { kind: 'remote', baseUrl: 'http://localhost:8000/v1', model: 'qwen' },
      }),
    ).config;
    expect(remote.train).toMatchObject({
      algo: 'dpo',
      dpo: { pairs: 'correctness', learning_rate: 1e-5, num_train_epochs: 1 },
    });
    expect(remote.collect.samples_per_turn).toBe(1);
    expect(remote.eval.sequential.max_looks).toBe(1);
    const sft = configIn(renderConfig({ ...DEFAULT_ANSWERS, algo: 'sft' })).config;
    expect(sft.train).toMatchObject({ algo: 'sft', sft: { select: 'verified', learning_rate: 2e-4 } });
  });

  it('refuses the small-model layouts for agents that call tools natively, naming the agent', () => {
    const issues = issuesOf(() =>
      configIn(
        'orchestrator:\n  prompt_layout: independent\nagents:\n  - id: a\n    model: local\n    tool_mode: native\n',
      ),
    );
    expect(issues).toEqual([
      expect.stringMatching(
        /^agents\[0\]\.tool_mode: orchestrator\.prompt_layout independent is for text-mode agents.*\(massgen-rl\.yaml:\d+/,
      ),
    ]);
  });

  it('uses the embedded defaults when there is no config file and none was asked for', () => {
    const dir = tempDir();
    const loaded = loadConfig({ cwd: dir, env: {} });
    expect(loaded.file).toBeNull();
    expect(loaded.paths.dataDir).toBe(path.join(dir, '.massgen-rl'));
  });

  it('fails clearly when an explicit config file is missing (flag or MASSGEN_RL_CONFIG)', () => {
    const dir = tempDir();
    expect(() => loadConfig({ cwd: dir, configPath: 'nope.yaml', env: {} })).toThrow(
      /config file not found: .*nope\.yaml/,
    );
    expect(() => loadConfig({ cwd: dir, env: { MASSGEN_RL_CONFIG: 'other.yaml' } })).toThrow(UserError);
  });

  it('reports malformed YAML with file:line:col', () => {
    const issues = issuesOf(() => configIn('project:\n  name: [oops\n'));
    expect(issues[0]).toMatch(/^massgen-rl\.yaml:\d+:\d+: invalid YAML/);
  });

  it('reports every schema problem at once with path and location of the key', () => {
    const issues = issuesOf(() =>
      configIn(
        [
          'project:',
          '  name: demo',
          '  colour: blue',
          'collect:',
          '  concurrency: many',
          'orchestrator:',
          '  voting_sensitivity: harsh',
        ].join('\n'),
      ),
    );
    expect(issues).toEqual([
      'project.colour: unknown key (massgen-rl.yaml:3:3)',
      expect.stringMatching(/^collect\.concurrency: .*expected number.* \(massgen-rl\.yaml:5:16\)$/),
      expect.stringMatching(
        /^orchestrator\.voting_sensitivity: .*"lenient"\|"balanced"\|"strict" \(massgen-rl\.yaml:7:23\)$/,
      ),
    ]);
  });

  it('rejects unknown top-level keys and non-mapping documents', () => {
    expect(issuesOf(() => configIn('trainer:\n  algo: sft\n'))).toEqual(['trainer: unknown key (massgen-rl.yaml:1:1)']);
    expect(issuesOf(() => configIn('- a\n- b\n'))[0]).toMatch(/must be a mapping/);
  });

  it('checks cross-references and referenced files', () => {
    const issues = issuesOf(() =>
      configIn(
        [
          'prompts:',
          '  solver: { file: prompts/solver.md }',
          'agents:',
          '  - { id: a, model: missing }',
          '  - { id: a, model: local, tools: [grep] }',
          'tasks:',
          '  sources: [{ file: tasks.jsonl }]',
        ].join('\n'),
      ),
    );
    expect(issues).toEqual([
      expect.stringMatching(/^prompts\.solver\.file: file not found: .*prompts\/solver\.md \(massgen-rl\.yaml:2:19\)$/),
      'agents[0].model: unknown model "missing"; models: local (massgen-rl.yaml:4:21)',
      'agents[1].id: duplicate agent id "a" (massgen-rl.yaml:5:11)',
      'agents[1].tools[0]: unknown tool "grep"; no tools are defined (massgen-rl.yaml:5:36)',
      expect.stringMatching(/^tasks\.sources\[0\]\.file: file not found: .*tasks\.jsonl/),
    ]);
  });

  it('checks that orchestrator.presenter_prompt names a prompt', () => {
    const prompts = 'prompts:\n  solver: { text: Solve. }\n  presenter: { text: Present. }\n';
    expect(
      configIn(`${prompts}orchestrator:\n  presenter_prompt: presenter\n`).config.orchestrator.presenter_prompt,
    ).toBe('presenter');
    expect(configIn(prompts).config.orchestrator.presenter_prompt).toBeUndefined();
    let error: unknown;
    try {
      configIn(`${prompts}orchestrator:\n  presenter_prompt: presentr\n`);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as ConfigError).issues).toEqual([
      'orchestrator.presenter_prompt: unknown prompt "presentr"; prompts: solver, presenter (massgen-rl.yaml:5:21)',
    ]);
  });

  it('accepts referenced files that exist', () => {
    const { config } = configIn('prompts:\n  solver: { file: p.md }\n', { 'p.md': 'Be brief.' });
    expect(config.prompts.solver!.file).toBe('p.md');
  });

  it('interpolates ${ENV} with defaults and reports unset variables', () => {
    const yaml =
      'models:\n  m:\n    base_url: ${URL}\n    model: ${MODEL:-tiny}\nagents: [{ id: a, model: m }]\nprivacy:\n  redact_patterns: ["$${literal}"]\n';
    const { config } = configIn(yaml, {}, { URL: 'http://localhost:9000/v1' });
    expect(config.models.m).toMatchObject({ base_url: 'http://localhost:9000/v1', model: 'tiny' });
    expect(config.privacy.redact_patterns).toEqual(['${literal}']);
    expect(issuesOf(() => configIn(yaml, {}, {}))).toEqual([
      'models.m.base_url: environment variable URL is not set (use ${URL:-default} for a fallback) (massgen-rl.yaml:3:15)',
    ]);
  });

  it('applies --set overrides before validation and blames the flag', () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'collect:\n  concurrency: 2\n' });
    const ok = loadConfig({ cwd: dir, overrides: ['collect.concurrency=5', 'agents.0.temperature=0.1'] });
    expect(ok.config.collect.concurrency).toBe(5);
    expect(ok.config.agents[0]!.temperature).toBe(0.1);
    expect(() => loadConfig({ cwd: dir, overrides: ['collect.concurrency=lots'] })).toThrow(
      /collect\.concurrency: .* \(--set collect\.concurrency\)/,
    );
    expect(() => loadConfig({ cwd: dir, overrides: ['nonsense'] })).toThrow(/expected key\.path=value/);
  });

  it("streams the built-in server's completions by default, not a remote endpoint's, unless models.X.stream says", () => {
    const { config } = configIn(`models:
  local: { model: m, local: { weights: builtin:smollm2-135m-instruct } }
  remote: { model: m, base_url: http://127.0.0.1:9/v1 }
  local_off: { model: m, stream: false, local: { weights: builtin:smollm2-135m-instruct } }
  remote_on: { model: m, stream: true, base_url: http://127.0.0.1:9/v1 }
`);
    const streams = Object.fromEntries(Object.entries(config.models).map(([name, m]) => [name, streamsCompletions(m)]));
    expect(streams).toEqual({ local: true, remote: false, local_off: false, remote_on: true });
    expect(
      issuesOf(() => configIn('models:\n  local: { model: m, stream: sometimes, base_url: http://x/v1 }\n')),
    ).toEqual([expect.stringMatching(/models\.local\.stream/)]);
  });

  it('takes a list index of --set only in decimal digits, up to one past the end (a new item)', () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'agents:\n  - { id: a, model: local }\n  - { id: b, model: local }\n' });
    const ids = (set: string) => loadConfig({ cwd: dir, overrides: [set] }).config.agents.map((a) => a.id);
    expect(ids('agents.1.id=x')).toEqual(['a', 'x']);
    expect(() => ids('agents.2.id=c')).toThrow(/agents\[2\]\.model/);
    for (const index of ['-1', '1e0', '0x1', ' 1', '+1', '']) {
      const shown = index.replace('+', '\\+');
      const refused = new RegExp(`^--set agents\\.${shown}\\.id=x: "${shown}" is not a list index`);
      expect(() => ids(`agents.${index}.id=x`), index).toThrow(refused);
    }
    // A sparse list of a hundred million holes ran out of memory after half a minute.
    expect(() => ids('agents.100000000.id=x')).toThrow(
      /^--set agents\.100000000\.id=x: agents has 2 items: the index may be at most 2/,
    );
  });

  it('hashes equal configs equally regardless of key order', () => {
    const a = configIn('collect: { concurrency: 3, split: eval }\n');
    const b = configIn('collect: { split: eval, concurrency: 3 }\n');
    const c = configIn('collect: { split: eval, concurrency: 4 }\n');
    expect(a.hash).toBe(b.hash);
    expect(a.hash).not.toBe(c.hash);
  });
});

describe('init template', () => {
  it('renders configs that load cleanly, local and remote', () => {
    const local = configIn(renderConfig(DEFAULT_ANSWERS));
    expect(local.config.agents).toHaveLength(3);
    const remote = configIn(
      renderConfig({
        ...DEFAULT_ANSWERS,
        teamSize: 2,
        algo: 'dpo',
        suite: 'multi_step',
        endpoint: { kind: 'remote', baseUrl: 'http://localhost:8000/v1', model: 'qwen', apiKeyEnv: 'MY_KEY' },
      }),
    );
    expect(remote.config.models.main).toMatchObject({
      base_url: 'http://localhost:8000/v1',
      model: 'qwen',
      api_key_env: 'MY_KEY',
    });
    expect(remote.config.agents.map((a) => a.tool_mode)).toEqual(['native', 'native']);
    expect(remote.config.train.algo).toBe('dpo');
  });

  it('ships a JSON Schema that is up to date with the zod schema', async () => {
    const { z } = await import('zod');
    const { configSchema } = await import('../../src/config/schema.js');
    const shipped = JSON.parse(
      fs.readFileSync(new URL('../../schema/massgen-rl.schema.json', import.meta.url), 'utf8'),
    ) as Record<string, unknown>;
    const fresh = {
      ...z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }),
      title: 'massgen-rl configuration',
    };
    expect(shipped).toEqual(JSON.parse(JSON.stringify(fresh)));
  });
});
