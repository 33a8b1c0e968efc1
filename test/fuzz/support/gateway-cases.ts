import fc from 'fast-check';
import { NUMBERS, PROTOTYPE_NAMES, UNICODE } from './values.js';

/** One request the gateway fuzz sends: a JSON body, raw body bytes, a raw HTTP exchange, or a client behaviour. */
export type GatewayCase =
  | { kind: 'body'; body: unknown; stream: boolean; auth: AuthMode }
  | { kind: 'text'; text: string; invalidUtf8: boolean; auth: AuthMode }
  | { kind: 'huge'; bytes: number; declared: boolean }
  | { kind: 'raw'; request: string }
  | { kind: 'slow'; part: 'headers' | 'body' }
  | { kind: 'reader'; chunks: number }
  | { kind: 'disconnect'; afterBytes: number; stream: boolean }
  | { kind: 'burst'; extra: number };

export type AuthMode = 'key' | 'none' | 'wrong' | 'malformed';

/** Every field of a chat request a client may send (and the gateway's backend checks some of). */
const FIELDS = [
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'temperature',
  'top_p',
  'logprobs',
  'top_logprobs',
  'return_token_ids',
  'stop',
  'seed',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'user',
  'metadata',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'fuzz_backend',
] as const;

const BACKEND_MODES = ['echo-key', 'error-500', 'cut', 'hang', 'long'] as const;

const hostileScalar = fc.oneof(
  fc.constantFrom(...NUMBERS),
  fc.constantFrom(...UNICODE),
  fc.constantFrom(null, true, false, '', 'stream', 'gw'),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 40 }),
);
const hostile: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileScalar,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A message list: mostly right, sometimes wrong in one place. */
const messages = fc.oneof(
  fc.constant([{ role: 'user', content: 'hi' }]),
  fc.array(
    fc.record({
      role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool'), hostileScalar),
      content: fc.oneof(fc.string({ maxLength: 30 }), hostile),
    }),
    { maxLength: 4 },
  ),
  hostile,
);

const body = fc
  .record({
    base: fc.record({ model: fc.oneof(fc.constant('scripted'), fc.constant('scripted'), hostileScalar), messages }),
    set: fc.array(fc.tuple(fc.constantFrom(...FIELDS, ...PROTOTYPE_NAMES, 'unknown_field'), hostile), { maxLength: 3 }),
    drop: fc.subarray(['model', 'messages'] as const, { maxLength: 1 }),
    mode: fc.option(fc.constantFrom(...BACKEND_MODES), { freq: 4 }),
    deep: fc.option(fc.constantFrom(50, 99, 100, 101, 2000), { freq: 8 }),
  })
  .map(({ base, set, drop, mode, deep }) => {
    const out: Record<string, unknown> = { ...base };
    for (const [k, v] of set)
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    for (const k of drop) delete out[k];
    if (mode) out.fuzz_backend = mode;
    if (mode === 'long') out.fuzz_chunks = 50;
    if (deep) {
      let nested: unknown = 'x';
      for (let i = 0; i < deep; i++) nested = [nested];
      out.metadata = nested;
    }
    return out;
  });

const auth = fc.constantFrom<AuthMode>('key', 'key', 'key', 'key', 'key', 'key', 'none', 'wrong', 'malformed');

const text = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    '{"model":',
    '[]',
    'null',
    '1',
    '"x"',
    '{"model":"scripted"}',
    '\ufeff{}',
    '{"a":1}}',
    'true',
    '{"model":"scripted","messages":[{"role":"user","content":"\\ud800"}]}',
    '{"model":"scripted","messages":[]}',
    '{"model":"scripted","messages":[{"role":"user","content":"hi"}],"model":"other"}',
  ),
  fc.integer({ min: 1, max: 200_000 }).map((d) => '['.repeat(d) + ']'.repeat(d % 3 === 0 ? d : 0)),
  fc.string({ maxLength: 200 }),
);

const RAW = [
  'GARBAGE\r\n\r\n',
  'GET / HTTP/9.9\r\n\r\n',
  'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nContent-Length: 5\r\n\r\n0123456789',
  'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
  'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
  'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"model"',
  'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n',
  'DELETE /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n',
  'GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET http://evil.example/v1/models HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET /v1/models HTTP/1.0\r\n\r\n',
  'GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n',
  'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ' + 'k'.repeat(4000) + '\r\n\r\n',
];

const raw = fc.oneof(
  fc.constantFrom(...RAW),
  fc
    .integer({ min: 1, max: 4 })
    .map((k) => `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(k * 5000)}\r\n\r\n`),
  fc
    .integer({ min: 20, max: 200 })
    .map(
      (n) =>
        `GET /v1/models HTTP/1.1\r\nHost: x\r\n${Array.from({ length: n }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`,
    ),
  fc.string({ maxLength: 300 }).map((s) => `${s}\r\n\r\n`),
);

/** The case kinds and their shares of a run. */
export const gatewayCase: fc.Arbitrary<GatewayCase> = fc.oneof(
  { weight: 50, arbitrary: fc.record({ kind: fc.constant('body' as const), body, stream: fc.boolean(), auth }) },
  { weight: 16, arbitrary: fc.record({ kind: fc.constant('text' as const), text, invalidUtf8: fc.boolean(), auth }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('huge' as const),
      bytes: fc.constantFrom(64 * 1024, 64 * 1024 + 1, 1 << 20),
      declared: fc.boolean(),
    }),
  },
  { weight: 18, arbitrary: fc.record({ kind: fc.constant('raw' as const), request: raw }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('slow' as const), part: fc.constantFrom('headers', 'body') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reader' as const), chunks: fc.constantFrom(300, 20_000) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('disconnect' as const),
      afterBytes: fc.integer({ min: 0, max: 400 }),
      stream: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('burst' as const), extra: fc.integer({ min: 1, max: 20 }) }) },
);
