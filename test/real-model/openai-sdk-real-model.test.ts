import Ajv2020 from 'ajv/dist/2020.js';
import { execa } from 'execa';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BadRequestError, OpenAI } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { ChatCompletion, ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../src/config/load.js';
import { venvPython } from '../../src/python/venv.js';
import { startLocalServer, type LocalServer } from '../../src/serving/local-server.js';
import { FIXTURES } from '../helpers.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { massgenEnv, massgenVenv } from '../support/massgen.js';

// The official openai SDKs as users call them — the npm package, and the Python package MassGen installs
// (scripts/setup-massgen-venv.sh) — against one llama.cpp server on the bundled model (prepared by
// `massgen-rl doctor --fix`, which `npm test` runs first). Greedy decoding (temperature 0) is deterministic,
// so a streamed reply must be its plain twin. One request at a time: replies do not depend on batch company.

const MODEL = 'smol';
const GREEDY = {
  model: MODEL,
  messages: [{ role: 'user' as const, content: 'What is 2 + 3?' }],
  temperature: 0,
  seed: 7,
  max_tokens: 24,
};
const VOTE = {
  type: 'function',
  function: {
    name: 'vote',
    description: 'Vote for the best answer.',
    strict: true,
    parameters: {
      type: 'object',
      properties: { agent_id: { type: 'string', enum: ['agent1', 'agent2'] }, reason: { type: 'string' } },
      required: ['agent_id', 'reason'],
      additionalProperties: false,
    },
  },
} satisfies ChatCompletionFunctionTool;
const ANSWER = {
  type: 'function',
  function: {
    name: 'new_answer',
    description: 'Give your answer.',
    strict: true,
    parameters: {
      type: 'object',
      properties: { content: { type: 'string' } },
      required: ['content'],
      additionalProperties: false,
    },
  },
} satisfies ChatCompletionFunctionTool;
const SCHEMAS: Record<string, object> = { vote: VOTE.function.parameters, new_answer: ANSWER.function.parameters };
// One call: with parallel calls allowed the greedy 135M model repeats its call until max_tokens.
const WITH_TOOLS = { ...GREEDY, max_tokens: 64, tools: [VOTE, ANSWER], parallel_tool_calls: false };

const ajv = new Ajv2020({ allErrors: true });
/** Why `args` (a call's arguments as sent) is not a valid call of `name`: [] when it is. */
function callProblems(name: string, args: string, schemas: Record<string, object> = SCHEMAS): unknown[] {
  const schema = schemas[name];
  if (!schema) return [`no tool named ${name}`];
  const validate = ajv.compile(schema);
  return validate(JSON.parse(args)) ? [] : (validate.errors ?? []);
}

let server: LocalServer;
let client: OpenAI;
let logDir: string;
let plain: Promise<ChatCompletion> | undefined;
const plainReply = () => (plain ??= client.chat.completions.create(GREEDY));
const REQUIRED = { ...WITH_TOOLS, tool_choice: 'required' as const };
let required: Promise<ChatCompletion> | undefined;
const requiredReply = () => (required ??= client.chat.completions.create(REQUIRED));

beforeAll(async () => {
  logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openai-sdk-test-'));
  const { venvDir, defaultModelDir } = loadConfig({ cwd: logDir }).paths;
  server = await startLocalServer({
    python: venvPython(venvDir),
    modelDir: defaultModelDir,
    servedName: MODEL,
    engine: 'llama.cpp',
    maxBatchSize: 2,
    logFile: path.join(logDir, 'serve.log'),
  });
  client = new OpenAI({ baseURL: server.baseUrl, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
}, 240_000);

/** A usage's token counts, without prompt_tokens_details (the prompt cached by an earlier request). */
type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number };

function counts(usage: Usage | null | undefined) {
  return usage && { prompt: usage.prompt_tokens, completion: usage.completion_tokens, total: usage.total_tokens };
}

afterAll(async () => {
  await server?.stop();
  fs.rmSync(logDir, { recursive: true, force: true });
});

describe('the official openai npm SDK against the local llama.cpp server', () => {
  it('create() gives a chat.completion: the greedy reply, finish_reason stop, usage; models.list() too', async () => {
    const r = await plainReply();
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe(MODEL);
    const [choice] = r.choices;
    expect(choice!.message.role).toBe('assistant');
    expect(choice!.message.content).toContain('5');
    expect(choice!.finish_reason).toBe('stop');
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    expect(models[0]).toBe(MODEL);
  });

  it('create({stream: true}) read with for await joins to the plain reply, then a usage chunk', async () => {
    const want = await plainReply();
    const stream = await client.chat.completions.create({
      ...GREEDY,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(new Set(chunks.map((c) => c.object))).toEqual(new Set(['chat.completion.chunk']));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(want.choices[0]!.message.content);
    expect(chunks.flatMap((c) => c.choices.map((x) => x.finish_reason)).filter(Boolean)).toEqual(['stop']);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(counts(last.usage)).toEqual(counts(want.usage));
    // the same prompt a second time: the server's kept KV cache holds all of it but the last token
    expect(last.usage!.prompt_tokens_details!.cached_tokens).toBe(want.usage!.prompt_tokens - 1);
  });

  it('the stream() helper emits content.delta and content.done; finalChatCompletion() is the plain reply', async () => {
    const want = (await plainReply()).choices[0]!.message.content;
    const stream = client.chat.completions.stream(GREEDY);
    const deltas: string[] = [];
    let done: string | undefined;
    let chunks = 0;
    stream.on('chunk', () => chunks++);
    stream.on('content.delta', (e) => deltas.push(e.delta));
    stream.on('content.done', (e) => (done = e.content));
    const final = await stream.finalChatCompletion();
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(want);
    expect(done).toBe(want);
    expect(chunks).toBeGreaterThan(deltas.length);
    expect(final.choices[0]!.message.content).toBe(want);
    expect(final.choices[0]!.finish_reason).toBe('stop');
    expect(await stream.finalContent()).toBe(want);
  });

  it('streamed logprobs: every token with its top_logprobs, the greedy token the most likely', async () => {
    const want = await plainReply();
    const stream = await client.chat.completions.create({
      ...GREEDY,
      stream: true,
      stream_options: { include_usage: true },
      logprobs: true,
      top_logprobs: 3,
    });
    const tokens = [];
    let usage;
    for await (const chunk of stream) {
      tokens.push(...(chunk.choices[0]?.logprobs?.content ?? []));
      usage ??= chunk.usage ?? undefined;
    }
    expect(tokens).toHaveLength(usage!.completion_tokens);
    expect(counts(usage)).toEqual(counts(want.usage));
    expect(
      tokens
        .map((t) => t.token)
        .join('')
        .startsWith(want.choices[0]!.message.content!),
    ).toBe(true);
    for (const t of tokens) {
      expect(t.logprob).toBeLessThanOrEqual(0);
      expect(t.top_logprobs).toHaveLength(3);
      expect(t.top_logprobs[0]).toMatchObject({ token: t.token, logprob: t.logprob });
      const lps = t.top_logprobs.map((x) => x.logprob);
      expect(lps).toEqual([...lps].sort((a, b) => b - a));
    }
  });

  it("tool_choice 'required': one call, arguments valid for its tool's schema, finish_reason tool_calls", async () => {
    const r = await requiredReply();
    const [choice] = r.choices;
    expect(choice!.finish_reason).toBe('tool_calls');
    expect(choice!.message.tool_calls).toHaveLength(1);
    const call = choice!.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') return;
    expect(call.id).toMatch(/^call_/);
    expect(callProblems(call.function.name, call.function.arguments)).toEqual([]);
  });

  it('tool_choice naming a function: a call of that function, its enum argument an allowed value', async () => {
    const r = await client.chat.completions.create({
      ...WITH_TOOLS,
      tool_choice: { type: 'function', function: { name: 'vote' } },
    });
    const [choice] = r.choices;
    expect(choice!.finish_reason).toBe('tool_calls');
    const call = choice!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error(`a ${call.type} tool call`);
    expect(call.function.name).toBe('vote');
    expect(callProblems('vote', call.function.arguments)).toEqual([]);
    expect(['agent1', 'agent2']).toContain(JSON.parse(call.function.arguments).agent_id);
  });

  it('a streamed tool call assembled by the stream() helper: argument events, and the unstreamed call', async () => {
    const want = (await requiredReply()).choices[0]!.message.tool_calls![0]!;
    const stream = client.chat.completions.stream(REQUIRED);
    const argDeltas: string[] = [];
    const done: { name: string; arguments: string; parsed_arguments: unknown }[] = [];
    stream.on('tool_calls.function.arguments.delta', (e) => argDeltas.push(e.arguments_delta));
    stream.on('tool_calls.function.arguments.done', (e) => done.push(e));
    const final = await stream.finalChatCompletion();
    const [choice] = final.choices;
    expect(choice!.finish_reason).toBe('tool_calls');
    expect(choice!.message.content ?? '').toBe('');
    expect(choice!.message.tool_calls).toHaveLength(1);
    const call = choice!.message.tool_calls![0]!;
    if (call.type !== 'function' || want.type !== 'function') throw new Error('not function tool calls');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe(want.function.name);
    expect(call.function.arguments).toBe(want.function.arguments);
    expect(argDeltas.join('')).toBe(want.function.arguments);
    // Strict tools: the helper parses the arguments itself.
    expect(done).toEqual([
      {
        index: 0,
        name: want.function.name,
        arguments: want.function.arguments,
        parsed_arguments: JSON.parse(want.function.arguments),
      },
    ]);
    expect(call.function.parsed_arguments).toEqual(JSON.parse(want.function.arguments));
  });

  it('response_format json_schema (strict, from zod 4) through parse(): the content fits, parsed', async () => {
    const Fruit = z.object({ answer: z.number().int(), unit: z.enum(['apples', 'pears']) });
    const format = zodResponseFormat(Fruit, 'fruit');
    expect(format.json_schema.strict).toBe(true);
    const r = await client.chat.completions.parse({ ...GREEDY, max_tokens: 48, response_format: format });
    const [choice] = r.choices;
    expect(choice!.finish_reason).toBe('stop');
    const value: unknown = JSON.parse(choice!.message.content!);
    expect(Fruit.safeParse(value).success).toBe(true);
    expect(choice!.message.parsed).toEqual(value);
  });

  it('a tool_choice naming an unknown function is a BadRequestError with param tool_choice', async () => {
    const err = await client.chat.completions
      .create({
        ...GREEDY,
        tools: [VOTE],
        tool_choice: { type: 'function', function: { name: 'unknown' } },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ status: 400, param: 'tool_choice', type: 'invalid_request_error' });
    expect((err as Error).message).toContain("'unknown'");
  });
});

interface PyToolReply {
  finish_reason: string;
  content: string | null;
  call: { count: number; id: string; type: string; name: string; arguments: string; parsed_arguments: unknown } | null;
}

interface PyResult {
  sdk: string;
  schemas: Record<string, object>;
  plain: { object: string; content: string; finish_reason: string; usage: Usage };
  stream: { chunks: number; objects: string[]; content: string; finish_reason: string; usage: Usage };
  helper: { events: string[]; deltas: string; done: string; final: string; finish_reason: string };
  required: PyToolReply;
  named: PyToolReply;
  tool_stream: PyToolReply & { arguments_done: { name: string; arguments: string; parsed_arguments: unknown }[] };
  parse: { content: string; parsed: unknown; finish_reason: string };
  bad_request: { status: number; param: string; type: string; message: string } | null;
  /** Connections the script tried to open off this machine (refused). */
  egress: string[];
}

let python: Promise<PyResult> | undefined;
/** test/fixtures/openai-sdk/check_sdk.py with the MassGen venv's python, offline; once for the block. */
const pythonResult = () =>
  (python ??= (async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'openai-sdk-py-'));
    const egressLog = path.join(home, 'egress.log');
    try {
      const r = await execa(
        path.join(massgenVenv(), 'bin', 'python'),
        [path.join(FIXTURES, 'openai-sdk', 'check_sdk.py'), server.baseUrl, MODEL],
        { env: massgenEnv(home, egressLog), extendEnv: false, reject: false, stdin: 'ignore', timeout: 240_000 },
      );
      if (r.exitCode !== 0)
        throw new Error(`check_sdk.py exited with ${r.exitCode}:\n${String(r.stderr).slice(-4000)}`);
      const egress = fs.existsSync(egressLog) ? fs.readFileSync(egressLog, 'utf8').split('\n').filter(Boolean) : [];
      return { ...(JSON.parse(String(r.stdout).trim().split('\n').at(-1)!) as PyResult), egress };
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  })());

describeWithMassgen('the official openai Python SDK (the MassGen venv) against the local llama.cpp server', () => {
  it('plain, stream=True and the stream() helper give the same greedy reply and usage, on loopback', async () => {
    const r = await pythonResult();
    expect(r.sdk).toBe('2.2.0');
    expect(r.egress).toEqual([]);
    expect(r.plain).toMatchObject({ object: 'chat.completion', finish_reason: 'stop' });
    expect(r.plain.content).toContain('5');
    expect(r.stream).toMatchObject({
      objects: ['chat.completion.chunk'],
      content: r.plain.content,
      finish_reason: 'stop',
    });
    expect(counts(r.stream.usage)).toEqual(counts(r.plain.usage));
    expect(r.stream.chunks).toBeGreaterThan(2);
    expect(r.helper.events).toEqual(['chunk', 'content.delta', 'content.done']);
    expect(r.helper).toMatchObject({
      deltas: r.plain.content,
      done: r.plain.content,
      final: r.plain.content,
      finish_reason: 'stop',
    });
  }, 240_000);

  it('tool calls, required and named, plain and through the stream() helper, are valid calls', async () => {
    const r = await pythonResult();
    for (const reply of [r.required, r.named, r.tool_stream]) {
      expect(reply.finish_reason).toBe('tool_calls');
      expect(reply.call).toMatchObject({ count: 1, type: 'function', id: expect.stringMatching(/^call_/) });
      expect(callProblems(reply.call!.name, reply.call!.arguments, r.schemas)).toEqual([]);
    }
    expect(r.named.call!.name).toBe('vote');
    expect(r.tool_stream.content ?? '').toBe('');
    expect(r.tool_stream.call).toMatchObject({
      name: r.required.call!.name,
      arguments: r.required.call!.arguments,
      parsed_arguments: JSON.parse(r.required.call!.arguments),
    });
    expect(r.tool_stream.arguments_done).toEqual([
      {
        name: r.required.call!.name,
        arguments: r.required.call!.arguments,
        parsed_arguments: JSON.parse(r.required.call!.arguments),
      },
    ]);
  }, 240_000);

  it('parse() with a pydantic model: strict json_schema output parsed into the model', async () => {
    const r = await pythonResult();
    expect(r.parse.finish_reason).toBe('stop');
    expect(r.parse.parsed).toEqual(JSON.parse(r.parse.content));
    expect(r.parse.parsed).toMatchObject({
      answer: expect.any(Number),
      unit: expect.stringMatching(/^(apples|pears)$/),
    });
  }, 240_000);

  it('a tool_choice naming an unknown function raises BadRequestError with param tool_choice', async () => {
    const r = await pythonResult();
    expect(r.bad_request).toMatchObject({ status: 400, param: 'tool_choice', type: 'invalid_request_error' });
  }, 240_000);
});
