import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { tempDir } from '../helpers.js';
import { startChatBackend, type ChatBackend } from '../support/chat-backend.js';
import { startGatewayCli } from '../support/gateway-cli.js';

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
    const { child, ready } = startGatewayCli(dir);
    const started = await ready;
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

describe('massgen-rl gateway killed with SIGKILL under load', () => {
  it('loses no completed call: the next gateway stores what the killed one had journaled, the store intact', async () => {
    backend = await startChatBackend();
    const dir = tempDir({
      'massgen-rl.yaml': `models:
  scripted: { base_url: "${backend.baseUrl}", model: m }
agents:
  - { id: a, model: scripted }
gateway: { flush_ms: 5000, batch_size: 100000 }
`,
    });
    const start = () => startGatewayCli(dir);
    const first = start();
    const { baseUrl } = await first.ready;
    const completed: string[] = [];
    let stop = false;
    const client = async (n: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await fetch(`${baseUrl}/chat/completions`, {
            method: 'POST',
            headers: { 'x-session-id': `s${n}` },
            body: JSON.stringify({ ...HELLO, stream: i % 2 === 0 }),
          });
          await res.text();
          if (res.status === 200) completed.push(res.headers.get('x-request-id')!);
        } catch {
          return; // the gateway is gone
        }
      }
    };
    const clients = Array.from({ length: 8 }, (_, n) => client(n));
    while (completed.length < 150) await new Promise((r) => setTimeout(r, 20));
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(clients);
    await first.child;

    // nothing was written by the killed gateway (flush_ms 5 s): all of it comes from its journal
    const second = start();
    const info = await second.ready;
    second.child.kill('SIGTERM');
    await second.child;
    expect(info.recovered?.calls).toBeGreaterThanOrEqual(completed.length);

    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const turns = new Set(
        store.rollouts
          .list()
          .flatMap((r) => store.spans.list(r.id))
          .map((s) => (s.payload as { turn_id: string }).turn_id),
      );
      expect(completed.filter((id) => !turns.has(id))).toEqual([]);
      expect(store.rollouts.list().every((r) => r.status === 'completed')).toBe(true);
    } finally {
      store.close();
    }
    const sqlite = (await import('better-sqlite3')).default(`${dir}/.massgen-rl/store.sqlite`, { readonly: true });
    expect(sqlite.pragma('integrity_check', { simple: true })).toBe('ok');
    sqlite.close();
  });
});
