export type {
  AnswerType,
  Difficulty,
  Split,
  SplitSelector,
  SplitTask,
  SuiteLevel,
  Task,
  TaskSuite,
  TemplatesByKind,
} from './types.js';
export { loadTasks, TaskLoadError, type TasksConfig } from './load.js';
export { heldOutShare, heldOutTemplates, usesHeldOutTemplate, type HeldOut } from './holdout.js';
export { selectTasks, splitOf, splitPoint, withSplits } from './split.js';
export { readTaskFile, type LocatedTask, type TaskFileResult } from './task-file.js';
export { getSuite, suiteNames, SUITES, type BuiltinSuiteName } from './suites/index.js';
export { Rng } from './prng.js';
