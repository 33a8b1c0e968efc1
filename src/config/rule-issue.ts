import fs from 'node:fs';
import path from 'node:path';
import { linkTarget } from './input-file.js';
import type { ConfigPath } from './yaml-source.js';

/** A problem a cross-field rule found: where in the config, and what is wrong. */
export interface RuleIssue {
  path: ConfigPath;
  message: string;
}

/** The names a reference may take, for a message about one that is unknown. */
export function knownNames(kind: string, names: readonly string[]): string {
  return names.length ? `${kind}: ${names.join(', ')}` : `no ${kind} are defined`;
}

/** A file the config names (relative to `baseDir`) that is missing, a dangling link, or not a file. */
export function fileIssues(baseDir: string, file: string, at: ConfigPath): RuleIssue[] {
  const abs = path.resolve(baseDir, file);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(abs);
  } catch (err) {
    const link = linkTarget(abs);
    const message =
      link === null
        ? `file not found: ${abs}`
        : `a link to ${link}, which leads nowhere (${(err as NodeJS.ErrnoException).code}): ${abs}`;
    return [{ path: at, message }];
  }
  return stat.isFile() ? [] : [{ path: at, message: `not a file: ${abs}` }];
}
