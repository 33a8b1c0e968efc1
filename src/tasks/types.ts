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

/** A built-in, locally generated task suite. generate(n, seed) is deterministic, and task i does not depend on n. */
export interface TaskSuite {
  name: string;
  describe: string;
  generate(n: number, seed: number): Task[];
}
