import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** The longest line kept whole; enough for any protocol event. */
export const MAX_LINE_CHARS = 1024 * 1024;

/**
 * Calls onLine for every line of a child's output, as readline does (\n, \r\n and a lone \r end a line),
 * but a line longer than maxChars is cut there and marked, instead of being held whole: a child that
 * prints hundreds of megabytes without a newline must not take our heap down with it. Resolves when
 * the stream ends or closes; never rejects (the child's exit says what went wrong).
 */
export function eachLine(stream: Readable, onLine: (line: string) => void, maxChars = MAX_LINE_CHARS): Promise<void> {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  let dropped = 0;
  let afterCr = false;
  const append = (text: string) => {
    const room = maxChars - partial.length;
    if (room >= text.length) partial += text;
    else {
      if (room > 0) partial += text.slice(0, room);
      dropped += text.length - Math.max(room, 0);
    }
  };
  const emit = () => {
    const line = dropped ? `${partial} …[${dropped} more characters cut]` : partial;
    partial = '';
    dropped = 0;
    onLine(line);
  };
  const take = (text: string) => {
    let start = 0;
    if (afterCr && text.startsWith('\n')) start = 1;
    afterCr = false;
    const ends = /\r\n|\r|\n/g;
    ends.lastIndex = start;
    for (let m = ends.exec(text); m; m = ends.exec(text)) {
      // A chunk ending in \r may be the first half of \r\n.
      if (m[0] === '\r' && m.index === text.length - 1) afterCr = true;
      append(text.slice(start, m.index));
      emit();
      start = m.index + m[0].length;
    }
    append(text.slice(start));
  };
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      take(decoder.end());
      if (partial || dropped) emit();
      resolve();
    };
    stream.on('data', (chunk: Buffer | string) => take(typeof chunk === 'string' ? chunk : decoder.write(chunk)));
    stream.once('end', finish);
    stream.once('close', finish);
    stream.once('error', finish);
  });
}

/** The last `size` lines seen, each cut to maxChars: what error messages quote from a child's output. */
export class LineTail {
  private readonly kept: string[] = [];

  constructor(
    private readonly size: number,
    private readonly maxChars = 2000,
  ) {}

  push = (line: string): void => {
    this.kept.push(line.length > this.maxChars ? `${line.slice(0, this.maxChars)} …` : line);
    if (this.kept.length > this.size) this.kept.shift();
  };

  lines(): string[] {
    return [...this.kept];
  }
}
