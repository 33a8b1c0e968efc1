import type { TeamAgent, ToolDefinition, ToolOutcome } from './types.js';

export const DELEGATE = 'delegate';

/** The tool agents get with delegation on (native mode: a function tool; text mode: `TOOL: delegate {...}`). */
export const DELEGATE_TOOL: ToolDefinition = Object.freeze({
  name: DELEGATE,
  description:
    'Hand a self-contained subtask to a sub-team. It solves the subtask the same way (answers and votes) and its final answer comes back as the result. Then finish your turn as usual.',
  parameters: Object.freeze({
    type: 'object',
    properties: {
      task: { type: 'string', description: 'the subtask, stated completely: the sub-team sees nothing else' },
    },
    required: ['task'],
  }),
}) as ToolDefinition;

export function hasDelegate(agent: TeamAgent): boolean {
  return agent.tools.some((t) => t.name === DELEGATE);
}

/** The text-mode lines that tell an agent with the tool how to call it (prompts.ts adds them to the rules). */
export const DELEGATE_TEXT_INSTRUCTIONS = [
  'You may first hand a self-contained subtask to a sub-team: reply with only the line',
  'TOOL: delegate {"task": "<the subtask, stated completely>"}',
  'Its final answer comes back as TOOL RESULT (delegate); then end with your action line.',
].join('\n');

/** The subtask of a call, or why the call is not a valid one. */
export function delegateTask(args: Record<string, unknown>): { task: string } | { error: ToolOutcome } {
  const task = typeof args.task === 'string' ? args.task.trim() : '';
  return task
    ? { task }
    : { error: refusal('delegate needs {"task": "<the subtask>"} with a non-empty task', 'invalid arguments') };
}

/** An error result: the call is answered, never thrown, so the agent can go on with its turn. */
export function refusal(result: string, error: string): ToolOutcome {
  return { result: `error: ${result}`, success: false, error };
}
