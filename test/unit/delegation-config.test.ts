import { describe, expect, it } from 'vitest';
import { delegationFromConfig } from '../../src/orchestrator/delegation.js';
import { configIn, configIssues } from '../helpers.js';

describe('orchestrator.delegation config', () => {
  it('is absent unless given, and fills its defaults when given', () => {
    expect(configIn('').config.orchestrator.delegation).toBeUndefined();
    expect(delegationFromConfig(configIn('').config.orchestrator.delegation)).toBeNull();
    const c = configIn('orchestrator:\n  delegation: { enabled: true }\n').config.orchestrator.delegation;
    expect(c).toEqual({ enabled: true, max_depth: 1, max_delegations: 2, max_child_tokens: 4000, shape: 'team' });
    expect(
      delegationFromConfig(
        configIn(
          'orchestrator:\n  delegation: { shape: solo, max_depth: 2, max_delegations: 5, max_child_tokens: 900 }\n',
        ).config.orchestrator.delegation,
      ),
    ).toEqual({ enabled: false, shape: 'solo', maxDepth: 2, maxDelegations: 5, maxChildTokens: 900 });
  });

  it('reports bad values by their path, and a configured tool named delegate when delegation is on', () => {
    const issues = configIssues(
      'orchestrator:\n  delegation: { max_depth: 0, max_delegations: 1.5, shape: tree, budget: 3 }\n',
    );
    expect(issues.map((i) => i.split(':')[0])).toEqual(
      expect.arrayContaining([
        'orchestrator.delegation.max_depth',
        'orchestrator.delegation.max_delegations',
        'orchestrator.delegation.shape',
        'orchestrator.delegation.budget',
      ]),
    );
    const tool = 'tools:\n  delegate: { type: command, command: [echo, hi] }\n';
    expect(configIssues(`${tool}orchestrator:\n  delegation: { enabled: true }\n`)).toEqual([
      expect.stringMatching(
        /^tools\.delegate: orchestrator\.delegation gives every agent a tool named delegate: rename this tool/,
      ),
    ]);
    expect(configIn(`${tool}orchestrator:\n  delegation: { enabled: false }\n`).config.tools.delegate).toBeDefined();
  });
});
