import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { hasStack, runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** No built-in key format matches it: only api_key_env names it a secret. */
const KEY = 'mk-live-0123456789abcdef';

/** A model server that refuses every call with an error body echoing the request's Authorization header. */
async function project(): Promise<string> {
  let s: ScriptedServer;
  server = s = await startScriptedServer((_req, index) => ({
    status: 401,
    body: { error: { message: `invalid credentials: Authorization: ${s.headers[index]!.authorization}` } },
  }));
  return tempDir({
    'massgen-rl.yaml': `models:\n  stub: { base_url: "${server.baseUrl}", model: m, api_key_env: MY_KEY, max_retries: 0 }
agents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }
tasks:\n  sources: [{ file: tasks.jsonl }]
collect: { concurrency: 1, split: all }
privacy: { builtin_patterns: false }\n`,
    'tasks.jsonl': `${JSON.stringify({ id: 'mul', prompt: 'What is 6 x 7?', reference: '42' })}\n`,
  });
}

describe('what the CLI prints goes through the same redactor as what it stores', () => {
  it("collect's failure summary (text and --json) never shows an api_key_env key a server echoed", async () => {
    const dir = await project();
    for (const json of [[], ['--json']]) {
      const r = await runCli([...json, 'collect'], { cwd: dir, env: { MY_KEY: KEY } });
      expect(r.exitCode, r.stderr).toBe(1);
      expect(hasStack(r.stderr)).toBe(false);
      expect(r.stderr).toMatch(
        /no rollout completed: 1 of 1 failed \(1 × .*invalid credentials: Authorization: Bearer \[REDACTED\]/,
      );
      expect(`${r.stdout}\n${r.stderr}`).not.toContain(KEY);
    }
    expect(server!.headers[0]!.authorization).toBe(`Bearer ${KEY}`);
    const store = openStore(loadConfig({ cwd: dir, env: { ...process.env, MY_KEY: KEY } }));
    try {
      const failed = store.rollouts.list();
      expect(failed.map((x) => x.status)).toEqual(['failed', 'failed']);
      for (const x of failed) expect(x.error).toMatch(/Authorization: Bearer \[REDACTED\]/);
    } finally {
      store.close();
    }
  });
});
