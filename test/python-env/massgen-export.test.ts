import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { DEFAULT_SERVE_PORT } from '../../src/config/schema.js';
import type { MassgenConfig } from '../../src/interop/massgen/export.js';
import { deploy, rollback } from '../../src/pipeline/deploy/deploy.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { runCli, tempDir } from '../helpers.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { SAMPLE_QUESTION, teamScript, type TeamPlan } from '../support/massgen-team.js';
import { massgenVenv, runMassgen, validateMassgenConfig } from '../support/massgen.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const AGENTS = ['a', 'b', 'c'];
const PLAN: TeamPlan = {
  models: { a: 'a', b: 'b', c: 'c' },
  answers: { a: '42', b: '42, because 6 * 7 = 30 + 12.', c: '6 * 7 is 42.' },
  votesFor: 'b',
  presentation: (agent) => `6 * 7 = 42, presented by ${agent}.`,
};
/** Each prompt carries its agent's tag, so the scripted server knows who asks (all three ask for one model name). */
const tagOf = (req: ScriptedRequest) =>
  /\[member (\w)\]/.exec(String(req.messages.find((m) => m.role === 'system')?.content ?? ''))?.[1];

/**
 * A project whose agents run on one remote model at the scripted server, which serves the `base` line's
 * adapters by name (models.stub.lora), exporting production to MassGen after every switch.
 */
async function project() {
  const { script } = teamScript(PLAN);
  server = await startScriptedServer((req, i) => script({ ...req, model: tagOf(req) ?? `untagged ${req.model}` }, i));
  const yaml = `models:
  stub: { base_url: "${server.baseUrl}", model: base-model, lora: { line: base } }
prompts:
  pa: { text: "[member a] Answer with the number." }
  pb: { text: "[member b] Answer with the number and one line of reasoning." }
  pc: { text: "[member c] Answer in words." }
agents:
  - { id: a, model: stub, system_prompt: pa, temperature: 0.2, max_tokens: 300 }
  - { id: b, model: stub, system_prompt: pb, temperature: 0.5, max_tokens: 400 }
  - { id: c, model: stub, system_prompt: pc, temperature: 0.9, max_tokens: 500 }
orchestrator: { voting_sensitivity: balanced, answer_novelty_requirement: strict, max_new_answers_per_agent: 2, max_orchestration_restarts: 1, total_timeout_s: 120.5 }
deploy: { export_massgen: massgen/team.yaml }
`;
  const dir = tempDir({
    'massgen-rl.yaml': yaml,
    'massgen/README': 'MassGen configs',
    'adapter/adapter_config.json': '{}',
  });
  return { dir, loaded: loadConfig({ cwd: dir }) };
}

/** What MassGen 0.1.97 makes of the exported file: its own parsers, run on it in its venv. */
async function massgenReads(file: string) {
  const code = `import json, sys, yaml
from massgen.agent_config import AgentConfig, TimeoutConfig
from massgen.cli.config_parsing import _parse_coordination_config
cfg = yaml.safe_load(open(sys.argv[1]))
ac = AgentConfig()
ac.apply_orchestrator_config(cfg["orchestrator"])
coord = _parse_coordination_config(cfg["orchestrator"]["coordination"])
print(json.dumps({"voting_sensitivity": ac.voting_sensitivity, "answer_novelty_requirement": ac.answer_novelty_requirement,
  "max_new_answers_per_agent": ac.max_new_answers_per_agent, "max_orchestration_restarts": coord.max_orchestration_restarts,
  "orchestrator_timeout_seconds": TimeoutConfig.from_dict(cfg["timeout_settings"]).orchestrator_timeout_seconds}))`;
  const r = await execa(path.join(massgenVenv(), 'bin', 'python'), ['-c', code, file], {
    reject: false,
    env: { PYTHONWARNINGS: 'ignore', HOME: path.dirname(file) },
  });
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(String(r.stdout).trim().split('\n').at(-1)!);
}

describeWithMassgen('production exported as a MassGen config, run by the real MassGen', () => {
  it('deploys, exports, validates and runs: MassGen sends the deployed prompts to the deployed adapter at the served address', async () => {
    const { dir, loaded } = await project();
    const flagFile = path.join(dir, 'by-flag.yaml');
    const keyFile = path.join(dir, 'massgen', 'team.yaml');
    await withRuntime(loaded, (rt) => {
      const store = rt.store();
      syncProduction(rt);
      registerCheckpoint(store, {
        path: path.join(dir, 'adapter'),
        algo: 'sft',
        adapter: true,
        baseModel: './base',
        name: 'base',
      });
      store.resources.add({
        kind: 'prompt',
        name: 'pa',
        content: '[member a] Deployed: answer with the bare number.',
        metadata: { source: 'manual' },
      });
    });

    // Deploy the adapter, then the new prompt of agent a; the second deploy also writes --export-massgen.
    const first = await withRuntime(loaded, (rt) => deploy(rt, { candidate: 'resource:base@1', force: true }));
    expect(first.published?.massgen).toEqual([
      { file: keyFile, ok: true, detail: `MassGen config of set v${first.candidate.version}` },
    ]);
    expect(server!.adapters).toEqual(new Set(['base-v1']));
    const second = await withRuntime(loaded, (rt) =>
      deploy(rt, { candidate: 'pa@2', force: true, exportMassgen: flagFile }),
    );
    expect(second.published?.massgen.map((m) => [m.file, m.ok])).toEqual([
      [flagFile, true],
      [keyFile, true],
    ]);
    expect(fs.readFileSync(flagFile, 'utf8').replace(/ on \S+Z\./, '')).toBe(
      fs.readFileSync(keyFile, 'utf8').replace(/ on \S+Z\./, ''),
    );
    expect(fs.readdirSync(path.join(dir, 'massgen'))).toEqual(['README', 'team.yaml']); // no temporary file left behind

    const text = fs.readFileSync(keyFile, 'utf8');
    expect(text).toMatch(
      new RegExp(
        `^# Generated by massgen-rl from resource set v${second.candidate.version} \\(${second.candidate.id}\\) on \\d{4}-\\d\\d-\\d\\dT`,
      ),
    );
    const exported = parse(text) as MassgenConfig;
    const prompts = {
      a: '[member a] Deployed: answer with the bare number.',
      b: '[member b] Answer with the number and one line of reasoning.',
      c: '[member c] Answer in words.',
    };
    expect(exported.agents).toEqual(
      AGENTS.map((id, i) => ({
        id,
        system_message: prompts[id as 'a'],
        backend: {
          type: 'vllm',
          model: 'base-v1',
          base_url: server!.baseUrl,
          temperature: [0.2, 0.5, 0.9][i],
          max_tokens: [300, 400, 500][i],
        },
      })),
    );

    // MassGen validates it with no warning (it warns about every orchestrator key it does not know) ...
    const valid = await validateMassgenConfig(keyFile);
    expect(valid.exitCode, valid.stdout + valid.stderr).toBe(0);
    expect(valid.report).toMatchObject({ valid: true, errors: [], warnings: [] });
    // ... and its own parsers put every orchestrator setting where its orchestrator reads it.
    expect(await massgenReads(keyFile)).toEqual({
      voting_sensitivity: 'balanced',
      answer_novelty_requirement: 'strict',
      max_new_answers_per_agent: 2,
      max_orchestration_restarts: 1,
      orchestrator_timeout_seconds: 121,
    });

    // The export runs: every request MassGen sent went to the scripted server as the adapter, with the agent's settings.
    const before = server!.requests.length;
    const run = await runMassgen({ cwd: dir, configFile: keyFile, question: SAMPLE_QUESTION });
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    expect(run.egress).toEqual([]);
    expect(run.winner).toBe('b');
    expect(run.stdout).toContain(PLAN.presentation('b'));
    const sent = server!.requests.slice(before);
    expect(sent.length).toBeGreaterThanOrEqual(AGENTS.length * 2 + 1);
    expect(new Set(sent.map((q) => q.model))).toEqual(new Set(['base-v1']));
    for (const q of sent) {
      const agent = tagOf(q) as 'a' | 'b' | 'c';
      const system = String(q.messages.find((m) => m.role === 'system')!.content);
      expect(system).toContain(prompts[agent]);
      expect([q.temperature, q.max_tokens]).toEqual([
        { a: 0.2, b: 0.5, c: 0.9 }[agent],
        { a: 300, b: 400, c: 500 }[agent],
      ]);
    }
    expect(new Set(sent.map(tagOf))).toEqual(new Set(AGENTS));

    // A rollback rewrites the configured export: agent a is back on its config prompt.
    const back = await withRuntime(loaded, (rt) => rollback(rt, {}));
    expect(back.published.massgen).toEqual([
      { file: keyFile, ok: true, detail: `MassGen config of set v${back.after.version}` },
    ]);
    const after = parse(fs.readFileSync(keyFile, 'utf8')) as MassgenConfig;
    expect(after.agents[0]!.system_message).toBe('[member a] Answer with the number.');
    expect(after.agents[0]!.backend.model).toBe('base-v1');
  }, 240_000);

  it('the CLI: deploy --export-massgen writes relative to the cwd, resources export-massgen exports without deploying, and a refused export changes nothing', async () => {
    const { dir, loaded } = await project();
    await withRuntime(loaded, (rt) => {
      syncProduction(rt);
      registerCheckpoint(rt.store(), {
        path: path.join(dir, 'adapter'),
        algo: 'sft',
        adapter: true,
        baseModel: './base',
        name: 'base',
      });
    });
    const cwd = path.join(dir, 'massgen');
    const deployExporting = (file: string) =>
      runCli(
        ['deploy', '-c', '../massgen-rl.yaml', '--candidate', 'resource:base@1', '--force', '--export-massgen', file],
        { cwd },
      );
    const refused = await deployExporting('no-such-dir/team.yaml');
    expect(refused.exitCode, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`directory ${path.join(cwd, 'no-such-dir')} does not exist`);
    expect(fs.existsSync(path.join(cwd, 'team.yaml'))).toBe(false);
    expect(server!.adapters.size).toBe(0);

    const r = await deployExporting('flag.yaml');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`✓ MassGen config ${path.join(cwd, 'flag.yaml')}`);
    expect(r.stdout).toContain(`✓ MassGen config ${path.join(cwd, 'team.yaml')}`);
    expect(
      (parse(fs.readFileSync(path.join(cwd, 'flag.yaml'), 'utf8')) as MassgenConfig).agents[0]!.backend.model,
    ).toBe('base-v1');

    const e = await runCli(['--json', 'resources', 'export-massgen', 'standalone.yaml', 'set:1'], { cwd: dir });
    expect(e.exitCode, e.stderr).toBe(0);
    expect(JSON.parse(e.stdout)).toMatchObject({
      ok: true,
      file: path.join(dir, 'standalone.yaml'),
      set: { version: 1, roles: [] },
    });
    const v1 = parse(fs.readFileSync(path.join(dir, 'standalone.yaml'), 'utf8')) as MassgenConfig;
    expect(v1.agents.map((a) => a.backend.model)).toEqual(['base-model', 'base-model', 'base-model']);
    expect((await validateMassgenConfig(path.join(dir, 'standalone.yaml'))).exitCode).toBe(0);
    const p = await runCli(['resources', 'export-massgen', 'prod.yaml'], { cwd: dir });
    expect(p.exitCode, p.stderr).toBe(0);
    expect(p.stdout).toMatch(
      /✓ wrote .*prod\.yaml: MassGen config of set v\d+ \(production\)\n {2}a: base-v1 at http:\/\/127\.0\.0\.1:\d+\/v1/,
    );
  }, 120_000);
});

describe('resources export-massgen right after init --yes (the built CLI)', () => {
  it('exports the embedded defaults without a collect, creating the store and the base set, at the default serve port', async () => {
    // A provisioned built-in model (what `doctor --fix` leaves): the base set records its weights.
    const model = 'cache/models/smollm2-135m-instruct';
    const manifest = {
      name: 'smollm2-135m-instruct',
      source: 'test',
      gguf_sha256: '0',
      eos_token: '<e>',
      pad_token: '<p>',
      num_parameters: 1,
    };
    const dir = tempDir({
      [`${model}/config.json`]: '{}',
      [`${model}/massgen-rl-model.json`]: JSON.stringify(manifest),
    });
    const env = { MASSGEN_RL_CACHE_DIR: path.join(dir, 'cache') };
    const init = await runCli(['init', '--yes'], { cwd: dir, env });
    expect(init.exitCode, init.stderr).toBe(0);
    expect(fs.existsSync(path.join(dir, '.massgen-rl', 'store.sqlite'))).toBe(false);

    const r = await runCli(['resources', 'export-massgen', 'mg.yaml'], { cwd: dir, env });
    expect(r.exitCode, r.stderr).toBe(0);
    const url = `http://127.0.0.1:${DEFAULT_SERVE_PORT}/v1`;
    expect(r.stdout).toContain(`agent_a: smollm2-135m-instruct at ${url}`);
    const text = fs.readFileSync(path.join(dir, 'mg.yaml'), 'utf8');
    const mg = parse(text) as MassgenConfig;
    expect(mg.agents.map((a) => [a.id, a.backend.base_url])).toEqual([
      ['agent_a', url],
      ['agent_b', url],
      ['agent_c', url],
    ]);
    expect(text).toContain(`must be served at ${url}: massgen-rl serve --model local`);
    const sets = await runCli(['--json', 'resources', 'list'], { cwd: dir, env });
    expect(sets.exitCode, sets.stderr).toBe(0);
    expect(sets.stdout).toContain('"production"');
  }, 60_000);
});
