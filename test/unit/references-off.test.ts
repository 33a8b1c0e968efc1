import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { verifyingFamilies } from '../../src/config/sections/rewards.js';
import type { Comparison, MetricComparison } from '../../src/evaluation/compare.js';
import { checkGates } from '../../src/evaluation/gates.js';
import { settingsHash } from '../../src/evaluation/keys.js';
import { computeRewards } from '../../src/rewards/compute.js';
import { referenceCheck } from '../../src/rewards/reference-check.js';
import { ctxFor, mathOutcome, rewardsConfig } from '../fixtures/rewards/outcomes.js';
import { configIn, tempDir } from '../helpers.js';

const TEAM = 'models:\n  m: { model: x, base_url: http://h/v1 }\nagents:\n  - { id: a, model: m }\n';
const off = { ...rewardsConfig(), references: 'off' as const };

describe('rewards.references off: the config', () => {
  it('takes the label-free weights unless the file sets weights, whether off is in the file or set', () => {
    expect(configIn(`${TEAM}rewards: { references: off }\n`).config.rewards.weights).toEqual({
      agreement: 1,
      coordination: 0.2,
    });
    const dir = configIn(TEAM).paths.baseDir;
    const set = (overrides: string[]) => loadConfig({ cwd: dir, overrides }).config;
    expect(set(['rewards.references=off']).rewards.weights).toEqual({ agreement: 1, coordination: 0.2 });
    expect(set(['rewards.references=off', 'rewards.weights.peer_vote=0.5']).rewards.weights).toEqual({
      agreement: 1,
      coordination: 0.2,
      peer_vote: 0.5,
    });
    expect(verifyingFamilies(set(['rewards.references=off']).rewards)).toEqual(['agreement']);
    expect(verifyingFamilies(set([]).rewards)).toEqual(['exact', 'numeric']);
  });

  it("the default team's recipe comes without rationalized pairs or a suite cap when off, set or in the file", () => {
    const embedded = (overrides: string[]) => loadConfig({ cwd: tempDir(), overrides }).config;
    expect(embedded([]).train.dpo).toMatchObject({
      pairs: 'correctness',
      rationalize: { enabled: true },
      max_suite_share: 0.35,
    });
    const off = embedded(['rewards.references=off']).train.dpo;
    expect(off).toMatchObject({ pairs: 'correctness', loss_type: ['sigmoid', 'sft'], max_suite_share: 1 });
    expect(off.rationalize?.enabled ?? false).toBe(false);
    const inFile = configIn('rewards: { references: off }\n').config.train.dpo;
    expect([inFile.rationalize?.enabled ?? false, inFile.max_suite_share]).toEqual([false, 1]);
    const capped = embedded(['rewards.references=off', 'train.dpo.max_suite_share=0.5']).train.dpo;
    expect(capped.max_suite_share).toBe(0.5); // a key set still wins
  });

  it('refuses what needs the references, naming each field', () => {
    const bad = () =>
      configIn(
        `${TEAM}rewards: { references: off, weights: { exact: 1, f1: 0.5 } }\n`
          + 'train: { sft: { select: verified, rationalize: {} }, dpo: { pairs: correctness, rationalize: {} } }\n'
          + 'tasks: { curriculum: { enabled: true } }\n',
      );
    expect(bad).toThrow(/rewards\.weights\.agreement: rewards\.references is off, so agreement .* give it a weight/);
    expect(bad).toThrow(/rewards\.weights\.exact: exact compares answers with the reference, .* set it to 0/);
    expect(bad).toThrow(/rewards\.weights\.f1: f1 compares/);
    for (const key of ['train.sft.rationalize', 'train.dpo.rationalize', 'tasks.curriculum.enabled'])
      expect(bad).toThrow(new RegExp(`${key.replaceAll('.', '\\.')} checks answers against the references`));
  });

  it("refuses a role recipe's rationalize and teacher too, naming the recipe's keys", () => {
    const role = () =>
      configIn(
        'models:\n  m: { model: x, base_url: http://h/v1, lora: { line: solver, load_adapters: false } }\n'
          + 'agents:\n  - { id: a, model: m }\n  - { id: b, model: m }\n'
          + 'rewards: { references: off }\n'
          + 'roles:\n  solvers:\n    agents: [b]\n    weights: { lora: solver }\n'
          + '    recipe: { algo: sft, select: verified, rationalize: {}, teacher: { model: m } }\n',
      );
    for (const key of ['rationalize', 'teacher'])
      expect(role).toThrow(new RegExp(`roles\\.solvers\\.recipe\\.${key}: checks answers against the references`));
  });

  it('keeps stored evaluation results reusable while on, and apart from them while off', () => {
    const on = configIn(TEAM).config;
    const offConfig = configIn(`${TEAM}rewards: { references: off }\n`).config;
    expect(settingsHash(on)).toBe(settingsHash({ ...on, rewards: { ...on.rewards, references: 'on' } }));
    expect(settingsHash(offConfig)).not.toBe(
      settingsHash({ ...offConfig, rewards: { ...offConfig.rewards, references: 'on' } }),
    );
  });
});

describe('rewards.references off: scoring', () => {
  it('withholds the reference from every family', async () => {
    const weights = { exact: 1, numeric: 1, f1: 1, agreement: 1 };
    const withRefs = await computeRewards(ctxFor(mathOutcome()), weights);
    expect(Object.keys(withRefs.byFamily).sort()).toEqual(['agreement', 'exact', 'f1', 'numeric']);
    const without = await computeRewards(ctxFor(mathOutcome(), off), weights);
    expect(Object.keys(without.byFamily)).toEqual(['agreement']);
    expect(without.rewards.every((r) => r.family === 'agreement')).toBe(true);
  });

  it('checks the final answer against the withheld reference for the evaluation, and only while off', async () => {
    expect(await referenceCheck(mathOutcome(), off)).toBe(1);
    expect(await referenceCheck(mathOutcome({ finalAnswer: 'Final answer: 41' }), off)).toBe(0);
    expect(await referenceCheck(mathOutcome(), rewardsConfig())).toBeNull();
    expect(
      await referenceCheck(mathOutcome({ task: { ...mathOutcome().task!, reference: undefined } }), off),
    ).toBeNull();
  });
});

describe('rewards.references off: the reference_check gate', () => {
  const metric = (name: MetricComparison['metric'], wins: number, losses: number, n = 20): MetricComparison => ({
    metric: name,
    n,
    baseline: 0.5,
    candidate: 0.5 + (wins - losses) / n,
    diff: { mean: (wins - losses) / n, low: 0.01, high: 0.5, level: 0.95, resamples: 100 },
    counts: { wins, ties: n - wins - losses, losses },
    test: 'mcnemar',
    pValue: 1,
  });
  const gates = configIn(TEAM).config.deploy.gates;
  const cmp = (checked?: MetricComparison): Comparison => ({
    pairs: 20,
    overall: [metric('reward', 10, 0), metric('tokens', 0, 0), ...(checked ? [checked] : [])],
    categories: [],
  });
  const gate = (c: Comparison) => checkGates(c, 'reward', gates).find((g) => g.gate === 'reference_check');

  it('is there only when the evaluation checked references, and refuses a significant loss on them', () => {
    expect(gate(cmp())).toBeUndefined();
    // 5 of 5 discordant pairs lost: one-sided p = 1/32 < 0.05
    expect(gate(cmp(metric('checked', 0, 5)))).toMatchObject({ passed: false, threshold: 0.05 });
    expect(gate(cmp(metric('checked', 0, 5)))!.detail).toMatch(/0 won, 5 lost; one-sided exact p = 0\.031 ≥ 0\.05/);
    // 4 of 4 (p = 1/16) is not enough evidence; a gain never refuses
    expect(gate(cmp(metric('checked', 0, 4)))).toMatchObject({ passed: true });
    expect(gate(cmp(metric('checked', 6, 0)))).toMatchObject({ passed: true });
  });
});
