import { execa } from 'execa';
import type { RewardFamily } from './types.js';

/** A custom reward command that timed out, crashed or printed something other than a number. */
export class CustomRewardError extends Error {
  constructor(
    message: string,
    readonly command: readonly string[],
  ) {
    super(message);
    this.name = 'CustomRewardError';
  }
}

/** A reward is one number or a small JSON object: more output than this is a broken command, not a reward. */
const MAX_STDOUT_CHARS = 1024 * 1024;
const MAX_STDERR_CHARS = 4 * 1024 * 1024;

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
    // Both streams are kept in memory, so both are capped: past a cap the command is stopped.
    const result = await execa(file!, args, {
      input: JSON.stringify(outcome),
      timeout: custom.timeout_ms,
      reject: false,
      stripFinalNewline: true,
      maxBuffer: { stdout: MAX_STDOUT_CHARS, stderr: MAX_STDERR_CHARS },
      ...(signal ? { cancelSignal: signal } : {}),
    });
    if (result.isCanceled) throw signal?.reason ?? new Error('cancelled');
    const stderr = lastLines(String(result.stderr ?? ''), 3).join(' | ');
    if (result.isMaxBuffer) {
      throw new CustomRewardError(
        `custom reward command \`${shown}\` was stopped: it printed more than ${MAX_STDOUT_CHARS / 1024 ** 2} MiB on stdout or ${MAX_STDERR_CHARS / 1024 ** 2} MiB on stderr (it should print one number or {"value": n})`,
        custom.command,
      );
    }
    if (result.timedOut)
      throw new CustomRewardError(
        `custom reward command \`${shown}\` timed out after ${custom.timeout_ms} ms`,
        custom.command,
      );
    if (result.failed) {
      const how =
        result.exitCode !== undefined
          ? `exited with code ${result.exitCode}`
          : `failed (${result.signal ?? result.shortMessage})`;
      throw new CustomRewardError(
        `custom reward command \`${shown}\` ${how}${stderr ? `: ${stderr}` : ''}`,
        custom.command,
      );
    }
    const parsed = parseCustomOutput(String(result.stdout ?? ''));
    if (!parsed) {
      throw new CustomRewardError(
        `custom reward command \`${shown}\` printed ${JSON.stringify(
          String(result.stdout ?? '')
            .trim()
            .slice(0, 200),
        )}, not a number or {"value": n}`,
        custom.command,
      );
    }
    return [
      {
        channel: 'rollout',
        family: 'custom',
        value: parsed.value,
        reason: parsed.reason ?? `\`${shown}\` printed ${parsed.value}`,
      },
    ];
  },
};

/** The last n non-blank lines, each cut to 300 characters, without splitting all of the text. */
function lastLines(text: string, n: number): string[] {
  const lines: string[] = [];
  let end = text.length;
  while (lines.length < n && end > 0) {
    const start = text.lastIndexOf('\n', end - 1) + 1;
    const line = text.slice(start, end).trim();
    if (line) lines.unshift(line.length > 300 ? `${line.slice(0, 300)} …` : line);
    end = start - 1;
  }
  return lines;
}
