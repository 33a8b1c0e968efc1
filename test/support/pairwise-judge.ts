import type { ScriptedReply, ScriptedRequest } from './scripted-server.js';

/** Which answer the scripted judge prefers, given answer A, answer B and the judge's whole prompt. */
export type Verdict = (a: string, b: string, prompt: string) => string;

/** The pairwise judge's reply when the request is one (null otherwise): the winner `verdict` picks. */
export function pairwiseJudge(req: ScriptedRequest, verdict: Verdict): ScriptedReply | null {
  if (!/judge comparing two answers/.test(req.messages[0]?.content ?? '')) return null;
  const prompt = req.messages.at(-1)?.content ?? '';
  const a = /Answer A[^\n]*\n([\s\S]*?)\n\nAnswer B/.exec(prompt)?.[1] ?? '';
  const b = /Answer B[^\n]*\n([\s\S]*?)\n\nWhich/.exec(prompt)?.[1] ?? '';
  return { content: `{"winner": "${verdict(a, b, prompt)}", "reason": "scripted"}` };
}

/**
 * A judge that prefers the answer holding the right answer to the question (`right` of the prompt), in whichever
 * position it is shown; a tie when both or neither do.
 */
export function prefersRight(right: (prompt: string) => string): Verdict {
  return (a, b, prompt) => {
    const want = right(prompt);
    const [ra, rb] = [a.includes(want), b.includes(want)];
    return ra && !rb ? 'A' : rb && !ra ? 'B' : 'tie';
  };
}
