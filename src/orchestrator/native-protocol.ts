import { constantJson } from '../llm/json-text.js';
import type { ToolCall, ToolSpec } from '../llm/types.js';
import { BoundedCache } from '../util/bounded-cache.js';
import type { Action, ToolDefinition } from './types.js';

export const NEW_ANSWER = 'new_answer';
export const VOTE = 'vote';

// Tool specs are constants (json-text.ts): the same objects for the same labels, their JSON encoded once.
const workflowCache = new BoundedCache<string, readonly ToolSpec[]>(256);
const specCache = new WeakMap<ToolDefinition, ToolSpec>();

export function workflowTools(labels: string[], canAnswer: boolean): readonly ToolSpec[] {
  return workflowCache.get(`${canAnswer}|${labels.join(',')}`, () =>
    constantJson(buildWorkflowTools(labels, canAnswer)),
  );
}

function buildWorkflowTools(labels: string[], canAnswer: boolean): ToolSpec[] {
  const vote: ToolSpec = {
    type: 'function',
    function: {
      name: VOTE,
      description: 'Vote for the best existing answer. Use when an existing answer is correct and complete.',
      parameters: {
        type: 'object',
        properties: {
          agent_id: {
            type: 'string',
            enum: labels.length ? [...labels] : undefined,
            description: 'label of the answer, e.g. agent1',
          },
          reason: { type: 'string', description: 'why this answer is the best' },
        },
        required: ['agent_id', 'reason'],
      },
    },
  };
  const answer: ToolSpec = {
    type: 'function',
    function: {
      name: NEW_ANSWER,
      description: 'Give a new or improved complete answer to the original message.',
      parameters: {
        type: 'object',
        properties: { content: { type: 'string', minLength: 1, description: 'the complete answer' } },
        required: ['content'],
      },
    },
  };
  // With nothing to vote for yet only new_answer is offered: a grammar-constrained small model otherwise votes
  // in round 1 and every try ends as vote_before_answer.
  if (!canAnswer) return [vote];
  return labels.length ? [answer, vote] : [answer];
}

export function toolSpecs(tools: ToolDefinition[]): ToolSpec[] {
  return tools.map((t) => {
    let spec = specCache.get(t);
    if (!spec) {
      // A copy of the parameters: the constant is frozen, the tool definition stays the caller's.
      spec = constantJson<ToolSpec>({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: structuredClone(t.parameters) },
      });
      specCache.set(t, spec);
    }
    return spec;
  });
}

export type ParsedCalls =
  | { ok: true; action: Action; call: ToolCall }
  | {
      ok: false;
      kind: 'no_action' | 'multiple_actions' | 'vote_and_answer' | 'malformed';
      detail: string;
      call?: ToolCall;
    };

/** Finds the one workflow call among a reply's tool calls (ordinary tool calls are handled before). */
export function parseWorkflowCalls(calls: ToolCall[]): ParsedCalls {
  const flow = calls.filter((c) => c.function.name === NEW_ANSWER || c.function.name === VOTE);
  if (!flow.length) return { ok: false, kind: 'no_action', detail: `call ${NEW_ANSWER} or ${VOTE}` };
  const names = new Set(flow.map((c) => c.function.name));
  if (names.size > 1)
    return { ok: false, kind: 'vote_and_answer', detail: 'the reply both votes and answers', call: flow[0] };
  if (flow.length > 1)
    return {
      ok: false,
      kind: 'multiple_actions',
      detail: `${flow.length} ${flow[0]!.function.name} calls; make exactly one`,
      call: flow[0],
    };
  const call = flow[0]!;
  let args: Record<string, unknown>;
  try {
    args = JSON.parse(call.function.arguments || '{}') as Record<string, unknown>;
  } catch {
    return { ok: false, kind: 'malformed', detail: `${call.function.name} arguments are not valid JSON`, call };
  }
  if (call.function.name === NEW_ANSWER) {
    const content = typeof args.content === 'string' ? args.content.trim() : '';
    return content
      ? { ok: true, action: { kind: 'answer', content }, call }
      : { ok: false, kind: 'malformed', detail: 'new_answer needs a non-empty content', call };
  }
  const target = typeof args.agent_id === 'string' ? args.agent_id.trim().toLowerCase().replace(/\s+/g, '') : '';
  if (!target) return { ok: false, kind: 'malformed', detail: 'vote needs agent_id', call };
  return {
    ok: true,
    action: { kind: 'vote', target, reason: typeof args.reason === 'string' ? args.reason : '' },
    call,
  };
}
