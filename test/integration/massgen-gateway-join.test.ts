import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMassgenLogs } from '../../src/interop/massgen/import.js';
import { importMassgenLogs } from '../../src/pipeline/utilities/import-massgen.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { FIXTURES, configIn, tempDir } from '../helpers.js';

const REAL = path.join(FIXTURES, 'massgen-real');

/** The real MassGen log, as if its config had sent each agent through a gateway session's base URL. */
function throughGateway(session: string): string {
  const dir = tempDir();
  fs.cpSync(REAL, dir, { recursive: true });
  const meta = path.join(dir, 'log_20261124_015243_609557', 'turn_1', 'attempt_1', 'execution_metadata.yaml');
  let id = '';
  const text = fs
    .readFileSync(meta, 'utf8')
    .split('\n')
    .map((line) => {
      id = /^\s+- id: (\w+)/.exec(line)?.[1] ?? id;
      return line.replace(
        /base_url: http:\/\/127\.0\.0\.1:34893\/v1/,
        `base_url: http://127.0.0.1:8330/session/${session}/agent/${id}/v1`,
      );
    });
  fs.writeFileSync(meta, text.join('\n'));
  return dir;
}

describe("traces import joins a run's captured gateway calls", () => {
  it('the calls of its session within its times become prompt spans of the imported rollout, others stay out', async () => {
    const logs = throughGateway('mg-7');
    const { converted } = parseMassgenLogs(logs);
    const { startedAt, finishedAt } = converted[0]!.rollout;
    const loaded = configIn('project:\n  name: join-test\n');
    const captured: string[] = [];
    const summary = await withRuntime(loaded, (rt) => {
      const store = rt.store();
      const capture = (session: string, at: number, agent: string) => {
        const id = store.rollouts.start({ source: 'gateway', metadata: { gateway: true, session } });
        captured.push(id);
        store.spans.append(id, [
          {
            type: 'prompt',
            name: 'chat',
            agent,
            startedAt: at,
            durationMs: 5,
            payload: { turn_id: `call_${session}_${at}`, token_ids: [1, 2], logprobs: [] },
          },
        ]);
      };
      capture('mg-7', startedAt + 10, 'alpha');
      capture('mg-7', finishedAt - 10, 'beta');
      capture('mg-7', finishedAt + 60_000, 'alpha'); // a later run of the same config
      capture('other', startedAt + 20, 'alpha');
      return importMassgenLogs(rt, { dir: logs });
    });
    expect(summary.imported).toEqual([expect.objectContaining({ gateway_calls: 2 })]);
    await withRuntime(loaded, (rt) => {
      const id = summary.imported[0]!.rollout_id;
      expect(rt.store().rollouts.get(id)!.metadata).toMatchObject({ gateway_session: 'mg-7', gateway_calls: 2 });
      const joined = rt
        .store()
        .spans.list(id)
        .filter((s) => s.type === 'prompt');
      expect(joined.map((s) => [s.agent, (s.payload as { token_ids: number[] }).token_ids])).toEqual([
        ['alpha', [1, 2]],
        ['beta', [1, 2]],
      ]);
      // the sessions whose calls it joined point at it (collect.source gateway leaves them to the import)
      const into = captured.map((c) => rt.store().rollouts.get(c)!.metadata.joined_into ?? null);
      expect(into).toEqual([id, id, null, null]);
    });
  });

  it('a run not sent through a gateway imports as before, with nothing joined', async () => {
    const loaded = configIn('project:\n  name: join-test\n');
    const summary = await withRuntime(loaded, (rt) => importMassgenLogs(rt, { dir: REAL }));
    expect(summary.imported[0]).not.toHaveProperty('gateway_calls');
  });
});
