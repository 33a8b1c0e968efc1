import { canonicalJson, sha256 } from '../util/hash.js';
import { capturedReplies, isCapturedCopy } from './captured.js';
import type { ChatMessage } from './messages.js';
import type { RolloutIndex } from './rollout-index.js';
import { normalizeText, taskPrompt } from './task-prompt.js';
import type { AugmentSource, BuilderContext, DatasetBuilder, DpoRow, HardTask } from './types.js';

interface Answer {
  content: string;
  prompt: ChatMessage[];
  clean: boolean;
  rolloutId: string;
  agent: string | null;
  seq: number | null;
  /** Set for an answer asked for a hard task (train.dpo.rationalize), not recorded in a rollout. */
  source?: AugmentSource;
}

interface TaskAnswers {
  category: string;
  right: Map<string, Answer>;
  wrong: Map<string, Answer>;
  /** The task as a hard task of this build: a train task with a reference (its first wrong answer's prompt). */
  hard?: HardTask;
}

/**
 * DPO pairs labelled by verification (train.dpo.pairs: correctness): every distinct answer of a task that
 * an exact or numeric reward scored 1 (chosen) against every distinct one it scored 0 (rejected), from any
 * agent and round of any rollout of the task, whoever won. A small team's winner is often wrong while
 * another agent was right; the winner's order would teach the wrong answer. Margin 1; at most
 * dpo.max_pairs_per_task per task, in the order the answers were recorded. The prompt is the task as a
 * plain chat prompt with the chosen answer's agent's system prompt (taskPrompt). The train tasks with a reference
 * and no right answer are its hard tasks: the rationalized answers asked for them (train.dpo.rationalize) join
 * their right answers before the pairs are made.
 */
export function correctnessDpoBuilder(ctx: BuilderContext): DatasetBuilder {
  const { stats, reader } = ctx;
  const opts = ctx.options.dpo;
  const tasks = new Map<string, TaskAnswers>();

  /** A captured session: its verified replies to its last prompt (agreement verifies without references). */
  function addCaptured(view: RolloutIndex): void {
    const captured = capturedReplies(view);
    if (!captured) return stats.drop('no_captured_turn');
    for (const { seq, completion } of captured.replies) {
      const verified = view.verified(seq);
      if (verified === null || (verified > 0 && verified < 1)) {
        stats.drop('not_verified');
        continue;
      }
      let entry = tasks.get(captured.taskKey);
      if (!entry)
        tasks.set(captured.taskKey, (entry = { category: view.category, right: new Map(), wrong: new Map() }));
      const side = verified >= 1 ? entry.right : entry.wrong;
      const key = normalizeText(completion);
      if (!side.has(key))
        side.set(key, {
          content: completion,
          prompt: captured.prompt,
          clean: view.clean(null),
          rolloutId: view.rollout.id,
          agent: null,
          seq,
        });
    }
  }

  return {
    add(view) {
      if (isCapturedCopy(view.rollout)) return addCaptured(view);
      const taskId = view.rollout.taskId;
      if (taskId === null) return stats.drop('no_task');
      let entry = tasks.get(taskId);
      for (const a of view.actions) {
        if (a.kind !== 'answer') continue;
        const verified = view.verified(a.seq);
        if (verified === null || (verified > 0 && verified < 1)) {
          stats.drop('not_verified');
          continue;
        }
        const prompt = taskPrompt(view, a.agent, reader, opts.system_prompt);
        if (!prompt) {
          stats.drop('no_task_prompt');
          continue;
        }
        if (!entry) tasks.set(taskId, (entry = { category: view.category, right: new Map(), wrong: new Map() }));
        const side = verified >= 1 ? entry.right : entry.wrong;
        const task = view.record.task;
        if (!entry.hard && verified < 1 && task?.split === 'train' && task.reference)
          entry.hard = {
            task: { ...task, reference: task.reference },
            messages: prompt,
            tools: false,
            agent: a.agent,
            meta: view.meta(a.agent, a.seq),
            clean: view.clean(a.agent),
            category: view.category,
            rolloutId: view.rollout.id,
          };
        const key = normalizeText(a.content);
        if (!side.has(key))
          side.set(key, {
            content: a.content,
            prompt,
            clean: view.clean(a.agent),
            rolloutId: view.rollout.id,
            agent: a.agent,
            seq: a.seq,
          });
      }
    },
    hardTasks() {
      return [...tasks.values()].flatMap((e) => (e.hard && !e.right.size ? [e.hard] : []));
    },
    augmented(rows) {
      for (const { hard, completion, source } of rows) {
        const entry = tasks.get(hard.task.id);
        const key = normalizeText(completion);
        if (!entry || entry.right.has(key)) continue;
        entry.right.set(key, {
          content: completion,
          prompt: hard.messages,
          clean: hard.clean,
          rolloutId: hard.rolloutId,
          agent: hard.agent,
          seq: null,
          source,
        });
      }
    },
    finish(emit) {
      const seen = new Set<string>();
      for (const [taskId, entry] of tasks) {
        if (!entry.right.size || !entry.wrong.size) {
          stats.drop(entry.right.size ? 'no_wrong_answer' : 'no_right_answer');
          continue;
        }
        if (opts.min_margin > 1) {
          stats.drop('below_margin');
          continue;
        }
        let made = 0;
        for (const right of entry.right.values()) {
          for (const wrong of entry.wrong.values()) {
            if (made >= opts.max_pairs_per_task) {
              stats.drop('over_pair_limit');
              continue;
            }
            const key = sha256(
              canonicalJson([right.prompt, normalizeText(right.content), normalizeText(wrong.content)]),
            );
            if (seen.has(key)) {
              stats.drop('duplicate_pair');
              continue;
            }
            seen.add(key);
            made++;
            stats.count(right.source ? `${right.source}_pairs` : 'correctness_pairs');
            const row: DpoRow = {
              prompt: right.prompt,
              chosen: [{ role: 'assistant', content: right.content }],
              rejected: [{ role: 'assistant', content: wrong.content }],
              margin: 1,
              meta: {
                kind: right.source ?? 'correctness',
                task_id: taskId,
                category: entry.category,
                rollout_id: right.rolloutId,
                agent: right.agent,
                seq: right.seq,
                rejected_rollout_id: wrong.rolloutId,
                rejected_agent: wrong.agent,
                rejected_seq: wrong.seq,
              },
            };
            emit(row, {
              clean: right.clean && wrong.clean,
              categories: [entry.category],
              rollouts: [...new Set([right.rolloutId, wrong.rolloutId])],
            });
          }
        }
      }
      tasks.clear();
    },
  };
}
