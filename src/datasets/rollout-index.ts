import { REFERENCE_VERIFYING } from '../config/sections/rewards.js';
import {
  nestedDepth,
  type NewAnswerPayload,
  type PresentationPayload,
  type PromptPayload,
  type VotePayload,
} from '../trace/payloads.js';
import type { Reward } from '../trace/records.js';
import type { TraceRecord, TraceSpan } from './read-traces.js';

/** An accepted action (new_answer or vote span) and the prompt span that produced it. */
export interface ActionRef {
  kind: 'answer' | 'vote';
  seq: number;
  agent: string;
  promptSeq: number;
  content: string;
  round: number;
  implicit: boolean;
  /** A vote's target agent. */
  target?: string;
}

export const UNCATEGORIZED = 'uncategorized';

const best = (rewards: readonly Reward[]): number | null =>
  rewards.length ? Math.max(...rewards.map((r) => r.value)) : null;

/**
 * What the builders need of one completed rollout, indexed once: actions, the presentation, prompt
 * spans (payloads parsed on first use), turn rewards and which agents were not clean.
 *
 * Rewards: a span's turn reward is Σ weight × value over the reward families that scored it on the
 * turn channel (targetSeq = the span; several rows of one family are averaged), the same rule as the
 * rollout total; null when no weighted family did. `rewardFor` falls back to the rollout total.
 * Clean: an agent is clean in a completed rollout with no invalid_action and no drop span of its own.
 * Coordination spans of child orchestrations (delegation: payloads marked with a depth) are not the
 * team's actions and are left out; the agents' prompt spans in them stay (their calls are theirs).
 */
export class RolloutIndex {
  readonly actions: ActionRef[] = [];
  presentation: { seq: number; agent: string; content: string; promptSeq: number } | null = null;
  readonly promptSpans: TraceSpan[] = [];
  /** The seq of the last restart span: answers after it belong to the final attempt. */
  attemptStart = 0;
  readonly category: string;
  private readonly promptBySeq = new Map<number, TraceSpan>();
  private readonly parsed = new Map<number, PromptPayload>();
  private readonly dirty = new Set<string>();
  private readonly turnRewards = new Map<number, Reward[]>();
  /** Acting calls' requests by `turn_id#attempt`, built on first use (requestOf). */
  private turnRequests: Map<string, PromptPayload['request']> | undefined;

  /**
   * `load` fetches a prompt span's payload when the record has no prompt spans (coordination-only reads);
   * `verifying`: the families whose verdict says an answer is right (config verifyingFamilies; default the
   * reference's).
   */
  constructor(
    readonly record: TraceRecord,
    private readonly weights: Partial<Record<string, number>> | null,
    private readonly load?: (rolloutId: string, seq: number) => string | undefined,
    private readonly verifying: readonly string[] = REFERENCE_VERIFYING,
  ) {
    const meta = record.rollout.metadata.category;
    this.category = record.task?.category ?? (typeof meta === 'string' && meta ? meta : UNCATEGORIZED);
    for (const s of record.spans) this.index(s);
    for (const r of record.rewards) {
      if (r.channel !== 'turn' || r.targetSeq === null) continue;
      const list = this.turnRewards.get(r.targetSeq);
      if (list) list.push(r);
      else this.turnRewards.set(r.targetSeq, [r]);
    }
  }

  get rollout() {
    return this.record.rollout;
  }

  get total(): number | null {
    const t = this.record.rollout.totalReward;
    return t !== null && Number.isFinite(t) ? t : null;
  }

  prompt(seq: number): PromptPayload | null {
    const cached = this.parsed.get(seq);
    if (cached) return cached;
    const json = this.promptBySeq.get(seq)?.payload ?? this.load?.(this.rollout.id, seq);
    if (!json) return null;
    const p = JSON.parse(json) as PromptPayload;
    this.parsed.set(seq, p);
    return p;
  }

  turnReward(seq: number): number | null {
    const rows = this.turnRewards.get(seq);
    if (!rows) return null;
    const byFamily = new Map<string, number[]>();
    for (const r of rows) byFamily.set(r.family, [...(byFamily.get(r.family) ?? []), r.value]);
    let total = 0;
    let weighted = false;
    for (const [family, values] of byFamily) {
      const w = this.weights === null ? 1 : (this.weights[family] ?? 0);
      if (w === 0) continue;
      weighted = true;
      total += w * (values.reduce((a, b) => a + b, 0) / values.length);
    }
    return weighted ? total : null;
  }

  /**
   * The request a prompt span's payload was sent with: its own, else (a `sample` span stored without one)
   * the request of the call that acted in the same turn and attempt; undefined when neither has messages.
   */
  requestOf(p: PromptPayload): PromptPayload['request'] | undefined {
    if (p.request?.messages) return p.request;
    if (!this.turnRequests) {
      this.turnRequests = new Map();
      for (const a of this.actions) {
        const q = this.prompt(a.promptSeq);
        if (q?.request?.messages) this.turnRequests.set(`${q.turn_id}#${q.attempt}`, q.request);
      }
    }
    return this.turnRequests.get(`${p.turn_id}#${p.attempt}`);
  }

  /** Verified correctness of an answer span: the best verifying turn reward (1 right, 0 wrong); null when none scored it. */
  verified(seq: number): number | null {
    return best((this.turnRewards.get(seq) ?? []).filter((r) => this.verifying.includes(r.family)));
  }

  /** Verified correctness of the final answer: the best verifying rollout-channel reward; null when none scored it. */
  verifiedFinal(): number | null {
    return best(this.record.rewards.filter((r) => r.channel === 'rollout' && this.verifying.includes(r.family)));
  }

  /** The spans a turn reward targets, in order. */
  rewardedTurns(): number[] {
    return [...this.turnRewards.keys()].sort((a, b) => a - b);
  }

  /** The turn reward of the span, else the rollout total. */
  rewardFor(seq: number): number | null {
    return this.turnReward(seq) ?? this.total;
  }

  clean(agent: string | null): boolean {
    return this.rollout.status === 'completed' && (agent === null || !this.dirty.has(agent));
  }

  /** Each agent's last answer of the final attempt (the answers standing when coordination ended). */
  standingAnswers(): Map<string, ActionRef> {
    const out = new Map<string, ActionRef>();
    for (const a of this.actions) if (a.kind === 'answer' && a.seq > this.attemptStart) out.set(a.agent, a);
    return out;
  }

  meta(agent: string | null, seq: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const r = this.rollout;
    return { rollout_id: r.id, rollout_num: r.num, task_id: r.taskId, category: this.category, agent, seq, ...extra };
  }

  private index(s: TraceSpan): void {
    if (s.type === 'prompt') {
      this.promptSpans.push(s);
      this.promptBySeq.set(s.seq, s);
      return;
    }
    // Only child orchestrations' payloads carry delegate_seq: parse the rest only where they are used.
    if (s.payload.includes('"delegate_seq"') && nestedDepth(JSON.parse(s.payload)) > 0) return;
    if (s.name === 'invalid_action' || s.name === 'drop') {
      if (s.agent) this.dirty.add(s.agent);
    } else if (s.name === 'restart') {
      this.attemptStart = s.seq;
    } else if ((s.name === 'new_answer' || s.name === 'vote') && s.agent) {
      const p = JSON.parse(s.payload) as NewAnswerPayload & VotePayload;
      const kind = s.name === 'new_answer' ? 'answer' : 'vote';
      const content = kind === 'answer' ? p.content : `${p.target_label} | ${p.reason ?? ''}`;
      this.actions.push({
        kind,
        seq: s.seq,
        agent: s.agent,
        promptSeq: p.prompt_seq,
        content: content ?? '',
        round: p.round,
        implicit: p.implicit === true,
        ...(kind === 'vote' ? { target: p.target_agent } : {}),
      });
    } else if (s.name === 'presentation' && s.agent) {
      const p = JSON.parse(s.payload) as PresentationPayload;
      this.presentation = { seq: s.seq, agent: s.agent, content: p.content, promptSeq: p.prompt_seq };
    }
  }
}
