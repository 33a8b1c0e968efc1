import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { wholeNumber } from '../../src/cli/flags.js';
import { configSchema } from '../../src/config/schema.js';
import { UserError } from '../../src/errors.js';
import { configIn, configIssues } from '../helpers.js';

type JsonSchema = {
  type?: string;
  maximum?: number;
  exclusiveMaximum?: number;
  properties?: Record<string, JsonSchema>;
  [k: string]: unknown;
};

/** Every numeric leaf of the config's JSON Schema, with its dotted path. */
function numericKeys(node: unknown, path: string[] = [], out: { path: string; schema: JsonSchema }[] = []) {
  if (Array.isArray(node)) node.forEach((n) => numericKeys(n, path, out));
  else if (node && typeof node === 'object') {
    const schema = node as JsonSchema;
    if (schema.type === 'number' || schema.type === 'integer') out.push({ path: path.join('.'), schema });
    for (const [k, v] of Object.entries(schema))
      numericKeys(
        v,
        k === 'properties' || k === 'anyOf' || k === 'items' || k === 'additionalProperties' ? path : [...path, k],
        out,
      );
  }
  return out;
}

/** Node fires a timer of 2^31 ms or more after 1 ms. */
const TIMER_LIMIT_MS = 2 ** 31 - 1;

describe('every numeric config key has a maximum the runtime can honour', () => {
  const keys = numericKeys(z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }));

  it('finds the numeric keys', () => {
    expect(keys.length).toBeGreaterThan(60);
  });

  it('no numeric key is unbounded (a safe-integer ceiling is no ceiling)', () => {
    // A key that lists its values (enum) is bounded by the largest.
    const ceiling = (s: JsonSchema) =>
      s.maximum ?? s.exclusiveMaximum ?? (Array.isArray(s.enum) ? Math.max(...(s.enum as number[])) : Infinity);
    const unbounded = keys.filter(({ schema }) => ceiling(schema) >= Number.MAX_SAFE_INTEGER).map((k) => k.path);
    expect(unbounded).toEqual([]);
  });

  it('no timeout or duration can reach 2^31 ms', () => {
    const durations = keys.filter((k) => /(_ms|_s|_min)$/.test(k.path));
    expect(durations.length).toBeGreaterThanOrEqual(9);
    const tooLong = durations
      .filter(({ path, schema }) => {
        const unit = path.endsWith('_ms') ? 1 : path.endsWith('_s') ? 1000 : 60_000;
        return (schema.maximum ?? Infinity) * unit > TIMER_LIMIT_MS;
      })
      .map((k) => k.path);
    expect(tooLong).toEqual([]);
  });

  it.each([
    [
      'models.m.timeout_ms: 2147483648',
      'models:\n  m: { base_url: "http://127.0.0.1:9/v1", model: x, timeout_ms: 2147483648 }\nagents: [{ id: a, model: m }]\n',
      /^models\.m\.timeout_ms: at most 86400000 ms \(1 day\) \(massgen-rl\.yaml:2:65\)$/,
    ],
    [
      'orchestrator.agent_timeout_s: 1e10',
      'orchestrator:\n  agent_timeout_s: 1e10\n',
      /^orchestrator\.agent_timeout_s: at most 86400 s \(1 day\) \(massgen-rl\.yaml:2:20\)$/,
    ],
    [
      'tasks.sources[0].n: 1e9',
      'tasks:\n  sources: [{ suite: arithmetic, n: 1000000000 }]\n',
      /^tasks\.sources\[0\]\.n: .*100000.* \(massgen-rl\.yaml:2:37\)$/,
    ],
    ['collect.samples_per_turn: 100000', 'collect:\n  samples_per_turn: 100000\n', /^collect\.samples_per_turn: .*64/],
    [
      'prompt_opt.seed: 2^53',
      'prompt_opt:\n  seed: 9007199254740991\n',
      /^prompt_opt\.seed: at most 4294967295 \(a 32-bit seed\)/,
    ],
  ])('refuses %s with its location', (_name, yaml, message) => {
    expect(configIssues(yaml)).toEqual([expect.stringMatching(message)]);
  });
});

describe('a path in the config is one the file system can take, or is refused naming its field', () => {
  it.each([
    ['a NUL', String.raw`a\0b`, /must not contain a NUL character/],
    ['a lone surrogate', String.raw`a\udc00b`, /must not contain a lone surrogate/],
    ['100000 characters', 'd'.repeat(100_000), /at most 4096 characters/],
    ['a 300-character name', `data/${'d'.repeat(300)}`, /"d{8}…" is 300 bytes: a name in a path is at most 255/],
  ])('project.data_dir and store.path holding %s', (_name, value, message) => {
    for (const [section, key] of [
      ['project', 'data_dir'],
      ['store', 'path'],
    ]) {
      const issues = configIssues(`${section}:\n  ${key}: "${value}"\n`);
      expect(issues).toEqual([expect.stringMatching(new RegExp(`^${section}\\.${key}: `))]);
      expect(issues[0]).toMatch(message);
      expect(issues[0]).toMatch(/\(massgen-rl\.yaml:2:\d+\)$/);
    }
  });

  it('keeps paths with spaces, non-ASCII names and astral characters', () => {
    expect(configIn('project:\n  data_dir: "dåta dir/😀"\n').config.project.data_dir).toBe('dåta dir/😀');
  });
});

describe('models.*.base_url must be http or https', () => {
  it.each(['file:///etc/passwd', 'ftp://models.example/v1', 'unix:/tmp/vllm.sock', 'javascript:alert(1)'])(
    'refuses %s at load',
    (url) => {
      expect(configIssues(`models:\n  m: { base_url: "${url}", model: x }\nagents: [{ id: a, model: m }]\n`)).toEqual([
        'models.m.base_url: must be an http:// or https:// URL, e.g. http://localhost:8000/v1 (massgen-rl.yaml:2:18)',
      ]);
    },
  );

  it('accepts http and https', () => {
    for (const url of ['http://localhost:8000/v1', 'https://api.example.com/v1']) {
      expect(
        configIn(`models:\n  m: { base_url: "${url}", model: x }\nagents: [{ id: a, model: m }]\n`, {}, {}).config
          .models.m!.base_url,
      ).toBe(url);
    }
  });
});

describe('numeric CLI flags have a ceiling', () => {
  it('wholeNumber refuses values over its maximum, under its minimum and non-numbers', () => {
    expect(wholeNumber('--n', '50', 100)).toBe(50);
    expect(wholeNumber('--rank', '0', 100, 0)).toBe(0);
    expect(() => wholeNumber('--n', '0', 100)).toThrow(new UserError('--n 0: expected a positive whole number'));
    expect(() => wholeNumber('--rank', '-1', 100, 0)).toThrow(
      new UserError('--rank -1: expected a whole number (0, 1, …)'),
    );
    expect(() => wholeNumber('--rank', '0x1', 100, 0)).toThrow(/expected a whole number/);
    expect(() => wholeNumber('--n', '1e12', 100)).toThrow(new UserError('--n 1e12: at most 100'));
    expect(() => wholeNumber('--n', ' ', 100)).toThrow(/expected a positive whole number/);
  });
});
