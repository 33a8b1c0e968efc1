import type { PromptPayload } from '../trace/payloads.js';
import type { OtlpSpan } from './otlp-read.js';

/** An OpenAI chat message, as a prompt span's request holds it. */
interface Message {
  role: string;
  content: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

const CHAT_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content']);

/** A model call, as OpenInference (span kind LLM) or the GenAI conventions (a chat operation) mark one. */
export function isLlmSpan(s: OtlpSpan): boolean {
  const a = s.attributes;
  if (a['openinference.span.kind'] !== undefined) return a['openinference.span.kind'] === 'LLM';
  return CHAT_OPERATIONS.has(String(a['gen_ai.operation.name'] ?? ''));
}

/** A tool call, as either convention marks one. */
export function isToolSpan(s: OtlpSpan): boolean {
  return s.attributes['openinference.span.kind'] === 'TOOL' || s.attributes['gen_ai.operation.name'] === 'execute_tool';
}

const json = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return undefined;
  }
};
const text = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
const num = (...vs: unknown[]): number | undefined => {
  const v = vs.find((x) => typeof x === 'number' && Number.isFinite(x));
  return v as number | undefined;
};

/** OpenInference's flattened messages under `prefix` (llm.input_messages / llm.output_messages), in order. */
function flatMessages(a: Record<string, unknown>, prefix: string): Message[] {
  const out: Message[] = [];
  for (let i = 0; a[`${prefix}.${i}.message.role`] !== undefined; i++) {
    const at = `${prefix}.${i}.message`;
    let content = text(a[`${at}.content`]);
    for (let k = 0; a[`${at}.contents.${k}.message_content.type`] !== undefined; k++)
      content += text(a[`${at}.contents.${k}.message_content.text`]);
    const m: Message = { role: String(a[`${at}.role`]), content };
    const calls: NonNullable<Message['tool_calls']> = [];
    for (let j = 0; a[`${at}.tool_calls.${j}.tool_call.function.name`] !== undefined; j++) {
      const c = `${at}.tool_calls.${j}.tool_call`;
      const name = text(a[`${c}.function.name`]);
      calls.push({
        id: text(a[`${c}.id`]) || `call_${j}`,
        type: 'function',
        function: { name, arguments: text(a[`${c}.function.arguments`]) },
      });
    }
    if (calls.length) m.tool_calls = calls;
    if (a[`${at}.tool_call_id`] !== undefined) m.tool_call_id = text(a[`${at}.tool_call_id`]);
    out.push(m);
  }
  return out;
}

/** The GenAI conventions' messages (role and parts) as OpenAI chat messages. */
function genAiMessages(v: unknown): Message[] {
  const list = json(v);
  if (!Array.isArray(list)) return [];
  return list.flatMap((m: { role?: string; parts?: Record<string, unknown>[] }): Message[] => {
    const parts = Array.isArray(m?.parts) ? m.parts : [];
    const response = parts.find((p) => p.type === 'tool_call_response');
    if (response)
      return [{ role: 'tool', content: text(response.response ?? response.result), tool_call_id: text(response.id) }];
    const calls = parts
      .filter((p) => p.type === 'tool_call')
      .map((p, j) => ({
        id: text(p.id) || `call_${j}`,
        type: 'function' as const,
        function: {
          name: text(p.name),
          arguments: typeof p.arguments === 'string' ? p.arguments : JSON.stringify(p.arguments ?? {}),
        },
      }));
    const content = parts
      .filter((p) => p.type === 'text')
      .map((p) => text(p.content))
      .join('');
    return [{ role: m.role ?? 'user', content, ...(calls.length ? { tool_calls: calls } : {}) }];
  });
}

/** OpenAI request messages as sent (OpenInference's openai instrumentation puts the request in input.value). */
function requestMessages(v: unknown): Message[] {
  const messages = (
    json(v) as {
      messages?: { role?: string; content?: unknown; tool_calls?: Message['tool_calls']; tool_call_id?: string }[];
    }
  )?.messages;
  if (!Array.isArray(messages)) return [];
  return messages.map((m) => ({
    role: m.role ?? 'user',
    content: Array.isArray(m.content)
      ? m.content.map((p: { text?: unknown }) => text(p?.text)).join('')
      : text(m.content),
    ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
    ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
  }));
}

/** The reply in output.value: a ChatCompletion as JSON (its first choice), else the text itself. */
function replyFromOutput(v: unknown): Message | null {
  if (v === undefined || v === null) return null;
  const message = (json(v) as { choices?: { message?: { content?: unknown; tool_calls?: Message['tool_calls'] } }[] })
    ?.choices?.[0]?.message;
  if (message)
    return {
      role: 'assistant',
      content: text(message.content),
      ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}),
    };
  return { role: 'assistant', content: text(v) };
}

/** The older event form (gen_ai.user.message, …, gen_ai.choice) some instrumentations still emit. */
function eventMessages(s: OtlpSpan): { messages: Message[]; reply: Message | null } {
  const messages: Message[] = [];
  let reply: Message | null = null;
  for (const e of s.events) {
    const role = /^gen_ai\.(system|user|assistant|tool)\.message$/.exec(e.name)?.[1];
    if (role)
      messages.push({
        role,
        content: text(e.attributes.content),
        ...(e.attributes.id ? { tool_call_id: text(e.attributes.id) } : {}),
      });
    if (e.name === 'gen_ai.choice')
      reply = {
        role: 'assistant',
        content: text((json(e.attributes.message) as { content?: unknown })?.content ?? e.attributes.content),
      };
  }
  return { messages, reply };
}

/** A model call's span as a prompt span's payload: the request's model, messages and parameters, the reply, usage. */
export function promptPayload(s: OtlpSpan): PromptPayload {
  const a = s.attributes;
  const events = eventMessages(s);
  const system = genAiMessages(
    Array.isArray(json(a['gen_ai.system_instructions']))
      ? [{ role: 'system', parts: json(a['gen_ai.system_instructions']) }]
      : [],
  );
  const candidates = [
    flatMessages(a, 'llm.input_messages'),
    genAiMessages(a['gen_ai.input.messages']),
    requestMessages(a['input.value']),
    events.messages,
  ];
  const messages = [...system, ...(candidates.find((m) => m.length) ?? [])];
  const reply =
    flatMessages(a, 'llm.output_messages')[0]
    ?? genAiMessages(a['gen_ai.output.messages'])[0]
    ?? events.reply
    ?? replyFromOutput(a['output.value']);
  const params = (json(a['llm.invocation_parameters']) ?? {}) as Record<string, unknown>;
  const finish =
    (a['gen_ai.response.finish_reasons'] as unknown[] | undefined)?.[0] ?? a['llm.finish_reason'] ?? 'stop';
  const prompt = num(a['llm.token_count.prompt'], a['gen_ai.usage.input_tokens'], a['gen_ai.usage.prompt_tokens']) ?? 0;
  const completion =
    num(a['llm.token_count.completion'], a['gen_ai.usage.output_tokens'], a['gen_ai.usage.completion_tokens']) ?? 0;
  const tools = Object.keys(a)
    .filter((k) => /^llm\.tools\.\d+\.tool\.json_schema$/.test(k))
    .sort((x, y) => Number(x.split('.')[2]) - Number(y.split('.')[2]))
    .map((k) => json(a[k]))
    .filter((t) => t !== undefined);
  const temperature = num(a['gen_ai.request.temperature'], params.temperature);
  const maxTokens = num(a['gen_ai.request.max_tokens'], params.max_tokens, params.max_completion_tokens);
  const seed = num(a['gen_ai.request.seed'], params.seed);
  return {
    turn_id: s.spanId,
    round: 0,
    attempt: 0,
    request: {
      model: text(a['llm.model_name'] ?? a['gen_ai.request.model'] ?? a['gen_ai.response.model'] ?? 'unknown'),
      messages,
      ...(temperature !== undefined ? { temperature } : {}),
      ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
      ...(seed !== undefined ? { seed } : {}),
      ...(tools.length ? { tools } : {}),
    },
    response: reply
      ? { content: reply.content, tool_calls: reply.tool_calls ?? [], finish_reason: text(finish) }
      : null,
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: num(a['llm.token_count.total']) ?? prompt + completion,
    },
    latency_ms: Math.max(0, s.endMs - s.startMs),
    ...(s.status.code === 2 ? { error: s.status.message || 'the call failed' } : {}),
  };
}
