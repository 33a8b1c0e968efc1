import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { storeDb } from '../../src/store/store.js';
import { hasStack, runCli, tempDir } from '../helpers.js';

/** A project whose store holds `n` completed rollouts. */
function project(n = 2): { dir: string; storePath: string } {
  const dir = tempDir({ 'massgen-rl.yaml': '' });
  const storePath = path.join(dir, '.massgen-rl', 'store.sqlite');
  const store = Store.open({ path: storePath });
  for (let i = 0; i < n; i++) {
    const id = store.rollouts.start({ metadata: { i } });
    store.spans.append(id, [{ type: 'coordination', name: 'round', payload: { round: 1 } }]);
    store.rollouts.finish(id, { status: 'completed', finalAnswer: String(i) });
  }
  store.close();
  return { dir, storePath };
}

const lines = (file: string) =>
  fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { metadata: { i: number } });
const exportTo = (dir: string, out: string) => runCli(['traces', 'export', '-o', out], { cwd: dir, timeoutMs: 20_000 });
const leftovers = (dir: string) => fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('traces export -o PATH', () => {
  it('creates a new file, and writes through an existing regular file keeping its inode, links and mode', async () => {
    const { dir } = project(2);
    const fresh = path.join(dir, 'fresh.jsonl');
    expect((await exportTo(dir, fresh)).exitCode).toBe(0);
    expect(lines(fresh).map((r) => r.metadata.i)).toEqual([0, 1]);

    const existing = path.join(dir, 'existing.jsonl');
    fs.writeFileSync(existing, 'x'.repeat(100_000));
    fs.chmodSync(existing, 0o640);
    fs.linkSync(existing, path.join(dir, 'hard-link.jsonl'));
    const before = fs.statSync(existing);
    const r = await exportTo(dir, existing);
    expect(r.exitCode, r.stderr).toBe(0);
    const after = fs.statSync(existing);
    expect(after.ino).toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o640);
    expect(lines(existing)).toHaveLength(2);
    expect(fs.readFileSync(path.join(dir, 'hard-link.jsonl'), 'utf8')).toBe(fs.readFileSync(existing, 'utf8'));
    expect(leftovers(dir)).toEqual([]);
  });

  it('refuses symlinks, directories, FIFOs, sockets and devices with exit 2, changing nothing', async () => {
    const { dir } = project(1);
    const target = path.join(dir, 'target.jsonl');
    fs.writeFileSync(target, 'keep me\n');
    fs.symlinkSync(target, path.join(dir, 'link.jsonl'));
    fs.symlinkSync(path.join(dir, 'nowhere.jsonl'), path.join(dir, 'dangling.jsonl'));
    fs.mkdirSync(path.join(dir, 'a-dir'));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    const server = net.createServer().listen(path.join(dir, 'sock'));
    await new Promise((r) => server.once('listening', r));
    const cases: [string, RegExp][] = [
      ['link.jsonl', /is a symbolic link \(to .*target\.jsonl\).*a link cannot send the write somewhere else/],
      ['dangling.jsonl', /is a symbolic link/],
      ['a-dir', /is a directory/],
      ['fifo', /is a named pipe/],
      ['sock', /is a socket/],
    ];
    // A device node made here, not a real one: the old code replaced the device it was given.
    if (process.getuid?.() === 0) {
      execFileSync('mknod', [path.join(dir, 'null-device'), 'c', '1', '3']);
      cases.push(['null-device', /is a device/]);
    }
    try {
      for (const [name, message] of cases) {
        const r = await exportTo(dir, path.join(dir, name));
        expect(r.exitCode, `${name}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toMatch(message);
        expect(hasStack(r.stderr)).toBe(false);
      }
    } finally {
      server.close();
    }
    expect(fs.readFileSync(target, 'utf8')).toBe('keep me\n');
    expect(fs.lstatSync(path.join(dir, 'link.jsonl')).isSymbolicLink()).toBe(true);
    expect(fs.existsSync(path.join(dir, 'nowhere.jsonl'))).toBe(false);
    expect(fs.lstatSync(path.join(dir, 'fifo')).isFIFO()).toBe(true);
    if (process.getuid?.() === 0) expect(fs.lstatSync(path.join(dir, 'null-device')).isCharacterDevice()).toBe(true);
    expect(leftovers(dir)).toEqual([]);

    const missing = await exportTo(dir, path.join(dir, 'no-such-dir', 'out.jsonl'));
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/directory .*no-such-dir does not exist/);
  });

  it('a failed export leaves the file that was there untouched', async () => {
    const { dir, storePath } = project(30);
    const store = Store.open({ path: storePath });
    // The last rollout (on the second page) cannot be read: the export fails after writing the first page.
    storeDb(store).prepare("UPDATE rollouts SET metadata = 'not json' WHERE num = 30").run();
    store.close();
    const good = path.join(dir, 'good.jsonl');
    fs.writeFileSync(good, '{"good":true}\n');
    const r = await exportTo(dir, good);
    expect(r.exitCode).not.toBe(0);
    expect(fs.readFileSync(good, 'utf8')).toBe('{"good":true}\n');
    expect(leftovers(dir)).toEqual([]);
  });
});
