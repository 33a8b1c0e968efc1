// What the serve benchmark sends: plain chat completions over a rotating set of short questions, and the request
// modes compared on one server (plain, streamed, MassGen-shaped tool calls, and the tool calls' prompt as text).
import Ajv from 'ajv';
import { postJson, postStream } from './serve-http.mjs';

export const QUESTIONS = [
  'What is the capital of France?',
  'Why is the sky blue?',
  'Name three prime numbers.',
  'How do bees make honey?',
  'What is 17 times 3?',
  'Give me a tip for sleeping better.',
  'What does a compiler do?',
  'Who wrote Hamlet?',
  'How far is the Moon from the Earth?',
  'What is photosynthesis?',
  'Suggest a name for a cat.',
  'Why do leaves change color?',
  'What is the boiling point of water?',
  'Explain what a list is in Python.',
  'How many legs does a spider have?',
  'What is a rainbow?',
];

/** A short right answer to each of QUESTIONS (agent_b's); agent_c answers with the one of another question. */
const ANSWERS = [
  'Paris.',
  'Air scatters blue sunlight more than red.',
  '2, 3 and 5.',
  'They evaporate nectar in the hive.',
  '51.',
  'Keep the same bedtime every day.',
  'It translates source code into machine code.',
  'Shakespeare.',
  'About 384,000 km.',
  'Plants turn light, water and CO2 into sugar.',
  'Miso.',
  'Chlorophyll breaks down in autumn.',
  '100 °C at sea level.',
  'An ordered, changeable sequence of values.',
  'Eight.',
  'Sunlight refracted by raindrops.',
];

/** MassGen's two workflow tools, as its agents get them. */
export const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'new_answer',
      description: 'Submit a new or improved answer to the question.',
      parameters: {
        type: 'object',
        properties: { content: { type: 'string', description: 'Your complete answer.' } },
        required: ['content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'vote',
      description: 'Vote for the best answer so far.',
      parameters: {
        type: 'object',
        properties: {
          agent_id: { type: 'string', enum: ['agent_b', 'agent_c'], description: 'The agent whose answer is best.' },
          reason: { type: 'string', description: 'Why it is the best.' },
        },
        required: ['agent_id', 'reason'],
      },
    },
  },
];

const ajv = new Ajv({ strict: false, allErrors: false });
const validators = Object.fromEntries(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

/** The request body of the n-th request of a cell; `sampled` adds temperature 1 and a per-request seed. */
export function chatBody(n, { maxTokens, sampled, ignoreEos }) {
  return {
    model: 'bench',
    messages: [{ role: 'user', content: QUESTIONS[n % QUESTIONS.length] }],
    max_tokens: maxTokens,
    ...(ignoreEos ? { ignore_eos: true } : {}),
    ...(sampled ? { temperature: 1.0, seed: 1000 + n } : { temperature: 0 }),
  };
}

function teamMessages(n) {
  const i = n % QUESTIONS.length;
  return [
    {
      role: 'system',
      content:
        'You are agent_a in a team of agents answering the same question. '
        + 'Give a new answer, or vote for the best answer so far.',
    },
    {
      role: 'user',
      content:
        `Question: ${QUESTIONS[i]}\nAnswers so far:\nagent_b: ${ANSWERS[i]}\n`
        + `agent_c: ${ANSWERS[(i + 5) % ANSWERS.length]}`,
    },
  ];
}

/**
 * A MassGen-shaped tool-call request: a call is required (or `toolChoice`), one at most (the llama.cpp engine's
 * grammar is on from the first token).
 */
export function toolBody(n, { toolChoice = 'required', ...opts }) {
  return {
    ...chatBody(n, opts),
    messages: teamMessages(n),
    tools: TOOLS,
    tool_choice: toolChoice,
    parallel_tool_calls: false,
  };
}

/** Python's json.dumps layout (", " and ": "), so the text below tokenizes as the server's own rendering does. */
function pyJson(value) {
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

/**
 * toolBody's prompt without tools: the system message ends with the text the server's generic tool format adds
 * (python/massgen_rl_serving/tool_calls.py, tool_prompt), so the prompt is the same and only the
 * grammar and the call parsing are gone. Results carry prompt tokens per request to show they match.
 */
export function toolTextBody(n, opts) {
  const [system, user] = teamMessages(n);
  const prompt = [
    'You can call tools. To call one, reply with exactly:',
    '<tool_call>',
    '{"name": "<tool name>", "arguments": <the arguments as a JSON object>}',
    '</tool_call>',
    'The tools:',
    ...TOOLS.map((t) => pyJson(t.function)),
    'Call one of the tools now.',
  ].join('\n');
  return { ...chatBody(n, opts), messages: [{ role: 'system', content: `${system.content}\n\n${prompt}` }, user] };
}

/** Whether a reply holds exactly one call of a known tool whose arguments are valid for its schema. */
export function checkCall(calls) {
  if (calls.length !== 1) return { valid: false, name: null, why: calls.length ? `${calls.length} calls` : 'no call' };
  const { name, arguments: raw } = calls[0];
  if (!validators[name]) return { valid: false, name, why: `unknown tool ${name}` };
  let args;
  try {
    args = JSON.parse(raw);
  } catch {
    return { valid: false, name, why: 'arguments are not JSON' };
  }
  const check = validators[name];
  return check(args) ? { valid: true, name } : { valid: false, name, why: ajv.errorsText(check.errors) };
}

/** The request modes a cell can run; `stream` ones are read as server-sent events. */
export const MODES = {
  plain: { body: chatBody, stream: false, tools: false },
  stream: { body: chatBody, stream: true, tools: false },
  tools: { body: toolBody, stream: false, tools: true },
  'tools-text': { body: toolTextBody, stream: false, tools: false },
};

/**
 * Sends the n-th request of `mode` and returns what a cell records of it: latency, completion and prompt tokens
 * (from usage), finish reason; streamed: ttftS, chunks and format problems; tools: the call check.
 */
export async function sendRequest(url, mode, n, opts) {
  const spec = MODES[mode];
  if (!spec) throw new Error(`unknown request mode ${mode} (have: ${Object.keys(MODES).join(', ')})`);
  const body = spec.body(n, opts);
  if (spec.stream) {
    const r = await postStream(url, body);
    return {
      latencyS: r.latencyS,
      ttftS: r.ttftS,
      chunks: r.chunks,
      contentChunks: r.contentChunks,
      problems: r.problems,
      completionTokens: r.usage?.completion_tokens ?? Number.NaN,
      promptTokens: r.usage?.prompt_tokens ?? Number.NaN,
      finish: r.finish,
      ...(spec.tools ? { call: checkCall(r.calls) } : {}),
    };
  }
  const { body: reply, latencyS } = await postJson(url, body);
  const choice = reply.choices?.[0] ?? {};
  const calls = (choice.message?.tool_calls ?? []).map((c) => ({
    name: c.function?.name,
    arguments: c.function?.arguments,
  }));
  return {
    latencyS,
    completionTokens: reply.usage?.completion_tokens ?? Number.NaN,
    promptTokens: reply.usage?.prompt_tokens ?? Number.NaN,
    finish: choice.finish_reason ?? null,
    ...(spec.tools ? { call: checkCall(calls) } : {}),
  };
}
