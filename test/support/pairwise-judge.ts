import type { ScriptedReply, ScriptedRequest } from './scripted-server.js';

/**
 * The pairwise judge's reply when the request is one (null otherwise): it prefers the answer holding the right
 * answer to the question (`right` of the question's text), in whichever position it is shown; a tie when both
 * or neither do.
 */
export function pairwiseJudge(req: ScriptedRequest, right: (question: string) => string): ScriptedReply | null {
  if (!/judge comparing two answers/.test(req.messages[0]?.content ?? '')) return null;
  const last = req.messages.at(-1)?.content ?? '';
  const want = right(last);
  const a = /Answer A[^\n]*\n([\s\S]*?)\n\nAnswer B/.exec(last)?.[1] ?? '';
  const b = /Answer B[^\n]*\n([\s\S]*?)\n\nWhich/.exec(last)?.[1] ?? '';
  const [ra, rb] = [a.includes(want), b.includes(want)];
  return { content: `{"winner": "${ra && !rb ? 'A' : rb && !ra ? 'B' : 'tie'}", "reason": "scripted"}` };
}
