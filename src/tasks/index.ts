export type { AnswerType, Split, SplitSelector, SplitTask, Task, TaskSuite } from './types.js';
export { loadTasks, TaskLoadError, type TasksConfig } from './load.js';
export { selectTasks, splitOf, splitPoint, withSplits } from './split.js';
export { readTaskFile, type LocatedTask, type TaskFileResult } from './task-file.js';
export { getSuite, suiteNames, SUITES, type BuiltinSuiteName } from './suites/index.js';
export { Rng } from './prng.js';
