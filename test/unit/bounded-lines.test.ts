import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { eachLine, LineTail } from '../../src/util/bounded-lines.js';

// Real child processes flooding these caps: test/integration/output-caps.test.ts.
async function linesOf(chunks: string[], maxChars?: number): Promise<string[]> {
  const stream = new PassThrough();
  const lines: string[] = [];
  const done = eachLine(stream, (l) => lines.push(l), maxChars);
  for (const c of chunks) stream.write(c);
  stream.end();
  await done;
  return lines;
}

describe('eachLine: child output read line by line, with a cap per line', () => {
  it('splits like readline: \\n, \\r\\n and a lone \\r, across chunk boundaries, with the last line unterminated', async () => {
    expect(await linesOf(['a\nb\r', '\nc\rd', 'e\n\nf'])).toEqual(['a', 'b', 'c', 'de', '', 'f']);
  });

  it('cuts a line longer than the cap and says how much was cut', async () => {
    const lines = await linesOf(['x'.repeat(30), 'y'.repeat(30), '\nnext\n'], 40);
    expect(lines).toEqual([`${'x'.repeat(30)}${'y'.repeat(10)} …[20 more characters cut]`, 'next']);
  });

  it('keeps a bounded tail', () => {
    const tail = new LineTail(2, 5);
    for (const l of ['one', 'two', 'a long line']) tail.push(l);
    expect(tail.lines()).toEqual(['two', 'a lon …']);
  });
});
