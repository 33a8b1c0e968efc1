import { createLlmClient } from '../../src/llm/client.js';
import type {
  OrchestratorConfig,
  TeamAgent,
  ToolDefinition,
  ToolRunner,
  TraceSink,
} from '../../src/orchestrator/index.js';
import type { SpanInput } from '../../src/store/types.js';
import type { ScriptedRequest } from './scripted-server.js';

/** Agents a, b, c… whose model name is their id, so a scripted server can answer each one differently. */
export function team(baseUrl: string, ids: string[], over: Partial<TeamAgent> = {}): TeamAgent[] {
  const client = createLlmClient({ baseUrl, timeoutMs: 5000, maxRetries: 0, logprobs: true, retryBaseMs: 5 });
  return ids.map((id, i) => ({
    id,
    label: `agent${i + 1}`,
    model: id,
    systemPrompt: 'You solve tasks.',
    temperature: 0.7,
    maxTokens: 64,
    toolMode: 'text',
    tools: [] as ToolDefinition[],
    client,
    ...over,
  }));
}

export const baseConfig: OrchestratorConfig = {
  voting_sensitivity: 'lenient',
  answer_novelty_requirement: 'lenient',
  max_orchestration_restarts: 0,
  max_rounds: 8,
  max_action_retries: 3,
  agent_timeout_s: 5,
  total_timeout_s: 20,
};

export class MemorySink implements TraceSink {
  readonly spans: (SpanInput & { seq: number })[] = [];
  span(s: SpanInput): number {
    const seq = this.spans.length + 1;
    this.spans.push({ ...s, seq });
    return seq;
  }
  named(name: string, type?: SpanInput['type']) {
    return this.spans.filter((s) => s.name === name && (!type || s.type === type));
  }
}

export const noTools: ToolRunner = { run: async (name) => ({ result: `no tool ${name}`, success: false }) };

/** The answer labels an agent was shown, read from its prompt. */
export function shownLabels(req: ScriptedRequest): string[] {
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  return [...user.matchAll(/^<(agent\d+)>$/gm)].map((m) => m[1]!);
}

export function lastUser(req: ScriptedRequest): string {
  return [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
}
