import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { complete, reconcile, withPolicy, withPrompt } from '../../src/resources/sets.js';
import type { Resource, ResourceSet, SetMembers } from '../../src/store/index.js';
import { ResourceSetRepository } from '../../src/store/resource-sets.js';
import { configIn } from '../helpers.js';

const AGENTS: SetMembers['agents'] = {
  a: { prompt: 'res_p1', weights: null, from_config: { prompt: true, weights: true } },
  b: { prompt: 'res_p2', weights: 'res_w1', from_config: { prompt: false, weights: true } },
};

const prompt = (id: string, name: string, version: number): Resource => ({
  id,
  kind: 'prompt',
  name,
  version,
  parentId: null,
  content: `${name} v${version}`,
  path: null,
  metadata: {},
  createdAt: 0,
});

const CONFIG = `
models:
  m: { base_url: "http://127.0.0.1:9/v1", model: m }
prompts: { solver: { text: Solve. }, critic: { text: Check. }, presenter: { text: Present. } }
agents:
  - { id: a, model: m }
  - { id: b, model: m, system_prompt: critic }
`;

describe("a resource set's presenter prompt", () => {
  it('leaves the serving hash of a set without a presenter as it was (stored evaluation results stay reusable)', () => {
    // Literals computed with the serving hash before sets could have a presenter.
    expect(ResourceSetRepository.servingHash({ agents: AGENTS })).toBe('8042f632b6211386');
    expect(ResourceSetRepository.servingHash({ agents: AGENTS, policies: { stop: 'res_pol1' } })).toBe(
      '2fbe8b48f29c9919',
    );
    expect(ResourceSetRepository.servingHash({ agents: AGENTS, policies: {} })).toBe('8042f632b6211386');
  });

  it('is part of what a set serves: another presenter, another serving hash; whether it follows the config is not', () => {
    const plain = ResourceSetRepository.servingHash({ agents: AGENTS });
    const p1 = ResourceSetRepository.servingHash({ agents: AGENTS, presenter: 'res_pp1', presenter_from_config: true });
    expect(p1).not.toBe(plain);
    expect(
      ResourceSetRepository.servingHash({ agents: AGENTS, presenter: 'res_pp1', presenter_from_config: false }),
    ).toBe(p1);
    expect(
      ResourceSetRepository.servingHash({ agents: AGENTS, presenter: 'res_pp2', presenter_from_config: true }),
    ).not.toBe(p1);
    const withPolicies = ResourceSetRepository.servingHash({
      agents: AGENTS,
      policies: { stop: 'res_pol1' },
      presenter: 'res_pp1',
    });
    expect(withPolicies).not.toBe(p1);
    expect(withPolicies).not.toBe('2fbe8b48f29c9919');
  });

  it('withPrompt swaps the presenter for a new version of the presenter prompt, and only the presenter', () => {
    const { config } = configIn(`${CONFIG}orchestrator: { presenter_prompt: presenter }\n`);
    const base: SetMembers = {
      agents: AGENTS,
      policies: { stop: 'res_pol1' },
      presenter: 'res_pp1',
      presenter_from_config: true,
    };
    const swapped = withPrompt(base, config, prompt('res_pp2', 'presenter', 2));
    expect(swapped).toEqual({
      agents: AGENTS,
      policies: { stop: 'res_pol1' },
      presenter: 'res_pp2',
      presenter_from_config: false,
    });
    // An agent's prompt swaps that agent's prompt and keeps the presenter (and the policies).
    const solver = withPrompt(base, config, prompt('res_p9', 'solver', 9));
    expect(solver).toEqual({
      agents: { ...AGENTS, a: { prompt: 'res_p9', weights: null, from_config: { prompt: false, weights: true } } },
      policies: { stop: 'res_pol1' },
      presenter: 'res_pp1',
      presenter_from_config: true,
    });
    expect(withPolicy(swapped, { ...prompt('res_pol2', 'routing', 1), kind: 'policy' })).toMatchObject({
      presenter: 'res_pp2',
      presenter_from_config: false,
    });
  });

  it("withPrompt swaps both for a prompt that is an agent's system prompt and the presenter's", () => {
    const { config } = configIn(`${CONFIG}orchestrator: { presenter_prompt: critic }\n`);
    const swapped = withPrompt(
      { agents: AGENTS, presenter: 'res_p2', presenter_from_config: true },
      config,
      prompt('res_c2', 'critic', 2),
    );
    expect(swapped).toEqual({
      agents: { ...AGENTS, b: { ...AGENTS.b!, prompt: 'res_c2' } },
      presenter: 'res_c2',
      presenter_from_config: false,
    });
  });

  it('withPrompt refuses a prompt that is neither, naming both uses', () => {
    const { config } = configIn(`${CONFIG}orchestrator: { presenter_prompt: presenter }\n`);
    const swap = () => withPrompt({ agents: AGENTS, presenter: 'res_pp1' }, config, prompt('res_x', 'other', 1));
    expect(swap).toThrow(UserError);
    expect(swap).toThrow(
      'prompt "other" is neither the system prompt of an agent nor the presenter prompt; prompts in use: solver, critic (agents\' system prompts), presenter (orchestrator.presenter_prompt)',
    );
    const plain = configIn(CONFIG).config;
    expect(() => withPrompt({ agents: AGENTS }, plain, prompt('res_pp2', 'presenter', 2))).toThrow(
      "prompts in use: solver, critic (agents' system prompts), and no orchestrator.presenter_prompt is set",
    );
  });

  it("production follows the config's presenter prompt unless a deployed version replaced it; a config without one drops it", () => {
    const implied: SetMembers = { agents: AGENTS, presenter: 'res_pp3', presenter_from_config: true };
    expect(reconcile({ agents: AGENTS, presenter: 'res_pp1', presenter_from_config: true }, implied)).toMatchObject({
      presenter: 'res_pp3',
      presenter_from_config: true,
    });
    expect(reconcile({ agents: AGENTS, presenter: 'res_pp2', presenter_from_config: false }, implied)).toMatchObject({
      presenter: 'res_pp2',
      presenter_from_config: false,
    });
    expect(reconcile({ agents: AGENTS }, implied)).toMatchObject({ presenter: 'res_pp3', presenter_from_config: true });
    expect(reconcile(undefined, implied)).toMatchObject({ presenter: 'res_pp3', presenter_from_config: true });
    const dropped = reconcile(
      { agents: AGENTS, presenter: 'res_pp2', presenter_from_config: false },
      { agents: AGENTS },
    );
    expect(dropped).toEqual({ agents: AGENTS });
    expect(ResourceSetRepository.hash(dropped)).toBe(ResourceSetRepository.hash({ agents: AGENTS }));
  });

  it("complete keeps a stored set's presenter and gives one made before the config named a presenter the config's", () => {
    const set = (members: SetMembers): ResourceSet => ({
      id: 'rs_x',
      version: 3,
      parentId: null,
      members,
      hash: 'h',
      origin: { kind: 'manual' },
      createdAt: 0,
    });
    const implied: SetMembers = { agents: AGENTS, presenter: 'res_pp3', presenter_from_config: true };
    expect(
      complete(set({ agents: AGENTS, presenter: 'res_pp2', presenter_from_config: false }), implied),
    ).toMatchObject({ presenter: 'res_pp2', presenter_from_config: false });
    expect(complete(set({ agents: AGENTS }), implied)).toMatchObject({
      presenter: 'res_pp3',
      presenter_from_config: true,
    });
    expect(
      complete(set({ agents: AGENTS, presenter: 'res_pp2', presenter_from_config: false }), { agents: AGENTS }),
    ).toMatchObject({ presenter: 'res_pp2' });
    expect(complete(set({ agents: AGENTS }), { agents: AGENTS })).toEqual({ agents: AGENTS });
  });
});
