import { describe, expect, it } from 'vitest';
import { calculate } from '../../src/tools/calculator.js';
import { createToolRunner } from '../../src/tools/runner.js';

describe('calculator', () => {
  it.each([['6*7', 42], ['2 + 3 * 4', 14], ['(2 + 3) * 4', 20], ['2^3^2', 512], ['-3 + 10 / 4', -0.5], ['17 % 5', 2], ['1.5e2 - 50', 100], ['12 × 3 ÷ 4', 9]])('%s = %d', (e, v) => {
    expect(calculate(e)).toBe(v);
  });
  it.each([['', 'empty'], ['2 +', 'unexpected'], ['1 / 0', 'division by zero'], ['process.exit()', 'unexpected'], ['(1', 'expected ")"']])('rejects %j', (e, msg) => {
    expect(() => calculate(e)).toThrow(msg);
  });
});

describe('tool runner', () => {
  const tools = {
    calc: { type: 'builtin' as const, name: 'calculator' as const },
    echo: { type: 'command' as const, command: [process.execPath, '-e', 'console.log(process.argv[1])', '{text}'], description: '', parameters: { text: 'what to echo' }, timeout_ms: 5000 },
    slow: { type: 'command' as const, command: [process.execPath, '-e', 'setTimeout(() => {}, 10000)'], description: '', parameters: {}, timeout_ms: 200 },
    fail: { type: 'command' as const, command: [process.execPath, '-e', 'console.error("nope"); process.exit(3)'], description: '', parameters: {}, timeout_ms: 5000 },
  };
  const runner = createToolRunner(tools, process.cwd());
  const signal = new AbortController().signal;

  it('runs the calculator and command tools without a shell', async () => {
    expect(await runner.run('calc', { expression: '6*7' }, signal)).toEqual({ result: '42', success: true });
    expect(await runner.run('echo', { text: '$(rm -rf /); `id`' }, signal)).toEqual({ result: '$(rm -rf /); `id`', success: true });
  });

  it('reports failures, timeouts and unknown tools', async () => {
    expect(await runner.run('calc', { expression: '2+' }, signal)).toMatchObject({ success: false });
    expect(await runner.run('fail', {}, signal)).toEqual({ result: 'nope', success: false, error: 'exit code 3' });
    expect(await runner.run('slow', {}, signal)).toMatchObject({ success: false, error: 'timeout' });
    expect(await runner.run('nope', {}, signal)).toMatchObject({ success: false, error: 'unknown tool' });
  });
});
