import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildDataset, type DpoRow } from '../../src/datasets/index.js';
import { datasetOptionsFromConfig } from '../../src/datasets/options.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { readRows, seedTasks, teamRollout } from '../fixtures/datasets/team-rollouts.js';
import { tempDir } from '../helpers.js';

// Six unit tasks and one arithmetic task, each with a right and a wrong answer: one correctness pair per task.
const TASKS = [
  ...Array.from({ length: 6 }, (_, i) => ({
    id: `u${i}`,
    prompt: `How many metres in ${i + 1} km?`,
    reference: `${(i + 1) * 1000}`,
    category: 'unit_conversion/length',
  })),
  { id: 'mul', prompt: 'What is 6 x 7?', reference: '42', category: 'arithmetic/multiply' },
];

async function build(share: number | null) {
  const yaml = `models: { m: { model: smol, base_url: "http://127.0.0.1:9/v1" } }
agents: [{ id: a, model: m }, { id: b, model: m }, { id: c, model: m }]
rewards: { weights: { exact: 1, numeric: 1 } }
train: { dpo: { pairs: correctness, rationalize: { enabled: false }${share === null ? '' : `, max_suite_share: ${share}`} } }
`;
  return withRuntime(loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }) }), async (rt) => {
    const store = rt.store();
    seedTasks(store, TASKS);
    for (const t of TASKS)
      teamRollout(store, {
        taskId: t.id,
        first: { agent: 'a', content: t.reference },
        second: { agent: 'b', content: '7' },
      });
    const built = await buildDataset(store, {
      algo: 'dpo',
      dataDir: rt.paths.dataDir,
      all: true,
      options: datasetOptionsFromConfig(rt.config.train, rt.config.rewards),
    });
    const rows = readRows<DpoRow>(built.dir);
    return { stats: built.stats, suites: rows.map((r) => String(r.meta!.category).split('/')[0]) };
  });
}

describe('train.dpo.max_suite_share in a dataset build', () => {
  it('caps the suite with the most pairs; without it every pair is kept', async () => {
    const all = await build(null);
    expect(all.suites.filter((s) => s === 'unit_conversion')).toHaveLength(6);
    expect(all.stats.dropped.over_suite_share).toBeUndefined();

    // two suites: an even share (0.5) is above 0.3, so units keep as many pairs as arithmetic
    const capped = await build(0.3);
    expect(capped.suites.sort()).toEqual(['arithmetic', 'unit_conversion']);
    expect(capped.stats.dropped.over_suite_share).toBe(5);
    expect(capped.stats.rows).toBe(2);
  });
});
