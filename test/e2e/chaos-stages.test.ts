import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { chaosTimeoutMs, MIN_FAULTS, runChaos, underFire } from '../support/chaos-run.js';
import { faultyBackend, type BackendFaults } from '../support/chaos.js';
import { TRAINER } from '../support/loop-project.js';
import { promptOptProject, promptOptScript } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

// The loop's other stages under the same fire as chaos-loop's (its rates, CHAOS_* from the environment): a cycle
// that collects, reviews the canary, trains a weight role (the stand-in trainer) and fits a bandit role's stop
// policy, searches the prompts (prompt_opt, its optimizer on the same backend), evaluates and deploys through
// a staged canary. CHAOS_STAGES_CYCLES (else CHAOS_CYCLES, else 2) cycles ended, CHAOS_SEED (48).
const CYCLES = Number(process.env.CHAOS_STAGES_CYCLES ?? process.env.CHAOS_CYCLES ?? 2);
const SEED = Number(process.env.CHAOS_SEED ?? 48);
const BUSY_MS = 1000;
const SEARCH =
  '  rounds: 2\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 24, optimizer_tokens: 5000 }\n';
const EXTRA = `store: { busy_timeout_ms: ${BUSY_MS} }
policies: { bootstrap: [stop] }
train:
  base_model: ./base
  script: ${TRAINER}
  save_steps: 1
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
roles:
  team: { agents: [a, b, c], weights: { lora: base }, recipe: { algo: sft, reward_threshold: null, max_steps: 2 } }
  router: { policies: [stop], recipe: { algo: bandit, min_decisions: 4 } }
loop: { steps: [collect, review, train, prompt_opt, eval, deploy], collect_n: 8 }
`;

describe('chaos: prompt optimization, a policy fit and a weight role under faults', () => {
  let server: ScriptedServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it(
    `${CYCLES} cycles through every stage end with every invariant held (seed ${SEED})`,
    async () => {
      const backend: BackendFaults = { refuseUntil: 0, hangUntil: 0, downUntil: 0 };
      server = await startScriptedServer(faultyBackend(promptOptScript({ delayMs: () => 60 }), backend));
      const p = promptOptProject(server.baseUrl, SEARCH, { tasks: 16, extra: EXTRA });
      fs.mkdirSync(path.join(p.dir, 'base'));
      fs.writeFileSync(path.join(p.dir, 'base', 'config.json'), '{"model_type": "llama"}');
      fs.writeFileSync(path.join(p.dir, 'base', 'model.safetensors'), 'x'.repeat(64));
      underFire(p.dir, 2, [['model: team-model }', 'model: team-model, lora: { line: base } }']]);
      const r = await runChaos({
        dir: p.dir,
        cycles: CYCLES,
        seed: SEED,
        backend,
        busyMs: BUSY_MS,
      });
      expect(r.violations).toEqual([]);
      expect(r.completed + r.failed).toBeGreaterThanOrEqual(CYCLES);
      expect(r.injected).toBeGreaterThanOrEqual(MIN_FAULTS);
      // every stage ran in a cycle that completed (a cycle failed by its trainer, killed or out of disk, ends at train)
      const steps = r.cycles.filter((c) => c.status === 'completed').flatMap((c) => Object.keys(c.state.stages));
      if (r.completed)
        expect(new Set(steps)).toEqual(new Set(['collect', 'review', 'train', 'prompt_opt', 'eval', 'deploy']));
    },
    chaosTimeoutMs(CYCLES),
  );
});
