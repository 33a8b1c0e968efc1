import type { PromptPayload } from '../trace/payloads.js';
import { chatMessages } from './messages.js';
import type { RolloutIndex } from './rollout-index.js';
import type { StatsCollector } from './stats.js';
import { normalizeText } from './task-prompt.js';
import type { AugmentRow, HardTask, RowSink } from './types.js';

export type { AugmentRow, AugmentSource, HardTask } from './types.js';

/** Asks for answers to the hard tasks (the pipeline's LLM calls); counts what it leaves out in stats. */
export type Augment = (hard: HardTask[], stats: StatsCollector, signal?: AbortSignal) => Promise<AugmentRow[]>;

/** Collects the hard tasks of one build from the verified builder's candidates. */
export class HardTasks {
  private readonly solved = new Set<string>();
  private readonly candidates = new Map<string, HardTask>();

  /** One verified candidate (its prompt's request) of the view's task. */
  see(
    view: RolloutIndex,
    agent: string | null,
    seq: number,
    verified: number,
    request: PromptPayload['request'],
  ): void {
    const task = view.record.task;
    if (!task || task.split !== 'train' || !task.reference) return;
    if (verified >= 1) this.solved.add(task.id);
    if (verified >= 1 || this.candidates.has(task.id)) return;
    this.candidates.set(task.id, {
      task: { ...task, reference: task.reference },
      messages: chatMessages(request.messages),
      tools: Boolean(request.tools?.length),
      temperature: request.temperature,
      maxTokens: request.max_tokens,
      agent,
      meta: view.meta(agent, seq, { model: request.model }),
      clean: view.clean(agent),
      category: view.category,
      rolloutId: view.rollout.id,
    });
  }

  /** The tasks seen verified wrong and never right, in the order first seen. */
  list(): HardTask[] {
    return [...this.candidates.values()].filter((h) => !this.solved.has(h.task.id));
  }
}

/** SFT: emits augment rows, once per (task, completion) and at most maxPerTask per task, counted by source. */
export function emitAugmented(rows: AugmentRow[], maxPerTask: number, emit: RowSink, stats: StatsCollector): void {
  const seen = new Set<string>();
  const perTask = new Map<string, number>();
  for (const { hard, completion, source, model } of rows) {
    const id = hard.task.id;
    const key = `${id}\u0000${normalizeText(completion)}`;
    if (seen.has(key)) {
      stats.drop('duplicate_completion');
      continue;
    }
    const made = perTask.get(id) ?? 0;
    if (made >= maxPerTask) {
      stats.drop('over_task_limit');
      continue;
    }
    seen.add(key);
    perTask.set(id, made + 1);
    stats.count(source);
    emit(
      {
        messages: [...hard.messages, { role: 'assistant', content: completion }],
        reward: 1,
        meta: { ...hard.meta, kind: source, source, source_model: model },
      },
      { clean: hard.clean, categories: [hard.category], rollouts: [hard.rolloutId] },
    );
  }
}
