import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  assertGates,
  buildDataset,
  checkGates,
  type DpoRow,
  type GrpoRow,
  type PpoRow,
  type SftRow,
} from '../../src/datasets/index.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { stableHash } from '../../src/util/hash.js';
import { readRows } from '../fixtures/datasets/team-rollouts.js';
import type { ScriptedServer } from '../support/scripted-server.js';
import { teamCollect } from '../support/team-collect.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('datasets from a real collect', () => {
  it('builds every algorithm from a store written by collect against a scripted endpoint', async () => {
    const team = await teamCollect();
    server = team.server;
    const { loaded } = team;
    expect(team.summary).toMatchObject({ completed: 3 });
    const store = openStore(loaded);
    try {
      const options = { weights: loaded.config.rewards.weights };
      const configHash = stableHash(loaded.config);
      const built = Object.fromEntries(
        await Promise.all(
          (['sft', 'grpo', 'dpo', 'ppo'] as const).map(
            async (algo) =>
              [
                algo,
                await buildDataset(store, {
                  algo,
                  dataDir: loaded.paths.dataDir,
                  options,
                  configHash,
                  gates: loaded.config.train.gates,
                }),
              ] as const,
          ),
        ),
      );

      for (const b of Object.values(built)) {
        expect(b.dir.startsWith(path.join(loaded.paths.dataDir, 'datasets'))).toBe(true);
        expect(b.manifest).toMatchObject({
          watermark: { from: 0, to: 3 },
          config_hash: configHash,
          rows: b.stats.rows,
        });
        expect(b.stats).toMatchObject({
          rollouts_scanned: 3,
          categories: expect.objectContaining({ arithmetic: expect.any(Number) }),
        });
      }
      const sft = readRows<SftRow>(built.sft!.dir);
      // Per rollout: a's answer (exact 1 + numeric 1 + peer_vote) and the presentation; b's 41 scores below the threshold.
      expect(sft.filter((r) => r.meta.kind === 'answer').map((r) => r.messages.at(-1)!.content)).toEqual([
        'ANSWER: 42',
        'ANSWER: 42',
        'ANSWER: 42',
      ]);
      expect(sft.filter((r) => r.meta.kind === 'presentation')).toHaveLength(3);
      expect(built.sft!.stats.dropped.below_threshold).toBe(3);

      const grpo = readRows<GrpoRow>(built.grpo!.dir);
      expect(grpo.length).toBeGreaterThanOrEqual(3);
      for (const g of grpo) {
        expect(g.completions.length).toBeGreaterThanOrEqual(2);
        expect(new Set(g.completions.map((c) => c.reward)).size).toBeGreaterThan(1);
        expect(
          g.completions.every(
            (c) => Array.isArray(c.token_ids) && Array.isArray(c.logprobs) && c.logprobs.length === c.token_ids.length,
          ),
        ).toBe(true);
        expect(g.completions.reduce((s, c) => s + c.advantage, 0)).toBeCloseTo(0, 9);
      }
      // The last round's votes: a and c for the winner, b for itself.
      expect(
        grpo.some((g) => g.completions.map((c) => `${c.meta.agent}:${c.reward}`).join(' ') === 'a:0.5 b:-0.25 c:0.5'),
      ).toBe(true);

      const dpo = readRows<DpoRow>(built.dpo!.dir);
      expect(
        dpo.filter((p) => p.meta.kind === 'in_rollout').map((p) => [p.chosen[0].content, p.rejected[0].content]),
      ).toEqual([
        ['42', '41'],
        ['42', '41'],
        ['42', '41'],
      ]);
      expect(dpo[0]!.prompt.map((m) => m.role)).toEqual(['system', 'user']);
      expect(dpo[0]!.margin).toBeGreaterThan(0);

      const ppo = readRows<PpoRow>(built.ppo!.dir);
      const rollouts = store.rollouts.list();
      expect(new Set(ppo.map((t) => t.meta.rollout_id))).toEqual(new Set(rollouts.map((r) => r.id)));
      for (const t of ppo) expect(t.return).toBe(rollouts.find((r) => r.id === t.meta.rollout_id)!.totalReward);

      expect(checkGates(built.ppo!.stats, loaded.config.train.gates).passed).toBe(true);
      expect(() => assertGates(built.dpo!.stats, { min_examples: 100, min_clean_share: 0, min_categories: 1 })).toThrow(
        /3 examples \(need ≥ 100\)/,
      );

      // Incremental: a second collect, then a build from the watermark sees only the new rollouts.
      await withRuntime(loaded, (rt) => collect(rt, { n: 1 }));
      const next = await buildDataset(store, {
        algo: 'sft',
        dataDir: loaded.paths.dataDir,
        options,
        sinceWatermark: built.sft!.watermark,
      });
      expect(next.manifest.watermark.from).toBe(3);
      expect(next.watermark).toBeGreaterThan(3);
      expect(readRows<SftRow>(next.dir).every((r) => !rollouts.some((o) => o.id === r.meta.rollout_id))).toBe(true);
      expect(fs.readdirSync(path.join(loaded.paths.dataDir, 'datasets')).filter((n) => n.startsWith('.tmp'))).toEqual(
        [],
      );
    } finally {
      store.close();
    }
  });
});
