import type { PromptPayload } from '../trace/payloads.js';
import { sha256 } from '../util/hash.js';
import { chatMessages, completionText, logprobValues, promptKey, tokenIds } from './messages.js';
import { agentMatcher } from './options.js';
import type { RolloutIndex } from './rollout-index.js';
import type { BuilderContext, DatasetBuilder, GrpoCompletion, GrpoRow } from './types.js';

/** A completion kept by reference (rollout, prompt span seq): payloads are read again only for groups that survive. */
interface Member {
  rolloutId: string;
  seq: number;
  reward: number;
  clean: boolean;
  category: string;
  temperature: number;
  meta: Record<string, unknown>;
}

/** Below this a backend decodes greedily (vLLM's and the bundled server's threshold): no sample of the policy. */
export const GREEDY_BELOW = 1e-5;
/** The sampling temperature of a request that names none (the OpenAI API's and the bundled server's default). */
export const DEFAULT_TEMPERATURE = 1;

/**
 * GRPO: completions of the same prompt (equal promptKey: normalized request messages and tools), across
 * agents and rollouts, with group-relative advantages. Members: the prompt span behind every accepted
 * answer or vote (reward: its turn reward, else the rollout total) and every `sample` span
 * (collect.samples_per_turn; reward: its own turn reward, else payload.reward; a sample without a request
 * uses the one of the chat span with the same turn_id and attempt).
 * Advantage = (reward − group mean) / group std, the population std (÷ n), as in GRPO; groups whose
 * rewards are all equal carry no signal and are dropped (zero_variance_group), as are groups smaller
 * than grpo.min_group_size (small_group). Groups come out in order of first appearance.
 *
 * Offline GRPO scores each completion under the policy at the temperature it was sampled at, so each
 * completion records its request's `temperature` (none named: 1, the API default) and a group holds one
 * temperature (the same prompt at two temperatures makes two groups). Greedy completions (temperature
 * below GREEDY_BELOW) are no samples of the policy's distribution: left out (greedy). With ctx.policy
 * (train.grpo.on_policy, offline mode) only completions served by the weights the run starts from are
 * kept; the others are left out as off_policy, or unknown_weights when the store does not say.
 */
export function grpoBuilder(ctx: BuilderContext): DatasetBuilder {
  const { stats, reader } = ctx;
  const matches = agentMatcher(ctx.options.grpo.agents, 'grpo.agents');
  const groups = new Map<string, Member[]>();

  function member(
    view: RolloutIndex,
    seq: number,
    agent: string | null,
    reward: number | null,
    p: PromptPayload,
    request: PromptPayload['request'] | undefined,
    extra: Record<string, unknown>,
  ): void {
    if (!matches(agent)) return stats.drop('agent_filter');
    if (completionText(p) === null || !request?.messages) return stats.drop('no_completion');
    if (reward === null) return stats.drop(extra.kind === 'sample' ? 'unrewarded_sample' : 'no_reward');
    const temperature = typeof request.temperature === 'number' ? request.temperature : DEFAULT_TEMPERATURE;
    if (temperature < GREEDY_BELOW) return stats.drop('greedy');
    const policy = ctx.policy?.(view.rollout, agent);
    if (policy === 'off') return stats.drop('off_policy');
    if (policy === 'unknown') return stats.drop('unknown_weights');
    const key = `${promptKey(request)}@${temperature}`;
    const m: Member = {
      rolloutId: view.rollout.id,
      seq,
      reward,
      clean: view.clean(agent),
      category: view.category,
      temperature,
      meta: view.meta(agent, seq, extra),
    };
    const list = groups.get(key);
    if (list) list.push(m);
    else groups.set(key, [m]);
  }

  return {
    add(view) {
      for (const a of view.actions) {
        const p = view.prompt(a.promptSeq);
        if (!p) {
          stats.drop('no_completion');
          continue;
        }
        member(view, a.promptSeq, a.agent, view.rewardFor(a.seq), p, p.request, {
          kind: a.kind,
          action_seq: a.seq,
          ...turn(p),
        });
      }
      for (const s of view.promptSpans) {
        if (s.name !== 'sample') continue;
        const p = view.prompt(s.seq)!;
        const own = (p as { reward?: unknown }).reward;
        const reward = view.turnReward(s.seq) ?? (typeof own === 'number' && Number.isFinite(own) ? own : null);
        member(view, s.seq, s.agent, reward, p, view.requestOf(p), { kind: 'sample', ...turn(p) });
      }
    },
    finish(emit) {
      for (const [key, members] of groups) {
        if (members.length < ctx.options.grpo.min_group_size) {
          stats.drop('small_group');
          continue;
        }
        const rewards = members.map((m) => m.reward);
        const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
        const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length);
        if (!(std > 1e-12)) {
          stats.drop('zero_variance_group');
          continue;
        }
        let prompt: GrpoRow['prompt'] | null = null;
        const completions: GrpoCompletion[] = members.map((m) => {
          const p = JSON.parse(reader.span(m.rolloutId, m.seq)!.payload) as PromptPayload;
          if (!prompt && p.request?.messages) prompt = chatMessages(p.request.messages);
          return {
            content: completionText(p)!,
            reward: m.reward,
            advantage: (m.reward - mean) / std,
            token_ids: tokenIds(p),
            logprobs: logprobValues(p),
            temperature: m.temperature,
            meta: { ...m.meta, model: p.request?.model ?? null },
          };
        });
        stats.count('groups');
        stats.count('completions', completions.length);
        const row: GrpoRow = { group_id: sha256(key).slice(0, 16), prompt: prompt ?? [], completions };
        emit(row, {
          clean: members.every((m) => m.clean),
          categories: members.map((m) => m.category),
          rollouts: members.map((m) => m.rolloutId),
        });
      }
      groups.clear();
    },
  };
}

function turn(p: PromptPayload): Record<string, unknown> {
  return { turn_id: p.turn_id, round: p.round, attempt: p.attempt };
}
