import type { Ui } from './ui/output.js';

/**
 * Runs fn with a signal that Ctrl-C (SIGINT) or SIGTERM aborts once, after printing what stopping
 * means; the process keeps running so fn can finish cleanly (cancel, checkpoint, record).
 */
export async function withInterrupt<T>(
  ui: Pick<Ui, 'warn'>,
  stopping: string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const onSignal = () => {
    if (controller.signal.aborted) return;
    ui.warn(stopping);
    controller.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await fn(controller.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
