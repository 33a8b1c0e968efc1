import { defineConfig } from 'vitest/config';

// Tests in tiers, one project each (CONTRIBUTING.md): `vitest run --project unit` runs one, `vitest run` all.
const POSTGRES = ['test/support/postgres-setup.ts'];
const SETUP = 'test/support/setup.ts';

interface Tier {
  globalSetup?: string[];
  setupFiles?: string[];
  testTimeout?: number;
}
const tier = (name: string, include: string[], more: Tier = {}) => ({
  extends: true as const,
  test: { name, include, ...more, setupFiles: [SETUP, ...(more.setupFiles ?? [])] },
});

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { HF_HUB_OFFLINE: '1', NO_COLOR: '1' },
    projects: [
      // No global setup, and the guard throws on a child process or a listening socket.
      tier('unit', ['test/unit/**/*.test.ts'], { setupFiles: ['test/support/unit-guard.ts'] }),
      tier('integration', ['test/integration/**/*.test.ts'], { globalSetup: POSTGRES }),
      tier('e2e', ['test/e2e/**/*.test.ts', 'test/fuzz/**/*.test.ts'], { globalSetup: POSTGRES }),
      // the trainer venv's Python and the real MassGen, without the model: they wait on their processes
      tier('python-env', ['test/python-env/**/*.test.ts'], { testTimeout: 600_000 }),
      // a model server starts and decodes on two cores shared with whatever else runs: minutes, not seconds
      tier('real-model', ['test/real-model/**/*.test.ts'], { globalSetup: POSTGRES, testTimeout: 600_000 }),
    ],
  },
});
