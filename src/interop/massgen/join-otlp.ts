import type { Store } from '../../store/index.js';
import type { Span, SpanInput } from '../../trace/records.js';
import { joinedCall } from './join.js';

/** The span MassGen's Logfire tracing opens around a whole coordination, with `massgen.log_path`. */
const SESSION_SPAN = 'coordination.session';
const NO_PARENT = '0000000000000000';

interface OtlpIds {
  span_id?: string;
  parent_span_id?: string | null;
  attributes?: Record<string, unknown>;
}

const idsOf = (s: Span): OtlpIds | null => (s.payload as { otlp?: OtlpIds } | null)?.otlp ?? null;

/** Whether MassGen's `massgen.log_path` (`.massgen/massgen_logs/log_…/turn_1/attempt_1`) is this unit's directory. */
export function namesUnit(logPath: unknown, unit: { log: string; turn: number; attempt: number | null }): boolean {
  if (typeof logPath !== 'string') return false;
  const parts = logPath.split(/[\\/]+/).filter(Boolean);
  const at = parts.lastIndexOf(unit.log);
  const want = [`turn_${unit.turn}`, ...(unit.attempt === null ? [] : [`attempt_${unit.attempt}`])];
  return at >= 0 && parts.slice(at + 1).join('/') === want.join('/');
}

/**
 * The model calls MassGen's own tracing sent us (Logfire spans to the OTLP receiver) for one unit of its log: the
 * chat spans of every received trace whose `coordination.session` names the unit's directory, each under the agent
 * its ancestors name (`massgen.agent_id`), in the order they began; and those rollouts, which now live on in the
 * imported one. Null when no received trace names the unit.
 */
export function massgenOtlpCalls(
  store: Store,
  unit: { log: string; turn: number; attempt: number | null },
): { calls: SpanInput[]; rollouts: string[] } | null {
  const named = store.spans
    .otlpSpansNamed(SESSION_SPAN)
    .filter((s) => namesUnit(idsOf(s)?.attributes?.['massgen.log_path'], unit));
  const rollouts = [...new Set(named.map((s) => s.rolloutId))];
  if (!rollouts.length) return null;
  const spans = rollouts.flatMap((id) => store.spans.list(id));
  const ancestry = spanTree(spans);
  const calls = spans
    .filter((s) => s.type === 'prompt')
    .sort((a, b) => a.startedAt - b.startedAt)
    .map((s) => joinedCall(s, agentAbove(idsOf(s)?.parent_span_id ?? null, ancestry) ?? s.agent));
  return { calls, rollouts };
}

type Tree = Map<string, { parent: string | null; attributes: Record<string, unknown> }>;

/**
 * Each received span's parent and attributes by its id. A span still running when its trace was sent is known by
 * Logfire's start marker of it (a child of it, `logfire.span_type: pending_span`, its parent in
 * `logfire.pending_parent_id`) until the span itself arrives.
 */
function spanTree(spans: Span[]): Tree {
  const tree: Tree = new Map();
  const pending = (ids: OtlpIds) => ids.attributes?.['logfire.span_type'] === 'pending_span';
  for (const s of spans) {
    const ids = idsOf(s);
    if (!ids?.parent_span_id || !pending(ids)) continue;
    const parent = ids.attributes?.['logfire.pending_parent_id'];
    const real = typeof parent === 'string' && parent !== NO_PARENT ? parent : null;
    tree.set(ids.parent_span_id, { parent: real, attributes: ids.attributes ?? {} });
  }
  for (const s of spans) {
    const ids = idsOf(s);
    if (ids?.span_id && !pending(ids))
      tree.set(ids.span_id, { parent: ids.parent_span_id ?? null, attributes: ids.attributes ?? {} });
  }
  return tree;
}

function agentAbove(spanId: string | null, tree: Tree): string | null {
  for (let id = spanId, depth = 0; id && depth < 64; depth++) {
    const node = tree.get(id);
    const agent = node?.attributes['massgen.agent_id'];
    if (typeof agent === 'string' && agent) return agent;
    id = node?.parent ?? null;
  }
  return null;
}
