import net from 'node:net';
import tls from 'node:tls';

export interface Origin {
  secure: boolean;
  host: string;
  port: number;
}

/** The request using a connection: the pool lends it the connection and passes the connection's events on. */
export interface ConnectionUser {
  send(socket: net.Socket): void;
  data(chunk: Buffer): void;
  end(): void;
  fail(err: unknown): void;
}

/** Open connections per origin, as http.Agent's maxSockets was; further requests wait for one. */
const MAX_SOCKETS = 256;
const USER = Symbol('connection user');
type PooledSocket = net.Socket & { [USER]: ConnectionUser | undefined };

export function hangUp(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

// Listeners attached once per connection (none per request): events go to the connection's user; an idle
// connection that hears from its server (data, end) is closed.
function onData(this: PooledSocket, chunk: Buffer): void {
  if (this[USER]) this[USER].data(chunk);
  else this.destroy();
}
function onEnd(this: PooledSocket): void {
  if (this[USER]) this[USER].end();
  else this.destroy();
}
function onError(this: PooledSocket, err: Error): void {
  this[USER]?.fail(err);
}

/**
 * Kept-alive connections to one origin. A connection is lent to one request at a time (acquire), comes
 * back after a complete response (release), waits unreferenced while idle and leaves the pool when the
 * server closes it.
 */
export class ConnectionPool {
  private readonly idle: PooledSocket[] = [];
  private open = 0;
  private readonly waiting = new Set<ConnectionUser>();

  constructor(
    private readonly origin: Origin,
    private readonly maxSockets = MAX_SOCKETS,
  ) {}

  /** Lends user a connection now, or once one is free (unless withdrawn first). */
  acquire(user: ConnectionUser): void {
    const socket = this.idle.pop() ?? (this.open < this.maxSockets ? this.connect() : undefined);
    if (socket) this.lend(socket, user);
    else this.waiting.add(user);
  }

  withdraw(user: ConnectionUser): void {
    this.waiting.delete(user);
  }

  /** A connection whose response was read completely, ready for the next request. */
  release(socket: net.Socket): void {
    const pooled = socket as PooledSocket;
    pooled[USER] = undefined;
    const next = this.waiting.values().next();
    if (!next.done) {
      this.waiting.delete(next.value);
      return this.lend(pooled, next.value);
    }
    socket.unref();
    this.idle.push(pooled);
  }

  /** The user is done with the connection without returning it (it is being closed). */
  detach(socket: net.Socket): void {
    (socket as PooledSocket)[USER] = undefined;
  }

  private lend(socket: PooledSocket, user: ConnectionUser): void {
    socket[USER] = user;
    socket.ref();
    user.send(socket);
  }

  private connect(): PooledSocket {
    const { host, port, secure } = this.origin;
    const socket = (
      secure ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect({ host, port })
    ) as PooledSocket;
    socket[USER] = undefined;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    this.open++;
    socket.on('data', onData).on('end', onEnd).on('error', onError);
    socket.once('close', () => this.closed(socket));
    return socket;
  }

  private closed(socket: PooledSocket): void {
    this.open--;
    const i = this.idle.indexOf(socket);
    if (i >= 0) this.idle.splice(i, 1);
    socket[USER]?.fail(hangUp());
    const next = this.waiting.values().next();
    if (!next.done && this.open < this.maxSockets) {
      this.waiting.delete(next.value);
      this.lend(this.connect(), next.value);
    }
  }
}

const pools = new Map<string, ConnectionPool>();

/** The process-wide pool for an origin (like the global http agents, shared by every client). */
export function poolFor(origin: Origin): ConnectionPool {
  const key = `${origin.secure ? 'https' : 'http'}://${origin.host}:${origin.port}`;
  let pool = pools.get(key);
  if (!pool) pools.set(key, (pool = new ConnectionPool(origin)));
  return pool;
}
