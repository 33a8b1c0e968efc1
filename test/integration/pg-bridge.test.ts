import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { SyncPgConnection } from '../../src/store/postgres/bridge.js';
import { freshPostgresUrl } from '../support/postgres.js';

// A thread that calls Atomics.notify on the flag the caller waits on, again and again: what a late notify
// of the previous reply does when the connection's worker is preempted between its store and its notify.
const NOTIFIER = `
const { workerData } = require('node:worker_threads');
const until = Date.now() + workerData.ms;
while (Date.now() < until) Atomics.notify(workerData.flag, 0);
`;

describe('the synchronous PostgreSQL connection', () => {
  it('waits for its own reply through wake-ups that are not it', async () => {
    const conn = new SyncPgConnection({ connectionString: freshPostgresUrl() });
    try {
      conn.query({ sql: 'SELECT 1', params: [], array: false });
      const flag = (conn as unknown as { flag: Int32Array }).flag;
      const notifier = new Worker(NOTIFIER, { eval: true, workerData: { flag, ms: 1500 } });
      await new Promise((r) => notifier.once('online', r));
      for (let i = 0; i < 5; i++) {
        expect(conn.query({ sql: 'SELECT pg_sleep(0.1), $1::int AS i', params: [i], array: false }).rows).toEqual([
          { pg_sleep: '', i },
        ]);
      }
      await notifier.terminate();
    } finally {
      conn.close();
    }
  });
});
