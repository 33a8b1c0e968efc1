import { DIFFICULTIES } from '../../config/schema.js';
import { Rng } from '../prng.js';
import type { AnswerType, Difficulty, Task, TaskSuite, TemplatesByKind } from '../types.js';

/** What a suite's generator makes for one task; defineSuite adds the id, source and common metadata. */
export interface GeneratedTask {
  /** The sub-kind: the category is `<suite>/<kind>`. */
  kind: string;
  prompt: string;
  reference: string;
  answerType: AnswerType;
  /** Numeric answers only; defaults to 0 (exact). */
  tolerance?: number;
  /** Includes `template` (one of the level's templates of the kind) wherever the kind has more than one. */
  metadata: Record<string, unknown>;
}

export interface LevelSpec {
  describe: string;
  templates: TemplatesByKind;
  make(rng: Rng): GeneratedTask;
}

export interface SuiteSpec {
  name: string;
  describe: string;
  defaultLevel: Difficulty;
  levels: Record<Difficulty, LevelSpec>;
}

export const ASK_NUMBER = 'Give your final answer as a single number.';
export const ASK_STRING = 'Give your final answer as the resulting text only, without quotes.';

/** A word problem with a whole-number answer told in one of its phrasings (`texts[template]`). */
export function scenarioTask(
  scenario: string,
  s: { texts: readonly string[]; answer: number; values: Record<string, number> },
  steps: number,
  template: number,
): GeneratedTask {
  return {
    kind: scenario,
    prompt: `${s.texts[template]} ${ASK_NUMBER}`,
    reference: String(s.answer),
    answerType: 'number',
    metadata: { scenario, steps, values: s.values, template },
  };
}

/** Level 2 keeps the suites' original ids; the other levels name theirs, so no id is shared between levels. */
export function suiteKey(name: string, difficulty: Difficulty): string {
  return difficulty === 2 ? name : `${name}@${difficulty}`;
}

/**
 * The suite and level of a built-in suite's task id: `suite:<name>@<level>:<seed>:<i>`, or
 * `suite:<name>:<seed>:<i>` for level 2 (its ids predate levels); null for a task file's id.
 */
export function suiteLevelOf(taskId: string): { suite: string; level: Difficulty } | null {
  const m = /^suite:([a-z_]+)(?:@(\d))?:-?\d+:\d+$/.exec(taskId);
  if (!m) return null;
  const level = DIFFICULTIES.find((d) => String(d) === (m[2] ?? '2'));
  return level === undefined ? null : { suite: m[1]!, level };
}

/** The same template names for every kind. */
export function sameTemplates(kinds: readonly string[], count: number): TemplatesByKind {
  const names = Array.from({ length: count }, (_, i) => String(i));
  return Object.fromEntries(kinds.map((k) => [k, names]));
}

/**
 * Task i of (suite, level, seed) is drawn from its own PRNG seeded by `<key>:<seed>:<i>` (key from suiteKey),
 * so growing n keeps the earlier tasks unchanged.
 */
export function defineSuite(spec: SuiteSpec): TaskSuite {
  const { name } = spec;
  const levelOf = (difficulty: Difficulty = spec.defaultLevel): LevelSpec => {
    const level = Object.hasOwn(spec.levels, difficulty) ? spec.levels[difficulty] : undefined;
    if (!level) throw new RangeError(`suite ${name}: difficulty must be 0, 1, 2 or 3, got ${String(difficulty)}`);
    return level;
  };
  return {
    name,
    describe: spec.describe,
    levels: DIFFICULTIES.map((level) => ({ level, describe: spec.levels[level].describe })),
    defaultLevel: spec.defaultLevel,
    templates: (difficulty) => levelOf(difficulty).templates,
    generate(n, seed, opts = {}): Task[] {
      const difficulty = opts.difficulty ?? spec.defaultLevel;
      const level = levelOf(difficulty);
      if (!Number.isInteger(n) || n < 0)
        throw new RangeError(`suite ${name}: n must be a non-negative integer, got ${n}`);
      if (!Number.isSafeInteger(seed)) throw new RangeError(`suite ${name}: seed must be an integer, got ${seed}`);
      const key = suiteKey(name, difficulty);
      // Level 2 metadata stays exactly as before levels existed: a store binds a task id to its metadata and
      // would refuse the original tasks with one more key. Its level shows in its id (no `@`).
      const tagged = difficulty === 2 ? {} : { difficulty };
      return Array.from({ length: n }, (_, i) => {
        const g = level.make(Rng.fromKey(`${key}:${seed}:${i}`));
        const numeric = g.answerType === 'number' ? { tolerance: g.tolerance ?? 0 } : {};
        return {
          id: `suite:${key}:${seed}:${i}`,
          prompt: g.prompt,
          reference: g.reference,
          category: `${name}/${g.kind}`,
          metadata: {
            suite: name,
            seed,
            index: i,
            kind: g.kind,
            answer_type: g.answerType,
            ...numeric,
            ...tagged,
            ...g.metadata,
          },
          source: `suite:${name}`,
        };
      });
    },
  };
}
