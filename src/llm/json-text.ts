/**
 * JSON text of requests and traces without serializing the same constant parts (tool specs, system
 * prompts) again for every call: a constant's text is computed once, and objects are assembled from the
 * texts of their values. The output is byte for byte JSON.stringify's.
 */
const constants = new WeakMap<object, string>();

/**
 * Deep-freezes value and remembers its JSON text (and each element's, for an array: arrays holding them
 * are assembled from these); jsonOf and encodeObject reuse it.
 */
export function constantJson<T extends object>(value: T): T {
  if (constants.has(value)) return value;
  deepFreeze(value);
  constants.set(value, JSON.stringify(value));
  if (Array.isArray(value)) for (const v of value) if (typeof v === 'object' && v !== null) constantJson(v);
  return value;
}

/** JSON.stringify(value), taken from the remembered text for a constant. */
export function jsonOf(value: unknown): string {
  return (typeof value === 'object' && value !== null && constants.get(value)) || JSON.stringify(value);
}

/**
 * JSON.stringify(value) for a plain object whose values and array elements may be constants; `texts`
 * supplies the JSON text of some values already encoded by the caller.
 */
export function encodeObject(value: Record<string, unknown>, texts: Record<string, string> = {}): string {
  let out = '';
  for (const key of Object.keys(value)) {
    const v = value[key];
    const text = texts[key] ?? (Array.isArray(v) ? encodeArray(v) : skipped(v) ? undefined : jsonOf(v));
    if (text !== undefined) out += `${out ? ',' : '{'}${JSON.stringify(key)}:${text}`;
  }
  return out ? `${out}}` : '{}';
}

/** Element by element when the array holds constants (messages, tool specs), else in one go (token ids). */
function encodeArray(items: readonly unknown[]): string {
  const known = constants.get(items);
  if (known !== undefined) return known;
  if (!items.some((v) => typeof v === 'object' && v !== null && constants.has(v))) return JSON.stringify(items);
  let out = '[';
  for (let i = 0; i < items.length; i++) {
    const v = items[i];
    out += `${i ? ',' : ''}${skipped(v) ? 'null' : jsonOf(v)}`;
  }
  return `${out}]`;
}

/** Values JSON.stringify leaves out of objects (and writes as null in arrays). */
function skipped(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

function deepFreeze(value: object): void {
  Object.freeze(value);
  for (const v of Object.values(value)) if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) deepFreeze(v);
}
