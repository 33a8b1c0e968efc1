import {
  orchestrate,
  type DelegationInput,
  type OrchestratorConfig,
  type TeamAgent,
  type ToolRunner,
} from '../../src/orchestrator/index.js';
import type { SpanInput } from '../../src/trace/records.js';
import { startScriptedServer, type Script, type ScriptedRequest, type ScriptedServer } from './scripted-server.js';
import { baseConfig, MemorySink, noTools, team } from './team.js';

export const PARENT_TASK = 'What is 6 x 7?';

export const DELEGATION: DelegationInput = {
  enabled: true,
  shape: 'solo',
  maxDepth: 1,
  maxDelegations: 2,
  maxChildTokens: 4000,
};

/** The task a request works on: the text of its <ORIGINAL MESSAGE>. */
export function taskOf(req: ScriptedRequest): string {
  const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
  return /<ORIGINAL MESSAGE>\n([\s\S]*?)\n<\/ORIGINAL MESSAGE>/.exec(user)?.[1] ?? '';
}

export const isPresentation = (req: ScriptedRequest) => (req.messages[0]?.content ?? '').includes('was selected');

/** The result of the agent's last delegate call in this turn (text: a TOOL RESULT message; native: a tool message). */
export function delegateResult(req: ScriptedRequest): string | undefined {
  for (const m of [...req.messages].reverse()) {
    if (m.role === 'tool') return m.content ?? '';
    if (m.role === 'user' && m.content?.startsWith('TOOL RESULT (delegate): '))
      return m.content.slice('TOOL RESULT (delegate): '.length);
  }
  return undefined;
}

export const toolNames = (req: ScriptedRequest) => (req.tools ?? []).map((t) => t.function.name);

export interface DelegationRun {
  server: ScriptedServer;
  sink: MemorySink;
  result: Awaited<ReturnType<typeof orchestrate>>;
}

/** One orchestration of agents `ids` against a scripted server, with `delegation` as given. The caller closes the server. */
export async function runDelegation(
  script: Script,
  opts: {
    ids?: string[];
    native?: boolean;
    delegation?: DelegationInput | null;
    config?: Partial<OrchestratorConfig>;
    signal?: AbortSignal;
    tools?: ToolRunner;
    agent?: Partial<TeamAgent>;
    presenterPrompt?: string;
  } = {},
): Promise<DelegationRun> {
  const server = await startScriptedServer(script);
  const sink = new MemorySink();
  const agents = team(server.baseUrl, opts.ids ?? ['a', 'b'], {
    ...(opts.native ? { toolMode: 'native' } : {}),
    ...opts.agent,
  });
  const result = await orchestrate({
    task: PARENT_TASK,
    team: agents,
    config: { ...baseConfig, ...opts.config },
    sink,
    tools: opts.tools ?? noTools,
    signal: opts.signal,
    ...(opts.delegation === undefined ? {} : { delegation: opts.delegation }),
    ...(opts.presenterPrompt === undefined ? {} : { presenterPrompt: opts.presenterPrompt }),
  });
  return { server, sink, result };
}

type Recorded = SpanInput & { seq: number };

export const payloadOf = <T = Record<string, unknown>>(s: Recorded | undefined) => s?.payload as T;

/** Spans of the child orchestrations (marked with a depth). */
export function nested(sink: MemorySink, depth?: number): Recorded[] {
  return sink.spans.filter((s) => {
    const d = (s.payload as { depth?: number } | undefined)?.depth;
    return typeof d === 'number' && (depth === undefined || d === depth);
  });
}

/** The parentSeq chain of a span, up to a root. */
export function ancestors(sink: MemorySink, span: Recorded): number[] {
  const out: number[] = [];
  let parent = span.parentSeq ?? null;
  while (parent !== null && out.length < sink.spans.length) {
    out.push(parent);
    parent = sink.spans[parent - 1]?.parentSeq ?? null;
  }
  return out;
}
