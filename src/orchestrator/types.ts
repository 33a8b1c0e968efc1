import type { RLConfig } from '../config/schema.js';
import type { LlmClient } from '../llm/types.js';
import type { SpanInput } from '../trace/records.js';

export type OrchestratorConfig = RLConfig['orchestrator'];

export interface TeamAgent {
  id: string;
  /** `agent1`…`agentN` by registration order. */
  label: string;
  model: string;
  systemPrompt: string;
  temperature: number;
  maxTokens: number;
  toolMode: 'native' | 'text';
  /** Text mode: a reply without an action line is an answer (or, if it repeats one, a vote for it). */
  implicitAnswer?: boolean;
  tools: ToolDefinition[];
  client: LlmClient;
  /** Completions asked per decision (collect.samples_per_turn): the extra ones are recorded as `sample` prompt spans and do not act. */
  samples?: number;
  /**
   * Sampling seed of this agent's orchestration (evaluations): each call sends a seed derived from it, the
   * round, the attempt and the call's kind, so two teams on the same task and seed draw the same numbers.
   */
  seed?: number;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface ToolOutcome {
  result: string;
  success: boolean;
  error?: string;
}

/** Who calls a tool: the agent, its turn and the prompt span whose reply asked for it. */
export interface ToolSite {
  agent: TeamAgent;
  turnId: string;
  promptSeq: number;
}

/** Runs an agent's ordinary (non-workflow) tools; injected so the orchestrator stays pure. */
export interface ToolRunner {
  run(name: string, args: Record<string, unknown>, signal: AbortSignal, site?: ToolSite): Promise<ToolOutcome>;
  /** The result of a call to a tool the agent was not given, when the runner can say more than "unknown tool". */
  unknown?(name: string): ToolOutcome | undefined;
}

/**
 * Hierarchical delegation (orchestrator/delegation.ts): with `enabled`, every agent above `maxDepth` gets
 * a `delegate` tool whose call runs a child orchestration on a subtask (`shape`: the whole team or the
 * caller alone) with its own budget of `maxChildTokens`; `maxDelegations` counts calls at all depths.
 */
export interface DelegationInput {
  enabled: boolean;
  shape: 'team' | 'solo';
  maxDepth: number;
  maxDelegations: number;
  maxChildTokens: number;
}

/** One delegation and how much of its returned answer the final answer of its level used (orchestrator/delegation.ts). */
export interface DelegationRecord {
  /** The delegating agent. */
  agent: string;
  /** The `delegate` and `delegate_return` spans. */
  delegateSeq: number;
  returnSeq: number;
  /** Depth of the child orchestration (1 under the team). */
  depth: number;
  /** The delegation whose child orchestration made this one (null: made by the team itself). */
  parentDelegateSeq: number | null;
  /** Share of the returned answer's words found in the final answer of the level that asked (0 when ignored or none). */
  use: number;
}

/** Receives spans as they happen and returns their sequence number (for parent links). */
export interface TraceSink {
  span(span: SpanInput): number;
}

/** What a stop policy sees when a round ends (a new answer arrived): stop now and present the leader, or go on. */
export interface StopState {
  /** The round that just ended (1-based). */
  round: number;
  maxRounds: number;
  teamSize: number;
  liveAgents: number;
  /** The current answers, the new one included. */
  answers: string[];
  /** Votes held now for each answer, in the order of `answers`. */
  voteCounts: number[];
  tokens: number;
}

/** A stop decision and what to record of it (the payload of a `policy_decision` span). */
export interface StopDecision {
  stop: boolean;
  payload: unknown;
}

export type StopPolicy = (state: StopState) => StopDecision | undefined;

export type Action =
  | { kind: 'answer'; content: string; implicit?: boolean }
  /** repeats: an independent answer whose final answer another agent had given, recorded as a vote for it. */
  | { kind: 'vote'; target: string; reason: string; implicit?: boolean; repeats?: boolean };

export interface OrchestrationResult {
  status: 'completed' | 'cancelled' | 'failed';
  error?: string;
  winner: string | null;
  winnerLabel: string | null;
  finalAnswer: string | null;
  consensus: boolean;
  rounds: number;
  restarts: number;
  timedOut: boolean;
  labels: Record<string, string>;
  answers: { agent: string; label: string; content: string; round: number; seq: number }[];
  votes: { voter: string; target: string; reason: string; round: number; seq: number; repeats?: boolean }[];
  dropped: { agent: string; kind: string; reason: string }[];
  toolCalls: { agent: string; name: string; success: boolean; seq: number }[];
  usage: { promptTokens: number; completionTokens: number; totalTokens: number; llmCalls: number; toolCalls: number };
  wallMs: number;
  /** The round after which a stop policy ended coordination (absent: it ended as MassGen's protocol does). */
  stoppedAfterRound?: number;
  /** Every delegation of the orchestration, all depths, by delegate span (only when delegation was enabled). */
  delegations?: DelegationRecord[];
}

/** What one orchestration runs on. */
export interface OrchestrateInput {
  task: string;
  team: TeamAgent[];
  config: OrchestratorConfig;
  sink: TraceSink;
  tools: ToolRunner;
  /** Interrupts the whole orchestration (Ctrl-C): running calls are cancelled. */
  signal?: AbortSignal;
  /** A learned stop policy, asked at the end of each round (absent: MassGen's protocol decides). */
  stopPolicy?: StopPolicy;
  /** Hierarchical delegation (delegation.ts); absent, null or not enabled: none. The caller fills it from config. */
  delegation?: DelegationInput | null;
  /** The system prompt the winner presents with, at every level (absent: the winner's own system prompt). */
  presenterPrompt?: string;
}
