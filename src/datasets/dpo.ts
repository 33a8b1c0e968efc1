import { canonicalJson, sha256 } from '../util/hash.js';
import { capturedReplies, isCapturedCopy } from './captured.js';
import { correctnessDpoBuilder } from './dpo-correctness.js';
import type { ChatMessage } from './messages.js';
import type { RolloutIndex } from './rollout-index.js';
import type { RowInfo } from './stats.js';
import { normalizeText, taskPrompt } from './task-prompt.js';
import type { BuilderContext, DatasetBuilder, DpoRow, RowSink } from './types.js';

/** One distinct final answer of a task, with every rollout that ended with it. */
interface Candidate {
  content: string;
  rewards: number[];
  clean: boolean;
  first: { rollout_id: string; rollout_num: number; agent: string | null; seq: number | null };
}

interface TaskEntry {
  prompt: ChatMessage[];
  taskId: string | null;
  category: string;
  answers: Map<string, Candidate>;
}

/**
 * DPO pairs (dpo.pairs winner; correctness: dpo-correctness.ts), prompt = the task as system + user messages (taskPrompt), deduplicated on (prompt, chosen,
 * rejected).
 * - In a rollout: the winner's standing answer (chosen) against each other standing answer of the final
 *   attempt (rejected). Margin = reward(chosen) − reward(rejected), each its turn reward else the rollout
 *   total; the votes already prefer the winner, so a tie passes with dpo.min_margin 0.
 * - Across rollouts of a task: distinct final answers, each with the mean total of the rollouts that
 *   ended with it; higher against lower when the margin is > 0 and ≥ dpo.min_margin, widest margins
 *   first, at most dpo.max_pairs_per_task per task (chosen among the first 8 × that many found pairing
 *   best with worst, which bounds the work for tasks with very many distinct answers).
 */
export function dpoBuilder(ctx: BuilderContext): DatasetBuilder {
  if (ctx.options.dpo.pairs === 'correctness') return correctnessDpoBuilder(ctx);
  const { stats, reader } = ctx;
  const opts = ctx.options.dpo;
  const seen = new Set<string>();
  const tasks = new Map<string, TaskEntry>();

  function pair(
    emit: RowSink,
    prompt: ChatMessage[],
    chosen: string,
    rejected: string,
    margin: number,
    meta: Record<string, unknown>,
    info: RowInfo,
    kind: string,
  ): void {
    const key = sha256(canonicalJson([prompt, normalizeText(chosen), normalizeText(rejected)]));
    if (seen.has(key)) return stats.drop('duplicate_pair');
    seen.add(key);
    stats.count(`${kind}_pairs`);
    const row: DpoRow = {
      prompt,
      chosen: [{ role: 'assistant', content: chosen }],
      rejected: [{ role: 'assistant', content: rejected }],
      margin,
      meta: { kind, ...meta },
    };
    emit(row, info);
  }

  /**
   * An answer of a rollout with its reward (by default its final answer and total) as a candidate of its task (or
   * prompt) for cross-rollout pairs.
   */
  function candidate(
    view: RolloutIndex,
    taskKey: string,
    taskPromptMsgs: ChatMessage[],
    winner: string | null,
    answer = view.rollout.finalAnswer,
    total = view.total,
    seq = view.presentation?.seq ?? null,
  ): void {
    const r = view.rollout;
    if (answer === null || total === null) return;
    let entry = tasks.get(taskKey);
    if (!entry)
      tasks.set(
        taskKey,
        (entry = { prompt: taskPromptMsgs, taskId: r.taskId, category: view.category, answers: new Map() }),
      );
    const norm = normalizeText(answer);
    const c = entry.answers.get(norm);
    if (c) {
      c.rewards.push(total);
      c.clean &&= view.clean(winner);
    } else {
      entry.answers.set(norm, {
        content: answer,
        rewards: [total],
        clean: view.clean(winner),
        first: { rollout_id: r.id, rollout_num: r.num, agent: winner, seq },
      });
    }
  }

  /** A captured session's candidates: its replies to its last prompt (capturedReplies), each with its reward. */
  function capturedCandidate(view: RolloutIndex): void {
    if (view.total === null) return stats.drop('no_reward');
    const captured = capturedReplies(view);
    if (!captured) return stats.drop('no_captured_turn');
    for (const { seq, completion } of captured.replies)
      candidate(view, captured.taskKey, captured.prompt, null, completion, view.rewardFor(seq), seq);
  }

  return {
    add(view, emit) {
      const r = view.rollout;
      if (isCapturedCopy(r)) return capturedCandidate(view);
      const winner = r.winner;
      const standing = view.standingAnswers();
      const chosen = winner ? standing.get(winner) : undefined;
      const prompt = winner ? taskPrompt(view, winner, reader, opts.system_prompt) : null;
      if (!winner || !chosen || !prompt)
        stats.drop(!prompt && winner && chosen ? 'no_task_prompt' : 'no_winner_answer');
      else {
        for (const [agent, other] of standing) {
          if (agent === winner) continue;
          if (normalizeText(other.content) === normalizeText(chosen.content)) {
            stats.drop('same_content');
            continue;
          }
          const rc = view.rewardFor(chosen.seq);
          const rr = view.rewardFor(other.seq);
          if (rc === null || rr === null) {
            stats.drop('no_reward');
            continue;
          }
          if (rc - rr < opts.min_margin) {
            stats.drop('below_margin');
            continue;
          }
          const meta = view.meta(winner, chosen.seq, {
            chosen_reward: rc,
            rejected_agent: agent,
            rejected_seq: other.seq,
            rejected_reward: rr,
          });
          pair(
            emit,
            prompt,
            chosen.content,
            other.content,
            rc - rr,
            meta,
            { clean: view.clean(winner) && view.clean(agent), categories: [view.category], rollouts: [r.id] },
            'in_rollout',
          );
        }
      }
      // Candidates for cross-rollout pairs: the final answer and the rollout total.
      if (r.finalAnswer === null || view.total === null) return;
      const taskKey = r.taskId ?? (prompt ? `prompt:${sha256(canonicalJson(prompt))}` : null);
      const taskPromptMsgs = prompt ?? taskPrompt(view, winner ?? '', reader, opts.system_prompt);
      if (taskKey === null || taskPromptMsgs === null) return;
      candidate(view, taskKey, taskPromptMsgs, winner);
    },
    finish(emit) {
      for (const entry of tasks.values()) {
        const ranked = [...entry.answers.values()]
          .map((c) => ({ c, reward: c.rewards.reduce((a, b) => a + b, 0) / c.rewards.length }))
          .sort((a, b) => b.reward - a.reward);
        const found: { hi: (typeof ranked)[number]; lo: (typeof ranked)[number]; margin: number }[] = [];
        const limit = opts.max_pairs_per_task * 8;
        for (let i = 0; i < ranked.length && found.length < limit; i++) {
          for (let j = ranked.length - 1; j > i && found.length < limit; j--) {
            const margin = ranked[i]!.reward - ranked[j]!.reward;
            if (margin <= 0 || margin < opts.min_margin) break;
            found.push({ hi: ranked[i]!, lo: ranked[j]!, margin });
          }
        }
        found.sort((a, b) => b.margin - a.margin);
        stats.drop('over_pair_limit', Math.max(0, found.length - opts.max_pairs_per_task));
        for (const { hi, lo, margin } of found.slice(0, opts.max_pairs_per_task)) {
          const meta = {
            ...hi.c.first,
            task_id: entry.taskId,
            category: entry.category,
            chosen_reward: hi.reward,
            chosen_rollouts: hi.c.rewards.length,
            rejected_reward: lo.reward,
            rejected_rollout_id: lo.c.first.rollout_id,
            rejected_agent: lo.c.first.agent,
            rejected_seq: lo.c.first.seq,
          };
          pair(
            emit,
            entry.prompt,
            hi.c.content,
            lo.c.content,
            margin,
            meta,
            {
              clean: hi.c.clean && lo.c.clean,
              categories: [entry.category],
              rollouts: [hi.c.first.rollout_id, lo.c.first.rollout_id],
            },
            'cross_rollout',
          );
        }
      }
      tasks.clear();
    },
  };
}
