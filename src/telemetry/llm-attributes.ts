import type { Attributes } from '@opentelemetry/api';
import type { PromptPayload } from '../trace/payloads.js';

/** An OpenAI chat message as stored in a prompt span's request. */
interface ChatMessage {
  role?: string;
  content?: unknown;
  name?: string;
  tool_calls?: { id?: string; function?: { name?: string; arguments?: string } }[];
  tool_call_id?: string;
}

type Part =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id?: string; name: string; arguments?: unknown }
  | { type: 'tool_call_response'; id?: string; response: unknown };

const PROVIDER = 'openai';

/** The text of a message's content: a string, or the text parts of a list. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content == null ? '' : JSON.stringify(content);
  return content
    .map((p: { type?: string; text?: unknown }) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .join('');
}

function parsedArguments(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** One chat message in the GenAI conventions' shape: role and parts. */
function genAiMessage(m: ChatMessage): { role: string; parts: Part[]; name?: string } {
  const parts: Part[] = [];
  const text = contentText(m.content);
  if (m.role === 'tool') parts.push({ type: 'tool_call_response', id: m.tool_call_id, response: text });
  else if (text) parts.push({ type: 'text', content: text });
  for (const call of m.tool_calls ?? [])
    parts.push({
      type: 'tool_call',
      id: call.id,
      name: call.function?.name ?? '',
      arguments: parsedArguments(call.function?.arguments),
    });
  return { role: m.role ?? 'user', parts, ...(m.name ? { name: m.name } : {}) };
}

/** OpenInference's flattened message keys under `prefix` (llm.input_messages / llm.output_messages). */
function flatMessages(prefix: string, messages: ChatMessage[], into: Attributes): void {
  messages.forEach((m, i) => {
    const at = `${prefix}.${i}.message`;
    into[`${at}.role`] = m.role ?? 'user';
    const text = contentText(m.content);
    if (text) into[`${at}.content`] = text;
    if (m.tool_call_id) into[`${at}.tool_call_id`] = m.tool_call_id;
    (m.tool_calls ?? []).forEach((call, j) => {
      const c = `${at}.tool_calls.${j}.tool_call`;
      if (call.id) into[`${c}.id`] = call.id;
      into[`${c}.function.name`] = call.function?.name ?? '';
      into[`${c}.function.arguments`] = call.function?.arguments ?? '';
    });
  });
}

/**
 * A recorded model call as the OpenTelemetry GenAI conventions (gen_ai.*) and OpenInference (what Phoenix reads)
 * describe one: model, parameters, usage, the messages in and the reply out.
 */
export function llmAttributes(p: PromptPayload): Attributes {
  const req = p.request;
  const messages = (Array.isArray(req.messages) ? req.messages : []) as ChatMessage[];
  const reply: ChatMessage | null = p.response
    ? {
        role: 'assistant',
        content: p.response.content ?? '',
        tool_calls: p.response.tool_calls as ChatMessage['tool_calls'],
      }
    : null;
  const params = { temperature: req.temperature, max_tokens: req.max_tokens, seed: req.seed };
  const a: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': PROVIDER,
    'gen_ai.request.model': req.model,
    'gen_ai.usage.input_tokens': p.usage.prompt_tokens,
    'gen_ai.usage.output_tokens': p.usage.completion_tokens,
    'gen_ai.input.messages': JSON.stringify(messages.map(genAiMessage)),
    'openinference.span.kind': 'LLM',
    'llm.system': PROVIDER,
    'llm.provider': PROVIDER,
    'llm.model_name': req.model,
    'llm.invocation_parameters': JSON.stringify(params),
    'llm.token_count.prompt': p.usage.prompt_tokens,
    'llm.token_count.completion': p.usage.completion_tokens,
    'llm.token_count.total': p.usage.total_tokens,
    'input.value': JSON.stringify({ messages }),
    'input.mime_type': 'application/json',
  };
  if (req.temperature !== undefined) a['gen_ai.request.temperature'] = req.temperature;
  if (req.max_tokens !== undefined) a['gen_ai.request.max_tokens'] = req.max_tokens;
  if (req.seed !== undefined) a['gen_ai.request.seed'] = req.seed;
  (req.tools ?? []).forEach((tool, i) => (a[`llm.tools.${i}.tool.json_schema`] = JSON.stringify(tool)));
  flatMessages('llm.input_messages', messages, a);
  if (reply && p.response) {
    a['gen_ai.response.finish_reasons'] = [p.response.finish_reason];
    a['gen_ai.output.messages'] = JSON.stringify([{ ...genAiMessage(reply), finish_reason: p.response.finish_reason }]);
    a['llm.finish_reason'] = p.response.finish_reason;
    a['output.value'] = contentText(reply.content);
    a['output.mime_type'] = 'text/plain';
    flatMessages('llm.output_messages', [reply], a);
  }
  return a;
}
