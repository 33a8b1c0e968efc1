import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { deploy, rollback } from '../../src/pipeline/deploy/deploy.js';
import { evaluateRoleCredit } from '../../src/pipeline/evaluate/roles.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { trainRoles } from '../../src/pipeline/train/roles.js';
import { roleScopes } from '../../src/resources/role-variants.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { tempDir } from '../helpers.js';

// Roles on the real parts: the bundled model served by our llama.cpp server (one per distinct weights), real
// TRL SFT per role on CPU, each role's leave-one-in evaluation, a deploy and the rollback of one role, then a
// collect whose team runs on two role adapters and the base at once. The agents answer in text mode, as the other
// real-model tests of the pipeline do: native tool calls on role adapters are what roles-massgen-real-model runs.
const TRAINER = 'max_steps: 2, per_device_train_batch_size: 2, max_length: 384, save_steps: 0, learning_rate: 0.0001';
const CONFIG = `agents:
${['a', 'b', 'c'].map((x) => `  - { id: agent_${x}, model: local, tool_mode: text, implicit_answer: true, max_tokens: 48, temperature: 1.0 }`).join('\n')}
orchestrator: { max_action_retries: 1, max_rounds: 3, agent_timeout_s: 240, total_timeout_s: 600 }
tasks:
  sources: [{ suite: arithmetic, n: 4 }]
rewards:
  weights: { exact: 1, numeric: 1 }
collect: { concurrency: 2, split: all }
train:
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
roles:
  solvers: { agents: [agent_a, agent_b], weights: { lora: solvers }, recipe: { algo: sft, reward_threshold: null, ${TRAINER} } }
  checker: { agents: [agent_c], weights: { lora: checker }, recipe: { algo: sft, reward_threshold: null, ${TRAINER} } }
eval: { split: all, n: 2, seeds: 1, report: false }
`;

describe('roles on the bundled model', () => {
  it('collect → per-role train → per-role credit → deploy → rollback of one role → a mixed team collects', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': CONFIG });
    const load = () => loadConfig({ cwd: dir });
    const first = await withRuntime(load(), (rt) => collect(rt));
    expect(first.completed).toBe(4);

    const trained = await withRuntime(load(), (rt) => trainRoles(rt));
    expect(trained.roles.map((r) => [r.role, r.status, r.line])).toEqual([
      ['solvers', 'trained', 'solvers'],
      ['checker', 'trained', 'checker'],
    ]);
    const version = trained.candidateSet!.version;

    const credit = await withRuntime(load(), (rt) =>
      evaluateRoleCredit(rt, { candidate: `set:${version}`, roles: roleScopes(rt.config.roles!) }),
    );
    expect(credit.team.comparison.pairs).toBe(2);
    expect(credit.roles.map((r) => [r.role, r.changed])).toEqual([
      ['solvers', true],
      ['checker', true],
    ]);
    for (const r of credit.roles) {
      expect(r.summary!.comparison.pairs).toBe(2);
      expect(r.summary!.baseline.id).toBe(credit.team.baseline.id);
      expect(r.summary!.reused).toBe(2); // production's results, measured once for the team
    }

    const lines = await withRuntime(load(), async (rt) => {
      await deploy(rt, { candidate: `set:${version}`, force: true, reason: 'the test deploys the team' });
      await rollback(rt, { role: 'checker', reason: 'the checker alone goes back' });
      const store = rt.store();
      const production = syncProduction(rt);
      return ['agent_a', 'agent_b', 'agent_c'].map(
        (id) => store.resources.get(production.members.agents[id]!.weights!)!.name,
      );
    });
    expect(lines).toEqual(['solvers', 'solvers', 'smollm2-135m-instruct']);

    const mixed = await withRuntime(load(), (rt) => collect(rt, { n: 1 }));
    expect(mixed.completed).toBe(1);
  }, 1_200_000);
});
