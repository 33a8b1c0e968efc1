import { UserError } from '../errors.js';
import { parseYamlSafely } from './safe-yaml.js';

/** Applies `key.path=value` overrides (value parsed as YAML) to a raw config object, in place. */
export function applyOverrides(raw: Record<string, unknown>, overrides: readonly string[]): Record<string, unknown> {
  for (const spec of overrides) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new UserError(`--set ${spec}: expected key.path=value`);
    const keys = spec.slice(0, eq).split('.');
    if (keys.includes('__proto__')) throw new UserError(`--set ${spec}: "__proto__" is not a config key`);
    // A value that is not plain YAML (a syntax error, an alias, too deep) is taken as the literal string.
    const parsed = parseYamlSafely(spec.slice(eq + 1));
    const value: unknown = parsed.problems.length ? spec.slice(eq + 1) : parsed.doc.toJS();
    let target: Record<string, unknown> | unknown[] = raw;
    keys.forEach((key, i) => {
      if (Array.isArray(target)) checkIndex(spec, keys.slice(0, i).join('.'), key, target.length);
      const index = Array.isArray(target) ? Number(key) : key;
      const slot = target as Record<string | number, unknown>;
      if (i === keys.length - 1) {
        slot[index] = value;
        return;
      }
      const next = Object.hasOwn(slot, index) ? slot[index] : undefined;
      if (next === undefined || next === null) slot[index] = /^\d+$/.test(keys[i + 1]!) ? [] : {};
      else if (typeof next !== 'object')
        throw new UserError(`--set ${spec}: ${keys.slice(0, i + 1).join('.')} is not a section`);
      target = slot[index] as Record<string, unknown>;
    });
  }
  return raw;
}

/**
 * A list index of --set: decimal digits (Number() would take -1, 1e0, 0x1 and " 1"), at most one past the
 * end (a new item; further would make a sparse list that a large index blows up into millions of holes).
 */
function checkIndex(spec: string, list: string, key: string, length: number): void {
  if (!/^\d+$/.test(key)) throw new UserError(`--set ${spec}: "${key}" is not a list index (0, 1, …)`);
  if (Number(key) > length) {
    const items = `${length} item${length === 1 ? '' : 's'}`;
    throw new UserError(`--set ${spec}: ${list} has ${items}: the index may be at most ${length} (a new item)`);
  }
}
