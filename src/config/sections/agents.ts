import { z } from 'zod';
import { count, name } from '../fields.js';
import type { RuleIssue } from '../rule-issue.js';

export const agentSchema = z.strictObject({
  id: name,
  model: name.describe('key under models'),
  system_prompt: name.default('solver').describe('key under prompts'),
  temperature: z.number().min(0).max(2).default(0.7),
  max_tokens: count(1_048_576).default(512),
  tools: z.array(name).default([]),
  tool_mode: z.enum(['native', 'text']).default('native'),
  implicit_answer: z
    .boolean()
    .default(false)
    .describe(
      'text mode, for tiny models: a reply without ANSWER:/VOTE: counts as an answer, '
        + 'and repeating an existing answer as a vote for it (marked implicit in traces)',
    ),
});

export type AgentConfig = z.output<typeof agentSchema>;

/** Each agent id once. */
export function agentIdIssues(agents: readonly AgentConfig[]): RuleIssue[] {
  return agents.flatMap((a, i) =>
    agents.findIndex((b) => b.id === a.id) < i
      ? [{ path: ['agents', i, 'id'], message: `duplicate agent id "${a.id}"` }]
      : [],
  );
}
