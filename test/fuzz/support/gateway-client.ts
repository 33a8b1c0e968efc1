import net from 'node:net';

/** What came back on a raw connection: the first response (if any), and whether the gateway closed it. */
export interface RawReply {
  status: number | null;
  body: string;
  closed: boolean;
  /** The connection was reset rather than closed. */
  reset: boolean;
  ms: number;
}

/**
 * Writes `parts` to a fresh connection (waiting `gapMs` between parts) and reads the first response:
 * done when its Content-Length is in, the connection ends, or `waitMs` passes with nothing new.
 */
export function rawExchange(
  port: number,
  parts: (string | Buffer)[],
  opts: { gapMs?: number; waitMs?: number; readBytes?: number; holdUntil?: Promise<unknown> } = {},
): Promise<RawReply> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let reset = false;
    let idle: NodeJS.Timeout;
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(idle);
      if (opts.holdUntil) void opts.holdUntil.then(() => socket.destroy());
      else socket.destroy();
      const text = data.toString('latin1');
      const head = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const split = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, split));
      const rest = text.slice(split + 4, length ? split + 4 + Number(length[1]) : undefined);
      const body = split >= 0 ? Buffer.from(rest, 'latin1').toString('utf8') : '';
      resolve({ status: head ? Number(head[1]) : null, body, closed, reset, ms: performance.now() - started });
    };
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => finish(false), opts.waitMs ?? 3000);
    };
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      arm();
      if (opts.readBytes !== undefined && data.length >= opts.readBytes) return finish(false);
      const text = data.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, split));
      if (split >= 0 && length && data.length >= split + 4 + Number(length[1])) finish(false);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      reset = err.code === 'ECONNRESET' || err.code === 'EPIPE';
      finish(true);
    });
    socket.on('close', () => finish(true));
    socket.on('connect', async () => {
      arm();
      for (const [i, part] of parts.entries()) {
        if (i && opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
        if (settled || socket.destroyed) return;
        socket.write(part);
        arm();
      }
    });
  });
}

/** A connection that sends a request and then never reads a byte of the answer; returns its closer. */
export function neverRead(port: number, request: string): () => void {
  const socket = net.connect(port, '127.0.0.1', () => {
    socket.write(request);
    socket.pause();
  });
  socket.on('error', () => {});
  return () => socket.destroy();
}
