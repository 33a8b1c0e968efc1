import type { Algo, RLConfig } from '../../config/schema.js';
import { REFERENCE_VERIFYING } from '../../config/sections/rewards.js';
import type { Augment, AugmentRow, AugmentSource, HardTask } from '../../datasets/augment.js';
import type { StatsCollector } from '../../datasets/stats.js';
import { InterruptedError, UserError } from '../../errors.js';
import type { ChatMessage, LlmClient } from '../../llm/types.js';
import { completionRewards } from '../../rewards/completion.js';
import { batchFilling } from '../../rollouts/batch-fill.js';
import type { Runtime } from '../../runtime/runtime.js';
import { hintLeak, withHint } from './sft-rationale.js';

/** What the augment reads of train.sft or train.dpo (or of a role's recipe of that algo). */
type AugmentSection = Pick<RLConfig['train']['sft'], 'rationalize'>
  & Partial<Pick<RLConfig['train']['sft'], 'teacher' | 'select'> & Pick<RLConfig['train']['dpo'], 'pairs'>>;

/** The families that verify an answer against the reference (rationales and a teacher's replies need one). */
const VERIFY_WEIGHTS = Object.fromEntries(REFERENCE_VERIFYING.map((f) => [f, 1]));

interface Source {
  source: AugmentSource;
  /** The config key, for messages. */
  key: string;
  samples: number;
  maxTasks: number;
  /** The config model asked about a hard task. */
  model: (hard: HardTask) => string;
  /** Ask a local model on the weights production serves (the policy being trained), not its local.weights. */
  production: boolean;
  /** The prompt sent: the recorded one, with the hint when rationalizing. */
  messages: (hard: HardTask) => ChatMessage[];
  /** Why a verified reply is still left out, or null. */
  reject: (text: string, hard: HardTask) => string | null;
}

/**
 * What a build adds for its hard tasks (train tasks with a reference that no completion got right), when the
 * algorithm's data selection reads verified answers (train.sft.select verified, train.dpo.pairs correctness):
 * `rationalize` asks the model that wrote the task's recorded prompt (its production weights when local) again
 * with the reference as a hint; sft's `teacher` asks the teacher model without one. Each reply is checked by the
 * exact and numeric rewards, and the right ones are returned for the builder: SFT rows or DPO chosen answers,
 * under the recorded prompt without the hint. Undefined when the algorithm adds nothing.
 */
export function trainAugment(
  rt: Runtime,
  algo: Algo,
  onStage?: (message: string) => void,
  section: { recipe: AugmentSection; key: string } = defaultSection(rt, algo),
): Augment | undefined {
  const { recipe: sft } = section;
  const verified = algo === 'sft' ? sft.select === 'verified' : algo === 'dpo' && sft.pairs === 'correctness';
  const sources: Source[] = [];
  if (verified && sft.rationalize?.enabled) {
    const agents = rt.config.agents;
    sources.push({
      source: 'rationalized',
      key: `${section.key}.rationalize`,
      samples: sft.rationalize.samples,
      maxTasks: sft.rationalize.max_tasks,
      model: (h) => (agents.find((a) => a.id === h.agent) ?? agents[0]!).model,
      production: true,
      messages: (h) => withHint(h.messages as ChatMessage[], h.task.reference),
      reject: (text, h) => {
        const leak = hintLeak(text, h.task.reference);
        return leak && `rationalized_${leak}`;
      },
    });
  }
  const teacher = sft.teacher;
  if (verified && teacher) {
    sources.push({
      source: 'teacher',
      key: `${section.key}.teacher`,
      samples: teacher.samples,
      maxTasks: teacher.max_tasks,
      model: () => teacher.model,
      production: false,
      messages: (h) => h.messages as ChatMessage[],
      reject: () => null,
    });
  }
  if (!sources.length) return undefined;
  return async (hard, stats, signal) => {
    const rows: AugmentRow[] = [];
    for (const s of sources) {
      const n = Math.min(hard.length, s.maxTasks);
      if (n) onStage?.(`${s.key}: asking ${s.samples} repl${s.samples === 1 ? 'y' : 'ies'} each for ${n} hard task(s)`);
      rows.push(...(await ask(rt, s, hard, stats, signal)));
    }
    return rows;
  };
}

function defaultSection(rt: Runtime, algo: Algo): { recipe: AugmentSection; key: string } {
  return algo === 'dpo'
    ? { recipe: rt.config.train.dpo, key: 'train.dpo' }
    : { recipe: rt.config.train.sft, key: 'train.sft' };
}

async function ask(
  rt: Runtime,
  s: Source,
  hard: HardTask[],
  stats: StatsCollector,
  signal: AbortSignal | undefined,
): Promise<AugmentRow[]> {
  const clients = new Map<string, Promise<LlmClient>>();
  const client = (name: string) => {
    const weights = s.production ? rt.productionWeights(name) : undefined;
    if (!clients.has(name)) clients.set(name, rt.client(name, { logprobs: false, weights }));
    return clients.get(name)!;
  };
  const rows: AugmentRow[] = [];
  let asked = 0;
  let failure: string | undefined;
  const one = async (h: HardTask): Promise<void> => {
    if (signal?.aborted) throw new InterruptedError('dataset build interrupted');
    // A native-tool prompt is answered with tool calls, which these text replies would not match.
    if (h.tools) {
      stats.drop(`${s.source}_tool_prompt`);
      return;
    }
    const name = s.model(h);
    const c = await client(name);
    // The recorded call's cap: without one the server's own, which a small model can fill with repetition.
    const maxTokens = h.maxTokens ?? rt.config.agents.find((a) => a.id === h.agent)?.max_tokens;
    const request = {
      model: rt.model(name).model,
      messages: s.messages(h),
      temperature: h.temperature,
      ...(maxTokens ? { max_tokens: maxTokens } : {}),
    };
    const call = () =>
      c.chat(request, { signal }).then(
        (r) => r.content ?? '',
        (err: unknown) => {
          failure ??= `models.${name}: ${err instanceof Error ? err.message : String(err)}`;
          return null;
        },
      );
    const replies = await Promise.all(Array.from({ length: s.samples }, call));
    asked += replies.length;
    for (const text of replies) {
      if (text === null || !text.trim()) {
        stats.drop(`${s.source}_${text === null ? 'call_failed' : 'no_reply'}`);
        continue;
      }
      const why = (await isRight(rt, h, text, signal)) ? s.reject(text, h) : `${s.source}_wrong`;
      if (why) stats.drop(why);
      else rows.push({ hard: h, completion: text, source: s.source, model: name });
    }
  };
  // Several tasks at a time, so that a local server's batch fills (the rows keep the tasks' order below).
  const queue = hard.slice(0, s.maxTasks);
  const width = Math.max(1, Math.ceil(batchFilling(rt.config, rt.config.collect.concurrency) / s.samples));
  await Promise.all(
    Array.from({ length: Math.min(width, queue.length) }, async () => {
      for (let h = queue.shift(); h; h = queue.shift()) await one(h);
    }),
  );
  const order = new Map(hard.map((h, i) => [h, i]));
  rows.sort((a, b) => order.get(a.hard)! - order.get(b.hard)!);
  if (signal?.aborted) throw new InterruptedError('dataset build interrupted');
  // Some failed calls leave fewer rows; all of them failing is a model that cannot be reached.
  if (asked && (stats.dropped[`${s.source}_call_failed`] ?? 0) >= asked)
    throw new UserError(`${s.key}: every call failed (${failure})`, 'check the model is up, or remove the key');
  return rows;
}

async function isRight(rt: Runtime, h: HardTask, text: string, signal?: AbortSignal): Promise<boolean> {
  const input = { id: `augment:${h.task.id}`, text, task: h.task, agent: h.agent ?? 'agent' };
  const result = await completionRewards(input, { config: rt.config.rewards, signal }, VERIFY_WEIGHTS);
  return Boolean(result && Object.values(result.byFamily).some((v) => v >= 1));
}
