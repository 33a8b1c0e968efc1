import { execa } from 'execa';
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { describe, expect, it } from 'vitest';

// The unit tier's setup file (test/support/unit-guard.ts) keeps the tier to what runs inside its own process.
describe('the unit tier', () => {
  it('refuses to start a process, directly or through execa', async () => {
    expect(() => spawn(process.execPath, ['-e', ''])).toThrow(
      /starts a process \(child_process\.spawn\).*test\/integration/,
    );
    expect(() => execFileSync(process.execPath, ['-e', ''])).toThrow(/child_process\.execFileSync/);
    await expect(async () => execa(process.execPath, ['-e', ''])).rejects.toThrow(/starts a process/);
  });

  it('refuses to listen on a socket', () => {
    expect(() => http.createServer().listen(0, '127.0.0.1')).toThrow(/listens on a socket/);
  });
});
