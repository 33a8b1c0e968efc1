import { afterEach, describe, expect, it, vi } from 'vitest';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { EvaluationRepository } from '../../src/store/evaluations.js';
import { storeDb } from '../../src/store/store.js';
import { configIn } from '../helpers.js';
import { CANDIDATE_MARK, markScript, markTeamYaml } from '../support/report-store.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

const TASKS = ['What is 6 x 7?', 'What is 50 - 8?']
  .map((prompt, i) => JSON.stringify({ id: `t${i}`, prompt, reference: '42' }))
  .join('\n');

// An evaluation rollout and its result are one write: a process killed between two writes used to leave a completed
// rollout without a result, which the resumed evaluation measured again (the same task, seed and set twice).
describe('an evaluation result lands with its rollout', () => {
  it('a failure at the result write leaves neither; the next evaluation measures each task × seed × set once', async () => {
    server = await startScriptedServer(markScript);
    const loaded = configIn(
      `${markTeamYaml(server.baseUrl)}
eval: { split: all, seeds: 2, concurrency: 2, report: false }
`,
      { 'tasks.jsonl': TASKS },
    );
    const counts = () =>
      withRuntime(loaded, (rt) => {
        const db = storeDb(rt.store());
        const one = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);
        return {
          closed: one(`SELECT COUNT(*) AS n FROM rollouts WHERE source = 'eval' AND status IN ('completed', 'failed')`),
          results: one('SELECT COUNT(*) AS n FROM eval_results'),
          keys: one('SELECT COUNT(DISTINCT set_id || task_id || seed) AS n FROM eval_results'),
          orphans: one(
            `SELECT COUNT(*) AS n FROM rollouts r WHERE r.source = 'eval' AND r.status = 'completed'
            AND NOT EXISTS (SELECT 1 FROM eval_results e WHERE e.rollout_id = r.id)`,
          ),
        };
      });
    // production is prompt v1; v2 is the candidate
    await withRuntime(loaded, (rt) => {
      syncProduction(rt);
      rt.store().resources.add({ kind: 'prompt', name: 'solver', content: `You solve tasks. ${CANDIDATE_MARK}.` });
    });

    const write = vi.spyOn(EvaluationRepository.prototype, 'addResult').mockImplementation(() => {
      throw new Error('the process died here');
    });
    await expect(withRuntime(loaded, (rt) => evaluate(rt, { candidate: 'solver@2' }))).rejects.toThrow(
      'the process died here',
    );
    expect(write).toHaveBeenCalled();
    expect(await counts()).toMatchObject({ closed: 0, results: 0, orphans: 0 });

    write.mockRestore();
    const summary = await withRuntime(loaded, (rt) => evaluate(rt, { candidate: 'solver@2' }));
    expect(summary).toMatchObject({ status: 'completed', measured: 8, reused: 0 });
    // 2 tasks × 2 seeds × 2 sets, each measured once, each with its rollout
    expect(await counts()).toEqual({ closed: 8, results: 8, keys: 8, orphans: 0 });
  }, 60_000);
});
