import { z } from 'zod';
import { envName } from '../fields.js';
import type { RuleIssue } from '../rule-issue.js';

export const privacySchema = z.strictObject({
  redact_patterns: z
    .array(z.string().min(1))
    .default([])
    .describe('regular expressions scrubbed from everything stored or logged'),
  redact_env: z
    .array(envName)
    .default([])
    .describe('env vars whose values are scrubbed (model api_key_env vars always are)'),
  builtin_patterns: z.boolean().default(true).describe('also scrub common key formats (sk-…, Bearer …, hf_…, AKIA…)'),
});

export type PrivacyConfig = z.output<typeof privacySchema>;

/** Each redaction pattern is a regular expression that matches at least one character. */
export function privacyIssues(privacy: PrivacyConfig): RuleIssue[] {
  return privacy.redact_patterns.flatMap((p, i) => {
    const problem = redactPatternProblem(p);
    return problem ? [{ path: ['privacy', 'redact_patterns', i], message: problem }] : [];
  });
}

// Probes for patterns that match an empty string only in some context (\b, lookarounds, anchors).
const EMPTY_PROBES = ['', 'a', 'key: "sk-Ab_9" = 123-456\n\tx@y.z/[1] \\ é'];

/**
 * Why a redaction pattern is unusable: invalid, or able to match nothing (it would "redact" between every character).
 */
function redactPatternProblem(pattern: string): string | undefined {
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'g');
  } catch (err) {
    return `not a valid regular expression: ${(err as Error).message}`;
  }
  const probe = EMPTY_PROBES.find((text) => [...text.matchAll(re)].some((m) => m[0] === ''));
  return probe === undefined
    ? undefined
    : `matches the empty string${probe ? ` (in ${JSON.stringify(probe)})` : ''}; a `
        + 'redaction pattern must match at least one character, e.g. use + instead of *';
}
