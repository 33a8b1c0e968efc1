import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { DEFAULT_SERVE_PORT, fixedPort } from '../../src/config/schema.js';
import { serve } from '../../src/pipeline/serve/serve.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { tempDir } from '../helpers.js';

/**
 * The venv's "python": records the --port it was asked for, then serves /health on a free port and
 * reports ready there (so no test binds a fixed port).
 */
const FAKE_SERVER = `#!/usr/bin/env node
const fs = require('node:fs');
const http = require('node:http');
const args = process.argv.slice(2);
const arg = (k) => args[args.indexOf(k) + 1];
fs.appendFileSync(__dirname + '/ports.log', arg('--port') + '\\n');
const server = http.createServer((req, res) => res.end('{"ok":true}')).listen(0, '127.0.0.1', () => {
  const base_url = 'http://127.0.0.1:' + server.address().port + '/v1';
  console.log(JSON.stringify({ event: 'ready', base_url, model: arg('--served-name'), backend: 'fake', device: 'cpu' }));
});
process.on('SIGTERM', () => process.exit(0));
`;

/** A project whose local model `mine` is served by the fake; `port` is its local.port. */
function project(port?: number) {
  const local = `{ weights: ./base${port === undefined ? '' : `, port: ${port}`} }`;
  const dir = tempDir({
    'massgen-rl.yaml': `models:\n  mine: { model: smol, local: ${local} }\nagents:\n  - { id: a, model: mine }\ntrain: { venv: ./venv }\n`,
    'base/config.json': '{}',
    'venv/bin/python': FAKE_SERVER,
  });
  fs.chmodSync(path.join(dir, 'venv', 'bin', 'python'), 0o755);
  const ports = () =>
    fs
      .readFileSync(path.join(dir, 'venv', 'bin', 'ports.log'), 'utf8')
      .trim()
      .split('\n')
      .map(Number);
  return { loaded: loadConfig({ cwd: dir }), ports };
}

/** The ports asked for by `serve` (as the serve command calls it, with `flag` as --port), then by a collect's own server. */
async function askedPorts(port: number | undefined, flag?: number): Promise<number[]> {
  const p = project(port);
  await withRuntime(p.loaded, async (rt) => {
    const served = await serve(rt, { port: flag, logFile: false });
    await served.stop();
    await rt.client('mine');
  });
  return p.ports();
}

describe("the port of a local model's server", () => {
  it('is --port, else local.port, else the default serve port', () => {
    expect(DEFAULT_SERVE_PORT).toBe(8321);
    expect(fixedPort(undefined)).toBe(8321);
    expect(fixedPort({ port: 0 })).toBe(8321);
    expect(fixedPort({ port: 9123 })).toBe(9123);
    expect(fixedPort({ port: 9123 }, 7000)).toBe(7000);
    expect(fixedPort({ port: 9123 }, 0)).toBe(0);
  });

  it('massgen-rl serve listens on the default port where local.port is unset; servers a run starts pick a free one', async () => {
    expect(await askedPorts(undefined)).toEqual([DEFAULT_SERVE_PORT, 0]);
    expect(await askedPorts(0, 0)).toEqual([0, 0]);
  });

  it('a fixed local.port is used by both, and --port overrides it for serve', async () => {
    expect(await askedPorts(9123)).toEqual([9123, 9123]);
    expect(await askedPorts(9123, 7000)).toEqual([7000, 9123]);
  });
});
