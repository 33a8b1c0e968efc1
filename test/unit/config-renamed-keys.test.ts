import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { CYCLE_STATE } from '../../src/scheduler/stage-records.js';
import { configIn, tempDir } from '../helpers.js';

describe("prompt optimization's old name, apo", () => {
  it('moves the apo section to prompt_opt and the apo loop step to prompt_opt, with a line naming both', () => {
    const { config, deprecations } = configIn(
      'apo:\n  rounds: 2\n  budget: { rollouts: 9 }\nloop:\n  steps: [collect, apo, eval]\n',
    );
    expect(config.prompt_opt).toMatchObject({ rounds: 2, budget: { rollouts: 9, wall_min: 60 } });
    expect(config).not.toHaveProperty('apo');
    expect(config.loop.steps).toEqual(['collect', 'prompt_opt', 'eval']);
    expect(deprecations).toEqual([
      'apo is deprecated: use prompt_opt (the same keys)',
      'loop.steps: apo is deprecated: use prompt_opt',
    ]);
  });

  it('lets prompt_opt win when both are set, and says so', () => {
    const { config, deprecations } = configIn('apo:\n  rounds: 2\nprompt_opt:\n  rounds: 5\n');
    expect(config.prompt_opt.rounds).toBe(5);
    expect(deprecations).toEqual([
      'apo is deprecated: use prompt_opt (the same keys); prompt_opt is set too, so apo is ignored',
    ]);
  });

  it('takes --set apo.* and a loop.steps override with apo under the new names', () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'project: { name: t }\n' });
    const { config, deprecations } = loadConfig({ cwd: dir, overrides: ['apo.rounds=3', 'loop.steps=[apo,eval]'] });
    expect(config.prompt_opt.rounds).toBe(3);
    expect(config.loop.steps).toEqual(['prompt_opt', 'eval']);
    expect(deprecations).toEqual([
      '--set apo.rounds is deprecated: use --set prompt_opt.rounds',
      'loop.steps: apo is deprecated: use prompt_opt',
    ]);
  });

  it('reads a cycle saved with an apo stage as its prompt_opt stage', () => {
    const saved = {
      cycle: 1,
      started_at: 1,
      stages: { apo: { status: 'done', started_at: 2, apo_run_id: 'tr_1', candidate_set: 'rs_1' } },
    };
    const state = CYCLE_STATE.parse(saved);
    expect(state.stages).toEqual({
      prompt_opt: { status: 'done', started_at: 2, training_run_id: 'tr_1', candidate_set: 'rs_1' },
    });
  });
});
