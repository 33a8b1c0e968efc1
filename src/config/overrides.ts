import { parse as parseYaml } from 'yaml';
import { UserError } from '../errors.js';

/** Applies `key.path=value` overrides (value parsed as YAML) to a raw config object, in place. */
export function applyOverrides(raw: Record<string, unknown>, overrides: readonly string[]): Record<string, unknown> {
  for (const spec of overrides) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new UserError(`--set ${spec}: expected key.path=value`);
    const keys = spec.slice(0, eq).split('.');
    let value: unknown;
    try {
      value = parseYaml(spec.slice(eq + 1));
    } catch {
      value = spec.slice(eq + 1);
    }
    let target: Record<string, unknown> | unknown[] = raw;
    keys.forEach((key, i) => {
      const index = Array.isArray(target) ? Number(key) : key;
      if (Array.isArray(target) && !Number.isInteger(index)) {
        throw new UserError(`--set ${spec}: "${key}" is not a list index`);
      }
      const slot = target as Record<string | number, unknown>;
      if (i === keys.length - 1) {
        slot[index] = value;
        return;
      }
      const next = slot[index];
      if (next === undefined || next === null) slot[index] = /^\d+$/.test(keys[i + 1]!) ? [] : {};
      else if (typeof next !== 'object') throw new UserError(`--set ${spec}: ${keys.slice(0, i + 1).join('.')} is not a section`);
      target = slot[index] as Record<string, unknown>;
    });
  }
  return raw;
}
