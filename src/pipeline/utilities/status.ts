import type { Runtime } from '../../runtime/runtime.js';
import type { Resource, RunRecord, StoreStats } from '../../store/index.js';
import { curriculumStatus, type SuiteCurriculum } from '../collect/curriculum.js';
import { stageInfo } from '../deploy/canary-stages.js';
import { showSet, type SetDetail } from './resources.js';

export interface StatusReport {
  config: string;
  project: string;
  store: StoreStats | null;
  latest: { collect: RunRecord[]; training: RunRecord[]; loop: RunRecord[] };
  production: Resource[];
  /** The production set, agent by agent, each resource traced to what made it (resources show gives the full trace). */
  productionSet: SetDetail | null;
  canary: CanaryStatus | null;
  /** tasks.curriculum on: each suite's level and production's success at it; null when it is off. */
  curriculum: SuiteCurriculum[] | null;
  evaluations: {
    id: string;
    status: string;
    baseline: number | null;
    candidate: number | null;
    passed: boolean | null;
    startedAt: number;
  }[];
}

/** What one arm served since the canary's stage began. */
export interface ArmActivity {
  /** Collect's and the gateway's rollouts; the gateway's sessions among them; the mean of their rewards so far. */
  rollouts: number;
  sessions: number;
  rewarded: number;
  meanReward: number | null;
}

/** The running canary: its share of the traffic, its deploy.rollout stage, and each arm since the stage began. */
export interface CanaryStatus {
  version: number;
  fraction: number | null;
  stage: { stage: number; of: number } | null;
  /** Epoch ms: when its current stage (its share) began. */
  since: number;
  arms: { production: ArmActivity; canary: ArmActivity };
}

export function getStatus(rt: Runtime): StatusReport {
  const base = {
    config: rt.loaded.file ?? '<embedded defaults>',
    project: rt.config.project.name,
    curriculum: curriculumStatus(rt),
  };
  if (!rt.storeExists()) {
    return {
      ...base,
      store: null,
      latest: { collect: [], training: [], loop: [] },
      production: [],
      productionSet: null,
      canary: null,
      evaluations: [],
    };
  }
  const store = rt.existingStore();
  return {
    ...base,
    store: store.stats(),
    latest: {
      collect: store.collectRuns.latest(5),
      training: store.trainingRuns.latest(5),
      loop: store.loopRuns.latest(5),
    },
    production: store.resources.listProduction(),
    productionSet: store.sets.pointer('production') ? showSet(rt, 'production') : null,
    canary: canaryOf(rt),
    evaluations: store.evaluations.runs({ limit: 5 }).map((e) => {
      const version = (id: string) => store.sets.get(id)?.version ?? null;
      return {
        id: e.id,
        status: e.status,
        baseline: version(e.baselineSet),
        candidate: version(e.candidateSet),
        passed: typeof e.summary?.passed === 'boolean' ? e.summary.passed : null,
        startedAt: e.startedAt,
      };
    }),
  };
}

function canaryOf(rt: Runtime): StatusReport['canary'] {
  const store = rt.existingStore();
  const p = store.sets.pointer('canary');
  const set = p && store.sets.get(p.setId);
  if (!set) return null;
  const production = store.sets.pointer('production');
  const none = { rollouts: 0, sessions: 0, rewarded: 0, meanReward: null };
  return {
    version: set.version,
    fraction: p.fraction,
    stage: p.fraction === null ? null : stageInfo(rt.config, p.fraction),
    since: p.updatedAt,
    arms: {
      production: production ? store.rollouts.setActivity(production.setId, p.updatedAt) : none,
      canary: store.rollouts.setActivity(set.id, p.updatedAt),
    },
  };
}
