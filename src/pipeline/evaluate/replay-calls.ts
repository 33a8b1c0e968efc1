import { errorMessage } from '../../errors.js';
import type { ReplayItem } from '../../evaluation/replay-items.js';
import { answerText, type ReplayAnswer, type ScoredItem } from '../../evaluation/replay-score.js';
import type { ChatMessage, ToolSpec } from '../../llm/types.js';
import type { TeamAgent } from '../../orchestrator/types.js';
import type { TeamSetup } from '../../rollouts/team.js';

export function pick(setup: TeamSetup, agentId: string): TeamAgent {
  return setup.team.find((a) => a.id === agentId)!;
}

/** The captured request sent again as this side serves it: its messages, tools and length, the eval's sampling. */
export async function ask(
  agent: TeamAgent,
  item: ReplayItem,
  seed: number,
  temperature: number,
  signal: AbortSignal,
): Promise<ReplayAnswer> {
  try {
    const r = await agent.client.chat(
      {
        model: agent.model,
        messages: item.messages as ChatMessage[],
        ...(item.tools ? { tools: item.tools as ToolSpec[] } : {}),
        max_tokens: item.maxTokens ?? agent.maxTokens,
        temperature,
        seed,
      },
      { signal },
    );
    return { text: answerText(r), tokens: r.usage.completionTokens, latencyMs: r.latencyMs };
  } catch (err) {
    signal.throwIfAborted();
    return { text: null, tokens: 0, latencyMs: 0, error: errorMessage(err) };
  }
}

export function itemDetail(item: ReplayItem, agent: string, s: ScoredItem, b: ReplayAnswer, c: ReplayAnswer) {
  const side = (a: ReplayAnswer) => ({
    answer: a.text,
    tokens: a.tokens,
    latency_ms: Math.round(a.latencyMs),
    ...(a.error ? { error: a.error } : {}),
  });
  return {
    agent,
    model: item.model,
    baseline: side(b),
    candidate: side(c),
    ...(s.verdicts
      ? { verdicts: { candidate_first: s.verdicts.candidateFirst, baseline_first: s.verdicts.baselineFirst } }
      : {}),
    ...(s.judgeFailures.length ? { judge_failures: s.judgeFailures } : {}),
    judge_tokens: s.judgeTokens,
  };
}
