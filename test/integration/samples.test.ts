import { afterEach, describe, expect, it } from 'vitest';
import { buildDataset, type GrpoRow } from '../../src/datasets/index.js';
import { orchestrate } from '../../src/orchestrator/index.js';
import { openStore } from '../../src/runtime/store.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { readRows } from '../fixtures/datasets/team-rollouts.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { teamCollect } from '../support/team-collect.js';
import { baseConfig, MemorySink, noTools, shownLabels, team } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('collect.samples_per_turn', () => {
  it('asks every decision k times: k − 1 sample spans with the same request, which never act', async () => {
    let n = 0;
    server = await startScriptedServer((req) => {
      if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: '42' };
      // Main and sample calls alternate freely; whatever a sample says must not change coordination.
      return shownLabels(req).length ? { content: 'VOTE: agent1 | right' } : { content: `ANSWER: ${40 + (n++ % 3)}` };
    });
    const sink = new MemorySink();
    const agents = team(server.baseUrl, ['a', 'b'], { samples: 3 });
    const result = await orchestrate({
      task: 'What is 6 x 7?',
      team: agents,
      config: baseConfig,
      sink,
      tools: noTools,
      signal: new AbortController().signal,
    });
    expect(result.status).toBe('completed');
    const chats = sink.named('chat', 'prompt');
    const samples = sink.named('sample', 'prompt');
    expect(samples).toHaveLength(chats.length * 2);
    for (const chat of chats) {
      const p = chat.payload as PromptPayload;
      const mine = samples.filter(
        (s) => (s.payload as PromptPayload).turn_id === p.turn_id && (s.payload as PromptPayload).attempt === p.attempt,
      );
      expect(mine.map((s) => (s.payload as PromptPayload).sample_index).sort()).toEqual([1, 2]);
      for (const s of mine) expect((s.payload as PromptPayload).request).toEqual(p.request);
    }
    // The presentation is not sampled; usage counts every call.
    expect(sink.named('presentation', 'prompt')).toHaveLength(1);
    expect(result.usage.llmCalls).toBe(chats.length * 3 + 1);
  });

  it('gives every sample its own single-answer rewards, so each decision yields a GRPO group', async () => {
    const t = await teamCollect('', {}, ', samples_per_turn: 2');
    server = t.server;
    expect(t.summary.completed).toBe(3);
    const store = openStore(t.loaded);
    try {
      const rollout = store.rollouts.list()[0]!;
      const samples = store.spans
        .list(rollout.id)
        .filter(
          (s) =>
            s.name === 'sample' && !(s.payload as PromptPayload).cancelled && (s.payload as PromptPayload).response,
        );
      expect(samples.length).toBeGreaterThan(0);
      const rewards = store.rewards.list(rollout.id).filter((r) => samples.some((s) => s.seq === r.targetSeq));
      expect(new Set(rewards.map((r) => r.family))).toEqual(new Set(['exact', 'numeric']));
      expect(rewards.every((r) => r.channel === 'turn' && r.reason.startsWith('sample:'))).toBe(true);

      const built = await buildDataset(store, {
        algo: 'grpo',
        dataDir: t.loaded.paths.dataDir,
        options: { weights: t.loaded.config.rewards.weights },
      });
      const rows = readRows<GrpoRow>(built.dir);
      expect(rows.some((g) => g.completions.some((c) => c.meta.kind === 'sample'))).toBe(true);
    } finally {
      store.close();
    }
  });
});
