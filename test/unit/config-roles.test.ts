import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configIn, configIssues } from '../helpers.js';

const TEAM = `models:
  small: { model: small, local: { weights: builtin:smollm2-135m-instruct } }
  gpt: { base_url: http://localhost:9/v1, model: gpt }
  served: { base_url: http://localhost:8/v1, model: base, lora: { line: solver } }
prompts: { solver: { text: Solve. }, critic: { text: Check. }, writer: { text: Write. } }
agents:
  - { id: a, model: small }
  - { id: b, model: small }
  - { id: c, model: gpt, system_prompt: critic }
  - { id: d, model: served, system_prompt: writer }
`;

const ROLES = `roles:
  solvers:
    agents: [a, b]
    weights: { lora: solver }
    recipe: { algo: grpo, num_generations: 4, learning_rate: 1.0e-5 }
  judge: { agents: [c] }
  presenter: { presenter: true, weights: { lora: presenter }, recipe: { algo: sft, reward_threshold: 1 } }
  router: { policies: [routing, stop], recipe: { algo: bandit, cost_per_1k_tokens: 0.2 } }
  prompts: { agents: [d], recipe: { algo: apo, rounds: 2 } }
`;

describe('roles config', () => {
  it('parses roles: members, weights, and each recipe with the keys and defaults of its section', () => {
    const { config } = configIn(TEAM + ROLES);
    const roles = config.roles!;
    expect(Object.keys(roles)).toEqual(['solvers', 'judge', 'presenter', 'router', 'prompts']);
    expect(roles.solvers).toEqual({
      agents: ['a', 'b'],
      presenter: false,
      delegate: false,
      policies: [],
      weights: { lora: 'solver' },
      // train.grpo's selection defaults, and the trainer's keys passed through as they are
      recipe: { algo: 'grpo', min_group_size: 2, on_policy: true, num_generations: 4, learning_rate: 1e-5 },
    });
    const { agents: _sftAgents, ...sftDefaults } = config.train.sft;
    expect(roles.presenter!.recipe).toEqual({ ...sftDefaults, algo: 'sft', reward_threshold: 1 });
    expect(roles.router!.recipe).toMatchObject({ algo: 'bandit', algorithm: 'linucb', cost_per_1k_tokens: 0.2 });
    expect(roles.prompts!.recipe).toMatchObject({ algo: 'apo', rounds: 2, edit: 'auto' });
    expect(roles.judge!.recipe).toBeUndefined();
  });

  it('changes nothing else: without roles the parsed config has no roles key and every other section is the same', () => {
    const without = configIn(TEAM).config;
    const withRoles = configIn(TEAM + ROLES).config;
    expect(Object.hasOwn(without, 'roles')).toBe(false);
    expect(Object.hasOwn(configIn('').config, 'roles')).toBe(false);
    const { roles, ...rest } = withRoles;
    expect(roles).toBeDefined();
    expect(rest).toEqual(without);
  });

  it('refuses malformed roles with the field named', () => {
    const issues = configIssues(`${TEAM}roles:
  x: { agents: [a], weights: { lora: l }, recipe: { algo: grpo, agents: [a] } }
  y: { weights: { lora: q } }
  z: { agents: [b], weights: { lora: q, model: small }, recipe: { algo: rl } }
  w: { agents: [c], recipe: { algo: bandit, learning_rate: 1 } }
`);
    expect(issues).toEqual([
      expect.stringMatching(/^roles\.x\.recipe\.agents: a role's members choose its calls/),
      expect.stringMatching(/^roles\.y: a role needs members: agents, presenter: true, delegate: true or policies/),
      expect.stringMatching(/^roles\.z\.weights: set exactly one of lora .* or model/),
      expect.stringMatching(/^roles\.z\.recipe\.algo: Invalid discriminator value.*'bandit' \| 'apo'/),
      // bandit and apo recipes are closed (no trainer passes keys on): a trainer's key is refused
      expect.stringMatching(/^roles\.w\.recipe\.learning_rate: unknown key/),
    ]);
  });

  it('claims each agent, the presenter, the delegated sub-tasks and each policy for one role', () => {
    const issues = configIssues(`${TEAM}roles:
  one: { agents: [a, zz, a], presenter: true, policies: [stop] }
  two: { agents: [a], presenter: true, delegate: true, policies: [stop], recipe: { algo: bandit } }
`);
    expect(issues).toEqual([
      expect.stringMatching(/^roles\.one\.agents\[1\]: unknown agent "zz"; agents: a, b, c, d/),
      expect.stringMatching(/^roles\.one\.agents\[2\]: agent "a" is listed twice/),
      expect.stringMatching(/^roles\.two\.agents\[0\]: agent "a" is already claimed by role "one"/),
      expect.stringMatching(/^roles\.two\.presenter: presenter: true is already claimed by role "one"/),
      expect.stringMatching(/^roles\.two\.delegate: there are no delegated sub-tasks: orchestrator\.delegation/),
      expect.stringMatching(/^roles\.two\.policies\[0\]: policy stop is already claimed by role "one"/),
      expect.stringMatching(/^roles\.two\.recipe\.algo: recipe bandit learns decisions only/),
    ]);
    const delegation = 'orchestrator:\n  delegation: { enabled: true }\n';
    expect(configIn(`${TEAM}${delegation}roles:\n  kids: { delegate: true }\n`).config.roles!.kids!.delegate).toBe(
      true,
    );
  });

  it('fits recipes to members and weights', () => {
    const issues = configIssues(`${TEAM}roles:
  remote: { agents: [c], weights: { lora: r }, recipe: { algo: sft, teacher: { model: nope } } }
  own: { agents: [a], weights: { model: gpt }, recipe: { algo: dpo } }
  bare: { agents: [b], recipe: { algo: ppo } }
  again: { agents: [d], weights: { lora: r }, recipe: { algo: grpo } }
  mixed: { presenter: true, policies: [tool], recipe: { algo: sft } }
  apo: { policies: [stop], recipe: { algo: apo, optimizer_model: nope } }
`);
    expect(issues).toEqual([
      expect.stringMatching(/^roles\.remote\.recipe\.teacher\.model: unknown model "nope"; models: small, gpt, served/),
      expect.stringMatching(/^roles\.remote\.recipe\.teacher: .* it needs roles\.remote\.recipe\.select: verified/),
      expect.stringMatching(/^roles\.remote\.weights: recipe sft trains weights, but models\.gpt is a remote endpoint/),
      expect.stringMatching(/^roles\.own\.weights\.model: agent "a" runs on models\.small: a role's agents run on its/),
      expect.stringMatching(/^roles\.own\.weights: recipe dpo trains weights, but models\.gpt is a remote endpoint/),
      expect.stringMatching(/^roles\.bare\.weights: recipe ppo trains weights: name them/),
      expect.stringMatching(/^roles\.again\.weights\.lora: models\.served runs adapters of line "solver" .*, not "r"/),
      expect.stringMatching(/^roles\.again\.weights: role "remote" trains lora r already/),
      expect.stringMatching(/^roles\.mixed\.policies: decisions are learned by recipe bandit, not sft/),
      expect.stringMatching(/^roles\.mixed\.weights: recipe sft trains weights: name them/),
      expect.stringMatching(/^roles\.apo\.policies: decisions are learned by recipe bandit, not apo/),
      expect.stringMatching(/^roles\.apo\.agents: recipe apo optimizes the system prompts of the role's agents/),
      expect.stringMatching(/^roles\.apo\.recipe\.optimizer_model: unknown model "nope"/),
    ]);
    // apo changes prompts by name: a prompt the role shares with an agent outside it would change that agent too
    expect(configIssues(`${TEAM}roles:\n  half: { agents: [a], recipe: { algo: apo } }\n`)).toEqual([
      expect.stringMatching(
        /^roles\.half\.agents: recipe apo optimizes .* prompt solver is also agent b's, outside the role: give/,
      ),
    ]);
    // A remote model that loads adapters (models.*.lora) can take a trained line; apo needs no weights.
    const ok = configIn(`${TEAM}roles:
  served: { agents: [d], weights: { lora: solver }, recipe: { algo: grpo } }
  remote: { agents: [c], recipe: { algo: apo } }
`).config;
    expect(Object.keys(ok.roles!)).toEqual(['served', 'remote']);
  });

  it('refuses an empty roles map, and sft recipes that leave a role without agents no rows', () => {
    expect(configIssues(`${TEAM}roles: {}\n`)).toEqual([
      expect.stringMatching(/^roles: name at least one role, or leave roles out/),
    ]);
    const pres = (recipe: string) =>
      configIssues(`${TEAM}roles:\n  p: { presenter: true, weights: { lora: p }, recipe: { algo: sft, ${recipe} } }\n`);
    expect(pres('select: verified')).toEqual([
      expect.stringMatching(/^roles\.p\.recipe\.select: verified rows are answers and samples/),
    ]);
    expect(pres('include_presentation: false')).toEqual([
      expect.stringMatching(/^roles\.p\.recipe\.include_presentation: a role without agents has no sft rows/),
    ]);
  });

  it('keeps a delegate-only role to ppo, and a presenter out of layouts without a presentation call', () => {
    const delegation = 'orchestrator:\n  delegation: { enabled: true }\n';
    expect(
      configIssues(
        `${TEAM}${delegation}roles:\n  kids: { delegate: true, weights: { lora: k }, recipe: { algo: sft } }\n`,
      ),
    ).toEqual([
      expect.stringMatching(/^roles\.kids\.recipe\.algo: sft rows come from answers, votes and presentations/),
    ]);
    const ppo = `${TEAM}${delegation}roles:\n  kids: { delegate: true, weights: { lora: k }, recipe: { algo: ppo } }\n`;
    expect(configIn(ppo).config.roles!.kids!.recipe!.algo).toBe('ppo');
    const text = TEAM.replace(/(- \{ id: \w, model: \w+(?:, system_prompt: \w+)?) \}/g, '$1, tool_mode: text }');
    expect(configIssues(`${text}orchestrator:\n  prompt_layout: answers\nroles:\n  p: { presenter: true }\n`)).toEqual([
      expect.stringMatching(/^roles\.p\.presenter: orchestrator\.prompt_layout answers makes no presentation/),
    ]);
  });
});

describe('docs/roles.md', () => {
  it('shows a config example that loads', () => {
    const page = fs.readFileSync(new URL('../../docs/roles.md', import.meta.url), 'utf8');
    const yaml = /```yaml\n([\s\S]*?)```/.exec(page)![1]!;
    const roles = configIn(yaml, {}, { API_KEY: 'x' }).config.roles!;
    expect(Object.keys(roles)).toEqual(['solvers', 'judge', 'presenter', 'helpers', 'router', 'critic']);
    expect(roles.helpers).toMatchObject({ delegate: true, recipe: { algo: 'ppo', credit: 'discounted' } });
  });
});
