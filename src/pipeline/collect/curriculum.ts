import type { RolloutSummary } from '../../rollouts/rollout.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { LevelChange, Store, SuiteCurriculum } from '../../store/index.js';
import { currentLevel, decideLevel, type SuiteLevels } from '../../tasks/curriculum.js';
import { suiteLevelOf } from '../../tasks/suites/define.js';
import type { Task } from '../../tasks/types.js';

export type { SuiteCurriculum } from '../../store/index.js';

/** What a collect's results did to the curriculum: the results recorded, and the suites that moved up. */
export interface CurriculumUpdate {
  recorded: number;
  advanced: LevelChange[];
}

/** The configured built-in suites, each once, in source order. */
function configuredSuites(rt: Runtime): string[] {
  return [...new Set(rt.config.tasks.sources.flatMap((s) => ('suite' in s ? [s.suite] : [])))];
}

/** Each configured suite's current level (start_level for a suite, or a store, without a level yet). */
export function suiteLevels(rt: Runtime): SuiteLevels {
  const stored = rt.storeExists() ? rt.existingStore().curriculum.levels() : new Map<string, LevelChange>();
  const cfg = rt.config.tasks.curriculum;
  return Object.fromEntries(configuredSuites(rt).map((s) => [s, currentLevel(stored.get(s)?.level, cfg)]));
}

/**
 * Records production's scored rollouts of a collect at each suite's current level (a canary's, a failed
 * orchestration's and an unscored answer's are not production's measured success), then moves up each suite
 * whose results pass the threshold. Only the results of the set production is now count: a deploy starts a new
 * tally, so an earlier set's successes or failures do not move the level. Levels change only here.
 */
export function recordCurriculum(
  rt: Runtime,
  store: Store,
  tasks: readonly Task[],
  rollouts: readonly RolloutSummary[],
  canaryIds: ReadonlySet<string>,
): CurriculumUpdate {
  const cfg = rt.config.tasks.curriculum;
  const levels = suiteLevels(rt);
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const results = rollouts.flatMap((r) => {
    const where = suiteLevelOf(r.taskId);
    if (!where || levels[where.suite] !== where.level) return [];
    if (r.status !== 'completed' || r.quality === null || canaryIds.has(r.id)) return [];
    const category = byId.get(r.taskId)?.category ?? null;
    const setId = store.rollouts.get(r.id)?.resourceSetId ?? null;
    return [{ rolloutId: r.id, ...where, category, success: r.quality === 1, setId }];
  });
  store.curriculum.addResults(results);
  const production = store.sets.pointer('production')?.setId;
  const advanced: LevelChange[] = [];
  if (!production) return { recorded: results.length, advanced };
  for (const [suite, level] of Object.entries(levels)) {
    const tally = store.curriculum.tally(suite, level, production);
    const decision = decideLevel({ suite, level, ...tally }, cfg);
    if (!decision.advance) continue;
    const detail = { trials: tally.trials, successes: tally.successes, categories: tally.categories };
    advanced.push(
      store.curriculum.setLevel({ suite, fromLevel: level, level: decision.level, reason: decision.reason, detail }),
    );
  }
  return { recorded: results.length, advanced };
}

export function curriculumStatus(rt: Runtime): SuiteCurriculum[] | null {
  if (!rt.config.tasks.curriculum.enabled) return null;
  const levels = suiteLevels(rt);
  const store = rt.storeExists() ? rt.existingStore() : null;
  const last = store?.curriculum.levels();
  const production = store?.sets.pointer('production')?.setId;
  return Object.entries(levels).map(([suite, level]) => {
    const tally = (production && store?.curriculum.tally(suite, level, production)) || {
      trials: 0,
      successes: 0,
      categories: [],
    };
    return {
      suite,
      level,
      ...tally,
      successRate: tally.trials ? tally.successes / tally.trials : null,
      lastChange: last?.get(suite) ?? null,
    };
  });
}
