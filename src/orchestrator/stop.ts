/** When an orchestration must stop: its total timeout or the caller's interrupt, whichever comes first. */
export interface Stop {
  signal: AbortSignal;
  /** True once the total timeout has fired. */
  readonly expired: boolean;
  /** Clears the timer and the listener on the caller's signal. */
  dispose(): void;
}

/**
 * One controller and one timer per orchestration: AbortSignal.timeout plus AbortSignal.any, and another
 * AbortSignal.any per turn, cost more CPU than the calls they guard on a fast server.
 */
export function stopSignal(totalMs: number, interrupt?: AbortSignal): Stop {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new Error(`total timeout (${totalMs / 1000} s)`));
  }, totalMs);
  const onInterrupt = () => controller.abort(interrupt!.reason);
  if (interrupt?.aborted) onInterrupt();
  else interrupt?.addEventListener('abort', onInterrupt, { once: true });
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    dispose() {
      clearTimeout(timer);
      interrupt?.removeEventListener('abort', onInterrupt);
    },
  };
}
