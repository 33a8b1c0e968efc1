export interface Colors {
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
  dim(s: string): string;
  bold(s: string): string;
  cyan(s: string): string;
}

const wrap = (open: number, close: number) => (s: string) => `\u001b[${open}m${s}\u001b[${close}m`;

export function makeColors(enabled: boolean): Colors {
  if (!enabled) {
    const id = (s: string) => s;
    return { green: id, red: id, yellow: id, dim: id, bold: id, cyan: id };
  }
  return {
    green: wrap(32, 39),
    red: wrap(31, 39),
    yellow: wrap(33, 39),
    dim: wrap(2, 22),
    bold: wrap(1, 22),
    cyan: wrap(36, 39),
  };
}

/** Colour only for a terminal, never with --no-color or NO_COLOR set (any value). */
export function colorEnabled(
  flag: boolean,
  env: NodeJS.ProcessEnv = process.env,
  tty = Boolean(process.stderr.isTTY),
): boolean {
  return flag && env.NO_COLOR === undefined && tty;
}
