import fs from 'node:fs';
import { counters, generationMsAt } from '../../util/profile-counters.js';
import type { ProfileSnapshot, ServerCounters } from '../../util/stage-profile.js';

// Linux reports /proc times in USER_HZ, which is 100 on every architecture it runs on.
const TICK_MS = 10;
const STATS_TIMEOUT_MS = 2000;

/** /proc/<pid>/stat's utime, stime, cutime, cstime in ms; undefined when unreadable (gone, or not Linux). */
export function procTimes(pid: number | 'self'): [number, number, number, number] | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // the command name (field 2) may hold spaces and parentheses: the fields after it start past the last ')'
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const at = (i: number) => Number(fields[i]) * TICK_MS;
  const times: [number, number, number, number] = [at(11), at(12), at(13), at(14)];
  return times.every(Number.isFinite) ? times : undefined;
}

async function serverStats(url: string): Promise<ServerCounters | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(STATS_TIMEOUT_MS) });
    if (!res.ok) return null;
    const body = (await res.json()) as Record<string, unknown>;
    const keys = ['prefill_tokens', 'decode_tokens', 'decode_steps', 'step_s', 'prefill_s', 'convert_s'] as const;
    return Object.fromEntries(keys.flatMap((k) => (typeof body[k] === 'number' ? [[k, body[k]]] : [])));
  } catch {
    return null;
  }
}

/**
 * The counters now: this process's CPU and its reaped children's, and for each local server this process
 * started and that still runs, its CPU (/proc) and its /stats counters (one short request each).
 */
export async function profileSnapshot(): Promise<ProfileSnapshot> {
  const at = performance.now();
  const cpu = process.cpuUsage();
  const self = procTimes('self');
  const live = counters.servers.filter((s) => !s.exited);
  const servers = await Promise.all(
    live.map(async (s) => {
      const t = procTimes(s.pid);
      return {
        pid: s.pid,
        spawnedAt: s.spawnedAt,
        readyAt: s.readyAt,
        cpuMs: t ? t[0] + t[1] + t[2] + t[3] : null,
        stats: await serverStats(s.statsUrl),
      };
    }),
  );
  const { inFlight: _inFlight, inFlightSince: _since, servers: _servers, trainers, ...totals } = counters;
  return {
    ...totals,
    at,
    selfCpuMs: (cpu.user + cpu.system) / 1000,
    reapedCpuMs: self ? self[2] + self[3] : null,
    generationMs: generationMsAt(at),
    servers,
    trainers: trainers.map((t) => ({ ...t })),
  };
}
