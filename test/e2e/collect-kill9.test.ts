import Database from 'better-sqlite3';
import { execa } from 'execa';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { BIN, sqliteOf, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 40 }, (_, i) =>
  JSON.stringify({ id: `t${i}`, prompt: `What is ${i} + ${42 - i}?`, reference: '42' }),
).join('\n');

/** Kill points: how many LLM requests a run has made when it is killed (mid-span batch, mid-round, mid-close). */
const KILL_AFTER = [5, 23, 70, 12, 110, 40, 55];

/** Plain SQLite, before the store's own open (which recovers orphans): is the file sound as the kill left it? */
function checkRaw(storePath: string): void {
  const db = new Database(storePath, { readonly: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.pragma('foreign_key_check')).toEqual([]);
  } finally {
    db.close();
  }
}

describe('kill -9 in the middle of collect', () => {
  it('never corrupts the store: every rollout is completed or, after the next open, marked failed; every record parses', async () => {
    server = await startScriptedServer((req, i) => {
      const delayMs = 20 + ((i * 37) % 90);
      if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42', delayMs };
      return shownLabels(req).length
        ? { content: 'VOTE: agent1 | right', delayMs }
        : { content: 'ANSWER: 42', delayMs };
    });
    const dir = tempDir({
      'massgen-rl.yaml': `models:\n  stub: { base_url: "${server.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }\n  - { id: c, model: stub, tool_mode: text }
tasks:\n  sources: [{ file: tasks.jsonl }]
collect: { concurrency: 3, split: all }\n`,
      'tasks.jsonl': TASKS,
    });
    const storePath = path.join(dir, '.massgen-rl', 'store.sqlite');
    const killed: number[] = [];
    for (const after of KILL_AFTER) {
      const base = server.requests.length;
      const child = execa(process.execPath, [BIN, 'collect'], {
        cwd: dir,
        reject: false,
        stdin: 'ignore',
        env: { NO_COLOR: '1' },
      });
      const deadline = Date.now() + 30_000;
      while (server.requests.length - base < after && Date.now() < deadline && child.exitCode === null)
        await new Promise((r) => setTimeout(r, 5));
      child.kill('SIGKILL');
      const r = await child;
      expect(r.signal, `run ${killed.length + 1}: ${String(r.stderr)}`).toBe('SIGKILL');
      killed.push(child.pid!);
      checkRaw(storePath);
    }

    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const rollouts = store.rollouts.list();
      const byStatus = (s: string) => rollouts.filter((r) => r.status === s);
      expect(byStatus('completed').length).toBeGreaterThan(0);
      // Killed runs left rollouts running; the open above marked them failed.
      expect(byStatus('failed').length).toBeGreaterThan(0);
      for (const r of rollouts) {
        if (r.status === 'completed') {
          expect(r.finalAnswer).toBe('Final answer: 42');
          expect(store.rewards.list(r.id).length).toBeGreaterThan(0);
          expect(r.totalReward).not.toBeNull();
        } else {
          expect(r.status, r.id).toBe('failed');
          expect(r.error).toMatch(
            new RegExp(`^interrupted: process (${killed.join('|')}) exited while this was running`),
          );
        }
        // A batch lands whole or not at all: the spans are a gap-free prefix.
        const spans = store.spans.list(r.id);
        expect(spans.map((s) => s.seq)).toEqual(spans.map((_, i) => i + 1));
      }
      expect(store.collectRuns.latest(KILL_AFTER.length).map((run) => run.status)).toEqual(
        Array(KILL_AFTER.length).fill('failed'),
      );
      for (const [table, column] of [
        ['spans', 'payload'],
        ['rollouts', 'metadata'],
        ['tasks', 'metadata'],
        ['collect_runs', 'params'],
        ['resources', 'metadata'],
      ]) {
        for (const text of storeDb(store).prepare(`SELECT ${column} FROM ${table}`).pluck().all() as string[])
          expect(() => JSON.parse(text), `${table}.${column}`).not.toThrow();
      }
      expect(sqliteOf(store).pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      store.close();
    }
  }, 180_000);
});
