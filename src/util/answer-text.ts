/** Reading the final answer out of a free-form reply, and the comparison form of an answer (rewards and the orchestrator share them). */

/** Trim, lower-case, collapse whitespace and drop trailing periods: the comparison form of an answer. */
export function normalizeAnswer(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.。]+$/u, '')
    .trim();
}

/** Lower-cased words without punctuation; decimal points survive and thousands commas go ("1,200" → "1200"). */
export function answerWords(text: string): string[] {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/(?<=\d),(?=\d{3}(?!\d))/g, '')
    .replace(/(?<=\d)\.(?=\d)/g, '\u0000')
    .replace(/[^\p{L}\p{N}\u0000\s]+/gu, ' ')
    .replace(/\u0000/g, '.')
    .split(/\s+/)
    .filter(Boolean);
}

export interface AnswerLine {
  /** The answer part, cleaned of markdown emphasis, quotes and a trailing period. */
  text: string;
  /**
   * How it was found: an explicit marker ("Final answer:", \boxed{}, "####", "answer is"), the last line, or a
   * line that ends on a quoted value it states (`The first letter of "egg" is "e".` → `e`).
   */
  source: 'final_answer' | 'boxed' | 'hashes' | 'answer' | 'last_line' | 'quoted' | 'empty';
}

const FINAL_MARKER = /\bfinal\s+answer\b[*_\s]*(?:(?:is|would be|will be)\b[*_\s:]*|[:=：][*_\s]*)/gi;
const ANSWER_MARKER = /\b(?:answer|result)\b[*_\s]*(?:(?:is|would be|will be)\b[*_\s:]*|[:=：][*_\s]*)/gi;
const HASHES = /^[ \t]*####[ \t]*/gm;
const BOXED = /\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}/g;
// A line ending on `is "X"` (or are/was/=/:) states X; double or guillemet quotes only, since an apostrophe opens no quote.
const STATED = /(?:\b(?:is|are|was|becomes)|[=:：])\s*["“«]([^"“”«»\n]{1,80})["”»][\s.!]*$/u;

/**
 * Finds the final answer in a free-form reply. Priority: the last "Final answer:" (or "final answer
 * is"), the last \boxed{…}, the last "#### …" line, the last "Answer:"/"The answer is"/"Result:",
 * else the last non-empty line. A marker at the end of a line takes the next non-empty line.
 */
export function findAnswerLine(text: string | null | undefined): AnswerLine {
  const s = (text ?? '').replace(/\r\n?/g, '\n');
  if (!s.trim()) return { text: '', source: 'empty' };
  const final = afterLastMarker(s, FINAL_MARKER);
  if (final !== null) return stated(clean(final), 'final_answer');
  const boxed = [...s.matchAll(BOXED)].at(-1);
  if (boxed) return { text: clean(boxed[1] ?? ''), source: 'boxed' };
  const hashes = afterLastMarker(s, HASHES);
  if (hashes !== null) return { text: clean(hashes), source: 'hashes' };
  const answer = afterLastMarker(s, ANSWER_MARKER);
  if (answer !== null) return stated(clean(answer), 'answer');
  const lines = s.split('\n').filter((l) => l.trim());
  return stated(clean(lines.at(-1) ?? ''), 'last_line');
}

/** A line that ends on a quoted value it states gives that value; any other line is the answer as it is. */
function stated(text: string, source: AnswerLine['source']): AnswerLine {
  const quoted = STATED.exec(text)?.[1]?.trim();
  return quoted ? { text: quoted, source: 'quoted' } : { text, source };
}

/** The final answer of a reply (see findAnswerLine); '' for an empty reply. */
export function extractFinalAnswer(text: string | null | undefined): string {
  return findAnswerLine(text).text;
}

function afterLastMarker(s: string, marker: RegExp): string | null {
  const last = [...s.matchAll(marker)].at(-1);
  if (!last) return null;
  const rest = s.slice(last.index + last[0].length);
  const nl = rest.indexOf('\n');
  const line = (nl < 0 ? rest : rest.slice(0, nl)).trim();
  if (line && !/^[*_`"'\s]*$/.test(line)) return line;
  const next = rest
    .split('\n')
    .slice(1)
    .find((l) => l.trim());
  return next === undefined ? null : next;
}

function clean(raw: string): string {
  let t = raw.trim();
  const boxed = /^\$*\\boxed\s*\{(.*)\}\$*$/.exec(t);
  if (boxed) t = boxed[1] ?? '';
  for (let prev = ''; prev !== t;) {
    prev = t;
    t = t
      .replace(/^[*`>\s]+|[*`\s]+$/g, '')
      .replace(/^\$(.*)\$$/, '$1')
      .replace(/[.。]+$/u, '');
    const quoted = /^(["'“‘«])(.*)(["'”’»])$/u.exec(t);
    if (quoted) t = quoted[2] ?? '';
  }
  return t.trim();
}
