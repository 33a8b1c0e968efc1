import { describe, expect, it } from 'vitest';
import { ResponseParser, type BodySink, type ParsedResponse } from '../../src/llm/http-response.js';

/** Feeds the bytes in pieces of `step` bytes (every split point when step is 1). */
function feed(
  raw: string | Buffer,
  step = Number.POSITIVE_INFINITY,
  end = false,
  sink?: BodySink,
): ParsedResponse | null {
  const bytes = typeof raw === 'string' ? Buffer.from(raw) : raw;
  const parser = new ResponseParser(sink);
  for (let i = 0; i < bytes.length; i += step) {
    const res = parser.push(bytes.subarray(i, Math.min(bytes.length, i + step)));
    if (res) return res;
  }
  return end ? parser.end() : null;
}

const json = '{"ok":true,"text":"héllo ✓"}';
const fixed = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
const chunked =
  'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nx-a: 2\r\n\r\n'
  + '5;ext=1\r\n{"ok"\r\n'
  + `${Buffer.byteLength(json.slice(5)).toString(16)}\r\n${json.slice(5)}\r\n`
  + '0\r\nX-Trailer: t\r\n\r\n';

describe('HTTP response parser', () => {
  it('reads a Content-Length response in one piece and split at every byte', () => {
    expect(feed(fixed)).toEqual({
      status: 200,
      headers: new Map([
        ['content-type', 'application/json'],
        ['content-length', String(Buffer.byteLength(json))],
      ]),
      body: json,
      keepAlive: true,
    });
    for (const step of [1, 2, 7]) expect(feed(fixed, step)?.body).toBe(json);
  });

  it('reads a chunked body with extensions and trailers, joining repeated headers', () => {
    for (const step of [Number.POSITIVE_INFINITY, 1, 3]) {
      expect(feed(chunked, step)).toMatchObject({ status: 200, body: json, keepAlive: true });
      expect(feed(chunked, step)!.headers.get('x-a')).toBe('1, 2');
    }
  });

  it('reads a body delimited by the end of the connection, which is then not reused', () => {
    const res = feed(`HTTP/1.1 503 Busy\r\nretry-after: 2\r\n\r\n${json}`, 4, true);
    expect(res).toEqual({ status: 503, headers: new Map([['retry-after', '2']]), body: json, keepAlive: false });
  });

  it('skips interim responses; 204 has no body', () => {
    expect(feed(`HTTP/1.1 100 Continue\r\n\r\n${fixed}`)?.body).toBe(json);
    expect(feed('HTTP/1.1 204 No Content\r\n\r\n')).toMatchObject({ status: 204, body: '' });
  });

  it('keeps the connection only when the server allows it and sent nothing more', () => {
    expect(feed(fixed.replace('OK\r\n', 'OK\r\nConnection: close\r\n'))?.keepAlive).toBe(false);
    expect(feed(fixed.replace('HTTP/1.1', 'HTTP/1.0'))?.keepAlive).toBe(false);
    expect(
      feed(fixed.replace('HTTP/1.1', 'HTTP/1.0').replace('OK\r\n', 'OK\r\nConnection: keep-alive\r\n'))?.keepAlive,
    ).toBe(true);
    expect(feed(`${fixed}HTTP/1.1`)?.keepAlive).toBe(false);
    expect(feed(fixed.replace('OK\r\n', 'OK\r\nKeep-Alive: timeout=1\r\n'))?.keepAlive).toBe(false);
    expect(feed(fixed.replace('OK\r\n', 'OK\r\nKeep-Alive: timeout=5\r\n'))?.keepAlive).toBe(true);
  });

  it('waits for the rest of an incomplete response, and an early end is not a response', () => {
    expect(feed(fixed.slice(0, -3))).toBeNull();
    expect(feed(fixed.slice(0, -3), 5, true)).toBeNull();
    expect(feed(chunked.slice(0, -2), 1, true)).toBeNull();
  });

  it('rejects malformed input', () => {
    expect(() => feed('HTTX/1.1 200 OK\r\n\r\n')).toThrow(/status line/);
    expect(() => feed('HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n')).toThrow(/Content-Length/);
    expect(() => feed('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY')).toThrow(/CRLF/);
    expect(() => feed('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).toThrow(/chunk size/);
  });

  it('hands the body of a response the sink takes to it as it arrives, and collects the others', () => {
    for (const step of [Number.POSITIVE_INFINITY, 1, 3]) {
      const got: Buffer[] = [];
      const seen: number[] = [];
      const sink: BodySink = (status) => (
        seen.push(status),
        status === 200 ? (b) => got.push(Buffer.from(b)) : undefined
      );
      expect(feed(chunked, step, false, sink)).toMatchObject({ status: 200, body: '' });
      expect(Buffer.concat(got).toString()).toBe(json);
      expect(feed(fixed.replace('200 OK', '400 Bad'), step, false, sink)).toMatchObject({ status: 400, body: json });
      expect(seen).toEqual([200, 400]);
    }
  });
});
