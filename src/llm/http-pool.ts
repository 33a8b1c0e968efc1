import net from 'node:net';
import tls from 'node:tls';

export interface Origin {
  secure: boolean;
  host: string;
  port: number;
}

/** Open connections per origin, as http.Agent's maxSockets was; further requests wait for one. */
const MAX_SOCKETS = 256;
const noop = () => {};

/**
 * Kept-alive connections to one origin. A connection is lent to one request at a time (acquire), comes
 * back after a complete response (release), waits unreferenced while idle and leaves the pool when the
 * server closes it.
 */
export class ConnectionPool {
  private readonly idle: net.Socket[] = [];
  private open = 0;
  private readonly waiting = new Set<(socket: net.Socket) => void>();

  constructor(private readonly origin: Origin, private readonly maxSockets = MAX_SOCKETS) {}

  /** Calls use(socket) now, or once a connection is free; the returned function withdraws a waiting request. */
  acquire(use: (socket: net.Socket) => void): () => void {
    const socket = this.idle.pop() ?? (this.open < this.maxSockets ? this.connect() : undefined);
    if (!socket) {
      this.waiting.add(use);
      return () => this.waiting.delete(use);
    }
    this.lend(socket, use);
    return noop;
  }

  /** A connection whose response was read completely, ready for the next request. */
  release(socket: net.Socket): void {
    const next = this.waiting.values().next();
    if (!next.done) {
      this.waiting.delete(next.value);
      return this.lend(socket, next.value);
    }
    socket.unref();
    // Anything the server sends to an idle connection (its close included) ends it.
    socket.once('data', onIdleEvent).once('end', onIdleEvent);
    this.idle.push(socket);
  }

  private lend(socket: net.Socket, use: (socket: net.Socket) => void): void {
    socket.off('data', onIdleEvent).off('end', onIdleEvent);
    socket.ref();
    use(socket);
  }

  private connect(): net.Socket {
    const { host, port, secure } = this.origin;
    const socket = secure
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host })
      : net.connect({ host, port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    this.open++;
    // Errors reach the request using the connection through its own listener; 'close' always follows.
    socket.on('error', noop);
    socket.once('close', () => {
      this.open--;
      const i = this.idle.indexOf(socket);
      if (i >= 0) this.idle.splice(i, 1);
      const next = this.waiting.values().next();
      if (!next.done && this.open < this.maxSockets) {
        this.waiting.delete(next.value);
        this.lend(this.connect(), next.value);
      }
    });
    return socket;
  }
}

function onIdleEvent(this: net.Socket): void {
  this.destroy();
}

const pools = new Map<string, ConnectionPool>();

/** The process-wide pool for an origin (like the global http agents, shared by every client). */
export function poolFor(origin: Origin): ConnectionPool {
  const key = `${origin.secure ? 'https' : 'http'}://${origin.host}:${origin.port}`;
  let pool = pools.get(key);
  if (!pool) pools.set(key, (pool = new ConnectionPool(origin)));
  return pool;
}
