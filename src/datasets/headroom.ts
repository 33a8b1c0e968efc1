import type { AnswerVerdicts, Store } from '../store/index.js';

/**
 * Where a task stands for a resource set, from every answer and sample its rollouts gave (verified by the exact or
 * numeric family): `never` right (preference pairs have nothing to pair on), `sometimes` (what DPO pairs and GRPO
 * groups learn from), `always` (nothing left to learn).
 */
export type Headroom = 'never' | 'sometimes' | 'always';

/** How many tasks a set stands at in each class, over the tasks with at least one verified answer. */
export interface HeadroomMix {
  tasks: number;
  never: number;
  sometimes: number;
  always: number;
  /** Verified answers over all those tasks. */
  answers: number;
}

export function headroomOf(v: Pick<AnswerVerdicts, 'answers' | 'right'>): Headroom {
  if (v.right === 0) return 'never';
  return v.right >= v.answers ? 'always' : 'sometimes';
}

/** The headroom mix of a set's tasks (`verifying`: the families whose verdicts count, config verifyingFamilies). */
export function headroomMix(store: Store, setId: string, verifying?: readonly string[]): HeadroomMix {
  const mix: HeadroomMix = { tasks: 0, never: 0, sometimes: 0, always: 0, answers: 0 };
  for (const v of store.rewards.answerVerdicts(setId, verifying)) {
    mix.tasks++;
    mix.answers += v.answers;
    mix[headroomOf(v)]++;
  }
  return mix;
}
