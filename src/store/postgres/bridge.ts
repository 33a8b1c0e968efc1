import { createRequire } from 'node:module';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

export interface BridgeQuery {
  sql: string;
  params: unknown[];
  /** Rows as arrays (pg's rowMode 'array'). */
  array: boolean;
  /** A server-side prepared statement's name: parsed once per connection. */
  name?: string;
}

export interface BridgeResult {
  rows: unknown[];
  rowCount: number;
}

/** A PostgreSQL error, with its SQLSTATE code (e.g. 23505 unique violation, 40001 serialization failure). */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'PgError';
  }
}

// The worker runs pg's asynchronous client on its own event loop; the caller blocks on Atomics.wait
// until the reply is posted. This keeps the repositories synchronous on both backends, as better-sqlite3
// is, instead of turning every store call in the project into a promise.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const pg = require(workerData.pgPath);
const { port, flag, config } = workerData;
const parse = (oid, format) => (oid === 20 || oid === 1700) ? (v) => (v === null ? null : Number(v)) : pg.types.getTypeParser(oid, format);
const client = new pg.Client({ ...config, types: { getTypeParser: parse } });
let lost = null;
client.on('error', (err) => { lost = err; });
const connected = client.connect();
const reply = (msg) => { port.postMessage(msg); Atomics.store(flag, 0, 1); Atomics.notify(flag, 0); };
const fail = (err) => reply({ error: { message: err.message, code: err.code, detail: err.detail } });
port.on('message', async (q) => {
  if (q.close) {
    await client.end().catch(() => {});
    reply({ closed: true });
    port.close();
    return;
  }
  try {
    await connected;
    if (lost) throw lost;
    const res = await client.query({ text: q.sql, values: q.params, rowMode: q.array ? 'array' : undefined, name: q.name });
    const last = Array.isArray(res) ? res[res.length - 1] : res;
    reply({ rows: last.rows ?? [], rowCount: last.rowCount ?? 0 });
  } catch (err) { fail(err); }
});
`;

/** One PostgreSQL connection used synchronously. */
export class SyncPgConnection {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private closed = false;

  constructor(
    config: Record<string, unknown>,
    private readonly timeoutMs = 600_000,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const pgPath = createRequire(import.meta.url).resolve('pg');
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { pgPath, port: port2, flag: this.flag, config },
      transferList: [port2],
    });
    this.worker.unref();
  }

  query(q: BridgeQuery): BridgeResult {
    return this.call(q) as BridgeResult;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.call({ close: true });
    } catch {
      // A connection that never came up (or is gone) has nothing to end; the worker goes either way.
    } finally {
      void this.worker.terminate();
    }
  }

  private call(msg: object): unknown {
    if (this.closed && !('close' in msg)) throw new PgError('the PostgreSQL connection is closed', undefined);
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(msg);
    // Waits until the flag is set, not merely until a wake-up: the previous reply's notify can come late
    // (its thread preempted between setting the flag and notifying) and wake this wait before the reply.
    const deadline = Date.now() + this.timeoutMs;
    while (Atomics.load(this.flag, 0) === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new PgError(`no answer from PostgreSQL in ${this.timeoutMs / 1000} s`, undefined);
      Atomics.wait(this.flag, 0, 0, left);
    }
    const received = receiveMessageOnPort(this.port);
    if (!received) throw new PgError('PostgreSQL connection worker answered nothing', undefined);
    const reply = received.message as { error?: { message: string; code?: string; detail?: string } };
    if (reply.error) throw new PgError(reply.error.message, reply.error.code, reply.error.detail);
    return reply;
  }
}
