import { capturedTurns, isCapturedCopy } from './captured.js';
import { chatMessages, completionText } from './messages.js';
import { agentMatcher } from './options.js';
import type { RolloutIndex } from './rollout-index.js';
import { verifiedSftBuilder } from './sft-verified.js';
import type { BuilderContext, DatasetBuilder, RowSink, SftRow } from './types.js';

/**
 * SFT: chat examples from the turns that worked. Each accepted answer becomes its prompt span's request
 * messages plus the completion the model gave (as recorded, action line included), and the winner's
 * presentation its presentation prompt plus the final answer. An answer's and the presentation's reward
 * is its turn reward, else the rollout total (no reward family scores a presentation span: a role's does). Kept when reward ≥
 * sft.reward_threshold (null: all) and the agent passes sft.agents. sft.select verified: sft-verified.ts.
 * A captured gateway session (collect.source gateway) gives each of its chat calls, rewarded like an answer.
 */
export function sftBuilder(ctx: BuilderContext): DatasetBuilder {
  if (ctx.options.sft.select === 'verified') return verifiedSftBuilder(ctx);
  const { stats } = ctx;
  const opts = ctx.options.sft;
  const matches = agentMatcher(opts.agents, 'sft.agents');

  function example(
    view: RolloutIndex,
    emit: RowSink,
    agent: string | null,
    promptSeq: number,
    reward: number | null,
    kind: string,
    extra: Record<string, unknown>,
  ): void {
    if (!matches(agent)) return stats.drop('agent_filter');
    const p = view.prompt(promptSeq);
    const completion = p && completionText(p);
    if (!p || completion === null) return stats.drop('no_completion');
    if (reward === null) return stats.drop('no_reward');
    if (opts.reward_threshold !== null && reward < opts.reward_threshold) return stats.drop('below_threshold');
    const row: SftRow = {
      messages: [...chatMessages(p.request.messages), { role: 'assistant', content: completion }],
      reward,
      meta: view.meta(agent, promptSeq, { kind, model: p.request.model, turn_id: p.turn_id, round: p.round, ...extra }),
    };
    stats.count(kind === 'presentation' ? 'presentations' : 'answers');
    emit(row, { clean: view.clean(agent), categories: [view.category], rollouts: [view.rollout.id] });
  }

  return {
    add(view, emit) {
      if (isCapturedCopy(view.rollout)) {
        // A captured session has no answers: each chat call that got a completion is an example.
        for (const t of capturedTurns(view.promptSpans, (seq) => view.prompt(seq)))
          example(view, emit, t.agent, t.seq, view.rewardFor(t.seq), 'captured_call', {});
        return;
      }
      for (const a of view.actions) {
        if (a.kind !== 'answer') continue;
        example(view, emit, a.agent, a.promptSeq, view.rewardFor(a.seq), 'answer', {
          action_seq: a.seq,
          ...(a.implicit ? { implicit: true } : {}),
        });
      }
      const pres = view.presentation;
      if (opts.include_presentation && pres && pres.promptSeq > 0) {
        example(view, emit, pres.agent, pres.promptSeq, view.rewardFor(pres.seq), 'presentation', {
          action_seq: pres.seq,
        });
      }
    },
    finish() {},
  };
}
