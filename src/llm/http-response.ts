/** An HTTP/1.1 response read off a socket. */
export interface ParsedResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". A Map: header names vary, object shapes would too. */
  headers: Map<string, string>;
  body: string;
  /** The connection may carry another request. */
  keepAlive: boolean;
}

/**
 * Given the status and headers, a function to hand the body's bytes to as they arrive (a stream), or
 * undefined to collect the body as usual.
 */
/** Holds back the rest of a body while its reader cannot take more (a slow client downstream). */
export interface BodyFlow {
  pause(): void;
  resume(): void;
}

export type BodySink = (
  status: number,
  headers: ReadonlyMap<string, string>,
  flow: BodyFlow,
) => ((bytes: Buffer) => void) | undefined;

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
const MAX_HEAD_BYTES = 64 * 1024;

/**
 * Reads one response from the bytes of a connection, fed as they arrive: status line and headers, then a
 * body framed by Content-Length, chunked transfer coding, or the end of the connection (RFC 9112 §6.3).
 * Interim 1xx responses are skipped. push() returns the response once complete; malformed input throws.
 * With a sink that takes the body, its bytes go there (the response's body is then empty).
 */
export class ResponseParser {
  private buf: Buffer = Buffer.alloc(0);
  private head: { status: number; headers: Map<string, string>; keepAlive: boolean } | null = null;
  /** Content-Length framing: bytes still expected. Chunked: -1. Until close: -2. */
  private remaining = 0;
  private readonly body: Buffer[] = [];
  private chunkLeft = -1;
  private toSink: ((bytes: Buffer) => void) | undefined;

  constructor(
    private readonly sink?: (
      status: number,
      headers: ReadonlyMap<string, string>,
    ) => ((bytes: Buffer) => void) | undefined,
  ) {}

  push(chunk: Buffer): ParsedResponse | null {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    if (!this.head && !this.readHead()) return null;
    if (this.remaining >= 0) {
      const take = Math.min(this.remaining, this.buf.length);
      if (take) this.take(this.buf.subarray(0, take));
      this.remaining -= take;
      // Bytes beyond the response (nothing was pipelined): the connection is not reused.
      if (this.buf.length > take) this.head!.keepAlive = false;
      this.buf = this.buf.subarray(take);
      return this.remaining === 0 ? this.done() : null;
    }
    if (this.remaining === -2) {
      if (this.buf.length) this.take(this.buf);
      this.buf = Buffer.alloc(0);
      return null;
    }
    return this.readChunks() ? this.done() : null;
  }

  /** The status line and headers have arrived. */
  get started(): boolean {
    return this.head !== null;
  }

  /** The connection ended: the response, if its framing says it is complete now. */
  end(): ParsedResponse | null {
    return this.head && this.remaining === -2 ? this.done() : null;
  }

  private readHead(): boolean {
    for (;;) {
      const end = this.buf.indexOf(HEAD_END);
      if (end < 0) {
        if (this.buf.length > MAX_HEAD_BYTES) throw new Error('HTTP response head too large');
        return false;
      }
      const lines = this.buf.toString('latin1', 0, end).split('\r\n');
      this.buf = this.buf.subarray(end + 4);
      const m = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0]!);
      if (!m) throw new Error(`malformed HTTP status line: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
      const status = Number(m[2]);
      if (status >= 100 && status < 200) continue;
      const headers = new Map<string, string>();
      for (let i = 1; i < lines.length; i++) {
        const line = lines[i]!;
        const colon = line.indexOf(':');
        if (colon <= 0) throw new Error('malformed HTTP header line');
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        const seen = headers.get(name);
        headers.set(name, seen === undefined ? value : `${seen}, ${value}`);
      }
      const connection = (headers.get('connection') ?? '').toLowerCase();
      let keepAlive = m[1] === '1' ? !connection.includes('close') : connection.includes('keep-alive');
      // As http.Agent: a server that keeps idle connections a second or less would race our next request.
      const hint = /^timeout=(\d+)/.exec(headers.get('keep-alive') ?? '');
      if (hint && Number(hint[1]) <= 1) keepAlive = false;
      if (status === 204 || status === 304) this.remaining = 0;
      else if ((headers.get('transfer-encoding') ?? '').toLowerCase().includes('chunked')) this.remaining = -1;
      else if (headers.has('content-length')) {
        const length = headers.get('content-length')!;
        if (!/^\d+$/.test(length)) throw new Error('malformed Content-Length');
        this.remaining = Number(length);
      } else {
        this.remaining = -2;
        keepAlive = false;
      }
      this.head = { status, headers, keepAlive };
      this.toSink = this.sink?.(status, headers);
      return true;
    }
  }

  /** Consumes whole chunks from buf; true once the last chunk and the trailers are read. */
  private readChunks(): boolean {
    for (;;) {
      if (this.chunkLeft < 0) {
        const eol = this.buf.indexOf(CRLF);
        if (eol < 0) return false;
        const size = Number.parseInt(this.buf.toString('latin1', 0, eol).split(';')[0]!.trim(), 16);
        if (!Number.isFinite(size) || size < 0) throw new Error('malformed chunk size');
        this.buf = this.buf.subarray(eol + 2);
        if (size === 0) {
          this.chunkLeft = 0;
          return this.readTrailers();
        }
        this.chunkLeft = size;
      }
      if (this.chunkLeft === 0) return this.readTrailers();
      if (this.buf.length < this.chunkLeft + 2) return false;
      if (this.buf[this.chunkLeft] !== 13 || this.buf[this.chunkLeft + 1] !== 10)
        throw new Error('malformed chunk: no CRLF after its data');
      this.take(this.buf.subarray(0, this.chunkLeft));
      this.buf = this.buf.subarray(this.chunkLeft + 2);
      this.chunkLeft = -1;
    }
  }

  /** After the last chunk: optional trailer lines, then an empty line. */
  private readTrailers(): boolean {
    const end = this.buf.indexOf(CRLF);
    if (end < 0) return false;
    if (end === 0) {
      if (this.buf.length > 2) this.head!.keepAlive = false;
      return true;
    }
    const blank = this.buf.indexOf(HEAD_END);
    if (blank < 0) return false;
    if (this.buf.length > blank + 4) this.head!.keepAlive = false;
    return true;
  }

  private take(bytes: Buffer): void {
    if (this.toSink) this.toSink(bytes);
    else this.body.push(bytes);
  }

  private done(): ParsedResponse {
    const body = this.body.length === 1 ? this.body[0]!.toString('utf8') : Buffer.concat(this.body).toString('utf8');
    return { ...this.head!, body };
  }
}
