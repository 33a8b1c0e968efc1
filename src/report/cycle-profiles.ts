import { LOOP_STEPS } from '../config/schema.js';
import type { Store } from '../store/index.js';
import { STAGE_PROFILE, type StageProfile } from '../util/stage-profile.js';

export interface CycleProfile {
  cycle: number;
  startedAt: number;
  stages: { stage: string; profile: StageProfile }[];
}

const CYCLES = 5;
type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Obj) : {});

/** The newest loop cycles' stage profiles, newest first; a cycle or stage recorded without one is left out. */
export function cycleProfiles(store: Store, limit = CYCLES): CycleProfile[] {
  return store.loopRuns.latest(limit).flatMap((run) => {
    const stages = obj(run.detail.stages);
    const profiled = LOOP_STEPS.flatMap((stage) => {
      const p = STAGE_PROFILE.safeParse(obj(stages[stage]).profile);
      return p.success ? [{ stage, profile: p.data }] : [];
    });
    const cycle = typeof run.detail.cycle === 'number' ? run.detail.cycle : 0;
    return profiled.length ? [{ cycle, startedAt: run.startedAt, stages: profiled }] : [];
  });
}
