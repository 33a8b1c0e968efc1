import { z } from 'zod';
import { count, name, nonNegInt, retries, timeoutS, WEEK_S } from '../fields.js';

export const delegationSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe('offer every agent a delegate tool that hands a subtask to a child orchestration'),
  max_depth: count(8)
    .default(1)
    .describe('levels of child orchestrations below the team; agents at this depth get no delegate tool'),
  max_delegations: count(1000)
    .default(2)
    .describe('delegate calls per orchestration, all depths together; later calls get an error result'),
  max_child_tokens: count(100_000_000)
    .default(4000)
    .describe(
      'token budget of one child orchestration (its own children '
        + 'included); over it the child stops and presents what it has',
    ),
  shape: z
    .enum(['team', 'solo'])
    .default('team')
    .describe('the child team: every agent of the team, or the delegating agent alone'),
});

export const orchestratorSchema = z.strictObject({
  voting_sensitivity: z.enum(['lenient', 'balanced', 'strict']).default('lenient'),
  answer_novelty_requirement: z.enum(['lenient', 'balanced', 'strict']).default('lenient'),
  max_new_answers_per_agent: count(1000).optional(),
  max_orchestration_restarts: nonNegInt.max(100).default(0),
  max_rounds: count(1000).default(8),
  max_action_retries: retries.default(3),
  agent_timeout_s: timeoutS().default(300),
  total_timeout_s: timeoutS(WEEK_S).default(1800),
  // Optional, not defaulted: a config without it keeps its evaluation keys (evaluation/keys.ts hashes this section).
  delegation: delegationSchema
    .optional()
    .describe('hierarchical delegation: child orchestrations on subtasks (off when absent)'),
  prompt_layout: z
    .enum(['protocol', 'answers', 'independent'])
    .optional()
    .describe(
      'how text-mode agents are prompted: protocol (absent: the task, every answer under its label '
        + 'and the ANSWER:/VOTE: rules); answers (for small models: the task as a user asks it; every '
        + "agent's first answer is its own, later turns also see the other agents' final answers in one "
        + 'line, and a reply repeating one is a vote for it); independent (self-consistency: every '
        + 'agent answers the task once on its own, a final answer equal to an earlier one is a vote for '
        + "it, an agent's own answer counts as its vote, and the answer most agents reached wins). In "
        + "answers and independent the winner's answer is the final answer, without a presentation call",
    ),
  presenter_prompt: name
    .optional()
    .describe(
      'key under prompts: the system prompt the winning agent presents the final answer '
        + "with, a versioned prompt of its own (absent: the winner's own system prompt)",
    ),
});
