import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { readJournal } from '../../src/gateway/journal.js';
import { gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { HOST } from '../../src/store/process-owner.js';
import { tempDir } from '../helpers.js';
import { startChatBackend, type ChatBackend } from '../support/chat-backend.js';

const KEY = 'sk-journal-backend-secret-0123456789';
let backend: ChatBackend | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await backend?.close();
  backend = undefined;
});

const HELLO = { model: 'scripted', messages: [{ role: 'user', content: `my key is ${KEY}` }] };

async function project() {
  backend = await startChatBackend();
  const dir = tempDir({
    'massgen-rl.yaml': `models:
  scripted: { base_url: "${backend.baseUrl}", model: m, api_key_env: BACKEND_KEY }
agents:
  - { id: a, model: scripted }
`,
  });
  return new Runtime(loadConfig({ cwd: dir, env: { ...process.env, BACKEND_KEY: KEY } }));
}

describe('the capture journal', () => {
  it('holds each call (redacted) until its batch is stored, then goes; a clean stop leaves no file', async () => {
    const rt = await project();
    const gw = await gateway(rt, { port: 0, flushMs: 60_000 });
    const dir = path.join(rt.paths.dataDir, 'gateway');
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(HELLO) });
    expect(res.status).toBe(200);
    const [file, ...more] = fs.readdirSync(dir);
    expect(more).toEqual([]);
    const { entries } = readJournal(path.join(dir, file!));
    expect(entries.map((e) => e.callId)).toEqual([res.headers.get('x-request-id')]);
    expect(fs.readFileSync(path.join(dir, file!), 'utf8')).not.toContain(KEY);
    await gw.stop();
    expect(fs.readdirSync(dir)).toEqual([]);
    await rt.close();
  });

  it('ends each response (plain, streamed, refused) only once its call is in the journal file', async () => {
    const rt = await project();
    const gw = await gateway(rt, { port: 0, flushMs: 60_000 });
    const events: string[] = [];
    const writeSync = fs.writeSync.bind(fs) as (...args: unknown[]) => number;
    vi.spyOn(fs, 'writeSync').mockImplementation((...args: unknown[]) => {
      for (const m of String(args[1]).matchAll(/"callId":"([^"]+)"/g)) events.push(`journal ${m[1]}`);
      return writeSync(...args);
    });
    const end = http.ServerResponse.prototype.end;
    vi.spyOn(http.ServerResponse.prototype, 'end').mockImplementation(function (this: http.ServerResponse, ...args) {
      events.push(`end ${String(this.getHeader('x-request-id'))}`);
      return end.apply(this, args as Parameters<typeof end>);
    });
    const calls = [
      ['chat/completions', HELLO],
      ['chat/completions', { ...HELLO, stream: true }],
      ['embeddings', { model: 'scripted', input: 'hi', dimensions: 5 }], // the backend's 400
    ] as const;
    const ids = await Promise.all(
      Array.from({ length: 9 }, async (_, i) => {
        const [route, body] = calls[i % 3]!;
        const res = await fetch(`${gw.url}/v1/${route}`, { method: 'POST', body: JSON.stringify(body) });
        expect(res.status).toBe(i % 3 === 2 ? 400 : 200);
        await res.text();
        return res.headers.get('x-request-id')!;
      }),
    );
    await gw.stop();
    for (const id of ids) {
      expect(events.indexOf(`journal ${id}`)).toBeGreaterThanOrEqual(0);
      expect(events.indexOf(`journal ${id}`)).toBeLessThan(events.indexOf(`end ${id}`));
    }
    await rt.close();
  });

  it("a dead gateway's journal is stored by the next start, each call once even when some were stored already", async () => {
    const rt = await project();
    let gw = await gateway(rt, { port: 0, flushMs: 60_000 });
    const dir = path.join(rt.paths.dataDir, 'gateway');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(HELLO),
        headers: { 'x-session-id': 'one' },
      });
      ids.push(res.headers.get('x-request-id')!);
    }
    // what a kill between the store's commit and the journal's removal leaves: the calls in both places
    const [file] = fs.readdirSync(dir);
    const text = fs.readFileSync(path.join(dir, file!), 'utf8');
    await gw.stop();
    const dead = path.join(dir, `capture-${HOST.replace(/[^\w.]/g, '_')}-999999-1-0.jsonl`);
    const extra = JSON.parse(text.split('\n')[0]!) as { callId: string };
    extra.callId = 'call_only_in_journal';
    fs.writeFileSync(dead, `${text}${JSON.stringify(extra)}\n{"cut short by the ki`);
    gw = await gateway(rt, { port: 0 });
    expect(gw.recovered).toEqual({ files: 1, calls: 1, rollouts: 1, skipped: 1 });
    await gw.stop();
    const [rollout] = rt.store().rollouts.list();
    const turns = rt
      .store()
      .spans.list(rollout!.id)
      .map((s) => (s.payload as { turn_id: string }).turn_id);
    expect(turns).toEqual([...ids, 'call_only_in_journal']);
    expect(rollout).toMatchObject({ status: 'completed', messages: 4 });
    expect(fs.readdirSync(dir)).toEqual([]);
    await rt.close();
  });
});

describe('a batch the store rolls back', () => {
  it('is written whole by the next batch: its spans and its rollout row are not lost with the rollback', async () => {
    const rt = await project();
    const errors: unknown[] = [];
    const gw = await gateway(rt, { port: 0, flushMs: 60_000, onError: (err) => errors.push(err) });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(HELLO),
        headers: { 'x-session-id': 'rolled-back' },
      });
      expect(res.status).toBe(200);
    }
    const finish = rt.store().rollouts.finish.bind(rt.store().rollouts);
    let calls = 0;
    rt.store().rollouts.finish = (...args) => {
      if (calls++ === 0) throw new Error('the store refused the finish');
      return finish(...args);
    };
    await gw.stop(); // the first write rolls back after its spans were flushed; the second writes everything
    expect(errors.map((e) => (e as Error).message)).toEqual(['the store refused the finish']);
    const [rollout, ...others] = rt.store().rollouts.list();
    expect(others).toEqual([]);
    expect(rollout).toMatchObject({ status: 'completed', messages: 2 });
    expect(
      rt
        .store()
        .spans.list(rollout!.id)
        .map((s) => s.seq),
    ).toEqual([1, 2]);
    await rt.close();
  });
});
