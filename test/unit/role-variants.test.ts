import { describe, expect, it } from 'vitest';
import { roleChanged, withRoles } from '../../src/resources/role-variants.js';
import type { SetMembers } from '../../src/store/index.js';

const member = (prompt: string, weights: string | null) => ({
  prompt,
  weights,
  from_config: { prompt: false, weights: false },
});
const base: SetMembers = {
  agents: { a: member('p1', 'w1'), b: member('q1', 'w1'), c: member('r1', null) },
  policies: { routing: 'po1' },
  presenter: 'pp1',
  presenter_from_config: true,
};
const cand: SetMembers = {
  agents: { a: member('p1', 'w2'), b: member('q2', 'w1'), c: member('r1', null) },
  policies: { stop: 'po2' },
  presenter: 'pp2',
  presenter_from_config: false,
};

describe('leave-one-in sets', () => {
  it('sees a role as changed only where the candidate serves its part differently', () => {
    expect(roleChanged(base, cand, { agents: ['a'] })).toBe(true);
    expect(roleChanged(base, cand, { agents: ['c'] })).toBe(false);
    expect(roleChanged(base, cand, { agents: [], presenter: true })).toBe(true);
    expect(roleChanged(base, cand, { agents: [], policies: ['routing'] })).toBe(true);
    const flagsOnly = {
      ...base,
      agents: { ...base.agents, c: { ...member('r1', null), from_config: { prompt: true, weights: true } } },
    };
    expect(roleChanged(base, flagsOnly, { agents: ['c'] })).toBe(false);
  });

  it("takes the candidate's members for the listed roles and the baseline's for everything else", () => {
    const a = withRoles(base, cand, [{ agents: ['a'] }]);
    expect(a).toEqual({ ...base, agents: { ...base.agents, a: cand.agents.a } });
    const presenter = withRoles(base, cand, [{ agents: [], presenter: true, policies: ['routing', 'stop'] }]);
    expect(presenter).toEqual({
      agents: base.agents,
      policies: { stop: 'po2' },
      presenter: 'pp2',
      presenter_from_config: false,
    });
    expect(
      withRoles(base, cand, [{ agents: ['a', 'b', 'c'], presenter: true, policies: ['routing', 'stop'] }]),
    ).toEqual(cand);
  });
});
