import type { Task } from '../tasks/types.js';
import type { PromptPayload } from '../trace/payloads.js';
import type { RewardInput, SpanInput } from '../trace/records.js';
import { completionRewards, singleAnswerWeights } from './completion.js';
import type { RewardContext, RewardsConfig } from './types.js';

export interface SampleRef {
  seq: number;
  agent: string;
  content: string;
}

/** The completed `sample` prompt spans among spans (as written, with their seq). */
export function samplesOf(
  spans: Iterable<{ seq: number; type: string; name: string; agent: string | null; payload: unknown }>,
): SampleRef[] {
  const out: SampleRef[] = [];
  for (const s of spans) {
    if (s.type !== 'prompt' || s.name !== 'sample' || !s.agent) continue;
    const p = (typeof s.payload === 'string' ? JSON.parse(s.payload) : s.payload) as PromptPayload;
    const content = p.response?.content;
    if (typeof content === 'string' && content.trim()) out.push({ seq: s.seq, agent: s.agent, content });
  }
  return out;
}

/** Records sample spans as they are written: wraps a span sink. */
export function sampleRecorder(add: (s: SpanInput) => number): { add: (s: SpanInput) => number; samples: SampleRef[] } {
  const samples: SampleRef[] = [];
  return {
    samples,
    add: (s) => {
      const seq = add(s);
      if (s.name === 'sample' && s.type === 'prompt' && s.agent) {
        const content = (s.payload as PromptPayload).response?.content;
        if (typeof content === 'string' && content.trim()) samples.push({ seq, agent: s.agent, content });
      }
      return seq;
    },
  };
}

/**
 * Turn rewards for the extra samples of each decision (collect.samples_per_turn): each sample is scored
 * on its own by the single-answer families, like an online GRPO sample, and its family values are
 * attached to its span. They credit the sample only: callers total the rollout without them.
 */
export async function sampleRewards(
  rolloutId: string,
  samples: readonly SampleRef[],
  task: Task | null,
  ctx: { config: RewardsConfig } & Pick<RewardContext, 'judge' | 'signal' | 'usage'>,
): Promise<RewardInput[]> {
  const weights = singleAnswerWeights(ctx.config.weights);
  if (!task || !samples.length || !Object.keys(weights).length) return [];
  const out: RewardInput[] = [];
  for (let i = 0; i < samples.length; i += 8) {
    const batch = await Promise.all(
      samples.slice(i, i + 8).map(async (s) => {
        const r = await completionRewards(
          { id: `${rolloutId}-sample-${s.seq}`, text: s.content, task, agent: s.agent },
          ctx,
          weights,
        );
        return (r?.rewards ?? [])
          .filter((w) => w.channel === 'rollout')
          .map((w) => ({
            ...w,
            channel: 'turn',
            agent: s.agent,
            targetSeq: s.seq,
            reason: `sample: ${w.reason ?? ''}`.trim(),
          }));
      }),
    );
    out.push(...batch.flat());
  }
  return out;
}
