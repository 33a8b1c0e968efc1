import type { RewardInput } from '../trace/records.js';
import { mean } from './outcome.js';
import type { RewardFamily } from './types.js';

/**
 * One reward per tool call (turn channel, agent + targetSeq = the tool span): rewards.tool.success
 * or failure; plus each agent's mean on the agent channel. No tool calls → [].
 */
export const toolReward: RewardFamily = {
  name: 'tool',
  scope: 'team',
  describe: 'per tool call: rewards.tool.success when it succeeded, rewards.tool.failure when it failed',
  score({ outcome, config }) {
    const out: RewardInput[] = [];
    const perAgent = new Map<string, number[]>();
    for (const call of outcome.toolCalls) {
      const value = call.success ? config.tool.success : config.tool.failure;
      out.push({
        channel: 'turn',
        family: 'tool',
        value,
        reason: `${call.name} ${call.success ? 'succeeded' : 'failed'}`,
        agent: call.agent,
        targetSeq: call.seq,
      });
      perAgent.set(call.agent, [...(perAgent.get(call.agent) ?? []), value]);
    }
    for (const [agent, values] of perAgent) {
      out.push({
        channel: 'agent',
        family: 'tool',
        value: mean(values),
        reason: `mean of ${values.length} tool call(s)`,
        agent,
      });
    }
    return out;
  },
};
