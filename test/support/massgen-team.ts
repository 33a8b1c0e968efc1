import type { Script, ScriptedRequest } from './scripted-server.js';

/**
 * A scripted MassGen team: what each agent answers and whom it votes for, served by
 * test/support/scripted-server.ts to the real MassGen (each agent on its own model name, so a request
 * says which agent sent it).
 *
 * MassGen 0.1.97 sends every coordination call streamed, with the workflow tools new_answer and vote
 * (plus its background-tool helpers) and the answers so far in the user message between
 * "<CURRENT ANSWERS from the agents>" and "<END OF CURRENT ANSWERS>", each as "<agentN.M> text <end of agentN.M>"
 * (agentN numbered by sorted agent id). The final presentation has no answers block.
 * The plan: an agent whose own answer is not shown answers (new_answer); once it is, the agent votes for
 * the answer of `votesFor` (or, until that one is shown, for the first shown); the presenter replies with
 * `presentation(agent)` as plain text.
 */
export interface TeamPlan {
  /** agent id → model name */
  models: Record<string, string>;
  /** agent id → the answer it submits */
  answers: Record<string, string>;
  /** the agent whose answer every agent votes for */
  votesFor: string;
  presentation: (agent: string) => string;
}

export interface ServedReply {
  index: number;
  agent: string;
  kind: 'answer' | 'vote' | 'presentation';
  /** The answer or presentation text, or the vote's reason. */
  content: string;
  /** For a vote: the anonymous label voted for (agentN). */
  target?: string;
  usage: { prompt_tokens: number; completion_tokens: number };
}

const ANSWERS_BLOCK = /<CURRENT ANSWERS[^>]*>([\s\S]*?)<END OF CURRENT ANSWERS>/;
const ANSWER = /<(agent\d+)\.(\d+)> ([\s\S]*?) <end of \1\.\2>/g;

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p === 'string' ? p : ((p as { text?: string })?.text ?? ''))).join('\n');
  return '';
}

/** The answers shown in the request (anonymous label → text), or null when it has no answers block. */
export function shownAnswers(req: ScriptedRequest): Map<string, string> | null {
  const user = [...req.messages].reverse().find((m) => m.role === 'user');
  const block = ANSWERS_BLOCK.exec(text(user?.content));
  if (!block) return null;
  return new Map([...block[1]!.matchAll(ANSWER)].map((m) => [m[1]!, m[3]!.trim()]));
}

export function teamScript(plan: TeamPlan): { script: Script; served: ServedReply[] } {
  const served: ServedReply[] = [];
  const agentOf = new Map(Object.entries(plan.models).map(([agent, model]) => [model, agent]));
  const script: Script = (req, index) => {
    const agent = agentOf.get(req.model);
    if (!agent) return { status: 404, body: { error: { message: `no agent uses model ${req.model}` } } };
    const prompt = req.messages.reduce((n, m) => n + text(m.content).length, 0);
    const usage = (out: string) => ({ prompt_tokens: prompt, completion_tokens: Math.ceil(out.length / 4) });
    const shown = shownAnswers(req);
    const tools = (req.tools ?? []).map((t) => t.function.name);
    if (shown && tools.includes('new_answer') && ![...shown.values()].includes(plan.answers[agent]!)) {
      const content = plan.answers[agent]!;
      const args = { content };
      served.push({ index, agent, kind: 'answer', content, usage: usage(JSON.stringify(args)) });
      return { toolCalls: [{ name: 'new_answer', arguments: args }], usage: usage(JSON.stringify(args)) };
    }
    if (shown && shown.size && tools.includes('vote')) {
      const preferred = [...shown].find(([, t]) => t === plan.answers[plan.votesFor]);
      const target = (preferred ?? [...shown][0]!)[0].replace(/\.\d+$/, '');
      const reason = preferred ? `${plan.votesFor}'s answer is the complete one` : 'the only answer so far';
      const args = { agent_id: target, reason };
      served.push({ index, agent, kind: 'vote', content: reason, target, usage: usage(JSON.stringify(args)) });
      return { toolCalls: [{ name: 'vote', arguments: args }], usage: usage(JSON.stringify(args)) };
    }
    const content = plan.presentation(agent);
    served.push({ index, agent, kind: 'presentation', content, usage: usage(content) });
    return { content, usage: usage(content) };
  };
  return { script, served };
}

/**
 * The team as a MassGen config: backend vllm at the scripted server, logging on. One mapping is anchored and
 * reused (MassGen ignores the x- keys), as configs that share settings do; MassGen then writes the config into
 * execution_metadata.yaml with PyYAML aliases (&id001 / *id001).
 */
export function teamConfig(plan: TeamPlan, baseUrl: string): string {
  const agents = Object.entries(plan.models).map(
    ([id, model]) => `  - id: ${id}\n    backend: { type: vllm, model: ${model}, base_url: "${baseUrl}" }`,
  );
  return [
    'x-shared: &shared { served_by: scripted-server }',
    'agents:',
    ...agents,
    'ui: { display_type: simple, logging_enabled: true }',
    'x-shared-again: *shared',
    '',
  ].join('\n');
}

/** The team of the real-MassGen fixture and test: three agents, each answers once, all vote for beta. */
export const SAMPLE_QUESTION = 'What is 6 * 7? Answer with the number and one line of reasoning.';
export const SAMPLE_PLAN: TeamPlan = {
  models: { alpha: 'scripted-alpha', beta: 'scripted-beta', gamma: 'scripted-gamma' },
  answers: {
    alpha: '42',
    beta: '42, because 6 * 7 = 6 * 5 + 6 * 2 = 30 + 12.',
    gamma: '6 * 7 is 42.',
  },
  votesFor: 'beta',
  presentation: (agent) => `6 * 7 = 42 (6 * 5 + 6 * 2 = 30 + 12), presented by ${agent}.`,
};
