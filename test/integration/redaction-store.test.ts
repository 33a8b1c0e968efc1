import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { hasStack, runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PIN = '4242';
const CARD = '4111111111111111';

/** Every call reports 4242 prompt tokens; votes carry a card number and the PIN as text. */
async function project() {
  const usage = { prompt_tokens: Number(PIN), completion_tokens: 3 };
  server = await startScriptedServer((req) => {
    if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42', usage };
    return shownLabels(req).length
      ? { content: `VOTE: agent1 | card ${CARD} pin ${PIN}`, usage }
      : { content: 'ANSWER: 42', usage };
  });
  return tempDir({
    'massgen-rl.yaml': `models:\n  stub: { base_url: "${server.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }
tasks:\n  sources: [{ file: tasks.jsonl }]
collect: { concurrency: 1, split: all }
privacy:\n  redact_patterns: ['\\d{13,16}']\n  redact_env: [MY_PIN]\n`,
    'tasks.jsonl': `${JSON.stringify({ id: 'mul', prompt: 'What is 6 x 7?', reference: '42', metadata: { account: Number(CARD), answer_type: 'number' } })}\n`,
  });
}

describe('redaction never corrupts stored JSON', () => {
  it('a card-number pattern and an all-digit secret leave numbers intact: show, list --json, both exports and recompute work', async () => {
    const dir = await project();
    const env = { MY_PIN: PIN };
    const collected = await runCli(['collect'], { cwd: dir, env });
    expect(collected.stderr).not.toMatch(/internal error/);
    expect(collected.exitCode).toBe(0);

    const store = openStore(loadConfig({ cwd: dir, env: { ...process.env, ...env } }));
    let rolloutId: string;
    let startedAt: number;
    try {
      for (const [table, column] of [
        ['spans', 'payload'],
        ['rollouts', 'metadata'],
        ['tasks', 'metadata'],
        ['collect_runs', 'params'],
        ['collect_runs', 'summary'],
      ]) {
        for (const text of storeDb(store).prepare(`SELECT ${column} FROM ${table}`).pluck().all() as string[])
          expect(() => JSON.parse(text), `${table}.${column}: ${text}`).not.toThrow();
      }
      expect(store.tasks.get('mul')!.metadata.account).toBe(Number(CARD));
      const rollout = store.rollouts.list()[0]!;
      rolloutId = rollout.id;
      startedAt = rollout.startedAt;
      const spans = store.spans.list(rollout.id);
      const prompt = spans.find((s) => s.type === 'prompt')!.payload as {
        usage: { prompt_tokens: number };
        latency_ms: number;
      };
      expect(prompt.usage.prompt_tokens).toBe(Number(PIN));
      expect(typeof prompt.latency_ms).toBe('number');
      expect((spans.find((s) => s.name === 'vote')!.payload as { reason: string }).reason).toBe(
        'card [REDACTED] pin [REDACTED]',
      );
    } finally {
      store.close();
    }

    const show = await runCli(['--json', 'traces', 'show', rolloutId], { cwd: dir, env });
    expect(show.exitCode, show.stderr).toBe(0);
    expect(JSON.parse(show.stdout).rollout.id).toBe(rolloutId);
    // The console scrubs too: a secret equal to a number in the output must not break --json.
    const list = await runCli(['--json', 'traces', 'list'], { cwd: dir, env: { MY_PIN: String(startedAt) } });
    expect(list.exitCode, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).rollouts[0].startedAt).toBe(startedAt);
    for (const format of ['jsonl', 'orchestration-trace']) {
      const out = path.join(dir, `${format}.jsonl`);
      const exported = await runCli(['traces', 'export', '--format', format, '-o', out], { cwd: dir, env });
      expect(exported.exitCode, exported.stderr).toBe(0);
      for (const line of fs.readFileSync(out, 'utf8').trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
    }
    const recompute = await runCli(['rewards', 'recompute'], { cwd: dir, env });
    expect(hasStack(recompute.stderr), recompute.stderr).toBe(false);
    expect(recompute.exitCode).toBe(0);
    expect(recompute.stdout).toMatch(/re-scored 1 rollout/);
  });
});

describe('a key spelled with escapes in a task prompt', () => {
  it('is stored and exported redacted, as the plain key next to it is', async () => {
    const key = 'sk-abcdefghijklmnopqrstuv';
    const prompt = String.raw`What is 6 x 7? (plain ${key}, escaped \u0073k-abcdefghijklmnopqrstuv)`;
    server = await startScriptedServer((req) => {
      if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42' };
      return shownLabels(req).length ? { content: 'VOTE: agent1 | right' } : { content: 'ANSWER: 42' };
    });
    const dir = tempDir({
      'massgen-rl.yaml': `models:\n  stub: { base_url: "${server.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }
tasks:\n  sources: [{ file: tasks.jsonl }]\ncollect: { concurrency: 1, split: all }\n`,
      'tasks.jsonl': `${JSON.stringify({ id: 'mul', prompt, reference: '42' })}\n`,
    });
    expect((await runCli(['collect'], { cwd: dir })).exitCode).toBe(0);
    const out = path.join(dir, 'export.jsonl');
    expect((await runCli(['traces', 'export', '-o', out], { cwd: dir })).exitCode).toBe(0);
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const stored = store.tasks.get('mul')!.prompt;
      expect(stored).toBe('What is 6 x 7? (plain [REDACTED], escaped [REDACTED])');
      const spans = JSON.stringify(store.spans.list(store.rollouts.list()[0]!.id));
      const exported = fs.readFileSync(out, 'utf8');
      // What the text is: every \u escape decoded, however many times it was escaped.
      const decoded = (t: string) =>
        t.replace(/\\+u([0-9a-fA-F]{4})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      for (const text of [spans, exported]) {
        expect(text).toContain('escaped [REDACTED]');
        expect(decoded(text)).not.toContain('sk-');
      }
    } finally {
      store.close();
    }
  });
});
