export type Split = 'train' | 'eval';
/** Which tasks a command works on: one split, or both. */
export type SplitSelector = Split | 'all';
export type AnswerType = 'number' | 'string';

export interface Task {
  /** Stable id: the split is a hash of it, so it never changes between runs. */
  id: string;
  prompt: string;
  /** The checkable answer, when there is one (string; numbers are written as strings). */
  reference?: string;
  category?: string;
  /**
   * Free-form; the built-in suites always set `answer_type` (AnswerType) and, for numeric answers,
   * `tolerance` (the largest absolute difference still counted correct). Task files may set them too.
   */
  metadata: Record<string, unknown>;
  /** Where the task came from: `suite:<name>` or the file path. */
  source: string;
}

export interface SplitTask extends Task {
  split: Split;
}

/** A built-in suite's difficulty: 0 the easiest (within the bundled model's reach), 1 easier than the original tasks, 2 the original tasks, 3 harder. */
export type Difficulty = 0 | 1 | 2 | 3;

export interface SuiteLevel {
  level: Difficulty;
  /** One line: what the tasks of this level look like. */
  describe: string;
}

/** Template names by kind (the `<kind>` of the category `<suite>/<kind>`). */
export type TemplatesByKind = Readonly<Record<string, readonly string[]>>;

/**
 * A built-in, locally generated task suite. generate(n, seed, opts) is deterministic, and task i does not
 * depend on n. Level 2 gives ids `suite:<name>:<seed>:<i>`, the other levels `suite:<name>@<level>:<seed>:<i>`.
 */
export interface TaskSuite {
  name: string;
  describe: string;
  /** Its levels, easiest first. */
  levels: readonly SuiteLevel[];
  /** The level generate uses when none is given. */
  defaultLevel: Difficulty;
  /** Every template (phrasing or scenario) each kind may use at a level; tasks name theirs in metadata.template. */
  templates(difficulty?: Difficulty): TemplatesByKind;
  generate(n: number, seed: number, opts?: { difficulty?: Difficulty }): Task[];
}
