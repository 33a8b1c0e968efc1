import { constantJson } from '../llm/json-text.js';
import type { ChatMessage } from '../llm/types.js';
import { BoundedCache } from '../util/bounded-cache.js';
import { ANSWERS_LAYOUT_CORRECTION, answersLayoutMessages } from './answers-layout.js';
import { DELEGATE_TEXT_INSTRUCTIONS, hasDelegate } from './delegate-tool.js';
import { textProtocolInstructions } from './text-protocol.js';
import type { OrchestratorConfig, TeamAgent } from './types.js';

const SENSITIVITY: Record<OrchestratorConfig['voting_sensitivity'], string> = {
  lenient:
    'If an existing answer is correct and complete, vote for it. Give a new answer only if you can clearly improve on every existing one.',
  balanced:
    'Vote for an existing answer only if it is correct, complete and clearly explained; otherwise give a better answer.',
  strict:
    'Vote only for an answer that is fully correct, complete, well justified and could not be improved; otherwise give a better answer.',
};

// The same system message object for the same text: a constant whose JSON is encoded once (json-text.ts).
const systemMessages = new BoundedCache<string, ChatMessage>(256);
const newSystemMessage = (content: string): ChatMessage => constantJson<ChatMessage>({ role: 'system', content });

function systemMessage(content: string): ChatMessage {
  return systemMessages.get(content, newSystemMessage);
}

export function answersBlock(answers: Map<string, string>): string {
  if (!answers.size) return '<CURRENT ANSWERS>\n(no answers yet)\n</CURRENT ANSWERS>';
  const parts = [...answers].map(([label, content]) => `<${label}>\n${content}\n</${label}>`);
  return `<CURRENT ANSWERS>\n${parts.join('\n')}\n</CURRENT ANSWERS>`;
}

export type PromptLayout = NonNullable<OrchestratorConfig['prompt_layout']>;

/** Text-mode agents of an `answers` or `independent` layout team see the task and, at most, the others' final answers (answers-layout.ts). */
export function usesAnswersLayout(agent: TeamAgent, layout: PromptLayout | undefined): boolean {
  return (layout === 'answers' || layout === 'independent') && agent.toolMode === 'text';
}

/** The messages of one coordination turn: the task, every current answer under its label, the rules. */
export function coordinationMessages(
  agent: TeamAgent,
  task: string,
  answers: Map<string, string>,
  canAnswer: boolean,
  sensitivity: OrchestratorConfig['voting_sensitivity'],
  teamSize: number,
  layout?: PromptLayout,
): ChatMessage[] {
  if (usesAnswersLayout(agent, layout)) return answersLayoutMessages(systemMessage(agent.systemPrompt), task, answers);
  const rules = [
    `You are one of ${teamSize} agents answering the same message together. Your answers are shown to the others anonymously, as agent1, agent2, and so on.`,
    answers.size ? SENSITIVITY[sensitivity] : 'There are no answers yet: give your answer.',
    agent.toolMode === 'text'
      ? textProtocolInstructions(canAnswer, hasDelegate(agent) ? DELEGATE_TEXT_INSTRUCTIONS : undefined)
      : `Finish by calling exactly one of the tools ${canAnswer ? 'new_answer or vote' : 'vote'}.`,
  ].join('\n\n');
  return [
    systemMessage(`${agent.systemPrompt}\n\n${rules}`),
    // Small models follow the last thing they read: the format comes again at the end in text mode.
    {
      role: 'user',
      content: `<ORIGINAL MESSAGE>\n${task}\n</ORIGINAL MESSAGE>\n\n${answersBlock(answers)}${agent.toolMode === 'text' ? `\n\n${replyFormat(answers.size > 0, canAnswer)}` : ''}`,
    },
  ];
}

function replyFormat(hasAnswers: boolean, canAnswer: boolean): string {
  if (!hasAnswers) return 'Reply with your solution, ending with one line:\nANSWER: <your final answer>';
  if (!canAnswer) return 'Reply with one line:\nVOTE: agentN | <reason>';
  return 'Reply with one line, either:\nVOTE: agentN | <reason>   (if that answer is correct)\nor:\nANSWER: <a better answer>';
}

/** The winner's presentation: the presenter prompt (absent: its own system prompt), every answer and the votes. */
export function presentationMessages(
  agent: TeamAgent,
  task: string,
  answers: Map<string, string>,
  votes: { voterLabel: string; target: string; reason: string }[],
  presenterPrompt?: string,
): ChatMessage[] {
  const voteLines = votes.length
    ? votes.map((v) => `${v.voterLabel} voted for ${v.target}: ${v.reason || '(no reason)'}`).join('\n')
    : '(no votes)';
  return [
    systemMessage(
      `${presenterPrompt ?? agent.systemPrompt}\n\nYour answer (${agent.label}) was selected. Present the final answer to the original message, using anything the other answers got right. End with a line "Final answer: ...".`,
    ),
    {
      role: 'user',
      content: `<ORIGINAL MESSAGE>\n${task}\n</ORIGINAL MESSAGE>\n\n${answersBlock(answers)}\n\n<VOTES>\n${voteLines}\n</VOTES>`,
    },
  ];
}

export function reviewMessages(agent: TeamAgent, task: string, finalAnswer: string): ChatMessage[] {
  return [
    systemMessage(
      `${agent.systemPrompt}\n\nCheck the final answer against the original message. Reply with one line: CONFIRM if it is correct and complete, or RESTART: <what is wrong> if the team should try again.`,
    ),
    {
      role: 'user',
      content: `<ORIGINAL MESSAGE>\n${task}\n</ORIGINAL MESSAGE>\n\n<FINAL ANSWER>\n${finalAnswer}\n</FINAL ANSWER>`,
    },
  ];
}

export function correction(agent: TeamAgent, detail: string, canAnswer: boolean, layout?: PromptLayout): string {
  if (usesAnswersLayout(agent, layout)) return ANSWERS_LAYOUT_CORRECTION;
  const how =
    agent.toolMode === 'text'
      ? textProtocolInstructions(canAnswer)
      : `Call exactly one of: ${canAnswer ? 'new_answer, vote' : 'vote'}.`;
  return `That was not a valid action: ${detail}.\n${how}`;
}
