import type { Blame } from './credit.js';
import type { Component, RolloutDigest } from './types.js';

export interface ChatTurn {
  role: 'system' | 'user';
  content: string;
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);
const verdict = (q: number | null) => (q === null ? '' : q >= 1 ? ' [correct]' : ' [wrong]');

/** One rollout as the optimizer reads it, from the component's side: its agents' answers with the votes for and against them. */
export function describeRollout(c: Component, v: RolloutDigest, n: number): string {
  const lines = [
    `### Example ${n} (reward ${v.reward === null ? 'none' : v.reward.toFixed(2)}${verdict(v.success)})`,
    `Task: ${clip(v.task, 600)}`,
  ];
  if (v.reference !== null) lines.push(`Expected answer: ${clip(v.reference, 200)}`);
  for (const a of v.answers.filter((x) => c.agents.includes(x.agent))) {
    lines.push(`Answer by ${a.agent} (${a.label})${verdict(a.quality)}: ${clip(a.content, 500)}`);
    for (const vote of v.votes.filter((x) => x.voter !== a.agent)) {
      const side =
        vote.targetLabel === a.label ? 'FOR' : `AGAINST (preferred ${vote.targetLabel}${verdict(vote.targetQuality)})`;
      lines.push(`  vote ${side} by ${vote.voter}: ${clip(vote.reason || '(no reason)', 240)}`);
    }
  }
  for (const vote of v.votes.filter((x) => c.agents.includes(x.voter))) {
    lines.push(
      `${vote.voter} voted for ${vote.targetLabel}${verdict(vote.targetQuality)}: ${clip(vote.reason || '(no reason)', 240)}`,
    );
  }
  lines.push(
    `Final answer${c.presenter ? ' (as presented)' : ''}${verdict(v.success)}: ${clip(v.finalAnswer ?? '(none)', 500)}`,
  );
  for (const f of v.feedback) lines.push(`Feedback: ${clip(f, 300)}`);
  return lines.join('\n');
}

/**
 * The reflective-mutation request: the prompt, what it is for, why it was chosen (the credit), rollouts
 * that went badly and well with the vote reasons the other agents gave, and the reply format.
 */
export function reflectionMessages(
  c: Component,
  text: string,
  why: Blame,
  low: readonly RolloutDigest[],
  high: readonly RolloutDigest[],
  maxChars: number,
): ChatTurn[] {
  const role = [
    c.agents.length ? `the system prompt of agent(s) ${c.agents.join(', ')}` : '',
    c.presenter ? "the prompt of the agent presenting the team's final answer" : '',
  ]
    .filter(Boolean)
    .join(' and ');
  const credit = `In these runs its agents' answers lost the vote ${why.lostVotes} time(s), were wrong ${why.wrongAnswers} time(s), and voted for a wrong answer ${why.wrongVotes} time(s)${c.presenter ? `; ${why.badPresentations} presented final answer(s) were wrong` : ''}.`;
  const examples = [
    ...low.map((v, i) => describeRollout(c, v, i + 1)),
    ...high.map((v, i) => describeRollout(c, v, low.length + i + 1)),
  ].join('\n\n');
  return [
    {
      role: 'system',
      content:
        'You improve the instructions given to AI agents that solve tasks as a team: each agent answers, then the agents vote for the best answer, giving a reason, and the winner presents the final answer.',
    },
    {
      role: 'user',
      content: [
        `This is ${role}:`,
        `<prompt>\n${text}\n</prompt>`,
        credit,
        'Read the examples below: what went wrong, what went right, and what the other agents said in their votes about these answers.',
        examples,
        `First write a short critique (what the prompt should change). Then write the complete improved prompt between <prompt> and </prompt>, at most ${maxChars} characters, in plain instructions (no example answers, no markup).`,
      ].join('\n\n'),
    },
  ];
}

export interface Proposal {
  critique: string;
  prompt: string;
}

export type ProposalRefusal = 'empty' | 'too_long' | 'unchanged' | 'markup';

const MARKUP = /<\/?(?:ORIGINAL MESSAGE|CURRENT ANSWERS?|VOTES?|FINAL ANSWER|agent\d+)>/i;

/** The proposed prompt (the last <prompt> block, else a fenced block, else the whole reply) and the critique before it; or why none is usable. */
export function parseProposal(
  reply: string,
  current: string,
  maxChars: number,
): Proposal | { refused: ProposalRefusal } {
  const tagged = [...reply.matchAll(/<prompt>([\s\S]*?)(?:<\/prompt>|$)/gi)].at(-1);
  const fenced = tagged ? undefined : [...reply.matchAll(/```[a-z]*\n([\s\S]*?)```/gi)].at(-1);
  const match = tagged ?? fenced;
  // As GEPA does: a reply without a marked prompt is taken whole (a small optimizer rarely marks it).
  const prompt = (match ? match[1]! : reply).trim();
  if (!prompt) return { refused: 'empty' };
  if (prompt.length > maxChars) return { refused: 'too_long' };
  if (prompt === current.trim()) return { refused: 'unchanged' };
  if (MARKUP.test(prompt)) return { refused: 'markup' };
  return {
    critique: match
      ? reply
          .slice(0, match.index)
          .replace(/<\/?prompt>/gi, '')
          .trim()
      : '',
    prompt,
  };
}

/** One mistake (or success) in a line or two: what was asked, what the component's agents answered, what the teammates said. */
function briefly(c: Component, v: RolloutDigest): string {
  const mine = v.answers.filter((a) => c.agents.includes(a.agent)).at(-1);
  const given = c.presenter || !mine ? v.finalAnswer : mine.content;
  const said = v.votes
    .filter((x) => !c.agents.includes(x.voter) || c.presenter)
    .map((x) => x.reason)
    .filter(Boolean)
    .slice(0, 2);
  return (
    `- Task: ${clip(v.task, 200)}${v.reference !== null ? ` Expected: ${clip(v.reference, 60)}.` : ''} Answer given: ${clip((given ?? '(none)').replace(/\s+/g, ' '), 120)}.`
    + `${said.length ? ` A teammate said: ${said.map((r) => `"${clip(r, 120)}"`).join('; ')}.` : ''}${v.feedback.length ? ` Feedback: ${clip(v.feedback[0]!, 160)}.` : ''}`
  );
}

/**
 * The advice request, for small optimizer models that cannot rewrite a whole prompt: the mistakes and the
 * teammates' vote reasons in a few lines, and one sentence of general advice asked for, which is added to the prompt.
 */
export function adviceMessages(
  c: Component,
  text: string,
  low: readonly RolloutDigest[],
  high: readonly RolloutDigest[],
): ChatTurn[] {
  const good = high.length ? `\n\nDone right with it:\n${high.map((v) => briefly(c, v)).join('\n')}` : '';
  return [
    { role: 'system', content: 'You give short, general advice to improve instructions for AI agents.' },
    {
      role: 'user',
      content: `Instruction: "${clip(text.replace(/\s+/g, ' '), 800)}"\n\nMistakes made with this instruction:\n${low.map((v) => briefly(c, v)).join('\n')}${good}\n\nWrite one short sentence of general advice to add to the instruction, so that such mistakes are avoided. Reply with the sentence only.`,
    },
  ];
}

/** The advice's first sentence added to the current prompt; or why it is unusable. */
export function parseAdvice(reply: string, current: string, maxChars: number): Proposal | { refused: ProposalRefusal } {
  const first =
    reply
      .trim()
      .split('\n')
      .map((l) => l.trim())
      .find(Boolean) ?? '';
  const sentence = (/^(.*?[.!?]["'”]?)(\s|$)/.exec(first)?.[1] ?? first).replace(/^["'“]+|["'”]+$/g, '').trim();
  if (sentence.length < 8) return { refused: 'empty' };
  if (MARKUP.test(sentence)) return { refused: 'markup' };
  if (current.includes(sentence)) return { refused: 'unchanged' };
  const prompt = `${current.trim()}\n${sentence}`;
  if (prompt.length > maxChars || sentence.length > 300) return { refused: 'too_long' };
  return { critique: sentence, prompt };
}
