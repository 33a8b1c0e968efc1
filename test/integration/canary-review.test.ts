import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { reviewProduction } from '../../src/pipeline/review/review.js';
import { getStatus } from '../../src/pipeline/utilities/status.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { tempDir } from '../helpers.js';
import { freshPostgresUrl } from '../support/postgres.js';

const YAML = `models:
  remote: { base_url: "http://127.0.0.1:9/v1", model: m }
agents:
  - { id: a, model: remote }
deploy:
  rollout: [0.1, 0.5, 1.0]
  canary: { min_rollouts: 5 }
  gates: { ci_lower_above_zero: false }
`;

/** A project with a production set and a candidate that differs in its agent's weights. */
function project(extra = '') {
  const dir = tempDir({ 'massgen-rl.yaml': YAML + extra });
  const rt = new Runtime(loadConfig({ cwd: dir, env: {} }));
  const production = syncProduction(rt, 'cli');
  const store = rt.store();
  const w = store.resources.add({ kind: 'weight', name: 'smol', path: dir, metadata: { adapter: true } });
  const agents = { a: { ...production.members.agents.a!, weights: w.id } };
  const candidate = store.sets.add({ ...production.members, agents }, { kind: 'manual' }, production.id);
  /** Captured sessions of a set, each with its reward (gateway rollouts, as the gateway writes them). */
  const sessions = (setId: string, rewards: number[]) => {
    for (const r of rewards) {
      const id = store.rollouts.start({ source: GATEWAY_SOURCE, metadata: { gateway: true }, resourceSetId: setId });
      store.rollouts.finish(id, { status: 'completed', totalReward: r });
    }
  };
  return { rt, store, production, candidate, sessions };
}

const tick = () => new Promise((r) => setTimeout(r, 5));
const audits = (p: ReturnType<typeof project>) =>
  p.store.audit.list({ limit: 20 }).map((a) => ({ action: a.action, fraction: a.detail.fraction }));

describe('review with deploy.rollout', () => {
  it('advances the canary stage by stage on captured rewards, each advance audited, and promotes it at the last', async () => {
    const p = project();
    try {
      const started = await deploy(p.rt, { candidate: `set:${p.candidate.version}`, canary: true, force: true });
      expect(started.action).toBe('canary started');
      expect(p.store.sets.pointer('canary')).toMatchObject({ setId: p.candidate.id, fraction: 0.1 });
      await tick();
      p.sessions(p.production.id, [0.4, 0.5, 0.6, 0.5, 0.5, 0.4]);
      p.sessions(p.candidate.id, [0.7, 0.8]);
      expect((await reviewProduction(p.rt, 'cli')).canary).toMatchObject({ verdict: 'waiting', rollouts: 2 });
      p.sessions(p.candidate.id, [0.8, 0.9, 0.7]);
      const r1 = await reviewProduction(p.rt, 'cli');
      expect(r1.canary).toMatchObject({ verdict: 'advanced', fraction: 0.5, stage: { stage: 2, of: 3 } });
      expect(p.store.sets.pointer('canary')?.fraction).toBe(0.5);
      // the new stage counts its own rollouts from its start
      const status = getStatus(p.rt).canary!;
      expect(status).toMatchObject({ fraction: 0.5, stage: { stage: 2, of: 3 } });
      expect(status.arms.canary).toMatchObject({ rollouts: 0, sessions: 0, meanReward: null });
      expect((await reviewProduction(p.rt, 'cli')).canary).toMatchObject({ verdict: 'waiting', rollouts: 0 });
      await tick();
      p.sessions(p.production.id, [0.5, 0.5, 0.4, 0.6]);
      p.sessions(p.candidate.id, [0.8, 0.8, 0.9, 0.7, 0.8]);
      expect(getStatus(p.rt).canary!.arms).toMatchObject({
        production: { rollouts: 4, sessions: 4, rewarded: 4 },
        canary: { rollouts: 5, sessions: 5 },
      });
      expect(getStatus(p.rt).canary!.arms.canary.meanReward).toBeCloseTo(0.8);
      expect((await reviewProduction(p.rt, 'cli')).canary).toMatchObject({ verdict: 'advanced', fraction: 1 });
      await tick();
      // at the whole traffic production has no sessions: its rollouts before the stage are the baseline
      p.sessions(p.candidate.id, [0.8, 0.9, 0.8, 0.7, 0.8]);
      expect((await reviewProduction(p.rt, 'cli')).canary).toMatchObject({ verdict: 'promoted' });
      expect(p.store.sets.pointer('production')?.setId).toBe(p.candidate.id);
      expect(p.store.sets.pointer('canary')).toBeUndefined();
      expect(audits(p).slice(0, 4)).toEqual([
        { action: 'canary-promote', fraction: undefined },
        { action: 'canary-advance', fraction: 1 },
        { action: 'canary-advance', fraction: 0.5 },
        { action: 'canary-start', fraction: 0.1 },
      ]);
    } finally {
      await p.rt.close();
    }
  });

  it.each([
    ['SQLite', ''],
    ['PostgreSQL', 'pg'],
  ])('rolls the canary back on a significant drop of its captured rewards against production (%s)', async (_, db) => {
    const p = project(db ? `store: { url: "${freshPostgresUrl()}" }\n` : '');
    try {
      await deploy(p.rt, { candidate: `set:${p.candidate.version}`, canary: true, force: true });
      await tick();
      p.sessions(p.production.id, [0.8, 0.9, 0.7, 0.8, 0.9, 0.8, 0.7, 0.9]);
      p.sessions(p.candidate.id, [0.2, 0.3, 0.1, 0.2, 0.3]);
      const { arms } = getStatus(p.rt).canary!;
      expect(arms).toMatchObject({ production: { sessions: 8, rewarded: 8 }, canary: { rollouts: 5, sessions: 5 } });
      expect(arms.canary.meanReward).toBeCloseTo(0.22);
      const r = await reviewProduction(p.rt, 'cli');
      expect(r.canary).toMatchObject({ verdict: 'rolled back', fraction: 0.1 });
      expect(r.canary!.detail).toMatch(/drop 0\.593 \(limit 0\.05\), one-sided p 0\.00\d/);
      expect(p.store.sets.pointer('canary')).toBeUndefined();
      expect(p.store.sets.pointer('production')?.setId).toBe(p.production.id);
      const [last] = p.store.audit.list({ limit: 1 });
      expect(last).toMatchObject({ action: 'canary-rollback', beforeSet: p.candidate.id, afterSet: p.production.id });
      expect(getStatus(p.rt).canary).toBeNull();
    } finally {
      await p.rt.close();
    }
  });

  it('starts a canary without a fraction only under deploy.rollout', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': YAML.replace(/deploy:[\s\S]*/, '') });
    const rt = new Runtime(loadConfig({ cwd: dir, env: {} }));
    try {
      await expect(deploy(rt, { candidate: 'set:1', canary: true, force: true })).rejects.toThrow(
        /--canary needs a fraction/,
      );
      await expect(deploy(rt, { candidate: 'set:1', canary: 1, force: true })).rejects.toThrow(/between 0 and 1/);
    } finally {
      await rt.close();
    }
  });
});
