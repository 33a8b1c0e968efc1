import type { Usage } from './llm-call.js';
import type { OrchestratorConfig, TeamAgent, ToolRunner, TraceSink } from './types.js';
import type { Snapshot } from './validate.js';

/** What one agent turn works with (shared by the turn loop, action reading and tool calls). */
export interface TurnContext {
  agent: TeamAgent;
  task: string;
  snapshot: Snapshot;
  teamSize: number;
  config: OrchestratorConfig;
  sink: TraceSink;
  tools: ToolRunner;
  usage: Usage;
  toolLog: { agent: string; name: string; success: boolean; seq: number }[];
  round: number;
  roundSeq: number;
  turnId: string;
  /** Aborted by the coordinator (superseded, total timeout, interrupt), or by the turn itself on agent timeout. */
  controller: AbortController;
}
