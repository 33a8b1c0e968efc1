import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

describe.each(BACKENDS)('logged policy decisions in the store on %s', (backend) => {
  it("come with the rollout's verified correctness of its final answer (an agent's own right answer does not count), tokens and reward; eval and unfinished rollouts left out", () => {
    const store = openStoreOn(backend, tempDir());
    try {
      const decision = (policy: string) => ({
        type: 'coordination' as const,
        name: 'policy_decision',
        agent: null,
        payload: { policy, chosen: 'stop', propensity: 0.5 },
      });
      const add = (
        source: string,
        status: 'completed' | 'failed',
        rewards: { channel: string; family: string; value: number }[],
        total: number,
      ) => {
        const id = store.rollouts.start({ source, metadata: {} });
        store.spans.append(id, [decision('stop'), decision('routing'), decision('stop')]);
        store.rewards.add(id, rewards);
        store.rollouts.finish(id, { status, totalReward: total, tokens: 1200, toolCalls: 0, messages: 3, wallMs: 5 });
        return id;
      };
      const wrongFinal = add(
        'collect',
        'completed',
        [
          { channel: 'turn', family: 'exact', value: 1 },
          { channel: 'agent', family: 'numeric', value: 1 },
          { channel: 'rollout', family: 'exact', value: 0 },
          { channel: 'rollout', family: 'numeric', value: 0 },
        ],
        0.2,
      );
      const rightFinal = add(
        'collect',
        'completed',
        [
          { channel: 'rollout', family: 'exact', value: 0 },
          { channel: 'rollout', family: 'numeric', value: 1 },
        ],
        1.5,
      );
      const unverified = add('collect', 'completed', [{ channel: 'rollout', family: 'coordination', value: 0.3 }], 0.3);
      add('eval', 'completed', [{ channel: 'rollout', family: 'exact', value: 1 }], 1);
      add('collect', 'failed', [], 0);
      const rows = store.spans.policyDecisions('stop');
      expect(rows.map((r) => [r.rolloutId, r.seq, r.verified, r.totalReward, r.tokens])).toEqual([
        [wrongFinal, 1, 0, 0.2, 1200],
        [wrongFinal, 3, 0, 0.2, 1200],
        [rightFinal, 1, 1, 1.5, 1200],
        [rightFinal, 3, 1, 1.5, 1200],
        [unverified, 1, null, 0.3, 1200],
        [unverified, 3, null, 0.3, 1200],
      ]);
      expect(store.spans.policyDecisions('routing').map((r) => r.seq)).toEqual([2, 2, 2]);
    } finally {
      store.close();
    }
  });
});
