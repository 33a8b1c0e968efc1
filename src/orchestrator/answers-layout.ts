import type { ChatMessage } from '../llm/types.js';
import { extractFinalNumber } from '../util/answer-numbers.js';
import { findAnswerLine, normalizeAnswer } from '../util/answer-text.js';
import { implicitAction } from './text-protocol.js';
import type { Action, TeamAgent } from './types.js';

/**
 * The `answers` prompt layout, for small models in text mode. The protocol layout shows tags, labels and
 * rules, which a 135M model copies into its replies instead of solving the task. Here an agent sees the
 * task as a user would ask it, plus, once there are answers, the other solvers' final answers in one plain
 * line. Its reply is read, never parsed for actions: a final answer equal to an existing one is a vote for
 * it, any other is a new answer.
 */

// Markup a small model copies from protocol prompts: ALL-CAPS tags (<CURRENT ANSWERS>, <END OF COMMENT>),
// answer labels (<agent2>) and the placeholders of our format lines (<reason>, <your final answer>, <c>).
const MARKUP =
  /<\/?\s*(?:[A-Z][A-Z0-9 _-]{1,40}|agent\s*\d*|agentN|c|reason|short reason|your (?:complete |final )?answer|a better answer)\s*>/g;
const PLACEHOLDERS = /\((?:no|not enough) answers yet\)/gi;

/** The reply without protocol markup; '' when nothing but markup (and punctuation) is left. */
export function withoutMarkup(text: string): string {
  const stripped = text
    .replace(MARKUP, ' ')
    .replace(PLACEHOLDERS, ' ')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
  return /[\p{L}\p{N}]/u.test(stripped) ? stripped : '';
}

/** The final answer of a reply, as shown to the other agents. */
export function finalAnswerOf(text: string): string {
  return findAnswerLine(text).text;
}

/** Two replies end on the same final answer: equal answer lines, or the same final number. */
export function sameFinalAnswer(a: string, b: string): boolean {
  const la = normalizeAnswer(finalAnswerOf(a));
  if (la && la === normalizeAnswer(finalAnswerOf(b))) return true;
  const na = extractFinalNumber(a),
    nb = extractFinalNumber(b);
  return na !== null && nb !== null && na.value === nb.value;
}

export function answersLayoutMessages(system: ChatMessage, task: string, answers: Map<string, string>): ChatMessage[] {
  if (!answers.size) return [system, { role: 'user', content: task }];
  const finals = [...new Set([...answers.values()].map(finalAnswerOf).filter(Boolean))];
  return [
    system,
    {
      role: 'user',
      content: `${task}\n\nOther solvers answered: ${finals.join('; ')}.\nSolve it yourself step by step. End with "Final answer: ..."`,
    },
  ];
}

export const ANSWERS_LAYOUT_CORRECTION =
  'Your reply has no answer. Solve the task step by step and end with "Final answer: ..."';

export type LayoutRead = { ok: true; action: Action } | { ok: false; kind: 'no_action'; detail: string };

/** The action a reply amounts to: a vote for the first answer with the same final answer, else a new answer. */
export function readAnswersLayoutReply(
  agent: TeamAgent,
  reply: string,
  answers: Map<string, string>,
  canAnswer: boolean,
): LayoutRead {
  const content = withoutMarkup(reply);
  if (!content)
    return {
      ok: false,
      kind: 'no_action',
      detail: reply.trim() ? 'the reply holds only protocol markup' : 'the reply is empty',
    };
  for (const [label, existing] of answers) {
    if (sameFinalAnswer(content, existing)) {
      return {
        ok: true,
        action: { kind: 'vote', target: label, reason: `same final answer: ${finalAnswerOf(content)}`, implicit: true },
      };
    }
  }
  if (canAnswer || !answers.size) return { ok: true, action: { kind: 'answer', content, implicit: true } };
  const vote = implicitAction(content, answers, false);
  return vote ? { ok: true, action: vote } : { ok: false, kind: 'no_action', detail: `${agent.label} gave no answer` };
}
