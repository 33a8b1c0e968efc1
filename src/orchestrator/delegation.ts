import type { DelegateAggregatePayload, DelegatePayload, DelegateReturnPayload } from '../trace/payloads.js';
import { DELEGATE, DELEGATE_TOOL, delegateTask, refusal } from './delegate-tool.js';
import { LevelSink } from './delegation-sink.js';
import { emptyUsage, type Usage } from './llm-call.js';
import { stopSignal, type Stop } from './stop.js';
import type {
  DelegationInput,
  DelegationRecord,
  OrchestrateInput,
  OrchestrationResult,
  OrchestratorConfig,
  TeamAgent,
  ToolOutcome,
  ToolRunner,
  ToolSite,
} from './types.js';
import { wordSet } from './validate.js';

/** What one orchestration level runs on: the team's own (its stop policy asked by its rounds only) or a child's. */
export type LevelInput = Omit<OrchestrateInput, 'delegation'>;

/** The coordination protocol (coordinator.ts), injected so that this module does not import it. */
export type Coordinate = (input: LevelInput, stop: Stop) => Promise<OrchestrationResult>;

/** What every level of one orchestration shares: the options, the delegations used so far, the protocol. */
interface Tree {
  options: DelegationInput;
  used: number;
  coordinate: Coordinate;
}

interface Level {
  tree: Tree;
  depth: number;
  /** The delegate span that opened this level (null: the team's own). */
  delegateSeq: number | null;
  /** The level's team without the delegate tool, and the injected tool runner. */
  input: LevelInput;
  sink: LevelSink;
  childUsage: Usage;
  returns: { agent: string; delegateSeq: number; returnSeq: number; depth: number; answer: string | null }[];
  /** Delegations made inside this level's children. */
  nested: DelegationRecord[];
}

/** The orchestrator's delegation input for the config's `orchestrator.delegation` (null when the section is absent). */
export function delegationFromConfig(c: OrchestratorConfig['delegation']): DelegationInput | null {
  return c
    ? {
        enabled: c.enabled,
        shape: c.shape,
        maxDepth: c.max_depth,
        maxDelegations: c.max_delegations,
        maxChildTokens: c.max_child_tokens,
      }
    : null;
}

/**
 * The team's orchestration with delegation on (see trace/payloads.ts for the spans it adds). A child runs
 * inside its caller's turn, so that turn's agent_timeout_s, a new answer superseding it, the total timeout
 * and an interrupt all cancel it; the child's own total_timeout_s counts from the delegation.
 */
export function orchestrateDelegating(
  input: LevelInput,
  options: DelegationInput,
  stop: Stop,
  coordinate: Coordinate,
): Promise<OrchestrationResult> {
  return runLevel({ options, used: 0, coordinate }, input, stop, 0, null, new LevelSink(input.sink, null));
}

async function runLevel(
  tree: Tree,
  input: LevelInput,
  stop: Stop,
  depth: number,
  delegateSeq: number | null,
  sink: LevelSink,
): Promise<OrchestrationResult> {
  const level: Level = { tree, depth, delegateSeq, input, sink, childUsage: emptyUsage(), returns: [], nested: [] };
  const team =
    depth < tree.options.maxDepth ? input.team.map((a) => ({ ...a, tools: [...a.tools, DELEGATE_TOOL] })) : input.team;
  const own = depth === 0 && input.stopPolicy ? { stopPolicy: input.stopPolicy } : {};
  const result = await tree.coordinate(
    {
      task: input.task,
      team,
      config: input.config,
      sink,
      tools: runner(level),
      signal: input.signal,
      presenterPrompt: input.presenterPrompt,
      ...own,
    },
    stop,
  );
  addUsage(result.usage, level.childUsage);
  result.delegations = [...level.nested, ...aggregate(level, result)].sort((a, b) => a.delegateSeq - b.delegateSeq);
  return result;
}

/** The injected runner, with `delegate` answered here. */
function runner(level: Level): ToolRunner {
  const base = level.input.tools;
  return {
    run: (name, args, signal, site) =>
      name === DELEGATE && site ? delegate(level, args, signal, site) : base.run(name, args, signal, site),
    unknown: (name) => (name === DELEGATE ? depthRefusal(level) : base.unknown?.(name)),
  };
}

function depthRefusal(level: Level): ToolOutcome {
  return refusal(
    `delegation is not available here: this orchestration is ${level.depth} level(s) below the team and orchestrator.delegation.max_depth is ${level.tree.options.maxDepth}; solve it yourself`,
    'depth exhausted',
  );
}

/** One delegate call: a child orchestration on the subtask, its final answer as the result. Bounds give an error result. */
async function delegate(
  level: Level,
  args: Record<string, unknown>,
  signal: AbortSignal,
  site: ToolSite,
): Promise<ToolOutcome> {
  const { tree } = level;
  const { options } = tree;
  const parsed = delegateTask(args);
  if ('error' in parsed) return parsed.error;
  if (level.depth >= options.maxDepth) return depthRefusal(level);
  if (tree.used >= options.maxDelegations) {
    return refusal(
      `no delegations left: this orchestration has made all ${options.maxDelegations} (orchestrator.delegation.max_delegations); solve the subtask yourself`,
      'delegation budget spent',
    );
  }
  if (signal.aborted) throw aborted(signal);
  const depth = level.depth + 1;
  const team = childTeam(level.input.team, site.agent.id, options.shape);
  const payload: DelegatePayload = {
    turn_id: site.turnId,
    prompt_seq: site.promptSeq,
    agent: site.agent.id,
    label: site.agent.label,
    task: parsed.task,
    child_depth: depth,
    shape: options.shape,
    child_agents: team.map((a) => a.id),
    ordinal: ++tree.used,
  };
  const delegateSeq = level.sink.span({
    type: 'coordination',
    name: 'delegate',
    agent: site.agent.id,
    parentSeq: site.promptSeq,
    payload,
  });
  // The child stops like a total timeout (it still selects and presents what it has) when over its budget;
  // the caller's turn signal (superseded, timeout, interrupt) cancels it.
  const budget = new AbortController();
  const sink = new LevelSink(level.sink, {
    depth,
    delegate_seq: delegateSeq,
    budget: options.maxChildTokens,
    onOverBudget: () => budget.abort(new Error(`token budget of ${options.maxChildTokens} spent`)),
  });
  const stop = stopSignal(level.input.config.total_timeout_s * 1000, AbortSignal.any([signal, budget.signal]));
  let child: OrchestrationResult;
  try {
    child = await runLevel(
      tree,
      {
        task: parsed.task,
        team,
        config: level.input.config,
        sink,
        tools: level.input.tools,
        signal,
        presenterPrompt: level.input.presenterPrompt,
      },
      stop,
      depth,
      delegateSeq,
      sink,
    );
  } finally {
    stop.dispose();
  }
  addUsage(level.childUsage, child.usage);
  level.nested.push(...(child.delegations ?? []));
  const ret: DelegateReturnPayload = {
    turn_id: site.turnId,
    delegate_seq: delegateSeq,
    child_depth: depth,
    status: child.status,
    stopped: budget.signal.aborted ? 'token_budget' : child.timedOut ? 'timeout' : null,
    final_answer: child.finalAnswer,
    winner_agent: child.winner,
    winner_label: child.winnerLabel,
    rounds: child.rounds,
    tokens: child.usage.totalTokens,
    ...(child.error ? { error: child.error } : {}),
  };
  const returnSeq = level.sink.span({
    type: 'coordination',
    name: 'delegate_return',
    agent: site.agent.id,
    parentSeq: delegateSeq,
    payload: ret,
  });
  level.returns.push({
    agent: site.agent.id,
    delegateSeq,
    returnSeq,
    depth,
    answer: child.status === 'cancelled' ? null : child.finalAnswer,
  });
  if (signal.aborted) throw aborted(signal);
  if (child.finalAnswer === null)
    return refusal(
      `the sub-team returned no answer (${child.status}${child.error ? `: ${child.error}` : ''})`,
      'no answer',
    );
  return { result: child.finalAnswer, success: true };
}

/** The child team: every agent (labels as in the team) or the caller alone (agent1); extra samples stay with the team's own decisions. */
function childTeam(team: TeamAgent[], agentId: string, shape: DelegationInput['shape']): TeamAgent[] {
  const own = (a: TeamAgent): TeamAgent => ({ ...a, samples: undefined });
  return shape === 'solo' ? [{ ...own(team.find((a) => a.id === agentId)!), label: 'agent1' }] : team.map(own);
}

/** Once the level has its final answer: how much it used each answer returned to it (delegate_aggregate). */
function aggregate(level: Level, result: OrchestrationResult): DelegationRecord[] {
  if (!level.returns.length) return [];
  const returns = level.returns.map((r) => ({
    delegate_seq: r.delegateSeq,
    return_seq: r.returnSeq,
    agent: r.agent,
    child_depth: r.depth,
    use: answerUse(r.answer, result.finalAnswer),
  }));
  const payload: DelegateAggregatePayload = {
    winner_agent: result.winner,
    presentation_seq: result.finalAnswer === null ? null : level.sink.presentationSeq,
    returns,
  };
  level.sink.span({
    type: 'coordination',
    name: 'delegate_aggregate',
    agent: result.winner,
    parentSeq: level.sink.lastSelectionSeq,
    payload,
  });
  return returns.map((r) => ({
    agent: r.agent,
    delegateSeq: r.delegate_seq,
    returnSeq: r.return_seq,
    depth: r.child_depth,
    parentDelegateSeq: level.delegateSeq,
    use: r.use,
  }));
}

/** Share of the returned answer's distinct words that the final answer contains (0 without either). */
export function answerUse(answer: string | null, final: string | null): number {
  if (answer === null || final === null) return 0;
  const words = wordSet(answer);
  if (!words.size) return 0;
  const target = wordSet(final);
  let found = 0;
  for (const w of words) if (target.has(w)) found++;
  return found / words.size;
}

function addUsage(into: Usage, from: Usage): void {
  into.promptTokens += from.promptTokens;
  into.completionTokens += from.completionTokens;
  into.totalTokens += from.totalTokens;
  into.llmCalls += from.llmCalls;
  into.toolCalls += from.toolCalls;
}

function aborted(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('cancelled');
}
