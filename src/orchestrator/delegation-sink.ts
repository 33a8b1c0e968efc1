import { nestedDepth, type NestedMark } from '../trace/payloads.js';
import type { SpanInput } from '../trace/records.js';
import type { TraceSink } from './types.js';

export interface ChildMark extends NestedMark {
  /** Token budget of the child orchestration, its own children included. */
  budget: number;
  /** Called once, when the child's calls have spent more than the budget. */
  onOverBudget: () => void;
}

/**
 * The sink of one orchestration level while delegation is on. For a child level (`mark`) it re-parents
 * the child's root spans under the delegate span and marks every payload with {depth, delegate_seq}
 * (spans a deeper level marked already pass as they are), and counts the tokens of every prompt span
 * against the child's budget. At every level it notes the level's own last final selection and
 * presentation, which the aggregate record points at.
 */
export class LevelSink implements TraceSink {
  lastSelectionSeq: number | null = null;
  presentationSeq: number | null = null;
  tokens = 0;
  private over = false;

  constructor(
    private readonly out: TraceSink,
    private readonly mark: ChildMark | null,
  ) {}

  span(s: SpanInput): number {
    const own = nestedDepth(s.payload) === 0;
    const seq = this.out.span(this.mark && own ? this.marked(s, this.mark) : s);
    if (own && s.type === 'coordination') {
      if (s.name === 'final_selection') this.lastSelectionSeq = seq;
      if (s.name === 'presentation') this.presentationSeq = seq;
    }
    if (this.mark && s.type === 'prompt') this.count(s, this.mark);
    return seq;
  }

  private marked(s: SpanInput, mark: ChildMark): SpanInput {
    const payload = s.payload && typeof s.payload === 'object' ? s.payload : { value: s.payload ?? null };
    // The payload changes, so its pre-encoded JSON (prompt spans) no longer applies: the store encodes it.
    const { payloadJson: _encoded, ...rest } = s;
    return {
      ...rest,
      parentSeq: s.parentSeq ?? mark.delegate_seq,
      payload: { ...payload, depth: mark.depth, delegate_seq: mark.delegate_seq },
    };
  }

  private count(s: SpanInput, mark: ChildMark): void {
    const usage = (s.payload as { usage?: { total_tokens?: unknown } } | undefined)?.usage;
    if (typeof usage?.total_tokens === 'number' && Number.isFinite(usage.total_tokens))
      this.tokens += usage.total_tokens;
    if (this.over || this.tokens <= mark.budget) return;
    this.over = true;
    // After the current turn has settled: the call that crossed the budget still acts, later calls are stopped.
    setImmediate(mark.onOverBudget);
  }
}
