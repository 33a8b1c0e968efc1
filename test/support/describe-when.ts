import { beforeEach, describe } from 'vitest';

/**
 * describe() for tests that need a tool installed outside the repository: without it, in CI (CI=true) every test of
 * the block fails with the reason and how to install it; elsewhere the block is skipped, the reason in its name and
 * on stderr (prefixed with `tag`).
 */
export function describeWhen(
  found: { ok: true } | { ok: false; reason: string },
  o: { tag: string; what: string; how: string },
  name: string,
  fn: () => void,
): void {
  if (found.ok) return void describe(name, fn);
  if (process.env.CI === 'true') {
    return void describe(name, () => {
      beforeEach(() => {
        throw new Error(`${found.reason}: CI must run the ${o.what} tests; ${o.how}`);
      });
      fn();
    });
  }
  process.stderr.write(`[${o.tag}] skipping "${name}": ${found.reason}; ${o.how}\n`);
  describe.skip(`${name} [skipped: ${found.reason}]`, fn);
}
