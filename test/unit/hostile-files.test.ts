import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRegularFile } from '../../src/config/input-file.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { UserError } from '../../src/errors.js';
import { OversizedTaskError, taskFileGuard } from '../../src/tasks/file-guard.js';
import { tasksForRun } from '../../src/tasks/for-run.js';
import { readTaskFile } from '../../src/tasks/index.js';
import { Rng } from '../../src/tasks/prng.js';
import { configIn, tempDir } from '../helpers.js';

/** The problems loadConfig reports for a config file with this text. */
function configIssues(yaml: string): string[] {
  return configIssuesIn(tempDir({ 'massgen-rl.yaml': yaml }));
}

function configIssuesIn(dir: string): string[] {
  try {
    loadConfig({ cwd: dir, env: {} });
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

const taskIssues = (name: string, text: string) => {
  const dir = tempDir({ [name]: text });
  return readTaskFile(path.join(dir, name), name).issues;
};

const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
/** A block mapping `key` nested 3000 levels deep by indentation, starting at `indent` spaces. */
const deepBlocks = (key: string, indent = 0) =>
  `${' '.repeat(indent)}${key}:\n${Array.from({ length: 3000 }, (_, i) => `${' '.repeat(indent + i + 1)}k:`).join('\n')} 1\n`;

/** Nine anchors of nine aliases each: expanding them all makes 9^7 scalars. */
const ALIAS_BOMB = [
  'a: &a [x,x,x,x,x,x,x,x,x]',
  ...'bcdefg'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefg'[i]}`).join(',')}]`),
].join('\n');

describe('YAML aliases are refused with file:line:col (config and task files)', () => {
  it.each([
    [
      'a plain alias',
      'project: &p\n  name: x\nstore: *p\n',
      'massgen-rl.yaml:3:8: YAML aliases are not supported (*p)',
    ],
    ['an undefined alias', 'project:\n  name: *nope\n', 'massgen-rl.yaml:2:9: YAML aliases are not supported (*nope)'],
    ['a recursive alias', 'project: &a [*a]\n', 'massgen-rl.yaml:1:14: YAML aliases are not supported (*a)'],
    ['an alias bomb', ALIAS_BOMB, 'massgen-rl.yaml:2:8: YAML aliases are not supported (*a)'],
  ])('config: %s', (_name, yaml, first) => {
    const issues = configIssues(yaml);
    expect(issues[0]).toContain(first);
    expect(issues[0]).toContain('write the value out in full');
  });

  it.each([
    ['a plain alias', '- &t { id: a, prompt: hi }\n- *t\n', 'tasks.yaml:2: YAML aliases are not supported (*t)'],
    ['an undefined alias', '- { id: a, prompt: *nope }\n', 'tasks.yaml:1: YAML aliases are not supported (*nope)'],
    [
      'a recursive alias',
      '- &t { id: a, prompt: hi, metadata: { self: *t } }\n',
      'tasks.yaml:1: YAML aliases are not supported (*t)',
    ],
    [
      'an alias bomb',
      `- { id: a, prompt: hi, metadata: { ${ALIAS_BOMB.split('\n').join(', ')} } }\n`,
      'tasks.yaml:1: YAML aliases are not supported (*a)',
    ],
  ])('task file: %s', (_name, yaml, first) => {
    const issues = taskIssues('tasks.yaml', yaml);
    expect(issues[0]).toContain(first);
  });

  it('still reads anchors that nothing refers to', () => {
    expect(taskIssues('tasks.yaml', '- &t { id: a, prompt: hi }\n')).toEqual([]);
  });

  it('takes a --set value with an alias as the literal text', () => {
    const dir = tempDir({ 'massgen-rl.yaml': '' });
    expect(loadConfig({ cwd: dir, env: {}, overrides: ['tasks.split.salt=*x'] }).config.tasks.split.salt).toBe('*x');
  });
});

describe('deep nesting is refused before anything recurses over it', () => {
  it('config: nested 5000 levels', () => {
    expect(configIssues(`project:\n  name: ${nested(5000)}\n`)[0]).toMatch(
      /^massgen-rl\.yaml:2:\d+: nested more than 64 levels deep/,
    );
  });

  it('config: nested 70 levels (parses, but is refused)', () => {
    expect(configIssues(`project:\n  name: ${nested(70)}\n`)[0]).toMatch(
      /^massgen-rl\.yaml:2:\d+: nested more than 64 levels deep/,
    );
  });

  it('JSONL task metadata nested 100000 levels', () => {
    const lines = [
      JSON.stringify({ id: 'ok', prompt: 'fine' }),
      `{"id": "deep", "prompt": "p", "metadata": {"x": ${nested(100_000)}}}`,
    ];
    expect(taskIssues('tasks.jsonl', lines.join('\n'))).toEqual(['tasks.jsonl:2: nested more than 64 levels deep']);
  });

  it('YAML task metadata nested 3000 levels', () => {
    expect(taskIssues('tasks.yaml', `- id: deep\n  prompt: p\n  metadata: { x: ${nested(3000)} }\n`)).toEqual([
      'tasks.yaml:3: nested more than 64 levels deep',
    ]);
  });

  it('config and YAML task file: two block mappings nested 3000 levels, deep enough that the YAML parser itself overflows', () => {
    const issues = configIssues(`project:\n  name: x\n${deepBlocks('a')}${deepBlocks('b')}`);
    expect(issues).toEqual([expect.stringMatching(/^massgen-rl\.yaml:67:65: nested more than 64 levels deep$/)]);
    expect(
      taskIssues(
        'tasks.yaml',
        `tasks:\n  - id: a\n    prompt: p\n    metadata:\n${deepBlocks('a', 6)}${deepBlocks('b', 6)}`,
      ),
    ).toEqual(['tasks.yaml:66: nested more than 64 levels deep']);
  });

  it('keeps metadata nested a few levels', () => {
    const r = readTaskFile(
      path.join(tempDir({ 't.jsonl': `{"id": "a", "prompt": "p", "metadata": {"x": ${nested(20)}}}` }), 't.jsonl'),
      't.jsonl',
    );
    expect(r.issues).toEqual([]);
  });
});

describe('a prompt over tasks.max_prompt_chars is refused with its file and line', () => {
  const capped = (name: string, text: string, maxPromptChars: number) =>
    readTaskFile(path.join(tempDir({ [name]: text }), name), name, name, { maxPromptChars }).issues;
  const task = (id: string, chars: number) => ({ id, prompt: 'p'.repeat(chars), reference: '42' });

  it('at the limit it is read; one character more is refused, in JSONL, YAML and JSON alike', () => {
    const jsonl = [task('a', 100), task('b', 101)].map((t) => JSON.stringify(t)).join('\n');
    const over = '"prompt" is 101 characters, over tasks.max_prompt_chars (100)';
    expect(capped('t.jsonl', jsonl, 100)).toEqual([`t.jsonl:2: ${over}`]);
    const yaml = [task('a', 100), task('b', 101)]
      .map((t) => `- id: ${t.id}\n  reference: 1\n  prompt: ${t.prompt}\n`)
      .join('');
    expect(capped('t.yaml', yaml, 100)).toEqual([`t.yaml:6: ${over}`]);
    expect(capped('t.json', JSON.stringify([task('a', 100), task('b', 101)], null, 2), 100)).toEqual([
      `t.json:9: ${over}`,
    ]);
  });

  it('counts what the prompt is, not its JSON spelling', () => {
    expect(capped('t.jsonl', JSON.stringify({ id: 'a', prompt: '\u00e9\n"'.repeat(30) }), 90)).toEqual([]);
  });

  it('defaults to 100000 characters', () => {
    const config = configIn('project:\n  name: x\n').config.tasks as { max_prompt_chars?: number };
    expect(config.max_prompt_chars).toBe(100_000);
    const jsonl = [task('a', 100_000), task('b', 100_001)].map((t) => JSON.stringify(t)).join('\n');
    expect(readTaskFile(path.join(tempDir({ 't.jsonl': jsonl }), 't.jsonl'), 't.jsonl').issues).toEqual([
      't.jsonl:2: "prompt" is 100001 characters, over tasks.max_prompt_chars (100000)',
    ]);
  });

  it.each(['t.jsonl', 't.json', 't.yaml'])('%s: a 50 MB prompt on one line is refused as it is read', (name) => {
    const lines = [JSON.stringify(task('a', 10)), JSON.stringify(task('big', 50 * 1024 * 1024)), '{ not even json'];
    const text =
      name === 't.json'
        ? `[${lines.slice(0, 2).join(',\n')},\n{ broken`
        : name === 't.yaml'
          ? lines
              .slice(0, 2)
              .map((l) => `- ${l}`)
              .join('\n') + '\n- [broken'
          : lines.join('\n');
    const dir = tempDir({ [name]: text });
    const started = performance.now();
    const issues = readTaskFile(path.join(dir, name), name, name, { maxPromptChars: 1000 }).issues;
    // The broken last record is not reported: reading stopped at line 2.
    const refused = new RegExp(`^${name.replace('.', '\\.')}:2: .*over \\d+ characters.*max_prompt_chars \\(1000\\)`);
    expect(issues).toEqual([expect.stringMatching(refused)]);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('taskFileGuard: the longest string (JSON) or line (YAML) a task file may hold, however it is read', () => {
  /** Where it throws (its line) for text fed in pieces cut at `cuts`, or null. */
  const refusedAt = (format: 'json' | 'yaml', text: string, cuts: number[]) => {
    const feed = taskFileGuard(format, 10);
    const at = [0, ...cuts.filter((c) => c > 0 && c < text.length).sort((a, b) => a - b), text.length];
    try {
      for (let i = 1; i < at.length; i++) feed(text.slice(at[i - 1], at[i]));
    } catch (err) {
      if (err instanceof OversizedTaskError) return err.line;
      throw err;
    }
    return null;
  };
  // A limit of 10 characters of prompt: strings of at most 60 characters as written, YAML lines 60 + 64 KiB.
  const cases: [string, 'json' | 'yaml', string, number | null][] = [
    ['a string of 60', 'json', `{"id": "a",\n "prompt": "${'\\"'.repeat(30)}"}`, null],
    ['a string of 61', 'json', `{"id": "a",\n "prompt": "${'\\"'.repeat(30)}x"}`, 2],
    ['escaped quotes and backslashes do not end a string', 'json', `["${'\\\\\\"'.repeat(16)}"]`, 1],
    ['many short strings on one line', 'json', `[${'"abcdefghij", '.repeat(5000)}"x"]`, null],
    ['a quote left open ends with its line', 'json', `{"id": "a${'b'.repeat(50)}\n${'c'.repeat(100)} "x"`, null],
    ['a YAML line at the limit', 'yaml', `- ${'p'.repeat(60 + 65_536 - 2)}\n- x`, null],
    ['a YAML line over it', 'yaml', `- a\n- ${'p'.repeat(60 + 65_536 - 1)}\n- x`, 2],
  ];
  it.each(cases)('%s', (_name, format, text, line) => {
    const rng = Rng.fromKey(`guard:${text.length}`);
    expect(refusedAt(format, text, [])).toBe(line);
    expect(
      refusedAt(
        format,
        text,
        Array.from({ length: text.length }, (_, i) => i),
      ),
    ).toBe(line);
    const cuts = () => Array.from({ length: 4 }, () => rng.int(0, text.length));
    for (let k = 0; k < 20; k++) expect(refusedAt(format, text, cuts())).toBe(line);
  });
});

describe('"__proto__" keys are refused instead of becoming prototypes', () => {
  it('in task metadata (JSONL and YAML)', () => {
    expect(
      taskIssues('t.jsonl', '{"id": "a", "prompt": "p", "metadata": {"__proto__": {"answer_type": "number"}}}'),
    ).toEqual(['t.jsonl:1: the key "__proto__" is not allowed']);
    expect(taskIssues('t.yaml', '- id: a\n  prompt: p\n  metadata:\n    __proto__: { answer_type: number }\n')).toEqual(
      ['t.yaml:4: the key "__proto__" is not allowed'],
    );
  });

  it('in the config file and in --set', () => {
    expect(configIssues('models:\n  __proto__: { base_url: "http://x/v1", model: m }\n')[0]).toContain(
      'massgen-rl.yaml:2:3: the key "__proto__" is not allowed',
    );
    const dir = tempDir({ 'massgen-rl.yaml': '' });
    expect(() => loadConfig({ cwd: dir, env: {}, overrides: ['__proto__.polluted=1'] })).toThrow(
      /--set __proto__\.polluted=1: "__proto__" is not a config key/,
    );
    expect(() => loadConfig({ cwd: dir, env: {}, overrides: ['models.__proto__.model=x'] })).toThrow(UserError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('non-regular files are refused by readRegularFile (CLI cases with FIFOs: test/e2e/hostile-input-cli.test.ts)', () => {
  it('names the kind of file and the limit', () => {
    const dir = tempDir({ 'big.md': 'a'.repeat(2048) });
    fs.mkdirSync(path.join(dir, 'dir.md'));
    fs.symlinkSync('/dev/null', path.join(dir, 'null.md'));
    expect(() => readRegularFile(path.join(dir, 'dir.md'), 'prompt file')).toThrow(
      /^prompt file .*dir\.md: a directory, not a regular file$/,
    );
    expect(() => readRegularFile(path.join(dir, 'null.md'), 'prompt file')).toThrow(
      /^prompt file .*null\.md: a character device, not a regular file$/,
    );
    expect(() => readRegularFile(path.join(dir, 'nope.md'), 'prompt file')).toThrow(
      /^prompt file .*nope\.md: not found$/,
    );
    expect(() => readRegularFile(path.join(dir, 'big.md'), 'prompt file', 1024)).toThrow(
      /prompt file .*big\.md: 2048 bytes, over the limit of 1024 bytes/,
    );
    expect(readRegularFile(path.join(dir, 'big.md'), 'prompt file')).toHaveLength(2048);
  });

  it('a massgen-rl.yaml that is a dangling link or a link loop is refused, not taken for a missing file (the embedded defaults)', () => {
    const dangling = tempDir();
    fs.symlinkSync('moved-away.yaml', path.join(dangling, 'massgen-rl.yaml'));
    expect(() => loadConfig({ cwd: dangling, env: {} })).toThrow(
      /^config file .*massgen-rl\.yaml: a link to moved-away\.yaml, which leads nowhere \(ENOENT\)$/,
    );
    const loop = tempDir();
    fs.symlinkSync('other.yaml', path.join(loop, 'massgen-rl.yaml'));
    fs.symlinkSync('massgen-rl.yaml', path.join(loop, 'other.yaml'));
    expect(() => loadConfig({ cwd: loop, env: {} })).toThrow(
      /^config file .*massgen-rl\.yaml: a link to other\.yaml, which leads nowhere \(ELOOP\)$/,
    );
    expect(readTaskFile(path.join(loop, 'other.yaml'), 'other.yaml').issues).toEqual([
      'other.yaml: cannot read task file (a link to massgen-rl.yaml, which leads nowhere (ELOOP))',
    ]);
    expect(loadConfig({ cwd: tempDir(), env: {} }).file).toBeNull();
  });

  it('a prompt file, a task source or --tasks that is a link leading nowhere is named as such, not as a missing file', () => {
    const dir = tempDir({
      'massgen-rl.yaml': 'prompts:\n  solver: { file: solver.md }\ntasks:\n  sources: [{ file: t.jsonl }]\n',
    });
    fs.symlinkSync('gone.md', path.join(dir, 'solver.md'));
    fs.symlinkSync('t.jsonl', path.join(dir, 't.jsonl'));
    expect(configIssuesIn(dir)).toEqual([
      expect.stringMatching(
        /^prompts\.solver\.file: a link to gone\.md, which leads nowhere \(ENOENT\): .*solver\.md \(massgen-rl\.yaml:2:19\)$/,
      ),
      expect.stringMatching(
        /^tasks\.sources\[0\]\.file: a link to t\.jsonl, which leads nowhere \(ELOOP\): .*t\.jsonl \(massgen-rl\.yaml:4:21\)$/,
      ),
    ]);
    const link = path.join(dir, 't.jsonl');
    expect(() =>
      tasksForRun({ sources: [{ suite: 'arithmetic', n: 1, seed: 1 }], split: { eval_fraction: 0, salt: 's' } }, dir, {
        spec: link,
        split: 'all',
      }),
    ).toThrow(/cannot read task file \(a link to t\.jsonl, which leads nowhere \(ELOOP\)\)/);
  });

  it('a task file that is a directory', () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'd.jsonl'));
    expect(readTaskFile(path.join(dir, 'd.jsonl'), 'd.jsonl').issues).toEqual([
      'd.jsonl: cannot read task file (a directory, not a regular file)',
    ]);
  });
});

describe('numeric fields of task files', () => {
  it('a reference beyond the doubles and a tolerance that is not a non-negative number are refused with their line', () => {
    expect(
      taskIssues(
        't.jsonl',
        [
          '{"id": "a", "prompt": "p", "reference": 1e400}',
          '{"id": "b", "prompt": "p", "reference": 42, "metadata": {"tolerance": -1}}',
          '{"id": "c", "prompt": "p", "reference": 42, "metadata": {"tolerance": "0.1"}}',
          '{"id": "d", "prompt": "p", "reference": 42, "metadata": {"tolerance": 0.5}}',
        ].join('\n'),
      ),
    ).toEqual([
      't.jsonl:1: "reference" must be a finite number',
      't.jsonl:2: "metadata.tolerance" must be a non-negative number, got -1',
      't.jsonl:3: "metadata.tolerance" must be a non-negative number, got "0.1"',
    ]);
    expect(taskIssues('t.yaml', '- id: a\n  prompt: p\n  reference: .inf\n')).toEqual([
      't.yaml:3: "reference" must be a finite number',
    ]);
  });
});
