import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/load.js';
import { nextStage, rolloutProblem, stageOf, wholeTraffic } from '../../src/config/rollout-stages.js';
import { Arms } from '../../src/gateway/arms.js';
import type { ResourceSet, SetPointer, Store } from '../../src/store/index.js';
import { configIn } from '../helpers.js';

function issuesOf(yaml: string): string[] {
  try {
    configIn(yaml);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('deploy.rollout', () => {
  it('takes strictly increasing shares in (0, 1] ending at 1, and is unset by default', () => {
    expect(configIn('').config.deploy.rollout).toBeUndefined();
    expect(configIn('deploy: { rollout: [0.1, 0.5, 1.0] }').config.deploy.rollout).toEqual([0.1, 0.5, 1]);
    expect(configIn('deploy: { rollout: [1] }').config.deploy.rollout).toEqual([1]);
  });

  it('refuses a list that falls, repeats, leaves (0, 1] or stops short of 1.0, naming the field', () => {
    for (const [list, said] of [
      ['[0.5, 0.1, 1.0]', /stage 2 \(0.1\) must be above stage 1/],
      ['[0.1, 0.1, 1.0]', /stage 2 \(0.1\) must be above/],
      ['[0, 0.5, 1.0]', /stage 1 is 0: each stage must be a share in \(0, 1\]/],
      ['[0.1, 1.5]', /stage 2 is 1.5/],
      ['[0.1, 0.5]', /the last stage must be 1.0/],
      ['[]', /at least one stage/],
    ] as const) {
      const issues = issuesOf(`deploy: { rollout: ${list} }`);
      expect(issues.join('\n')).toMatch(said);
      expect(issues.join('\n')).toMatch(/deploy\.rollout/);
    }
  });

  it('finds the stage a fraction is in, the next share, and whole traffic', () => {
    const stages = [0.1, 0.5, 1];
    expect(rolloutProblem(stages)).toBeUndefined();
    expect([0.05, 0.1, 0.3, 0.5, 1].map((f) => stageOf(stages, f))).toEqual([-1, 0, 0, 1, 2]);
    expect([0.05, 0.1, 0.3, 0.5, 1].map((f) => nextStage(stages, f))).toEqual([0.1, 0.5, 0.5, 1, null]);
    expect(nextStage(stages, 0.1 + 1e-12)).toBe(0.5);
    expect([wholeTraffic(1), wholeTraffic(0.999)]).toEqual([true, false]);
  });
});

/** A store holding just the two pointers, counting its reads. */
function fakeStore() {
  const sets = new Map<string, ResourceSet>(
    ['rs_prod', 'rs_new', 'rs_other'].map((id, i) => [id, { id, version: i + 1 } as ResourceSet]),
  );
  const pointers = new Map<string, SetPointer>([['production', { setId: 'rs_prod', fraction: null } as SetPointer]]);
  let reads = 0;
  const store = {
    sets: {
      pointer: (role: string) => {
        reads++;
        return pointers.get(role);
      },
      get: (id: string) => sets.get(id),
    },
  } as unknown as Store;
  const setCanary = (setId: string | null, fraction = 0) => {
    if (setId) pointers.set('canary', { setId, fraction } as SetPointer);
    else pointers.delete('canary');
  };
  return { store, setCanary, reads: () => reads };
}

describe('Arms', () => {
  it('reads the pointers at most once per refreshMs and sends a fraction of sessions to the canary, monotone', () => {
    let t = 0;
    const f = fakeStore();
    const arms = new Arms(f.store, { idleMs: 1e9, refreshMs: 1000, now: () => t });
    f.setCanary('rs_new', 0.1);
    const keys = Array.from({ length: 4000 }, (_, i) => `s${i}`);
    const at10 = new Set(keys.filter((k) => arms.pick(k).name === 'canary'));
    // 2 pointer reads in the first refresh, none for the other 3,999 picks
    expect(f.reads()).toBe(2);
    expect(Math.abs(at10.size - 400)).toBeLessThan(4 * Math.sqrt(4000 * 0.1 * 0.9));
    f.setCanary('rs_new', 0.5);
    t += 999;
    expect(arms.current().canary?.fraction).toBe(0.1);
    t += 1;
    expect(arms.current().canary?.fraction).toBe(0.5);
    // the sessions seen at 0.1 keep their arms; new sessions fall in at 0.5, every 0.1 one of them too
    expect(keys.filter((k) => arms.pick(k).name === 'canary').length).toBe(at10.size);
    const fresh = new Arms(f.store, { idleMs: 1e9, now: () => t });
    const at50 = new Set(keys.filter((k) => fresh.pick(k).name === 'canary'));
    expect([...at10].every((k) => at50.has(k))).toBe(true);
    expect(Math.abs(at50.size - 2000)).toBeLessThan(4 * Math.sqrt(4000 * 0.25));
  });

  it('gives each arm its set; a canary that ends or is replaced sends its sessions to production, idle ones pick again', () => {
    let t = 0;
    const f = fakeStore();
    const changes: string[] = [];
    const arms = new Arms(f.store, {
      idleMs: 100,
      refreshMs: 0,
      now: () => t,
      onChange: (a, b) => changes.push(`${a.canary?.set.id ?? '-'}>${b.canary?.set.id ?? '-'}`),
    });
    f.setCanary('rs_new', 1);
    expect(arms.pick('x')).toMatchObject({ name: 'canary', set: { id: 'rs_new' } });
    f.setCanary('rs_other', 1);
    expect(arms.pick('x')).toMatchObject({ name: 'production', set: { id: 'rs_prod' } });
    expect(arms.pick('y')).toMatchObject({ name: 'canary', set: { id: 'rs_other' } });
    f.setCanary(null);
    expect(arms.pick('y')).toMatchObject({ name: 'production', set: { id: 'rs_prod' } });
    f.setCanary('rs_new', 1);
    // pinned to production for its life, until idle past idleMs
    expect(arms.pick('y').name).toBe('production');
    t += 101;
    expect(arms.pick('y').name).toBe('canary');
    arms.sweep();
    expect(arms.sessions).toBe(1);
    t += 101;
    arms.sweep();
    expect(arms.sessions).toBe(0);
    expect(changes).toEqual(['->rs_new', 'rs_new>rs_other', 'rs_other>-', '->rs_new']);
  });
});
