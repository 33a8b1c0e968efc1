import type http from 'node:http';

/** Why a request body was refused: `too_large` (answer 413 and close) or `not_utf8` (400). */
export class BodyRefused extends Error {
  constructor(
    readonly reason: 'too_large' | 'not_utf8',
    message: string,
  ) {
    super(message);
    this.name = 'BodyRefused';
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a request body, at most maxBytes: a Content-Length past it is refused before a byte is read, a chunked
 * body as soon as it passes it (what follows is read and dropped, so the client can still read the answer before
 * the connection closes).
 */
export function readBodyBytes(req: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new BodyRefused('too_large', `the request body is over ${maxBytes} bytes`);
    const declared = Number(req.headers['content-length']);
    if (declared > maxBytes) {
      req.resume();
      return reject(tooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      req.off('data', onData);
      req.resume();
      chunks.length = 0;
      reject(tooLarge());
    };
    req.on('data', onData);
    req.on('end', () => {
      if (size <= maxBytes) resolve(Buffer.concat(chunks, size));
    });
    req.on('error', reject);
  });
}

/** A request body as UTF-8 text, at most maxBytes (readBodyBytes); invalid UTF-8 is refused. */
export async function readBody(req: http.IncomingMessage, maxBytes: number): Promise<string> {
  const bytes = await readBodyBytes(req, maxBytes);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new BodyRefused('not_utf8', 'the request body is not valid UTF-8');
  }
}
