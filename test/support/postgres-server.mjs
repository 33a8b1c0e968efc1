// A throwaway PostgreSQL server on a temp directory and a free loopback port, for tests and benchmarks.
// Uses the Debian `postgresql` binaries (.ci/run installs them). As root, the server runs as the
// `postgres` user, since PostgreSQL refuses to run as root.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** The role the server asks a password of (tests create it). */
export const PASSWORD_ROLE = 'massgen_pw';

export function postgresBin(name) {
  const roots = fs.existsSync('/usr/lib/postgresql')
    ? fs.readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of roots) {
    const p = path.join('/usr/lib/postgresql', v, 'bin', name);
    if (fs.existsSync(p)) return p;
  }
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const asServerUser = (cmd, args) =>
  process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];

/** Starts a server; resolves to { url (superuser `massgen`, database `postgres`), dir, port, stop() }. */
export async function startPostgres() {
  const initdb = postgresBin('initdb');
  const postgres = postgresBin('postgres');
  if (!initdb || !postgres)
    throw new Error('PostgreSQL server binaries not found (install the Debian package `postgresql`; .ci/run does)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres', dir]);
  const [c1, a1] = asServerUser(initdb, [
    '-D',
    data,
    '-U',
    'massgen',
    '--auth=trust',
    '--no-locale',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  execFileSync(c1, a1, { stdio: 'pipe' });
  // One role must give its password (tests of store.password_env); everyone else is trusted.
  const hba = path.join(data, 'pg_hba.conf');
  fs.writeFileSync(hba, `host all ${PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n${fs.readFileSync(hba, 'utf8')}`);
  const port = await freePort();
  const [c2, a2] = asServerUser(postgres, [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=300',
    '-c',
    'shared_buffers=64MB',
  ]);
  const child = spawn(c2, a2, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let log = '';
  child.stderr.on('data', (d) => {
    log += d;
  });
  const url = `postgres://massgen@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited: ${log}`);
    if (await canConnect(port)) break;
    if (Date.now() > deadline) throw new Error(`postgres did not start in 30 s: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  child.unref();
  child.stderr.destroy();
  return {
    url,
    dir,
    port,
    stop: () => {
      try {
        process.kill(-child.pid, 'SIGINT');
      } catch {
        /* gone */
      }
      const until = Date.now() + 10_000;
      while (Date.now() < until) {
        try {
          process.kill(child.pid, 0);
        } catch {
          break;
        }
        execFileSync('sleep', ['0.1']);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function canConnect(port) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'massgen', database: 'postgres' });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}
