import path from 'node:path';
import { present } from '../config/input-file.js';
import { BUILTIN_SUITES, DIFFICULTIES, MAX_TASKS, type RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import { curriculumTasks } from './curriculum-draw.js';
import type { SuiteLevels } from './curriculum.js';
import { heldOutShare, heldOutTemplates } from './holdout.js';
import { loadTasks } from './load.js';
import { selectTasks } from './split.js';
import { getSuite } from './suites/index.js';
import type { Difficulty, SplitSelector, SplitTask } from './types.js';

export interface RunTasksOptions {
  spec?: string;
  n?: number;
  split: SplitSelector;
  /** With tasks.curriculum on and no spec: each suite's current level, and what the tasks are for. */
  curriculum?: { levels: SuiteLevels; purpose: 'collect' | 'eval' };
}

/**
 * The tasks a run works on: tasks.sources (drawn by the curriculum when it is on and opts.curriculum says
 * the levels), or `spec` (a built-in suite, `<suite>@<difficulty>`, or a task file relative to the working
 * directory) instead; then one split, at most n of it.
 */
export function tasksForRun(config: RLConfig['tasks'], baseDir: string, opts: RunTasksOptions): SplitTask[] {
  return tasksWithShortfall(config, baseDir, opts).tasks;
}

/** n asked for more tasks than the split holds: all of the split runs, and this says so. */
export interface Shortfall {
  requested: number;
  available: number;
  split: SplitSelector;
  hint: string;
}

/** tasksForRun, and the shortfall when n asks for more tasks than the split holds. */
export function tasksWithShortfall(
  config: RLConfig['tasks'],
  baseDir: string,
  opts: RunTasksOptions,
): { tasks: SplitTask[]; shortfall: Shortfall | null } {
  if (!opts.spec && config.curriculum.enabled && opts.curriculum) return drawnByCurriculum(config, baseDir, opts);
  const loaded = loadTasks(sourcesFor(config, opts.spec, opts.n, opts.split), baseDir);
  const tasks = selectTasks(loaded, opts.split, opts.n);
  const more =
    opts.split !== 'all' && loaded.length > tasks.length
      ? `; --split all runs all ${loaded.length} tasks`
      : '; add tasks to tasks.sources for more';
  const holds = opts.split === 'all' ? 'the task sources hold' : `the ${opts.split} split holds`;
  return withShortfall(tasks, opts, holds, more);
}

/** The tasks, and the shortfall when opts.n asks for more than `holds` gives. */
function withShortfall(
  tasks: SplitTask[],
  opts: RunTasksOptions,
  holds: string,
  more: string,
): { tasks: SplitTask[]; shortfall: Shortfall | null } {
  const n = opts.n;
  if (n === undefined || tasks.length >= n) return { tasks, shortfall: null };
  const hint = `--n ${n} asks for more tasks than ${holds} (${tasks.length}): running ${tasks.length}${more}`;
  return { tasks, shortfall: { requested: n, available: tasks.length, split: opts.split, hint } };
}

function drawnByCurriculum(
  config: RLConfig['tasks'],
  baseDir: string,
  opts: RunTasksOptions,
): { tasks: SplitTask[]; shortfall: Shortfall | null } {
  const drawn = curriculumTasks(config, baseDir, opts.curriculum!.levels, { ...opts.curriculum!, split: opts.split });
  const tasks = selectTasks(drawn, 'all', opts.n);
  return withShortfall(
    tasks,
    opts,
    "the curriculum draws at the suites' levels",
    '; raise n in tasks.sources for more',
  );
}

/** `<suite>` or `<suite>@<level>` for a built-in suite; undefined for anything else (a file). */
function suiteSpec(spec: string): { suite: (typeof BUILTIN_SUITES)[number]; difficulty?: Difficulty } | undefined {
  const [, name = spec, level] = /^(.*)@([^@/\\]*)$/.exec(spec) ?? [];
  if (!(BUILTIN_SUITES as readonly string[]).includes(name)) return undefined;
  const suite = name as (typeof BUILTIN_SUITES)[number];
  if (level === undefined) return { suite };
  const difficulty = DIFFICULTIES.find((d) => String(d) === level);
  // A file may be called arithmetic@x.
  if (difficulty === undefined && present(path.resolve(spec))) return undefined;
  if (difficulty === undefined)
    throw new UserError(
      `--tasks ${spec}: difficulty must be 0, 1, 2 or 3 (${DIFFICULTIES.map((d) => `${suite}@${d}`).join(', ')})`,
    );
  return { suite, difficulty };
}

function sourcesFor(
  base: RLConfig['tasks'],
  spec: string | undefined,
  n: number | undefined,
  split: SplitSelector,
): RLConfig['tasks'] {
  if (!spec) return base;
  const named = suiteSpec(spec);
  if (named) {
    // Generate enough that the requested split still holds n tasks after the template holdout and the hash split.
    const suite = getSuite(named.suite);
    const templates = suite.templates(named.difficulty ?? suite.defaultLevel);
    const held = heldOutShare(
      templates,
      heldOutTemplates(suite.name, templates, base.split.holdout_templates, base.split.salt),
    );
    const evalShare = held + (1 - held) * base.split.eval_fraction;
    const share = split === 'all' ? 1 : split === 'eval' ? evalShare : 1 - evalShare;
    const generated = Math.min(MAX_TASKS, Math.ceil(((n ?? 50) / Math.max(share, 0.05)) * 1.25) + 5);
    return { ...base, sources: [{ ...named, n: generated, seed: 1 }] };
  }
  const file = path.resolve(spec);
  if (!present(file))
    throw new UserError(
      `--tasks ${spec}: not a built-in suite (${BUILTIN_SUITES.join(', ')}, each also as <suite>@<difficulty 0–3>) and no such file`,
    );
  return { ...base, sources: [{ file }] };
}
