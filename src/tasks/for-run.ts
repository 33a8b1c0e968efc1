import fs from 'node:fs';
import path from 'node:path';
import { BUILTIN_SUITES, type RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import { loadTasks } from './load.js';
import { selectTasks } from './split.js';
import type { SplitSelector, SplitTask } from './types.js';

/**
 * The tasks a run works on: tasks.sources, or `spec` (a built-in suite or a task file, relative to the
 * working directory) instead; then one split, at most n of it.
 */
export function tasksForRun(config: RLConfig['tasks'], baseDir: string, opts: { spec?: string; n?: number; split: SplitSelector }): SplitTask[] {
  return selectTasks(loadTasks(sourcesFor(config, opts.spec, opts.n, opts.split), baseDir), opts.split, opts.n);
}

function sourcesFor(base: RLConfig['tasks'], spec: string | undefined, n: number | undefined, split: SplitSelector): RLConfig['tasks'] {
  if (!spec) return base;
  if ((BUILTIN_SUITES as readonly string[]).includes(spec)) {
    // Generate enough that the requested split still holds n tasks after the hash split.
    const share = split === 'all' ? 1 : split === 'eval' ? base.split.eval_fraction : 1 - base.split.eval_fraction;
    const generated = Math.ceil(((n ?? 50) / Math.max(share, 0.05)) * 1.25) + 5;
    return { ...base, sources: [{ suite: spec as (typeof BUILTIN_SUITES)[number], n: generated, seed: 1 }] };
  }
  const file = path.resolve(spec);
  if (!fs.existsSync(file)) throw new UserError(`--tasks ${spec}: not a built-in suite (${BUILTIN_SUITES.join(', ')}) and no such file`);
  return { ...base, sources: [{ file }] };
}
