import { DIFFICULTIES } from '../config/schema.js';
import { currentLevel, type SuiteLevels } from './curriculum.js';
import { loadTasks, type TasksConfig } from './load.js';
import { Rng } from './prng.js';
import { selectTasks } from './split.js';
import { suiteLevelOf } from './suites/define.js';
import type { Difficulty, SplitSelector, SplitTask } from './types.js';

type Source = TasksConfig['sources'][number];

/**
 * The tasks a run draws with the curriculum on, before n. For a collect, each suite source gives its tasks of
 * the split at the suite's current level, with the `replay` share of the result drawn (seeded) from the levels
 * below, spread evenly through it; for an evaluation, its tasks of the split at every level up to the current
 * one, the levels taking turns, so that the first n tasks cover them all. Task files run as they are.
 */
export function curriculumTasks(
  config: TasksConfig,
  baseDir: string,
  levels: SuiteLevels,
  o: { split: SplitSelector; purpose: 'collect' | 'eval' },
): SplitTask[] {
  const cfg = config.curriculum;
  const sources = config.sources.flatMap((s): Source[] => {
    if (!('suite' in s)) return [s];
    const top = currentLevel(levels[s.suite], cfg);
    return DIFFICULTIES.filter((d) => d <= top).map((difficulty) => ({ ...s, difficulty }));
  });
  const loaded = selectTasks(loadTasks({ ...config, sources }, baseDir), o.split);
  const bySource = new Map<string, SplitTask[]>();
  for (const t of loaded) {
    const where = suiteLevelOf(t.id);
    // One key per configured source: a suite listed twice differs by seed.
    const key = where ? `${where.suite}:${t.metadata.seed as number}` : `file:${t.source}`;
    bySource.set(key, [...(bySource.get(key) ?? []), t]);
  }
  return [...bySource.entries()].flatMap(([key, tasks]) => {
    if (key.startsWith('file:')) return tasks;
    const top = currentLevel(levels[tasks[0]!.metadata.suite as string], cfg);
    const at = (l: Difficulty) => tasks.filter((t) => suiteLevelOf(t.id)!.level === l);
    if (o.purpose === 'eval') return takeTurns(DIFFICULTIES.filter((d) => d <= top).map(at));
    const current = at(top);
    const below = tasks.filter((t) => suiteLevelOf(t.id)!.level < top);
    const wanted = cfg.replay > 0 ? Math.round((current.length * cfg.replay) / (1 - cfg.replay)) : 0;
    const replay = Rng.fromKey(`${config.split.salt}:replay:${key}:${top}`).sample(below, wanted);
    return spread(current, replay);
  });
}

/** The lists' items, one of each in turn, until all are used. */
function takeTurns<T>(lists: T[][]): T[] {
  const out: T[] = [];
  for (let i = 0; lists.some((l) => i < l.length); i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
  return out;
}

/** main with extra spread evenly through it, so that any prefix holds about the same share of extra. */
export function spread<T>(main: readonly T[], extra: readonly T[]): T[] {
  const total = main.length + extra.length;
  const out: T[] = [];
  let [m, e] = [0, 0];
  for (let i = 0; i < total; i++) {
    const extraDue = Math.floor(((i + 1) * extra.length) / total) > e;
    out.push(extraDue && e < extra.length ? extra[e++]! : main[m++]!);
  }
  return out;
}
