export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function formatTime(ms: number | null | undefined): string {
  return ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '—';
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

export function truncate(s: string, max: number): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A rollout's task: its task id, else the task text an imported rollout carries (metadata.original_task), quoted. */
export function taskOf(r: { taskId: string | null; metadata: Record<string, unknown> }, max: number): string {
  if (r.taskId) return r.taskId;
  const text = r.metadata.original_task;
  return typeof text === 'string' && text.trim() ? `"${truncate(text, max - 2)}"` : '—';
}
