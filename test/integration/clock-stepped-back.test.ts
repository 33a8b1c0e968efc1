import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { openCycle } from '../../src/scheduler/cycles.js';
import { tempDir } from '../helpers.js';
import { startChatBackend } from '../support/chat-backend.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

// The chaos run steps the clock: a run started after the clock went back (NTP correcting a clock that ran
// ahead) must still be the latest, or the loop takes up an older cycle, or numbers a new one twice.
afterEach(() => vi.useRealTimers());

describe.each(BACKENDS)('runs started after the clock was stepped back (%s)', (backend) => {
  it('sort after the ones before; the loop numbers its cycles on and resumes the one it left', () => {
    const store = openStoreOn(backend, tempDir());
    try {
      vi.useFakeTimers({ toFake: ['Date'] });
      const now = Date.now();
      vi.setSystemTime(now + 2 * 3600_000); // the clock ran two hours ahead
      const first = openCycle(store, ['collect']);
      store.loopRuns.finish(first.id, 'completed');
      vi.setSystemTime(now); // and was set right
      const second = openCycle(store, ['collect']);
      expect(second.state.cycle).toBe(first.state.cycle + 1);
      expect(store.loopRuns.latest(1)[0]!.id).toBe(second.id);
      store.loopRuns.finish(second.id, 'failed', undefined, 'collect failed');
      const resumed = openCycle(store, ['collect']);
      expect(resumed).toMatchObject({ id: second.id, resumed: true });
      const set = store.sets.add({ agents: {} }, { kind: 'manual' });
      store.evaluations.startRun(set.id, set.id, {});
      vi.setSystemTime(now - 3600_000);
      const ev = store.evaluations.startRun(set.id, set.id, {});
      expect(store.evaluations.runs({ limit: 1 }).map((r) => r.id)).toEqual([ev]);
    } finally {
      store.close();
    }
  });
});

describe('a gateway session across a clock stepped back', () => {
  it('is stored with its calls when the gateway stops, not refused for a negative wall time', async () => {
    const backend = await startChatBackend();
    const dir = tempDir({
      'massgen-rl.yaml': `models:\n  scripted: { base_url: "${backend.baseUrl}", model: backend-model }\nagents:\n  - { id: a, model: scripted }\n`,
    });
    const loaded = loadConfig({ cwd: dir });
    vi.useFakeTimers({ toFake: ['Date'] }); // the clock the gateway reads is the one stepped
    const rt = new Runtime(loaded);
    const gw = await gateway(rt, { port: 0, flushMs: 10 });
    const ask = () =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 's1' },
        body: JSON.stringify({ model: 'scripted', messages: [{ role: 'user', content: 'Say hello' }] }),
      });
    try {
      expect((await ask()).status).toBe(200);
      vi.setSystemTime(Date.now() - 3600_000); // NTP sets a clock that ran an hour ahead right
      expect((await ask()).status).toBe(200); // the session's last call now "ended" before its first began
      await gw.stop(); // closes the open session
    } finally {
      vi.useRealTimers();
      await rt.close();
      await backend.close();
    }
    const store = openStore(loaded);
    try {
      const [session] = store.rollouts.list().filter((r) => r.source === 'gateway');
      expect(session).toMatchObject({ status: 'completed', messages: 2 });
      expect(session!.wallMs).toBeGreaterThanOrEqual(0);
    } finally {
      store.close();
    }
  });
});
