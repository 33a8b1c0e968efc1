import { decisionReward } from '../policies/learn.js';
import { DELEGATION_CREDIT } from '../rewards/delegation-credit.js';
import { nestedDepth, type DelegatePayload, type PolicyDecisionPayload } from '../trace/payloads.js';
import { extractFinalNumber } from '../util/answer-numbers.js';
import { extractFinalAnswer, normalizeAnswer } from '../util/answer-text.js';
import { completionText } from './messages.js';
import type { CallSite } from './role-calls.js';
import type { ActionRef, RolloutIndex } from './rollout-index.js';

export type AttributedKind = 'answer' | 'vote' | 'presentation' | 'sample' | 'delegation' | 'decision';

/** One call's (or decision's) reward as its role earned it; `seq` is the span the reward targets. */
export interface Attribution {
  seq: number;
  kind: AttributedKind;
  site: CallSite;
  value: number;
  reason: string;
  /** A decision's policy kind (routing, stop, tool, delegate). */
  policy?: string;
}

/**
 * The rewards of one rollout attributed per call (docs/roles.md). right(x) is x's verified correctness (its
 * verifying families' turn reward, 0–1); outcome is the rollout's (their rollout reward, else its total).
 * - answer: right × (1 when it is the winning answer, else ½); unverified: the outcome for the winning
 *   answer, none for the others.
 * - vote: right(the answer voted for: the target's last answer before the vote); unverified: the outcome
 *   for a vote for the winner, none otherwise.
 * - presentation: 1 when the final answer keeps the winning answer's (sameAnswer), else 0.
 * - sample: right × (1 when it says the same as the winning answer, else ½); none unverified.
 * - delegation: the stored delegation credit of the delegate span (use × enclosing uses × outcome).
 * - decision: the outcome net of cost, as bandits learn it (policies/learn.ts decisionReward).
 */
export function attributeRollout(view: RolloutIndex, costPer1kTokens: number): Attribution[] {
  const out: Attribution[] = [];
  const site = (agent: string | null, extra: Partial<CallSite> = {}): CallSite => ({
    agent,
    presentation: false,
    delegated: false,
    ...extra,
  });
  const rollout = view.rollout;
  // As store.spans.policyDecisions reads it: the best verifying reward of the final answer.
  const verified = view.verifiedFinal();
  const outcome = verified ?? view.total;
  const winning = rollout.winner === null ? undefined : view.standingAnswers().get(rollout.winner);
  const won = (a: ActionRef) => a.seq === winning?.seq;
  for (const a of view.actions.filter((x) => x.kind === 'answer')) {
    const right = view.verified(a.seq) ?? (won(a) ? outcome : null);
    if (right === null) continue;
    const value = right * (won(a) ? 1 : 0.5);
    out.push({ seq: a.seq, kind: 'answer', site: site(a.agent), value, reason: `right ${right}, won ${won(a)}` });
  }
  for (const v of view.actions.filter((x) => x.kind === 'vote')) {
    const target = view.actions.findLast(
      (a) => a.kind === 'answer' && a.agent === v.target && a.seq < v.seq && a.seq > view.attemptStart,
    );
    const right = target ? (view.verified(target.seq) ?? (won(target) ? outcome : null)) : null;
    if (right === null) continue;
    out.push({ seq: v.seq, kind: 'vote', site: site(v.agent), value: right, reason: `voted for ${v.target}` });
  }
  const pres = view.presentation;
  if (pres && winning) {
    const kept = sameAnswer(pres.content, winning.content);
    out.push({
      seq: pres.seq,
      kind: 'presentation',
      site: site(pres.agent, { presentation: true }),
      value: kept ? 1 : 0,
      reason: kept ? "kept the winning answer's" : "changed the winning answer's",
    });
  }
  for (const s of view.promptSpans) {
    if (s.name !== 'sample' || s.payload.includes('"delegate_seq"')) continue;
    const right = view.verified(s.seq);
    const text = completionText(view.prompt(s.seq) ?? { response: null });
    if (right === null || text === null) continue;
    const same = winning !== undefined && sameAnswer(text, winning.content);
    const value = right * (same ? 1 : 0.5);
    out.push({ seq: s.seq, kind: 'sample', site: site(s.agent), value, reason: `right ${right}, as won ${same}` });
  }
  const credits = view.record.rewards.filter((r) => r.family === DELEGATION_CREDIT && r.targetSeq !== null);
  for (const s of view.record.spans) {
    if (s.type !== 'coordination') continue;
    if (s.name === 'delegate') {
      const own = credits.filter((r) => r.targetSeq === s.seq).map((r) => r.value);
      if (!own.length) continue;
      const agent = (JSON.parse(s.payload) as DelegatePayload).agent ?? s.agent;
      const value = own.reduce((a, b) => a + b, 0) / own.length;
      out.push({ seq: s.seq, kind: 'delegation', site: site(agent, { delegated: true }), value, reason: 'credit' });
    } else if (s.name === 'policy_decision') {
      const p = JSON.parse(s.payload) as PolicyDecisionPayload;
      if (nestedDepth(p) > 0) continue;
      const value = decisionReward({ verified, totalReward: view.total, tokens: rollout.tokens }, costPer1kTokens);
      out.push({ seq: s.seq, kind: 'decision', site: site(null), value, policy: p.policy, reason: `${p.chosen}` });
    }
  }
  return out;
}

/**
 * The same answer: equal final answers (extractFinalAnswer, compared normalized), else equal final numbers
 * when both state one, so "Final answer: 42" keeps "6 x 7 = 42" and "Paris." keeps "paris".
 */
export function sameAnswer(a: string, b: string): boolean {
  if (normalizeAnswer(extractFinalAnswer(a)) === normalizeAnswer(extractFinalAnswer(b))) return true;
  const na = extractFinalNumber(a);
  const nb = extractFinalNumber(b);
  return na !== null && nb !== null && na.value === nb.value;
}
