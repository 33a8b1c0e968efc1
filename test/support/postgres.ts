import path from 'node:path';
import { inject } from 'vitest';
import { Store, type Redactor } from '../../src/store/index.js';
import { SyncPgConnection } from '../../src/store/postgres/bridge.js';

let counter = 0;

/** A new, empty database on the run's PostgreSQL server (test/support/postgres-setup.ts); its URL. */
export function freshPostgresUrl(): string {
  const admin = inject('postgresUrl');
  const name = `t_${process.pid}_${Date.now().toString(36)}_${++counter}`;
  const conn = new SyncPgConnection({ connectionString: admin });
  try {
    conn.query({ sql: `CREATE DATABASE ${name}`, params: [], array: false });
  } finally {
    conn.close();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

export type Backend = 'sqlite' | 'postgres';
export const BACKENDS: Backend[] = ['sqlite', 'postgres'];

/** Where a store of this backend lives for a test: a file in dir, or a fresh database. */
export function storeLocation(backend: Backend, dir: string): string {
  return backend === 'sqlite' ? path.join(dir, 'store.sqlite') : freshPostgresUrl();
}

export function openStoreOn(backend: Backend, dir: string, redactor?: Redactor): Store {
  return Store.open({ path: storeLocation(backend, dir), ...(redactor ? { redactor } : {}) });
}
