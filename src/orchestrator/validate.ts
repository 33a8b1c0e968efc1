import type { InvalidKind } from '../trace/payloads.js';
import type { Action, OrchestratorConfig } from './types.js';

export interface Snapshot {
  /** Label → answer content, for the answers the agent was shown. */
  answers: Map<string, string>;
  canAnswer: boolean;
}

const NOVELTY_LIMIT: Record<OrchestratorConfig['answer_novelty_requirement'], number> = {
  lenient: 1,
  balanced: 0.7,
  strict: 0.5,
};

export function wordSet(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

export function jaccard(a: Set<string>, b: Set<string>): number {
  if (!a.size && !b.size) return 1;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return shared / (a.size + b.size - shared);
}

/** Checks an action against what the agent was shown; returns why it is invalid, if it is. */
export function validateAction(
  action: Action,
  snap: Snapshot,
  novelty: OrchestratorConfig['answer_novelty_requirement'],
): { kind: InvalidKind; detail: string } | undefined {
  if (action.kind === 'vote') {
    if (!snap.answers.size)
      return { kind: 'vote_before_answer', detail: 'there are no answers to vote for yet: give an answer' };
    if (!snap.answers.has(action.target)) {
      return {
        kind: 'unknown_target',
        detail: `${action.target} is not an answer label; vote for one of ${[...snap.answers.keys()].join(', ')}`,
      };
    }
    return undefined;
  }
  if (!snap.canAnswer)
    return { kind: 'answer_limit', detail: 'you cannot give more new answers: vote for the best existing answer' };
  const mine = normalize(action.content);
  const words = wordSet(action.content);
  for (const [label, content] of snap.answers) {
    if (normalize(content) === mine)
      return { kind: 'duplicate_answer', detail: `this answer is the same as ${label}: vote for ${label} instead` };
    const overlap = jaccard(words, wordSet(content));
    if (overlap > NOVELTY_LIMIT[novelty]) {
      return {
        kind: 'not_novel',
        detail: `this answer overlaps ${Math.round(overlap * 100)}% with ${label}; give a substantially different answer or vote for ${label}`,
      };
    }
  }
  return undefined;
}

function normalize(text: string): string {
  return text.trim().replace(/\s+/g, ' ').toLowerCase();
}
