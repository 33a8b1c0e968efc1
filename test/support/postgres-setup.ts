import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ES module shared with the benchmarks
import { startPostgres } from './postgres-server.mjs';

/** vitest global setup: one PostgreSQL server for the whole run; each test makes its own database on it. */
export default async function setup(project: TestProject): Promise<() => void> {
  const server = await startPostgres();
  process.env.MASSGEN_RL_TEST_PG = server.url;
  project.provide('postgresUrl', server.url);
  return () => server.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}
