import path from 'node:path';
import type { RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import { heldOutTemplates, usesHeldOutTemplate } from './holdout.js';
import { withSplits } from './split.js';
import { getSuite } from './suites/index.js';
import { readTaskFile, type LocatedTask } from './task-file.js';
import type { SplitTask } from './types.js';

export type TasksConfig = RLConfig['tasks'];

/** Every problem in the task sources, reported at once; nothing is loaded. */
export class TaskLoadError extends UserError {
  constructor(readonly issues: string[]) {
    super(`invalid tasks (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n  ${issues.join('\n  ')}`);
    this.name = 'TaskLoadError';
  }
}

/**
 * All tasks of the configured sources, in source order, each with its split: a suite task using a held-out
 * template (tasks.split.holdout_templates) is eval, the others split by id. Files are relative to baseDir
 * (the config file's directory) and named in messages relative to the working directory.
 */
export function loadTasks(config: TasksConfig, baseDir: string): SplitTask[] {
  const located: LocatedTask[] = [];
  const issues: string[] = [];
  const evalOnly = new Set<string>();
  config.sources.forEach((source, i) => {
    if ('suite' in source) {
      const suite = getSuite(source.suite);
      const difficulty = source.difficulty ?? suite.defaultLevel;
      const level = source.difficulty === undefined ? '' : `, difficulty ${source.difficulty}`;
      const where = `tasks.sources[${i}] (suite ${source.suite}${level}, seed ${source.seed})`;
      const held = heldOutTemplates(
        suite.name,
        suite.templates(difficulty),
        config.split.holdout_templates,
        config.split.salt,
      );
      for (const task of suite.generate(source.n, source.seed, { difficulty })) {
        located.push({ task, where });
        if (usesHeldOutTemplate(task, held)) evalOnly.add(task.id);
      }
      return;
    }
    const abs = path.resolve(baseDir, source.file);
    const shown = path.relative(process.cwd(), abs) || abs;
    const result = readTaskFile(abs, shown, source.file, { maxPromptChars: config.max_prompt_chars });
    located.push(...result.tasks);
    issues.push(...result.issues);
  });
  issues.push(...duplicateIssues(located));
  if (issues.length) throw new TaskLoadError(issues);
  return withSplits(
    located.map((l) => l.task),
    config.split.eval_fraction,
    config.split.salt,
    (t) => evalOnly.has(t.id),
  );
}

/** Duplicates are grouped by the pair of places, so a suite listed twice gives one message, not n. */
function duplicateIssues(tasks: readonly LocatedTask[]): string[] {
  const first = new Map<string, string>();
  const groups = new Map<string, { where: string; seen: string; ids: string[] }>();
  for (const { task, where } of tasks) {
    const seen = first.get(task.id);
    if (seen === undefined) {
      first.set(task.id, where);
      continue;
    }
    const key = `${where}\0${seen}`;
    const group = groups.get(key) ?? { where, seen, ids: [] };
    group.ids.push(task.id);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ where, seen, ids }) => {
    const what =
      ids.length === 1
        ? `duplicate id "${ids[0]}"`
        : `${ids.length} duplicate ids (${ids
            .slice(0, 3)
            .map((id) => `"${id}"`)
            .join(', ')}${ids.length > 3 ? ', …' : ''})`;
    return `${where}: ${what} (first defined at ${seen})`;
  });
}
