import type { ChatMessage, ToolSpec } from '../llm/types.js';
import { recordedCall } from './llm-call.js';
import { toolSpecs, workflowTools } from './native-protocol.js';
import { coordinationMessages } from './prompts.js';
import { correct, isWorkflowCall, readAction } from './turn-action.js';
import type { TurnContext } from './turn-context.js';
import { runTools, textToolCall } from './turn-tools.js';
import type { Action, TeamAgent } from './types.js';
import type { Snapshot } from './validate.js';

export type { TurnContext } from './turn-context.js';

export type TurnOutcome =
  | { kind: 'action'; action: Action; promptSeq: number }
  | { kind: 'drop'; dropKind: 'invalid_actions' | 'error' | 'timeout'; reason: string }
  | { kind: 'cancelled' };

const MAX_TOOL_STEPS = 8;

/** The workflow tools (a constant array when the agent has no tools of its own), then the agent's. */
function nativeTools(agent: TeamAgent, snapshot: Snapshot): readonly ToolSpec[] {
  const workflow = workflowTools([...snapshot.answers.keys()], snapshot.canAnswer);
  return agent.tools.length ? [...workflow, ...toolSpecs(agent.tools)] : workflow;
}

/** One agent turn: ask, run ordinary tools, parse and validate the action, correct and retry if needed. */
export async function runTurn(ctx: TurnContext): Promise<TurnOutcome> {
  const { agent, snapshot } = ctx;
  const signal = ctx.controller.signal;
  // Set only when the agent timeout, not the coordinator, aborted the turn.
  let timedOut = false;
  const timer = setTimeout(() => {
    if (signal.aborted) return;
    timedOut = true;
    ctx.controller.abort(new Error(`agent timeout (${ctx.config.agent_timeout_s} s)`));
  }, ctx.config.agent_timeout_s * 1000);
  const site = {
    agent,
    sink: ctx.sink,
    usage: ctx.usage,
    turnId: ctx.turnId,
    round: ctx.round,
    parentSeq: ctx.roundSeq,
    signal,
  };
  const messages: ChatMessage[] = coordinationMessages(
    agent,
    ctx.task,
    snapshot.answers,
    snapshot.canAnswer,
    ctx.config.voting_sensitivity,
    ctx.teamSize,
    ctx.config.prompt_layout,
  );
  const specs = agent.toolMode === 'native' ? nativeTools(agent, snapshot) : undefined;
  let attempt = 1;
  let toolSteps = 0;
  try {
    while (attempt <= ctx.config.max_action_retries + 1) {
      const { result, seq } = await recordedCall(site, messages, attempt, specs);
      const ordinary = result.toolCalls.length ? result.toolCalls.filter((c) => !isWorkflowCall(c)) : result.toolCalls;
      const textTool =
        agent.toolMode === 'text' && agent.tools.length ? textToolCall(result.content ?? '', agent.tools) : undefined;
      if ((ordinary.length || textTool) && toolSteps++ < MAX_TOOL_STEPS) {
        messages.push({
          role: 'assistant',
          content: result.content,
          ...(ordinary.length ? { tool_calls: result.toolCalls } : {}),
        });
        messages.push(...(await runTools(ctx, seq, signal, ordinary, textTool)));
        if (!result.toolCalls.some(isWorkflowCall)) continue;
      }
      const read = readAction(ctx, result);
      if ('action' in read) return { kind: 'action', action: read.action, promptSeq: seq };
      correct(ctx, messages, result, ordinary, read.invalid, attempt);
      attempt++;
    }
    return {
      kind: 'drop',
      dropKind: 'invalid_actions',
      reason: `no valid action after ${ctx.config.max_action_retries + 1} attempts`,
    };
  } catch (err) {
    if (timedOut)
      return {
        kind: 'drop',
        dropKind: 'timeout',
        reason: `no action within agent_timeout_s (${ctx.config.agent_timeout_s} s)`,
      };
    if (signal.aborted) return { kind: 'cancelled' };
    return { kind: 'drop', dropKind: 'error', reason: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}
