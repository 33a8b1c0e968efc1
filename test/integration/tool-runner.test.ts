import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { createToolRunner } from '../../src/tools/runner.js';
import { tempDir } from '../helpers.js';

// Command tools run as child processes; the calculator alone is in test/unit/tools.test.ts.
describe('tool runner', () => {
  const tools = {
    calc: { type: 'builtin' as const, name: 'calculator' as const },
    echo: {
      type: 'command' as const,
      command: [process.execPath, '-e', 'console.log(process.argv[1])', '{text}'],
      description: '',
      parameters: { text: 'what to echo' },
      timeout_ms: 5000,
    },
    slow: {
      type: 'command' as const,
      command: [process.execPath, '-e', 'setTimeout(() => {}, 10000)'],
      description: '',
      parameters: {},
      timeout_ms: 200,
    },
    fail: {
      type: 'command' as const,
      command: [process.execPath, '-e', 'console.error("nope"); process.exit(3)'],
      description: '',
      parameters: {},
      timeout_ms: 5000,
    },
  };
  const runner = createToolRunner(tools, process.cwd());
  const signal = new AbortController().signal;

  it('runs the calculator and command tools without a shell', async () => {
    expect(await runner.run('calc', { expression: '6*7' }, signal)).toEqual({ result: '42', success: true });
    expect(await runner.run('echo', { text: '$(rm -rf /); `id`' }, signal)).toEqual({
      result: '$(rm -rf /); `id`',
      success: true,
    });
  });

  it('reports failures, timeouts and unknown tools', async () => {
    expect(await runner.run('calc', { expression: '2+' }, signal)).toMatchObject({ success: false });
    expect(await runner.run('fail', {}, signal)).toEqual({ result: 'nope', success: false, error: 'exit code 3' });
    expect(await runner.run('slow', {}, signal)).toMatchObject({ success: false, error: 'timeout' });
    expect(await runner.run('nope', {}, signal)).toMatchObject({ success: false, error: 'unknown tool' });
  });
});

describe('names that are Object.prototype keys (test/unit/prototype-keys.test.ts)', () => {
  const PROTO_NAMES = ['constructor', 'toString', 'hasOwnProperty', 'valueOf'];

  it('are unknown tools to the tool runner, and empty placeholders in a command', async () => {
    const tools = configSchema.parse({
      tools: {
        echo: {
          type: 'command',
          command: [
            process.execPath,
            '-e',
            'console.log(JSON.stringify(process.argv.slice(1)))',
            '{constructor}',
            '{text}',
          ],
        },
      },
    }).tools;
    const runner = createToolRunner(tools, tempDir());
    const signal = new AbortController().signal;
    for (const name of PROTO_NAMES) {
      expect(await runner.run(name, {}, signal)).toEqual({
        result: `unknown tool ${name}`,
        success: false,
        error: 'unknown tool',
      });
    }
    const r = await runner.run('echo', { text: 'hi' }, signal);
    expect(JSON.parse(r.result)).toEqual(['', 'hi']);
  });
});
