import type { ConfigPath } from './yaml-source.js';

export interface InterpolationIssue {
  path: ConfigPath;
  message: string;
}

const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed YAML value; `$${` is a literal `${`. */
export function interpolateEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  issues: InterpolationIssue[],
  path: ConfigPath = [],
): unknown {
  if (typeof value === 'string') {
    return value.replace(PATTERN, (match, name: string | undefined, fallback: string | undefined) => {
      if (match === '$${') return '${';
      const found = env[name!];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      issues.push({
        path,
        message: `environment variable ${name} is not set (use \${${name}:-default} for a fallback)`,
      });
      return match;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, issues, [...path, i]));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, issues, [...path, k])]));
  }
  return value;
}
