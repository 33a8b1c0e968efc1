import type { ChatMessage, ChatResult, ToolCall } from '../llm/types.js';
import type { InvalidActionPayload, InvalidKind } from '../trace/payloads.js';
import { readAnswersLayoutReply, withoutMarkup } from './answers-layout.js';
import { NEW_ANSWER, parseWorkflowCalls, VOTE } from './native-protocol.js';
import { correction, usesAnswersLayout } from './prompts.js';
import { implicitAction, parseTextAction } from './text-protocol.js';
import type { TurnContext } from './turn-context.js';
import type { Action } from './types.js';
import { validateAction } from './validate.js';

export function isWorkflowCall(call: ToolCall): boolean {
  return call.function.name === NEW_ANSWER || call.function.name === VOTE;
}

/** The reply's action, checked against what the agent was shown, or why it is not a valid one. */
export function readAction(
  ctx: TurnContext,
  result: ChatResult,
): { action: Action } | { invalid: { kind: InvalidKind; detail: string } } {
  const { agent, snapshot } = ctx;
  const reply = result.content ?? '';
  if (usesAnswersLayout(agent, ctx.config.prompt_layout)) {
    const read = readAnswersLayoutReply(agent, reply, snapshot.answers, snapshot.canAnswer);
    if (!read.ok) return { invalid: { kind: read.kind, detail: read.detail } };
    const invalid = validateAction(read.action, snapshot, ctx.config.answer_novelty_requirement);
    return invalid ? { invalid } : { action: read.action };
  }
  let parsed = agent.toolMode === 'native' ? parseWorkflowCalls(result.toolCalls) : parseTextAction(reply);
  if (!parsed.ok && parsed.kind === 'no_action' && agent.toolMode === 'text' && agent.implicitAnswer) {
    const action = implicitAction(reply, snapshot.answers, snapshot.canAnswer);
    if (action) parsed = { ok: true, action };
  }
  if (!parsed.ok) return { invalid: { kind: parsed.kind, detail: parsed.detail } };
  if (agent.toolMode === 'text' && parsed.action.kind === 'answer') {
    // Markup a small model copied from the prompt is never stored as (part of) an answer.
    const content = withoutMarkup(parsed.action.content);
    if (!content)
      return {
        invalid: {
          kind: 'malformed',
          detail: 'the answer holds only protocol markup (tags such as <CURRENT ANSWERS>), no answer',
        },
      };
    parsed = { ok: true, action: { ...parsed.action, content } };
  }
  const invalid = validateAction(parsed.action, snapshot, ctx.config.answer_novelty_requirement);
  return invalid ? { invalid } : { action: parsed.action };
}

/** Records an invalid action and appends the correction the agent sees on its next attempt. */
export function correct(
  ctx: TurnContext,
  messages: ChatMessage[],
  result: ChatResult,
  ordinary: ToolCall[],
  invalid: { kind: InvalidKind; detail: string },
  attempt: number,
): void {
  const { agent } = ctx;
  const fix = correction(agent, invalid.detail, ctx.snapshot.canAnswer, ctx.config.prompt_layout);
  const payload: InvalidActionPayload = {
    turn_id: ctx.turnId,
    kind: invalid.kind,
    detail: invalid.detail,
    correction: fix,
    attempt,
  };
  ctx.sink.span({ type: 'coordination', name: 'invalid_action', agent: agent.id, parentSeq: ctx.roundSeq, payload });
  if (agent.toolMode === 'native' && result.toolCalls.length) {
    if (!ordinary.length) messages.push({ role: 'assistant', content: result.content, tool_calls: result.toolCalls });
    for (const call of result.toolCalls.filter((c) => !ordinary.includes(c)))
      messages.push({ role: 'tool', tool_call_id: call.id, content: fix });
  } else {
    messages.push({ role: 'assistant', content: result.content ?? '' }, { role: 'user', content: fix });
  }
}
