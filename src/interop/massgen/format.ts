import { z } from 'zod';

/**
 * Shapes of the MassGen log files the importer reads (see the format notes in ../import-massgen.ts).
 * Objects are loose: MassGen adds fields between versions, and unknown ones are kept, not rejected.
 */

const ANSWER_LABEL = /^agent\d+\.\d+$/;

/** MassGen's times are epoch seconds (time.time()); outside 2000..2100 a value is corrupt, not a time. */
export const EPOCH_S_MIN = 946_684_800;
export const EPOCH_S_MAX = 4_102_444_800;
const epochSeconds = z.number().refine((t) => t >= EPOCH_S_MIN && t <= EPOCH_S_MAX, {
  message: 'not a plausible time (expected epoch seconds between 2000 and 2100)',
});

export const massgenEvent = z
  .looseObject({
    timestamp: epochSeconds,
    event_type: z.string().min(1),
    agent_id: z.string().nullable().optional(),
    details: z.string().nullable().optional(),
    context: z.record(z.string(), z.unknown()).nullable().optional(),
  })
  .superRefine((e, ctx) => {
    const c = e.context ?? {};
    const needAgent = [
      'new_answer',
      'vote_cast',
      'context_received',
      'final_agent_selected',
      'final_answer',
      'update_injected',
      'agent_error',
      'agent_timeout',
      'agent_cancelled',
      'final_round_start',
    ];
    if (needAgent.includes(e.event_type) && !e.agent_id) {
      ctx.addIssue({ code: 'custom', path: ['agent_id'], message: `a ${e.event_type} event needs the agent_id` });
    }
    if (e.event_type === 'new_answer' && !(typeof c.label === 'string' && ANSWER_LABEL.test(c.label))) {
      ctx.addIssue({
        code: 'custom',
        path: ['context', 'label'],
        message: 'a new_answer event needs context.label like "agent1.1"',
      });
    }
    if (e.event_type === 'vote_cast' && typeof c.voted_for !== 'string') {
      ctx.addIssue({
        code: 'custom',
        path: ['context', 'voted_for'],
        message: 'a vote_cast event needs context.voted_for (the voted-for agent id)',
      });
    }
  });
export type MassgenEvent = z.infer<typeof massgenEvent>;

export const coordinationEvents = z.looseObject({
  session_metadata: z.looseObject({
    user_prompt: z.string().nullable().optional(),
    agent_ids: z.array(z.string().min(1)).min(1),
    start_time: epochSeconds.nullable().optional(),
    end_time: epochSeconds.nullable().optional(),
    final_winner: z.string().nullable().optional(),
  }),
  events: z.array(massgenEvent),
});
export type CoordinationEvents = z.infer<typeof coordinationEvents>;

export const snapshotMappings = z.record(
  z.string(),
  z.looseObject({
    type: z.string(),
    label: z.string().optional(),
    agent_id: z.string(),
    timestamp: z.string(),
    path: z.string().min(1),
    voted_for: z.string().optional(),
    voted_for_label: z.string().optional(),
  }),
);
export type SnapshotMappings = z.infer<typeof snapshotMappings>;

export const voteFile = z.looseObject({
  voter_id: z.string(),
  voted_for: z.string(),
  reason: z.string().optional(),
  timestamp: z.string().optional(),
  unix_timestamp: z.number().optional(),
});
export type VoteFile = z.infer<typeof voteFile>;

/** context.txt when MassGen wrote a dict (always, for answers, votes and the final presentation). */
export const contextFile = z.looseObject({
  system_message: z.string().optional(),
  user_message: z.string().optional(),
  tools: z.array(z.unknown()).optional(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })).optional(),
});
export type ContextFile = z.infer<typeof contextFile>;

const tokenCount = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const tokenUsage = z.looseObject({
  input_tokens: tokenCount.optional(),
  output_tokens: tokenCount.optional(),
  reasoning_tokens: tokenCount.optional(),
  cached_input_tokens: tokenCount.optional(),
  estimated_cost: z.number().nonnegative().optional(),
});

/** metrics_summary.json (MassGen 0.1.x, written next to coordination_events.json): token counts and costs. */
export const metricsSummary = z.looseObject({
  totals: tokenUsage,
  tools: z.looseObject({ total_calls: tokenCount.optional() }).optional(),
  api_timing: z.looseObject({ total_calls: tokenCount.optional() }).optional(),
  agents: z.record(z.string(), z.looseObject({ token_usage: tokenUsage.nullable().optional() })).optional(),
});
export type MetricsSummary = z.infer<typeof metricsSummary>;
