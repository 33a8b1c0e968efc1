import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { heldOutRollout } from '../../src/trace/held-out.js';
import { configIn, tempDir } from '../helpers.js';

// The bundled model serves production, the candidate (the same files registered as the line's next
// version: a second server) and judges. A 135M judge is noisy and may favour a position: the test holds
// the structure and the bounds, not who wins.
const LINE = 'smollm2-135m-instruct';
const CONFIG = `models:
  smol: { model: ${LINE}, local: { weights: "builtin:${LINE}", max_batch_size: 2 } }
agents: [{ id: a1, model: smol, max_tokens: 24 }]
gateway: { holdout: 0.5 }
eval: { source: gateway, report: false, replay: { judge_model: smol, max_prompts: 2 } }
rewards: { judge: { max_retries: 0 } }
deploy: { gates: { min_pairs: 1 } }
`;

const QUESTIONS = ['What is 2 + 3?', 'Name a colour of the sky.', 'Say hello.'];

describe('eval --source gateway with the bundled model as served model and judge', () => {
  it('replays held-out captured calls on both servers and judges them in both orders', async () => {
    const loaded = configIn(CONFIG);
    const summary = await withRuntime(loaded, async (rt) => {
      const store = rt.store();
      const production = syncProduction(rt);
      const base = store.resources.get(production.members.agents.a1!.weights!)!;
      // the same files in a folder of their own: the line's next version
      const copy = tempDir();
      for (const f of fs.readdirSync(base.path!)) fs.symlinkSync(path.join(base.path!, f), path.join(copy, f));
      const next = store.resources.add({ kind: 'weight', name: LINE, path: copy });
      expect(next.version).toBeGreaterThan(base.version);
      let n = 0;
      for (const q of QUESTIONS) {
        let id = `ro_real${n++}`;
        while (!heldOutRollout(id, 0.5)) id = `ro_real${n++}`;
        store.rollouts.start({ id, source: GATEWAY_SOURCE, metadata: { client: 'loopback', session: id } });
        store.spans.append(id, [
          {
            type: 'prompt',
            name: 'chat',
            agent: 'a1',
            payload: {
              request: { model: 'smol', messages: [{ role: 'user', content: q }], max_tokens: 24 },
              response: { content: 'captured', tool_calls: [], finish_reason: 'stop' },
              gateway: { client: 'loopback', backend: 'smol', backend_model: LINE, stream: false, status: 200 },
            },
          },
        ]);
        store.rollouts.finish(id, { status: 'completed', tokens: 0, messages: 1, wallMs: 1 });
      }
      const s = await evaluate(rt, { candidate: `resource:${LINE}@${next.version}` });
      return { ...s, items: store.evaluations.items(s.evalRunId) };
    });
    const r = summary.replay!;
    expect(summary).toMatchObject({ source: 'gateway', status: 'completed', tasks: 2 });
    expect(r).toMatchObject({ prompts: 2, referenced: 0, answerFailures: 0, judgeModel: 'smol' });
    expect(r.judged).toBe(2);
    expect(r.wins + r.losses + r.ties).toBe(2);
    expect(r.agreement).not.toBeNull();
    expect(r.agreement!).toBeGreaterThanOrEqual(0);
    expect(r.agreement!).toBeLessThanOrEqual(1);
    expect(r.winRate!.mean).toBeGreaterThanOrEqual(0);
    expect(r.winRate!.mean).toBeLessThanOrEqual(1);
    expect(summary.items).toHaveLength(2);
    for (const item of summary.items) {
      expect(item.kind).toBe('judge');
      expect([0, 0.5, 1]).toContain(item.score);
      const d = item.detail as { baseline: { answer: string }; candidate: { answer: string } };
      expect(d.baseline.answer.length).toBeGreaterThan(0);
      expect(d.candidate.answer.length).toBeGreaterThan(0);
      // the same weights, greedy decoding and the same seed: the two servers answer alike
      expect(d.candidate.answer).toBe(d.baseline.answer);
    }
    const reward = summary.comparison.overall.find((m) => m.metric === 'reward')!;
    expect(reward.n).toBe(2);
    expect(reward.baseline).toBe(0.5);
  });
});
