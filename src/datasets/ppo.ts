import type { PromptPayload } from '../trace/payloads.js';
import { chatMessages, completionText, logprobValues, tokenIds } from './messages.js';
import { agentMatcher } from './options.js';
import type { BuilderContext, DatasetBuilder, PpoRow } from './types.js';

/**
 * PPO transitions, LightningRL-style: every LLM call of an agent is one transition (state = the prompt
 * span's request messages, action = its completion), in seq order. `sample` spans are alternatives, not
 * part of the trajectory, and calls without a response (failed, cancelled) are left out.
 * The rollout's final reward F (its total) is credited per ppo.credit:
 * - final:      return = F for every transition;
 * - discounted: return = gamma^(T−t) × F, t the transition's index among that agent's transitions
 *               (0-based) and T the index of the agent's last one.
 * `reward` is the sparse per-step reward consistent with that return: F on an agent's last transition,
 * 0 before it. meta carries t and T.
 */
export function ppoBuilder(ctx: BuilderContext): DatasetBuilder {
  const { stats } = ctx;
  const { credit, gamma } = ctx.options.ppo;
  const matches = agentMatcher(ctx.options.ppo.agents, 'ppo.agents');

  return {
    add(view, emit) {
      const final = view.total;
      const byAgent = new Map<string, { seq: number; name: string; p: PromptPayload; completion: string }[]>();
      for (const s of view.promptSpans) {
        if (s.name === 'sample' || !s.agent) continue;
        if (!matches(s.agent)) {
          stats.drop('agent_filter');
          continue;
        }
        const p = view.prompt(s.seq)!;
        const completion = completionText(p);
        if (completion === null || !p.request?.messages) {
          stats.drop('no_completion');
          continue;
        }
        const turn = { seq: s.seq, name: s.name, p, completion };
        const list = byAgent.get(s.agent);
        if (list) list.push(turn);
        else byAgent.set(s.agent, [turn]);
      }
      if (final === null) {
        stats.drop(
          'no_reward',
          [...byAgent.values()].reduce((n, l) => n + l.length, 0),
        );
        return;
      }
      // Rows in seq order across agents, as the calls happened.
      const rows: { seq: number; agent: string; row: PpoRow }[] = [];
      for (const [agent, turns] of byAgent) {
        const T = turns.length - 1;
        turns.forEach(({ seq, name, p, completion }, t) => {
          const ret = credit === 'final' ? final : gamma ** (T - t) * final;
          rows.push({
            seq,
            agent,
            row: {
              prompt: chatMessages(p.request.messages),
              completion,
              reward: t === T ? final : 0,
              return: ret,
              token_ids: tokenIds(p),
              logprobs: logprobValues(p),
              meta: view.meta(agent, seq, {
                name,
                model: p.request.model,
                turn_id: p.turn_id,
                round: p.round,
                attempt: p.attempt,
                t,
                T,
                credit,
                final_reward: final,
              }),
            },
          });
        });
      }
      rows.sort((a, b) => a.seq - b.seq);
      for (const { agent, row } of rows) {
        stats.count('transitions');
        emit(row, { clean: view.clean(agent), categories: [view.category], rollouts: [view.rollout.id] });
      }
    },
    finish() {},
  };
}
