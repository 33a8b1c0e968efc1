/**
 * Signals for a child started with `detached: true`, i.e. the leader of its own process group: a
 * signal reaches the whole group (accelerate/torchrun and their workers), as a terminal's Ctrl-C would.
 */
export interface GroupStopper {
  /** SIGINT now, SIGTERM after graceMs, SIGKILL killAfterMs later; once only. */
  stop(): void;
  /**
   * The leader has exited. While stopping, the rest of the group may still be saving (accelerate's
   * launcher exits on Ctrl-C before its trainer does): the escalation goes on. Otherwise stragglers are ended.
   */
  leaderExited(): void;
  /** Resolves once no process of the group is left. */
  drained(): Promise<void>;
  /** Signals sent so far, in order. */
  readonly sent: string[];
  dispose(): void;
}

export function signalGroup(pid: number | undefined, signal: NodeJS.Signals | 0): boolean {
  if (!pid) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

export function groupStopper(
  pid: number | undefined,
  graceMs: number,
  killAfterMs: number,
  onSignal?: (s: string) => void,
): GroupStopper {
  const timers = new Set<NodeJS.Timeout>();
  const sent: string[] = [];
  let stopping = false;
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const send = (s: NodeJS.Signals) => {
    if (signalGroup(pid, s)) {
      sent.push(s);
      onSignal?.(s);
    }
  };
  const clear = () => {
    for (const t of timers) clearTimeout(t);
    timers.clear();
  };
  // If this process exits while the trainer runs (an uncaught error), do not leave the group behind.
  const onExit = () => signalGroup(pid, 'SIGKILL');
  process.once('exit', onExit);
  return {
    sent,
    stop() {
      if (stopping) return;
      stopping = true;
      send('SIGINT');
      later(graceMs, () => {
        send('SIGTERM');
        later(killAfterMs, () => send('SIGKILL'));
      });
    },
    leaderExited() {
      if (!signalGroup(pid, 0)) return clear();
      if (stopping) return;
      clear();
      signalGroup(pid, 'SIGTERM');
      setTimeout(() => signalGroup(pid, 'SIGKILL'), 2000).unref();
    },
    async drained() {
      while (signalGroup(pid, 0)) await new Promise((r) => setTimeout(r, 100));
    },
    dispose() {
      clear();
      process.off('exit', onExit);
    },
  };
}

/**
 * Stops what is left of a trainer whose parent was killed (its process group outlives it, being
 * detached): SIGINT (it saves a checkpoint), SIGTERM after graceMs, SIGKILL after killAfterMs more.
 * Resolves once the group is gone; does nothing for a pid of another host or a group already gone.
 */
export async function stopLeftover(
  pid: number | undefined,
  host: string | undefined,
  thisHost: string,
  graceMs = 30_000,
  killAfterMs = 10_000,
): Promise<boolean> {
  if (!pid || host !== thisHost || !signalGroup(pid, 0)) return false;
  const stopper = groupStopper(pid, graceMs, killAfterMs);
  stopper.stop();
  stopper.leaderExited();
  await stopper.drained();
  stopper.dispose();
  return true;
}
