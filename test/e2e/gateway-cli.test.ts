import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { BIN, tempDir } from '../helpers.js';
import { startChatBackend, type ChatBackend } from '../support/chat-backend.js';

let backend: ChatBackend | undefined;
afterEach(async () => {
  await backend?.close();
  backend = undefined;
});

const HELLO = { model: 'scripted', messages: [{ role: 'user', content: 'Say hello' }] };

describe('massgen-rl gateway', () => {
  it('prints its address as JSON, and on SIGTERM finishes the stream in flight and stores every call', async () => {
    backend = await startChatBackend();
    const dir = tempDir({
      'massgen-rl.yaml': `models:
  scripted: { base_url: "${backend.baseUrl}", model: m }
agents:
  - { id: a, model: scripted }
`,
    });
    const child = execa(process.execPath, [BIN, '--json', 'gateway', '--port', '0'], {
      cwd: dir, reject: false, stdin: 'ignore', env: { NO_COLOR: '1' },
    });
    const started = await new Promise<{ baseUrl: string; auth: string }>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        try {
          resolve(JSON.parse(out) as { baseUrl: string; auth: string });
        } catch { /* not all of it yet */ }
      });
      void child.then((r) => reject(new Error(`the gateway exited: ${String(r.stderr)}`)));
    });
    expect(started.auth).toBe('loopback-only');
    const url = `${started.baseUrl}/chat/completions`;
    const headers = { 'x-session-id': 'cli' };
    const post = (body: object) => fetch(url, { method: 'POST', body: JSON.stringify(body), headers });
    expect((await post(HELLO)).status).toBe(200);

    backend.hold();
    const streamed = await post({ ...HELLO, stream: true });
    const reader = streamed.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    backend.release();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(text).toContain('data: [DONE]');
    const result = await child;
    expect(result.exitCode).toBe(0);
    expect(String(result.stderr)).toContain('gateway stopped (2 calls captured)');

    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const [rollout, ...others] = store.rollouts.list();
      expect(others).toHaveLength(0);
      expect(rollout).toMatchObject({ source: 'gateway', status: 'completed', messages: 2 });
      const payloads = store.spans.list(rollout!.id).map((s) => s.payload as { response: { content: string } });
      expect(payloads.map((p) => p.response.content)).toEqual(['Hello', 'Hello']);
    } finally {
      store.close();
    }
  });
});
