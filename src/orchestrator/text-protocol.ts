import type { Action } from './types.js';
import { jaccard, wordSet } from './validate.js';

export type ParsedText =
  | { ok: true; action: Action }
  | { ok: false; kind: 'no_action' | 'multiple_actions' | 'vote_and_answer' | 'malformed'; detail: string };

// An action line: optional list/emphasis decoration, the keyword, a separator.
const ACTION_LINE = /^[\s>*_`#-]*\**\s*(ANSWER|VOTE)\s*\**\s*[:\-–]?\s*\**\s*(.*)$/i;
const LABEL = /\bagent\s*[_#-]?\s*(\d+)\b/i;

/**
 * Parses the text protocol used by models that cannot call tools:
 *   ANSWER: <answer, may continue on the following lines>
 *   VOTE: agent2 | <reason>
 * Exactly one action per reply.
 */
export function parseTextAction(text: string): ParsedText {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const hits = lines.flatMap((line, i) => {
    const m = ACTION_LINE.exec(line);
    return m ? [{ kind: m[1]!.toUpperCase() as 'ANSWER' | 'VOTE', rest: m[2]!.trim(), index: i }] : [];
  });
  if (!hits.length) return { ok: false, kind: 'no_action', detail: 'the reply has no ANSWER: or VOTE: line' };
  const kinds = new Set(hits.map((h) => h.kind));
  if (kinds.size > 1) return { ok: false, kind: 'vote_and_answer', detail: 'the reply both votes and answers' };
  if (hits.length > 1) {
    return {
      ok: false,
      kind: 'multiple_actions',
      detail: `the reply has ${hits.length} ${hits[0]!.kind} lines; give exactly one`,
    };
  }
  const hit = hits[0]!;
  if (hit.kind === 'ANSWER') {
    const content = [hit.rest, ...lines.slice(hit.index + 1)]
      .join('\n')
      .replace(/\**\s*$/, '')
      .trim();
    return content
      ? { ok: true, action: { kind: 'answer', content } }
      : { ok: false, kind: 'malformed', detail: 'ANSWER: is empty' };
  }
  const label = LABEL.exec(hit.rest);
  if (!label)
    return {
      ok: false,
      kind: 'malformed',
      detail: `VOTE: needs an answer label such as agent1, got "${hit.rest.slice(0, 60)}"`,
    };
  const after = hit.rest
    .slice(label.index + label[0].length)
    .replace(/^\s*[|:,\-–]\s*/, '')
    .replace(/\**$/, '')
    .trim();
  return { ok: true, action: { kind: 'vote', target: `agent${Number(label[1])}`, reason: after } };
}

/** The action format; `extra` (the delegate tool's lines, for an agent that has it) comes before it. */
export function textProtocolInstructions(canAnswer: boolean, extra?: string): string {
  return [
    ...(extra ? [extra, ''] : []),
    'End your reply with exactly one action line:',
    ...(canAnswer ? ['ANSWER: <your complete answer>   (to give a new or better answer)'] : []),
    'VOTE: agentN | <short reason>   (to vote for the best existing answer, by its label)',
    canAnswer ? 'Write only one of them.' : 'You can no longer give new answers: vote.',
  ].join('\n');
}

/**
 * For agents with implicit_answer (tiny models that ignore the format), a reply without an action line
 * is read as: a vote for the answer it names (agentN) or closely repeats, a new answer otherwise, or,
 * once new answers are closed, a vote for the answer it resembles most.
 */
export function implicitAction(text: string, answers: Map<string, string>, canAnswer: boolean): Action | undefined {
  const content = text.trim();
  if (!content) return undefined;
  const named = LABEL.exec(content);
  if (named && answers.has(`agent${Number(named[1])}`))
    return { kind: 'vote', target: `agent${Number(named[1])}`, reason: content, implicit: true };
  const words = wordSet(content);
  let best: { label: string; overlap: number } | undefined;
  for (const [label, existing] of answers) {
    const overlap = jaccard(words, wordSet(existing));
    if (!best || overlap > best.overlap) best = { label, overlap };
  }
  if (best && (best.overlap >= REPEAT_OVERLAP || !canAnswer)) {
    return {
      kind: 'vote',
      target: best.label,
      reason: `repeated this answer (${Math.round(best.overlap * 100)}% word overlap)`,
      implicit: true,
    };
  }
  return { kind: 'answer', content, implicit: true };
}

const REPEAT_OVERLAP = 0.6;
