import type { ChatMessage, ToolCall } from '../llm/types.js';
import type { ToolPayload } from '../trace/payloads.js';
import type { TurnContext } from './turn-context.js';
import type { ToolDefinition } from './types.js';

const TEXT_TOOL = /^\s*TOOL\s*:\s*([A-Za-z0-9_.-]+)\s*(?:\|\s*)?(\{.*\})?\s*$/im;

/** `TOOL: name {json}` in text mode, for a tool the agent has. */
export function textToolCall(text: string, tools: ToolDefinition[]): { name: string; args: string } | undefined {
  const m = TEXT_TOOL.exec(text);
  if (!m || !tools.some((t) => t.name === m[1])) return undefined;
  return { name: m[1]!, args: m[2] ?? '{}' };
}

/** Runs ordinary tool calls, records a tool span each, and returns the messages carrying their results. */
export async function runTools(
  ctx: TurnContext,
  promptSeq: number,
  signal: AbortSignal,
  calls: ToolCall[],
  textCall?: { name: string; args: string },
): Promise<ChatMessage[]> {
  const out: ChatMessage[] = [];
  const all = [
    ...calls.map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments })),
    ...(textCall ? [{ id: null, ...textCall }] : []),
  ];
  for (const call of all) {
    const startedAt = Date.now();
    const t0 = performance.now();
    let args: Record<string, unknown> = {};
    let outcome: { result: string; success: boolean; error?: string };
    try {
      args = JSON.parse(call.args || '{}') as Record<string, unknown>;
      outcome = ctx.agent.tools.some((t) => t.name === call.name)
        ? await ctx.tools.run(call.name, args, signal, { agent: ctx.agent, turnId: ctx.turnId, promptSeq })
        : (ctx.tools.unknown?.(call.name) ?? {
            result: `unknown tool ${call.name}`,
            success: false,
            error: 'unknown tool',
          });
    } catch (err) {
      if (signal.aborted) throw err;
      outcome = { result: `error: ${(err as Error).message}`, success: false, error: (err as Error).message };
    }
    ctx.usage.toolCalls++;
    const payload: ToolPayload = {
      turn_id: ctx.turnId,
      name: call.name,
      args,
      result: outcome.result,
      success: outcome.success,
      ...(outcome.error ? { error: outcome.error } : {}),
    };
    const seq = ctx.sink.span({
      type: 'tool',
      name: call.name,
      agent: ctx.agent.id,
      parentSeq: promptSeq,
      startedAt,
      durationMs: performance.now() - t0,
      payload,
    });
    ctx.toolLog.push({ agent: ctx.agent.id, name: call.name, success: outcome.success, seq });
    out.push(
      call.id
        ? { role: 'tool', tool_call_id: call.id, content: outcome.result }
        : { role: 'user', content: `TOOL RESULT (${call.name}): ${outcome.result}` },
    );
  }
  return out;
}
