import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ES module shared with the benchmarks
import { startPostgres } from './postgres-server.mjs';

interface Shared {
  server: Promise<{ url: string; stop(): void }>;
  users: number;
}

// Several tiers (vitest projects) name this setup; a run of all of them shares one server, stopped by the last.
const shared = globalThis as { massgenRlPostgres?: Shared };

/** vitest global setup: one PostgreSQL server for the whole run; each test makes its own database on it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const s = (shared.massgenRlPostgres ??= { server: startPostgres(), users: 0 });
  s.users++;
  const server = await s.server;
  project.provide('postgresUrl', server.url);
  return async () => {
    if (--s.users > 0) return;
    delete shared.massgenRlPostgres;
    server.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}
