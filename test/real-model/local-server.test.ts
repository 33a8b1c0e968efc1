import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { UserError } from '../../src/errors.js';
import { venvPython } from '../../src/python/venv.js';
import { resolveWeights as resolveIn } from '../../src/resources/weights.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { startLocalServer } from '../../src/serving/local-server.js';
import { liveServers } from '../../src/serving/registry.js';
import { configIn, pidAlive, tempDir } from '../helpers.js';

// These run on the real trainer venv and the converted default model (`massgen-rl doctor --fix`).
const paths = () => loadConfig({ cwd: tempDir() }).paths;

/** Serve processes whose command line contains `marker`. */
async function serversMatching(marker: string): Promise<string[]> {
  const ps = await execa('ps', ['-eo', 'pid,args'], { reject: false });
  return String(ps.stdout)
    .split('\n')
    .filter((l) => l.includes('massgen_rl_serving') && l.includes(marker));
}

interface ChatResponse {
  model: string;
  choices: {
    message: { content: string };
    finish_reason: string;
    token_ids: number[];
    logprobs: { content: { token: string; logprob: number; top_logprobs: unknown[] }[] };
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  prompt_token_ids: number[];
}

describe('the local model server', () => {
  it('starts, answers chat completions with logprobs and token ids, and stops', async () => {
    const { venvDir, defaultModelDir } = paths();
    const logFile = path.join(tempDir(), 'logs', 'serve.log');
    const events: string[] = [];
    const started = Date.now();
    const server = await startLocalServer({
      python: venvPython(venvDir),
      modelDir: defaultModelDir,
      servedName: 'smol',
      maxBatchSize: 4,
      logFile,
      onEvent: (e) => events.push(e.event),
    });
    const startupMs = Date.now() - started;
    try {
      expect(server.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(server.model).toBe('smol');
      expect(server.ready).toMatchObject({ backend: 'llama.cpp', device: 'cpu', model: 'smol' });
      expect(events).toEqual(['progress', 'progress', 'ready']);
      expect(pidAlive(server.pid)).toBe(true);

      const res = await fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'smol',
          messages: [{ role: 'user', content: 'What is 2 + 3?' }],
          temperature: 0,
          max_tokens: 16,
          logprobs: true,
          return_token_ids: true,
        }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as ChatResponse;
      const [choice] = body.choices;
      expect(choice!.message.content).toContain('5');
      expect(choice!.token_ids.length).toBe(body.usage.completion_tokens);
      expect(choice!.logprobs.content.length).toBe(choice!.token_ids.length);
      for (const t of choice!.logprobs.content) {
        expect(Number.isFinite(t.logprob)).toBe(true);
        expect(t.logprob).toBeLessThanOrEqual(0);
        expect(t.top_logprobs).toEqual([]);
      }
      expect(body.prompt_token_ids.length).toBe(body.usage.prompt_tokens);
      expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);

      const wrong = await fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'other', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(wrong.status).toBe(404);
    } finally {
      await server.stop();
    }
    expect(await server.exited).toBe(0);
    expect(pidAlive(server.pid)).toBe(false);
    await server.stop(); // idempotent
    const log = fs.readFileSync(logFile, 'utf8');
    expect(log).toContain('"event": "ready"');
    expect(log).toContain('POST /v1/chat/completions 200');
    console.log(`local server ready in ${startupMs} ms`);
  }, 180_000);

  it('fails to start on a folder without a model: a UserError with the reason, no process left', async () => {
    const { venvDir } = paths();
    const empty = tempDir();
    const err = await startLocalServer({ python: venvPython(venvDir), modelDir: empty, servedName: 'x' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(
      /local model server for "x" .* exited with code 1 before it was ready: .*neither a model folder/,
    );
    expect(await serversMatching(empty)).toEqual([]);
  }, 60_000);

  it('gives up after the startup timeout and kills the server', async () => {
    const { venvDir, defaultModelDir } = paths();
    const marker = `timeout-${process.pid}-${Date.now()}`;
    const err = await startLocalServer({
      python: venvPython(venvDir),
      modelDir: defaultModelDir,
      servedName: marker,
      startupTimeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toContain('was not ready within 300 ms');
    expect(await serversMatching(marker)).toEqual([]);
  }, 60_000);

  it('reports a missing interpreter clearly', async () => {
    const err = await startLocalServer({ python: '/nonexistent/python', modelDir: tempDir(), servedName: 'x' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toContain('python interpreter not found: /nonexistent/python');
  });

  it('a runtime starts one server for the models with the same weights, on first use, and stops it once', async () => {
    const loaded = configIn(
      [
        'models:',
        '  a: { model: smollm2-135m-instruct, local: { weights: "builtin:smollm2-135m-instruct", max_batch_size: 2 } }',
        '  b: { model: smollm2-135m-instruct, local: { weights: "builtin:smollm2-135m-instruct", max_batch_size: 2 } }',
        '  remote: { model: gpt, base_url: "http://127.0.0.1:9/v1" }',
        'agents: [{ id: a1, model: a }, { id: b1, model: b }]',
      ].join('\n'),
    );
    const rt = new Runtime(loaded);
    let servers;
    try {
      expect(await rt.servers.running()).toEqual([]);
      const [a, b] = await Promise.all([rt.servers.server('a'), rt.servers.server('b')]);
      await rt.client('remote');
      expect(a).toBe(b);
      servers = await rt.servers.running();
      expect(servers).toHaveLength(1);
      expect(a.logFile).toBe(path.join(loaded.paths.dataDir, 'logs', 'serve-a.log'));
      const health = await fetch(a.baseUrl.replace(/\/v1$/, '/health'));
      expect(await health.json()).toEqual({ status: 'ok', model: 'smollm2-135m-instruct' });
      // registered while it runs, as the run's own server: a deploy does not swap its weights
      expect(liveServers(loaded.paths.dataDir)).toEqual([
        expect.objectContaining({
          pid: a.pid,
          model: 'a',
          served_name: 'smollm2-135m-instruct',
          follows_production: false,
          owner_pid: process.pid,
        }),
      ]);
    } finally {
      await rt.close();
    }
    expect(pidAlive(servers![0]!.pid)).toBe(false);
    expect(liveServers(loaded.paths.dataDir)).toEqual([]);
  }, 180_000);
});

/** A project whose one model `a` runs on the bundled weights, served by the run. */
const oneLocalModel = () =>
  configIn(
    [
      'models:',
      '  a: { model: smollm2-135m-instruct, local: { weights: "builtin:smollm2-135m-instruct", max_batch_size: 2 } }',
      'agents: [{ id: a1, model: a }]',
    ].join('\n'),
  );

describe("a run's model server killed", () => {
  it('is started again on its port: the client it was given keeps answering, and close stops the new process', async () => {
    const loaded = oneLocalModel();
    const events: string[] = [];
    const rt = new Runtime(loaded, { onServerEvent: (e) => events.push(String(e.message ?? e.event)) });
    let pids: number[] = [];
    try {
      const client = await rt.client('a');
      const server = await rt.servers.server('a');
      const first = { pid: server.pid, baseUrl: server.baseUrl };
      const ask = () =>
        client.chat({ model: 'smollm2-135m-instruct', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
      await ask();
      process.kill(first.pid, 'SIGKILL');
      // the client's own retries (max_retries, with backoff) reach the server started again meanwhile
      const reply = await ask();
      expect(reply.usage.completionTokens).toBeGreaterThan(0);
      expect(server.pid).not.toBe(first.pid);
      expect(server.baseUrl).toBe(first.baseUrl);
      expect(pidAlive(server.pid)).toBe(true);
      expect(events.some((m) => /exited \(killed\); starting it again/.test(m))).toBe(true);
      expect(liveServers(loaded.paths.dataDir).map((e) => e.pid)).toEqual([server.pid]);
      pids = [first.pid, server.pid];
    } finally {
      await rt.close();
    }
    for (const pid of pids) expect(pidAlive(pid)).toBe(false);
    expect(liveServers(loaded.paths.dataDir)).toEqual([]);
  }, 240_000);
});

describe("a run's model server killed while it starts", () => {
  it('is started once more, and the run goes on on the second one', async () => {
    const loaded = oneLocalModel();
    const events: string[] = [];
    let killed: number | undefined;
    const rt = new Runtime(loaded, {
      onServerEvent: (e) => {
        events.push(String(e.message ?? e.event));
        // its first progress line: the process is up, loading, not ready
        if (killed !== undefined || e.event !== 'progress') return;
        const ps = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
        killed = Number(/^\s*(\d+)\s.*massgen_rl_serving/m.exec(ps)?.[1]);
        process.kill(killed, 'SIGKILL');
      },
    });
    try {
      const server = await rt.servers.server('a');
      expect(killed).toBeGreaterThan(0);
      expect(server.pid).not.toBe(killed);
      expect(events.some((m) => /was killed while it started; starting it again/.test(m))).toBe(true);
      const client = await rt.client('a');
      const reply = await client.chat({
        model: 'smollm2-135m-instruct',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 4,
      });
      expect(reply.usage.completionTokens).toBeGreaterThan(0);
    } finally {
      await rt.close();
    }
    expect(liveServers(loaded.paths.dataDir)).toEqual([]);
  }, 240_000);
});

describe('resolveWeights', () => {
  it('resolves builtin weights, folders relative to the config, and weight resources', async () => {
    const loaded = configIn('project: { name: w }\n', {
      'models/full/config.json': '{}',
      'models/lora/adapter_config.json': '{}',
      'models/empty/x.txt': '',
    });
    let store: ReturnType<typeof openStore> | undefined;
    const resolveWeights = (_: unknown, ref: string, s?: typeof store, where?: string) =>
      resolveIn({ paths: loaded.paths, store: () => s }, ref, where);
    expect(resolveWeights(loaded, 'builtin:smollm2-135m-instruct')).toMatchObject({
      kind: 'builtin',
      dir: loaded.paths.defaultModelDir,
      adapter: false,
    });
    expect(() => resolveWeights(loaded, 'builtin:gpt-9')).toThrow(
      /unknown built-in weights "builtin:gpt-9"; available: builtin:smollm2-135m-instruct/,
    );
    expect(resolveWeights(loaded, 'models/full')).toEqual({
      ref: 'models/full',
      kind: 'path',
      dir: path.join(loaded.paths.baseDir, 'models/full'),
      adapter: false,
    });
    expect(resolveWeights(loaded, './models/lora').adapter).toBe(true);
    expect(() => resolveWeights(loaded, 'models/empty', undefined, 'models.x.local.weights')).toThrow(
      /^models\.x\.local\.weights: .*models\/empty holds neither config\.json .*\(weights "models\/empty"\)$/,
    );
    expect(() => resolveWeights(loaded, 'models/missing')).toThrow(/no folder at/);
    expect(() => resolveWeights(loaded, 'resource:tuned')).toThrow(/refer to the store, which does not exist yet/);

    store = openStore(loaded);
    try {
      expect(() => resolveWeights(loaded, 'resource:tuned', store)).toThrow(
        /unknown weight resource "tuned"; the store has no weight resources yet/,
      );
      const v1 = store.resources.add({
        kind: 'weight',
        name: 'tuned',
        path: path.join(loaded.paths.baseDir, 'models/full'),
      });
      store.resources.add({
        kind: 'weight',
        name: 'tuned',
        path: path.join(loaded.paths.baseDir, 'models/lora'),
        metadata: { base_path: '/base' },
      });
      expect(resolveWeights(loaded, 'resource:tuned', store)).toMatchObject({
        kind: 'resource',
        adapter: true,
        baseDir: '/base',
        resource: { name: 'tuned', version: 2 },
      });
      expect(resolveWeights(loaded, 'resource:tuned@1', store)).toMatchObject({
        adapter: false,
        resource: { id: v1.id, version: 1 },
      });
      expect(() => resolveWeights(loaded, 'resource:tuned@3', store)).toThrow(
        /weight resource "tuned" has no version 3; available: tuned \(v1, v2\)/,
      );
      expect(() => resolveWeights(loaded, 'resource:other', store)).toThrow(
        /unknown weight resource "other"; available: tuned \(v1, v2\)/,
      );
      expect(() => resolveWeights(loaded, 'resource:tuned@production', store)).toThrow(/has no version production/);
      store.resources.setProduction(v1, 'deploy', 'test');
      expect(resolveWeights(loaded, 'resource:tuned@production', store).resource?.version).toBe(1);
    } finally {
      store.close();
    }
    // a runtime opens the existing store on demand, and resolves each reference once
    const rt = new Runtime(loaded);
    try {
      const first = rt.weights('resource:tuned@2');
      expect(first.resource?.version).toBe(2);
      expect(rt.weights(' resource:tuned@2 ')).toBe(first);
    } finally {
      await rt.close();
    }
  });
});
