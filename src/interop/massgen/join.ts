import type { Span, SpanInput } from '../../trace/records.js';

/** A stored call (a gateway's or a received trace's) as a span of the imported rollout, pointing back at it. */
export function joinedCall(s: Span, agent = s.agent): SpanInput {
  return {
    type: s.type,
    name: s.name,
    agent,
    startedAt: s.startedAt,
    durationMs: s.durationMs,
    payload: { ...(s.payload as Record<string, unknown>), joined_from: { rollout_id: s.rolloutId, seq: s.seq } },
  };
}

/** How long after a call ends MassGen may log the action it made (its clock rounds to the second). */
const ACTION_SLACK_MS = 2000;

interface Call {
  seq: number;
  agent: string | null;
  endsAt: number;
  tools: { name: string; content: string | null }[];
  text: string;
  used: boolean;
}

function callOf(span: SpanInput, seq: number): Call {
  const p = span.payload as { response?: { content?: unknown; tool_calls?: unknown } | null };
  const calls = Array.isArray(p.response?.tool_calls) ? (p.response.tool_calls as unknown[]) : [];
  const tools = calls.map((c) => {
    const fn = (c as { function?: { name?: unknown; arguments?: unknown } }).function ?? {};
    let content: string | null = null;
    try {
      const args = JSON.parse(typeof fn.arguments === 'string' ? fn.arguments : '{}') as { content?: unknown };
      if (typeof args.content === 'string') content = args.content.trim();
    } catch {
      /* arguments cut short: the name still counts */
    }
    return { name: typeof fn.name === 'string' ? fn.name : '', content };
  });
  const text = typeof p.response?.content === 'string' ? p.response.content.trim() : '';
  return {
    seq,
    agent: span.agent ?? null,
    endsAt: (span.startedAt ?? 0) + (span.durationMs ?? 0),
    tools,
    text,
    used: false,
  };
}

/** Which tool call made a MassGen action, and the text it should carry; null for spans no call makes. */
function wanted(span: SpanInput): { tool: string | null; content: string | null } | null {
  const p = span.payload as { content?: unknown };
  const content = typeof p.content === 'string' ? p.content.trim() : null;
  if (span.name === 'new_answer') return { tool: 'new_answer', content };
  if (span.name === 'vote') return { tool: 'vote', content: null };
  if (span.name === 'presentation') return { tool: null, content };
  return null;
}

/**
 * Points each of MassGen's actions (new_answer, vote, presentation) at the captured call that made it:
 * the same agent's call, ended before MassGen logged the action, that made that tool call (a new answer
 * whose text is the answer's first, then the latest), or for the presentation a reply with no tool
 * call. The action's `prompt_seq` becomes that call's span (its token ids and logprobs are what GRPO and
 * PPO train on), and its `massgen_prompt_seq` keeps MassGen's context span. Calls are matched once each;
 * an action no call matches keeps MassGen's context.
 */
export function linkActions(spans: SpanInput[], calls: SpanInput[]): { spans: SpanInput[]; linked: number } {
  const pool = calls.map((c, i) => callOf(c, spans.length + 1 + i));
  let linked = 0;
  const out = spans.map((span) => {
    const want = span.type === 'coordination' ? wanted(span) : null;
    if (!want || !span.agent) return span;
    const fits = pool.filter(
      (c) =>
        !c.used
        && c.agent === span.agent
        && c.endsAt <= (span.startedAt ?? Infinity) + ACTION_SLACK_MS
        && (want.tool === null ? c.tools.length === 0 : c.tools.some((t) => t.name === want.tool)),
    );
    const same = (c: Call) =>
      want.content !== null
      && (want.tool === null ? c.text === want.content : c.tools.some((t) => t.content === want.content));
    const pick = fits.filter(same).at(-1) ?? fits.at(-1);
    if (!pick) return span;
    pick.used = true;
    linked++;
    const payload = span.payload as { prompt_seq?: unknown };
    return { ...span, payload: { ...payload, prompt_seq: pick.seq, massgen_prompt_seq: payload.prompt_seq ?? null } };
  });
  return { spans: out, linked };
}
