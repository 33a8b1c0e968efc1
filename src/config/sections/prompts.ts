import { z } from 'zod';
import { filePath } from '../fields.js';
import { fileIssues, type RuleIssue } from '../rule-issue.js';

export const promptSchema = z.strictObject({
  file: filePath().optional().describe('path to the prompt text, relative to the config file'),
  text: z.string().min(1).optional(),
});

export type PromptConfig = z.output<typeof promptSchema>;

/** Each prompt is a file that exists, or a text. */
export function promptIssues(prompts: Record<string, PromptConfig>, baseDir: string): RuleIssue[] {
  return Object.entries(prompts).flatMap(([key, p]) => [
    ...(Boolean(p.file) === Boolean(p.text)
      ? [{ path: ['prompts', key], message: 'set exactly one of file or text' }]
      : []),
    ...(p.file ? fileIssues(baseDir, p.file, ['prompts', key, 'file']) : []),
  ]);
}
