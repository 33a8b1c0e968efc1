import { execa } from 'execa';
import type { RewardFamily } from './types.js';

/** A custom reward command that timed out, crashed or printed something other than a number. */
export class CustomRewardError extends Error {
  constructor(message: string, readonly command: readonly string[]) {
    super(message);
    this.name = 'CustomRewardError';
  }
}

/** Reads the command's stdout: a bare number, or JSON {"value": n, "reason": "..."} (or a JSON number). */
export function parseCustomOutput(stdout: string): { value: number; reason: string | null } | null {
  const text = stdout.trim();
  if (text === '') return null;
  const bare = Number(text);
  if (Number.isFinite(bare)) return { value: bare, reason: null };
  try {
    const parsed = JSON.parse(text) as unknown;
    const value = typeof parsed === 'number' ? parsed : (parsed as { value?: unknown } | null)?.value;
    if (typeof value !== 'number' || !Number.isFinite(value)) return null;
    const reason = (parsed as { reason?: unknown }).reason;
    return { value, reason: typeof reason === 'string' ? reason : null };
  } catch {
    return null;
  }
}

/**
 * Runs rewards.custom.command (an argument array, no shell) with the RolloutOutcome as JSON on stdin
 * and scores the rollout channel with what it prints. A timeout (custom.timeout_ms), a non-zero exit,
 * or output that is not a number throws a CustomRewardError naming the command: the caller decides
 * whether that fails the rollout's rewards or is logged and skipped. Cancellation via ctx.signal
 * kills the command and rethrows.
 */
export const customReward: RewardFamily = {
  name: 'custom',
  scope: 'answer',
  describe: 'your command (rewards.custom.command) reads the rollout outcome as JSON on stdin and prints a number',
  async score({ outcome, config, signal }) {
    const custom = config.custom;
    if (!custom) throw new Error('the custom reward needs rewards.custom.command');
    const [file, ...args] = custom.command;
    const shown = custom.command.join(' ');
    const result = await execa(file!, args, {
      input: JSON.stringify(outcome), timeout: custom.timeout_ms, reject: false, stripFinalNewline: true,
      ...(signal ? { cancelSignal: signal } : {}),
    });
    if (result.isCanceled) throw signal?.reason ?? new Error('cancelled');
    const stderr = String(result.stderr ?? '').trim().split('\n').slice(-3).join(' | ');
    if (result.timedOut) throw new CustomRewardError(`custom reward command \`${shown}\` timed out after ${custom.timeout_ms} ms`, custom.command);
    if (result.failed) {
      const how = result.exitCode !== undefined ? `exited with code ${result.exitCode}` : `failed (${result.signal ?? result.shortMessage})`;
      throw new CustomRewardError(`custom reward command \`${shown}\` ${how}${stderr ? `: ${stderr}` : ''}`, custom.command);
    }
    const parsed = parseCustomOutput(String(result.stdout ?? ''));
    if (!parsed) {
      throw new CustomRewardError(`custom reward command \`${shown}\` printed ${JSON.stringify(String(result.stdout ?? '').trim().slice(0, 200))}, not a number or {"value": n}`, custom.command);
    }
    return [{ channel: 'rollout', family: 'custom', value: parsed.value, reason: parsed.reason ?? `\`${shown}\` printed ${parsed.value}` }];
  },
};
