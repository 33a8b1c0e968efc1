import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { Store } from '../../src/store/index.js';
import { hasStack, runCli, tempDir } from '../helpers.js';

/** A project whose store holds a base model in production and a line of three checkpoints (folders in the data dir). */
function project() {
  const dir = tempDir({ 'massgen-rl.yaml': 'project: { name: ck-test }\n' });
  const data = path.join(dir, '.massgen-rl');
  const store = Store.open({ path: path.join(data, 'store.sqlite') });
  const baseDir = path.join(dir, 'base-model');
  fs.mkdirSync(baseDir);
  const base = store.resources.add({ kind: 'weight', name: 'smol', path: baseDir });
  store.resources.setProduction(base, 'deploy', 'base');
  const ids: string[] = [];
  for (let i = 1; i <= 3; i++) {
    const folder = path.join(data, 'checkpoints', `c${i}`);
    fs.mkdirSync(folder, { recursive: true });
    ids.push(
      registerCheckpoint(store, {
        path: folder,
        algo: i === 3 ? 'grpo' : 'sft',
        adapter: true,
        baseModel: 'resource:smol',
        baseResourceId: base.id,
        parentId: ids.at(-1),
        datasetHash: `${i}`.repeat(64),
        watermark: i,
        metrics: { reward: i / 10, loss: 1 / i },
      }).checkpoint.id,
    );
  }
  store.close();
  const cli = (...args: string[]) => runCli(args, { cwd: dir });
  return { dir, data, ids, cli };
}

describe('massgen-rl checkpoints', () => {
  it('lists checkpoints with weight, parent, algo, dataset and metrics, as a table or JSON', async () => {
    const { ids, cli } = project();
    const table = await cli('checkpoints', 'list');
    expect(table.exitCode).toBe(0);
    expect(table.stdout).toContain(ids[2]);
    expect(table.stdout).toMatch(/smol v4/);
    expect(table.stdout).toContain('base: resource:smol');
    expect(table.stdout).toContain('333333333333');
    expect(table.stdout).toMatch(/reward=0\.3 loss=0\.3333/);
    const json = JSON.parse((await cli('--json', 'checkpoints', 'list', '--algo', 'sft')).stdout) as {
      checkpoints: { id: string; parentId: string | null; production: boolean }[];
    };
    expect(json.checkpoints.map((c) => [c.id, c.parentId, c.production])).toEqual([
      [ids[1], ids[0], false],
      [ids[0], null, false],
    ]);
    expect((await cli('checkpoints', 'list', '--limit', '0')).exitCode).toBe(2);
  });

  it('shows one checkpoint with its full lineage; an unknown id is exit 2', async () => {
    const { ids, cli } = project();
    const shown = await cli('checkpoints', 'show', ids[2]!.slice(0, -2));
    expect(shown.exitCode).toBe(0);
    const order = [ids[2]!, ids[1]!, ids[0]!, 'base: resource:smol'].map((s) => shown.stdout.lastIndexOf(s));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(shown.stdout).toMatch(/base path\s+.*base-model/);
    const json = JSON.parse((await cli('checkpoints', 'show', ids[1]!, '--json')).stdout) as {
      lineage: { id: string }[];
      children: { id: string }[];
      resource: { version: number };
    };
    expect(json).toMatchObject({ lineage: [{ id: ids[0] }], children: [{ id: ids[2] }], resource: { version: 3 } });
    const unknown = await cli('checkpoints', 'show', 'ck_nope');
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/no checkpoint "ck_nope"/);
    expect(hasStack(unknown.stderr)).toBe(false);
    const unknownJson = await cli('--json', 'checkpoints', 'show', 'ck_nope');
    expect(JSON.parse(unknownJson.stdout)).toMatchObject({ ok: false, error: { exitCode: 2 } });
  });

  it('prune needs --yes without a terminal, and changes nothing until given it', async () => {
    const { data, ids, cli } = project();
    const store = Store.open({ path: path.join(data, 'store.sqlite') });
    const c1 = store.checkpoints.get(ids[0]!)!;
    // A second line, then one more checkpoint on the main line: the second line is the prunable one.
    const side = path.join(data, 'checkpoints', 'side');
    fs.mkdirSync(side);
    const lone = registerCheckpoint(store, {
      path: side,
      algo: 'dpo',
      adapter: false,
      baseModel: 'smol',
      name: 'other',
      metrics: { reward: 0.05 },
    }).checkpoint;
    const c4Dir = path.join(data, 'checkpoints', 'c4');
    fs.mkdirSync(c4Dir);
    const c4 = registerCheckpoint(store, {
      path: c4Dir,
      algo: 'sft',
      adapter: true,
      baseModel: 'resource:smol',
      parentId: ids[2],
      metrics: { reward: 0.01 },
    }).checkpoint;
    store.close();

    const refused = await cli('checkpoints', 'prune', '--keep-last', '1');
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/would delete 1 checkpoint\(s\) and their folders; pass --yes to confirm/);
    expect(fs.existsSync(side)).toBe(true);

    const dry = await cli('checkpoints', 'prune', '--keep-last', '1', '--dry-run', '--json');
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, deleted: [{ id: lone.id }] });
    expect(fs.existsSync(side)).toBe(true);

    const pruned = await cli('checkpoints', 'prune', '--keep-last', '1', '--keep-best', 'reward', '--yes');
    expect(pruned.exitCode).toBe(0);
    expect(pruned.stdout).toContain(`removed ${side}`);
    expect(pruned.stdout).toContain(`${c4.id} (last 1)`);
    expect(pruned.stdout).toContain(`${ids[2]} (best reward (max), ancestor of ${c4.id})`);
    expect(fs.existsSync(side)).toBe(false);
    expect(fs.existsSync(c1.path)).toBe(true); // an ancestor of the kept one

    expect((await cli('checkpoints', 'prune', '--keep-last', '1', '-y')).stdout).toMatch(
      /nothing to prune \(4 checkpoint\(s\) kept\)/,
    );
    for (const bad of [
      ['--keep-last', 'two'],
      ['--keep-last', '0'],
      ['--keep-last', '1', '--keep-best', 'reward:best'],
      ['--keep-last', '1', '--keep-best', 'acc'],
    ]) {
      const r = await cli('checkpoints', 'prune', ...bad, '--yes');
      expect(r.exitCode, bad.join(' ')).toBe(2);
    }
    expect((await cli('checkpoints', 'prune')).exitCode).toBe(2); // --keep-last is required
  });

  it('forks a checkpoint into a new line', async () => {
    const { ids, cli } = project();
    const forked = await cli('--json', 'checkpoints', 'fork', ids[1]!, '--name', 'experiment');
    expect(forked.exitCode).toBe(0);
    expect(JSON.parse(forked.stdout)).toMatchObject({
      resource: { name: 'experiment', version: 1 },
      checkpoint: { parentId: ids[1] },
    });
    const again = await cli('checkpoints', 'fork', ids[1]!, '--name', 'experiment');
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toMatch(/already exists/);
    expect((await cli('checkpoints', 'fork', 'ck_nope', '--name', 'x')).exitCode).toBe(2);
    expect((await cli('checkpoints', 'fork', ids[1]!)).exitCode).toBe(2); // --name is required
  });
});
