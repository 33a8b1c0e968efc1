/**
 * Importing MassGen log directories as rollouts (`massgen-rl traces import --massgen-logs DIR`).
 *
 * MassGen's on-disk log format, as written by github.com/massgen/MassGen at commit 304dbaa
 * (2025-11-15; v0.1.x). Files read: massgen/logger_config.py (directories, execution_metadata.yaml),
 * massgen/coordination_tracker.py (coordination_events.json, snapshot_mappings.json, status.json,
 * answer labels), massgen/orchestrator.py (_save_agent_snapshot: answer.txt, vote.json, context.txt,
 * final/; restart attempts), massgen/message_templates.py (context contents, restart feedback) and
 * massgen/cli.py (turn numbering, copying the last attempt's final/ to the turn). Checked against logs written by
 * the real massgen 0.1.97 from PyPI (test/fixtures/massgen-real, test/real-model/massgen-real.test.ts), which
 * adds the metrics files and always writes attempt_1/.
 *
 *   .massgen/massgen_logs/log_<YYYYMMDD_HHMMSS_ffffff>/   one CLI session (get_log_session_dir)
 *     turn_<N>/                                          always present, N >= 1 (one per question)
 *       execution_metadata.yaml     query, timestamp, config_path, config (agents[].id, agents[].backend.model),
 *                                   cli_args, git, python_version, massgen_version, working_directory; written by
 *                                   PyYAML's yaml.dump, so objects the config shares appear as &id001 / *id001
 *       massgen.log | massgen_debug.log
 *       [attempt_<M>/]              commit 304dbaa: only when orchestrator.coordination.max_orchestration_restarts > 0;
 *                                   0.1.97: always (attempt_1/ at least). Then every attempt (M >= 1) lives here
 *                                   and turn_<N>/final/ is a copy of the last attempt's
 *         coordination_events.json  written once, when the final presentation ends:
 *             { session_metadata: { user_prompt, agent_ids (registration order), start_time, end_time (epoch s),
 *                                   final_winner },
 *               events: [ { timestamp (epoch s), event_type, agent_id (real id | null), details, context } ] }
 *             event_type: session_start | session_end | iteration_start | iteration_end | status_change |
 *             context_received | restart_triggered | restart_completed | new_answer | vote_cast |
 *             final_agent_selected | final_answer | final_round_start | agent_error | agent_timeout |
 *             agent_cancelled | update_injected | vote_ignored (0.1.97: a vote cast while new answers arrived;
 *             not counted, and not imported). Every context has iteration and round (the agent's round,
 *             which only increases when that agent answers). Per type: new_answer {label "agentN.M"};
 *             vote_cast {voted_for (real id), voted_for_label, reason, available_answers}; context_received
 *             {available_answers ("agentN"), available_answer_labels ("agentN.M"), answer_count,
 *             has_conversation_history}; restart_triggered {affected_agents, triggering_agent};
 *             final_agent_selected / final_answer {vote_summary, all_answers, answers_for_context {label: text},
 *             final_answer also label "agentN.final"}; final_round_start {round_type, final_round}.
 *             Each file starts with two session_start events (orchestrator construction, then the question).
 *         snapshot_mappings.json    { "agent1.1": {type: answer, label, agent_id, timestamp, iteration, round, path},
 *                                     "agent1.vote1": {type: vote, ..., voted_for, voted_for_label, path},
 *                                     "agent1.final": {type: final_answer, timestamp: "final", path} }
 *         status.json               live progress snapshot (meta, coordination, agents, results); not imported
 *         metrics_summary.json      (0.1.97) written with coordination_events.json: { meta {question, winner, ...},
 *                                     totals { input_tokens, output_tokens, reasoning_tokens, estimated_cost, ... },
 *                                     tools { total_calls, ... }, api_timing { total_calls, ... }, rounds {...},
 *                                     agents { <agent_id>: { token_usage { input_tokens, output_tokens, ... },
 *                                     round_history, tool_metrics } } }. Totals are the sums of the agents'
 *                                     token_usage, which the backends add up from the API's usage of every call
 *                                     (round_history leaves out calls whose result was discarded, so it sums lower).
 *         metrics_events.json, events.jsonl, coordination_table.txt, agent_outputs/, execution_trace.md (in each snapshot)
 *                                   (0.1.97) per-round metrics, the display's event stream, renderings; not imported
 *                                   (events.jsonl holds no token counts for a coordination's own calls)
 *         <agent_id>/<YYYYMMDD_HHMMSS_ffffff>/   one snapshot per answer or vote (and partial work on restarts)
 *             answer.txt            the answer text, verbatim
 *             vote.json             { voter_id, voter_anon_id, voted_for, voted_for_anon, reason, timestamp,
 *                                     unix_timestamp, iteration, coordination_round, available_options,
 *                                     available_options_anon, agent_mapping, vote_context }
 *             context.txt           JSON { system_message, user_message, tools } the agent was started with
 *             update_message.txt, workspace/   (only with a filesystem-enabled backend)
 *         final/<agent_id>/answer.txt, context.txt (JSON { messages, is_final, vote_summary, all_answers,
 *                                     vote_counts, voter_details, all_votes, ... }), workspace/
 *
 * MassGen numbers agents three ways: the tracker (event labels agentN.M, snapshot_mappings, status.json)
 * by registration order (session_metadata.agent_ids); prompts shown to agents ("<agent1> ... <end of
 * agent1>") by sorted id among the agents that have answered; vote.json's agent_mapping/_anon fields by
 * sorted id among all agents. Our labels follow the tracker (agentN = the N-th registered agent, which
 * is also our vocabulary's rule); votes are resolved through voted_for (the real id), never an _anon
 * field. Restart reason and instructions are not logged as events: the next attempt's prompts start with a
 * <PREVIOUS ATTEMPT FEEDBACK> block, which is where the importer reads them. Tokens: the rollout's are
 * metrics_summary.json's totals (input + output), with the breakdown, the estimated cost and the per-agent
 * counts in metadata.massgen_usage, and tool calls from tools.total_calls; logs without the file (before
 * 0.1.x's metrics) import with 0. The wall clock is end_time - start_time.
 *
 * Input is not trusted: only regular files are read (a FIFO or device is refused before anything opens it),
 * never a file whose real path leaves its log_<timestamp> directory (links included), JSON nested deeper than
 * 256 levels is refused, YAML aliases must name an earlier anchor, not their own ancestor, and not expand
 * the document past 100k nodes, and times must be epoch seconds in 2000..2100. Each problem fails its
 * unit with file:line:col; --skip-invalid imports the rest.
 *
 * Mapping: one rollout per turn, or per attempt when the turn has attempt_M directories; id
 * mg_<sha256(log/turn_N[/attempt_M])>, source 'massgen-import', metadata {massgen_log, turn, attempt
 * (null without attempt directories), original_task, agents, labels, models, ...}; started/finished
 * at MassGen's session times. Spans (see massgen-import/convert.ts): round (round 1 at the start, trigger
 * 'restart' for attempts after the first; a new round at each restart_triggered, trigger 'new_answer'),
 * message 'context' per context_received (messages from the matching context.txt), message 'update' per
 * update_injected, new_answer, vote (or invalid_action unknown_target), drop for agent_error/agent_timeout,
 * cancel for agent_cancelled, final_selection (standing votes: those cast since the last new answer, as
 * MassGen counts them), a message 'context' for the presenter's prompt, presentation, and restart
 * when a later attempt of the turn exists.
 */
import path from 'node:path';
import { UserError } from '../../errors.js';
import type { Store } from '../../store/store.js';
import type { SpanInput } from '../../trace/records.js';
import { convertUnit, MASSGEN_IMPORT_SOURCE, unitName, type ConvertedRollout } from './convert.js';
import { discoverMassgenLogs, type MassgenUnit } from './discover.js';
import { FileReader, MassgenInputError } from './files.js';
import { massgenOtlpCalls } from './join-otlp.js';
import { joinedCall, linkActions } from './join.js';

export { MASSGEN_IMPORT_SOURCE, massgenRolloutId } from './convert.js';

export interface ImportUnitRef {
  log: string;
  turn: number;
  attempt: number | null;
}

export interface ImportedUnit extends ImportUnitRef {
  rollout_id: string;
  /** The run went through a gateway session: its captured calls joined (0 when none were found). */
  gateway_calls?: number;
  /** Else, the model calls MassGen's own tracing sent to the OTLP receiver for it, joined. */
  otlp_calls?: number;
  status: string;
  winner: string | null;
  answers: number;
  votes: number;
  rounds: number;
  spans: number;
}

export interface SkippedUnit extends ImportUnitRef {
  rollout_id: string | null;
  reason: 'already imported' | 'incomplete';
  detail: string;
}

export interface FailedUnit extends ImportUnitRef {
  file: string | null;
  line: number | null;
  column: number | null;
  message: string;
}

export interface ImportSummary {
  source: string;
  logs: number;
  imported: ImportedUnit[];
  skipped: SkippedUnit[];
  failed: FailedUnit[];
}

export interface ImportOptions {
  /** A massgen_logs directory, one log_<timestamp> directory, or a project holding .massgen/massgen_logs. */
  dir: string;
  /** Import the valid units and list the malformed ones, instead of refusing the whole import. */
  skipInvalid?: boolean;
}

interface Parsed {
  converted: { unit: MassgenUnit; rollout: ConvertedRollout }[];
  skipped: SkippedUnit[];
  failed: FailedUnit[];
}

/** Reads and checks every unit first (no writes), so malformed input never leaves anything behind. */
export function parseMassgenLogs(dir: string): Parsed & { root: string; logs: number } {
  const discovery = discoverMassgenLogs(dir);
  // File names in messages and span payloads start at the log directory: log_<timestamp>/turn_N/...
  const reader = new FileReader(path.dirname(discovery.logDirs[0]!));
  const parsed: Parsed = { converted: [], skipped: [], failed: [] };
  for (const unit of discovery.units) {
    const ref = { log: unit.log, turn: unit.turn, attempt: unit.attempt };
    try {
      const result = convertUnit(unit, reader.within(unit.logDir));
      if (result.kind === 'incomplete')
        parsed.skipped.push({
          ...ref,
          rollout_id: null,
          reason: 'incomplete',
          detail: `${unitName(unit)}: ${result.reason}`,
        });
      else parsed.converted.push({ unit, rollout: result.rollout });
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      const m = err instanceof MassgenInputError ? err : null;
      parsed.failed.push({
        ...ref,
        file: m?.file ?? null,
        line: m?.position?.line ?? null,
        column: m?.position?.column ?? null,
        message: err.message,
      });
    }
  }
  return { ...parsed, root: discovery.root, logs: discovery.logDirs.length };
}

/** How far a captured call may begin outside MassGen's session times (its clock rounds to the second). */
const JOIN_SLACK_MS = 2000;

/**
 * The chat calls a gateway captured for the run (its config sent every agent through a gateway session's
 * base URL), as prompt spans of the imported rollout: token ids and logprobs next to MassGen's answers,
 * votes and winner. Null when the run did not go through a gateway.
 */
function joinedCalls(store: Store, r: ConvertedRollout): SpanInput[] | null {
  const session = r.metadata.gateway_session;
  if (typeof session !== 'string') return null;
  return store.spans
    .gatewaySessionCalls(session, r.startedAt - JOIN_SLACK_MS, r.finishedAt + JOIN_SLACK_MS)
    .map((s) => joinedCall(s));
}

/**
 * Writes one converted rollout in one transaction: the rollout, its spans and its timings land
 * together or not at all. Returns false when a rollout with this id is already stored. The model calls of the run
 * join it: the gateway's captured calls when it went through a gateway session, else those MassGen's own tracing
 * sent to the OTLP receiver.
 */
export function writeImportedRollout(store: Store, r: ConvertedRollout): boolean {
  return store.transaction(() => {
    if (store.rollouts.get(r.id)) return false;
    const captured = joinedCalls(store, r);
    const traced = massgenOtlpCalls(store, r.unit);
    const calls = captured ?? traced?.calls ?? null;
    const { spans, linked } = calls ? linkActions(r.spans, calls) : { spans: r.spans, linked: 0 };
    const joined = captured
      ? { gateway_calls: captured.length, gateway_linked: linked }
      : traced
        ? { otlp_calls: traced.calls.length, otlp_linked: linked }
        : {};
    store.rollouts.start({ id: r.id, source: MASSGEN_IMPORT_SOURCE, metadata: { ...r.metadata, ...joined } });
    // the captured sessions now live on in this rollout: collect.source gateway takes this one, not them
    const joinedFrom = (c: SpanInput) => (c.payload as { joined_from: { rollout_id: string } }).joined_from.rollout_id;
    for (const id of new Set([...(captured ?? []).map(joinedFrom), ...(traced?.rollouts ?? [])]))
      store.rollouts.mergeMetadata(id, { joined_into: r.id });
    const seqs = store.spans.append(r.id, [...spans, ...(calls ?? [])]);
    if (seqs.length && seqs[0] !== 1) throw new Error(`rollout ${r.id}: spans did not start at seq 1`);
    store.rollouts.finish(r.id, r.finish);
    store.rollouts.setImportedTimes(r.id, r.startedAt, r.finishedAt);
    return true;
  });
}
