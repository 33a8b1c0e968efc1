import { Rng } from '../prng.js';
import type { AnswerType, Task, TaskSuite } from '../types.js';

/** What a suite's generator makes for one task; defineSuite adds the id, source and common metadata. */
export interface GeneratedTask {
  /** The sub-kind: the category is `<suite>/<kind>`. */
  kind: string;
  prompt: string;
  reference: string;
  answerType: AnswerType;
  /** Numeric answers only; defaults to 0 (exact). */
  tolerance?: number;
  metadata: Record<string, unknown>;
}

export const ASK_NUMBER = 'Give your final answer as a single number.';
export const ASK_STRING = 'Give your final answer as the resulting text only, without quotes.';

/**
 * Task i of (suite, seed) is drawn from its own PRNG seeded by `<suite>:<seed>:<i>`, so growing n
 * keeps the earlier tasks unchanged.
 */
export function defineSuite(name: string, describe: string, make: (rng: Rng) => GeneratedTask): TaskSuite {
  return {
    name,
    describe,
    generate(n: number, seed: number): Task[] {
      if (!Number.isInteger(n) || n < 0) throw new RangeError(`suite ${name}: n must be a non-negative integer, got ${n}`);
      if (!Number.isSafeInteger(seed)) throw new RangeError(`suite ${name}: seed must be an integer, got ${seed}`);
      return Array.from({ length: n }, (_, i) => {
        const g = make(Rng.fromKey(`${name}:${seed}:${i}`));
        const numeric = g.answerType === 'number' ? { tolerance: g.tolerance ?? 0 } : {};
        return {
          id: `suite:${name}:${seed}:${i}`,
          prompt: g.prompt,
          reference: g.reference,
          category: `${name}/${g.kind}`,
          metadata: { suite: name, seed, index: i, kind: g.kind, answer_type: g.answerType, ...numeric, ...g.metadata },
          source: `suite:${name}`,
        };
      });
    },
  };
}
