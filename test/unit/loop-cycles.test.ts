import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, cycleSteps, openCycle, readCycle } from '../../src/scheduler/cycles.js';
import { Store } from '../../src/store/index.js';
import { tempDir } from '../helpers.js';

// A cycle as versions whose collect reviewed production saved it: the verdicts sat in the collect record.
const OLD_CYCLE = {
  cycle: 3,
  started_at: 1_700_000_000_000,
  resumed: 0,
  stages: {
    collect: {
      status: 'done',
      started_at: 1,
      finished_at: 2,
      run_id: 'cr_1',
      tasks: 4,
      completed: 4,
      failed: 0,
      mean_reward: 0.5,
      tokens: 900,
      set: 2,
      canary: 'running',
      watch: null,
    },
    train: { status: 'running', started_at: 3, training_run_id: 'tr_1' },
  },
};

describe('the stages of a cycle', () => {
  it('keep their fixed order, and a list with collect but no review gets review after collect', () => {
    expect(cycleSteps(['deploy', 'collect', 'eval', 'train'])).toEqual({
      steps: ['collect', 'review', 'train', 'eval', 'deploy'],
      impliedReview: true,
    });
    expect(cycleSteps(['collect', 'review', 'eval'])).toEqual({
      steps: ['collect', 'review', 'eval'],
      impliedReview: false,
    });
    expect(cycleSteps(['prompt_opt', 'eval', 'deploy'])).toEqual({
      steps: ['prompt_opt', 'eval', 'deploy'],
      impliedReview: false,
    });
    expect(cycleSteps(['review'])).toEqual({ steps: ['review'], impliedReview: false });
  });
});

describe('a stored cycle', () => {
  it('written by an earlier version is read with each stage typed, its old fields kept', () => {
    const state = readCycle(OLD_CYCLE)!;
    expect(state.stages.collect).toMatchObject({ run_id: 'cr_1', mean_reward: 0.5, canary: 'running', watch: null });
    expect(state.stages.train).toEqual({ status: 'running', started_at: 3, training_run_id: 'tr_1' });
    expect(readCycle({ ...OLD_CYCLE, resumed: undefined })?.resumed).toBe(0);
  });

  it('that does not parse is none to resume: a wrong type, an unknown status, an older layout', () => {
    const bad = (stages: Record<string, unknown>) => readCycle({ ...OLD_CYCLE, stages });
    expect(bad({ train: { status: 'running', started_at: 3, training_run_id: 7 } })).toBeUndefined();
    expect(bad({ deploy: { status: 'halfway', started_at: 3 } })).toBeUndefined();
    expect(bad({ deploy: { status: 'done', started_at: 3, action: 'deployed' } })).toBeUndefined();
    expect(readCycle({ cycles: [OLD_CYCLE] })).toBeUndefined();
  });

  it('is resumed at its unfinished stage; one that does not parse is listed without stages and a new cycle starts', () => {
    const store = Store.open({ path: path.join(tempDir(), 'store.sqlite') });
    try {
      const old = store.loopRuns.start(OLD_CYCLE);
      const resumed = openCycle(store, ['collect', 'review', 'train', 'eval', 'deploy']);
      expect(resumed).toMatchObject({ id: old, resumed: true, state: { cycle: 3, resumed: 1 } });
      expect(resumed.state.stages.train?.training_run_id).toBe('tr_1');
      expect(resumed.state.earlier).toEqual([]);
      // a failed attempt taken up again keeps why it failed
      store.loopRuns.setDetail(old, { ...resumed.state, outcome: 'train failed: disk full' }, 'train');
      store.loopRuns.finish(old, 'failed', undefined, 'train failed: disk full');
      const again = openCycle(store, ['collect', 'review', 'train', 'eval', 'deploy']);
      expect(again).toMatchObject({
        id: old,
        state: { resumed: 2, earlier: [{ outcome: 'train failed: disk full' }] },
      });
      expect(again.state.outcome).toBeUndefined();
      // an attempt whose process died has no outcome, only the error the next process to open the store wrote
      store.loopRuns.finish(old, 'failed', undefined, 'interrupted: process 7 exited while this was running');
      const third = openCycle(store, ['collect', 'review', 'train', 'eval', 'deploy']);
      expect(third.state.earlier!.map((e) => e.outcome)).toEqual([
        'train failed: disk full',
        'interrupted: process 7 exited while this was running',
      ]);
      store.loopRuns.finish(old, 'failed', undefined, 'test');

      const broken = store.loopRuns.start({
        cycle: 4,
        started_at: 5,
        resumed: 0,
        stages: { eval: { status: 'done', started_at: 6, passed: 'yes' } },
      });
      const fresh = openCycle(store, ['eval']);
      expect(fresh).toMatchObject({ resumed: false, state: { cycle: 5, resumed: 0, stages: {} } });
      expect(fresh.id).not.toBe(broken);
      const listed = cycles(store, 3).find((c) => c.id === broken)!;
      expect(listed.state).toMatchObject({ cycle: 4, stages: {} });
    } finally {
      store.close();
    }
  });
});
