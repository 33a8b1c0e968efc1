import type { PromptPayload } from '../trace/payloads.js';
import { HardTasks } from './augment.js';
import { capturedTurns, isCapturedCopy } from './captured.js';
import { chatMessages, completionText, promptKey } from './messages.js';
import { agentMatcher } from './options.js';
import type { RolloutIndex } from './rollout-index.js';
import { normalizeText } from './task-prompt.js';
import type { BuilderContext, DatasetBuilder, RowSink } from './types.js';

/**
 * Rejection-sampling fine-tuning (train.sft.select: verified): SFT on the completions an exact or numeric
 * reward verified as right (turn value 1), and nothing else. Candidates are every accepted answer's
 * completion and every extra sample of a decision (collect.samples_per_turn), each under the prompt the
 * model saw when it wrote it; the reward of a vote, a presentation or the team's total does not admit a
 * row. Repeats of one (prompt, completion) are kept once, and a task gives at most sft.max_per_task rows,
 * in recorded order, so the tasks the model already solves do not crowd out the ones it rarely does.
 * The train tasks whose candidates were all verified wrong are its hard tasks (augment.ts). A captured session
 * (collect.source gateway) offers each of its chat calls, admitted by its own verifying turn reward (agreement's).
 */
export function verifiedSftBuilder(ctx: BuilderContext): DatasetBuilder {
  const { stats } = ctx;
  const opts = ctx.options.sft;
  const matches = agentMatcher(opts.agents, 'sft.agents');
  const seen = new Set<string>();
  const perTask = new Map<string, number>();
  const hard = new HardTasks();

  function example(
    view: RolloutIndex,
    emit: RowSink,
    agent: string | null,
    verifiedSeq: number,
    promptSeq: number,
    p: PromptPayload | null,
    request: PromptPayload['request'] | undefined,
    extra: Record<string, unknown>,
  ): void {
    if (!matches(agent)) return stats.drop('agent_filter');
    const verified = view.verified(verifiedSeq);
    if (verified === null) return stats.drop('not_verified');
    if (request?.messages) hard.see(view, agent, promptSeq, verified, request);
    if (verified < 1) return stats.drop('verified_wrong');
    const completion = p && completionText(p);
    if (!p || completion === null || !completion.trim() || !request?.messages) return stats.drop('no_completion');
    const key = `${promptKey(request)}\u0000${normalizeText(completion)}`;
    if (seen.has(key)) return stats.drop('duplicate_completion');
    const task = view.rollout.taskId ?? view.rollout.id;
    const made = perTask.get(task) ?? 0;
    if (made >= opts.max_per_task) return stats.drop('over_task_limit');
    seen.add(key);
    perTask.set(task, made + 1);
    stats.count(extra.kind === 'sample' ? 'verified_samples' : 'verified_answers');
    emit(
      {
        messages: [...chatMessages(request.messages), { role: 'assistant', content: completion }],
        reward: verified,
        meta: view.meta(agent, promptSeq, { model: request.model, turn_id: p.turn_id, round: p.round, ...extra }),
      },
      { clean: view.clean(agent), categories: [view.category], rollouts: [view.rollout.id] },
    );
  }

  return {
    add(view, emit) {
      if (isCapturedCopy(view.rollout)) {
        // a captured session's chat calls, each verified by its own turn reward (agreement, without references)
        for (const t of capturedTurns(view.promptSpans, (seq) => view.prompt(seq))) {
          const p = view.prompt(t.seq);
          example(view, emit, t.agent, t.seq, t.seq, p, p?.request, { kind: 'captured_call' });
        }
        return;
      }
      for (const a of view.actions) {
        if (a.kind !== 'answer') continue;
        const p = view.prompt(a.promptSeq);
        // The answer span carries the verification, its prompt span the completion.
        example(view, emit, a.agent, a.seq, a.promptSeq, p, p?.request, { kind: 'answer', action_seq: a.seq });
      }
      for (const s of view.promptSpans) {
        if (s.name !== 'sample') continue;
        const p = view.prompt(s.seq);
        example(view, emit, s.agent, s.seq, s.seq, p, p ? view.requestOf(p) : undefined, { kind: 'sample' });
      }
    },
    finish() {},
    hardTasks: () => hard.list(),
  };
}
