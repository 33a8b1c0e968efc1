import { findAnswerLine } from './answer-text.js';

export interface FoundNumber {
  value: number;
  /** The text it was read from, e.g. "-1,234.5" or "3/4". */
  raw: string;
}

// A number not glued to a word ("x1", "CO2", "v1.2"): optional sign (ASCII or U+2212), then a mixed
// number "1 1/2", or a decimal with optional thousands commas, exponent and "/denominator".
const NUMBER = new RegExp(
  String.raw`(?<![\p{L}\p{N}_./])([-\u2212+]?)(?:(\d+) (\d+)/(\d+)(?!\d)|((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE]([-+]?\d+))?(?:\s*/\s*(\d+(?:\.\d+)?))?)(?!\d|,\d)`,
  'gu',
);

/** Every number in the text, in order (units and currency signs around them are ignored). */
export function findNumbers(text: string): FoundNumber[] {
  const out: FoundNumber[] = [];
  for (const m of text.normalize('NFKC').matchAll(NUMBER)) {
    const [raw, sign, whole, num, den, body, exp, denominator] = m;
    const neg = sign === '-' || sign === '\u2212';
    let value: number;
    if (whole !== undefined) {
      if (Number(num) >= Number(den) || Number(den) === 0) continue;
      value = Number(whole) + Number(num) / Number(den);
    } else {
      value = Number(`${(body ?? '').replace(/,/g, '')}${exp !== undefined ? `e${exp}` : ''}`);
      if (denominator !== undefined) {
        if (Number(denominator) === 0) continue;
        value /= Number(denominator);
      }
    }
    if (Number.isFinite(value)) out.push({ value: neg ? -value : value, raw: raw.trim() });
  }
  return out;
}

/**
 * The number a reply ends on: the first number of its explicit answer line ("Final answer: 42 (40+2)"
 * → 42), else the last number in the reply. Null when it holds none.
 */
export function extractFinalNumber(text: string | null | undefined): FoundNumber | null {
  const s = text ?? '';
  const line = findAnswerLine(s);
  if (line.source !== 'last_line' && line.source !== 'empty') {
    const first = findNumbers(line.text)[0];
    if (first) return first;
  }
  return findNumbers(s).at(-1) ?? null;
}

/** A reference that is one number (units allowed: "12 km", "3/4", "-1,000"); null otherwise. */
export function parseReferenceNumber(reference: string): number | null {
  const found = findNumbers(reference);
  return found.length === 1 && found[0] ? found[0].value : null;
}
