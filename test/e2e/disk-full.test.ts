import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN } from '../helpers.js';
import { fillDisk, look, ownFileSystem, releaseFileSystem } from '../support/chaos.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';

// A full disk under the data directory (a tmpfs this test mounts; root only) is the user's to fix, not a bug: the
// command says so and exits 2, and once there is room again the next start goes on where it stopped.
const env = { NO_COLOR: '1', FAKE_TRAINER_STEP_S: '0.05' };

describe('a full disk', () => {
  let project: LoopProject | undefined;
  afterEach(async () => {
    await project?.server.close();
    if (project) releaseFileSystem(project.dir);
  });

  it('stops `loop --once` with exit 2 naming the disk, and the next start after room is made ends the cycle', async (ctx) => {
    project = await loopProject();
    const dir = project.dir;
    if (!ownFileSystem(dir, 1024)) return ctx.skip('this machine lets the test mount no tmpfs (not root)');
    const loop = () => execa(process.execPath, [BIN, 'loop', '--once', '--json'], { cwd: dir, env, reject: false });
    expect((await loop()).exitCode).toBe(0);
    const free = fillDisk(dir);
    let full;
    try {
      full = await loop();
    } finally {
      free();
    }
    expect(full.exitCode, full.stderr).toBe(2);
    expect(full.stderr).toMatch(/error: no space left on the disk holding the store .*store\.sqlite/);
    expect(full.stderr).not.toMatch(/please report|internal error/i);
    const again = await loop();
    expect(again.exitCode).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'completed' });
    const store = look(dir, (db) => ({
      integrity: db.value('PRAGMA integrity_check'),
      cycles: db.values('SELECT status FROM loop_runs ORDER BY started_at'),
      locks: db.value('SELECT COUNT(*) FROM locks'),
    }));
    expect(store).toEqual({ integrity: 'ok', cycles: ['completed', 'completed'], locks: 0 });
  }, 120_000);
});
