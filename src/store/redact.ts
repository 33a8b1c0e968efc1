import { BoundedCache } from '../util/bounded-cache.js';

export const REDACTED = '[REDACTED]';

const BUILTIN_PATTERNS = [
  String.raw`\bsk-[A-Za-z0-9_-]{16,}`,
  String.raw`\bBearer\s+[A-Za-z0-9._~+/=-]{16,}`,
  String.raw`\bhf_[A-Za-z0-9]{30,}`,
  String.raw`\bAKIA[0-9A-Z]{16}\b`,
  String.raw`\bgh[pousr]_[A-Za-z0-9]{30,}`,
];

export interface RedactionSettings {
  /** Environment variable names whose values are secrets (model api_key_env + privacy.redact_env). */
  envNames: readonly string[];
  patterns: readonly string[];
  builtinPatterns: boolean;
}

// One redactor per distinct settings in a process: stores opened one after another share it (and its
// compiled regexes and the frozen constants it has found clean).
const shared = new BoundedCache<string, Redactor>(16);

/**
 * Scrubs secrets: from text (scrub) and from values about to be stored as JSON (json), where only
 * strings are rewritten, never numbers or JSON syntax, so what is stored always parses.
 *
 * Object keys are scrubbed too (a secret is as secret in a key), and a scrubbed key that would
 * collide with another key of the same object gets a numbered name ("[REDACTED] (2)"), so no entry
 * is lost. Keys this program writes are fixed field names that no secret format matches.
 *
 * Env secrets and the built-in formats are one regex (escaped literals and our own group-free
 * patterns). Each user pattern is a regex of its own: joined into one alternation, a backreference
 * would point at another pattern's group and equal group names would not compile. Matches are taken
 * leftmost-first across all of them, as one alternation would; empty matches are skipped.
 */
export class Redactor {
  private readonly regexes: RegExp[];
  /** Frozen objects (the orchestrator's constant prompt parts) already found clean: they cannot change. */
  private readonly clean = new WeakSet<object>();
  private readonly replacer = (_key: string, value: unknown): unknown => {
    if (typeof value === 'string') return this.scrub(value);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? this.renameKeys(value) : value;
  };

  constructor(secrets: readonly string[], patterns: readonly string[], builtin: readonly string[] = []) {
    // A secret inside JSON text (a logged request, say) appears escaped, so look for both spellings.
    const spellings = secrets.filter((s) => s.length >= 4).flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);
    const literals = [...new Set(spellings)].sort((a, b) => b.length - a.length).map(escapeRegex);
    const trusted = [...literals, ...builtin.map((p) => `(?:${p})`)];
    this.regexes = [
      ...(trusted.length ? [new RegExp(trusted.join('|'), 'g')] : []),
      ...patterns.map((p) => new RegExp(p, 'g')),
    ];
  }

  static fromSettings(settings: RedactionSettings, env: NodeJS.ProcessEnv = process.env): Redactor {
    const secrets = settings.envNames.map((n) => env[n]).filter((v): v is string => typeof v === 'string');
    const builtin = settings.builtinPatterns ? BUILTIN_PATTERNS : [];
    return shared.get(
      JSON.stringify([secrets, settings.patterns, builtin]),
      () => new Redactor(secrets, settings.patterns, builtin),
    );
  }

  static none(): Redactor {
    return new Redactor([], []);
  }

  get active(): boolean {
    return this.regexes.length > 0;
  }

  scrub(text: string): string {
    return this.contains(text) ? this.replaceAll(text) : text;
  }

  scrubOptional(text: string | null | undefined): string | null {
    return text == null ? null : this.scrub(text);
  }

  /** JSON.stringify(value ?? {}) with every string in it (keys included) scrubbed. */
  json(value: unknown): string {
    return this.jsonText(JSON.stringify(value ?? {}), value ?? {});
  }

  /** json(value) for a value whose JSON text (JSON.stringify(value)) the caller already has: kept unless a secret is found. */
  jsonText(text: string, value: unknown): string {
    return this.active && this.dirty(value) ? JSON.stringify(value, this.replacer) : text;
  }

  /** JSON.stringify(value, null, indent) with the strings scrubbed: for output that is parsed, like --json. */
  stringify(value: unknown, indent?: number): string {
    return JSON.stringify(value, this.active ? this.replacer : undefined, indent);
  }

  /** Whether text holds a secret: as it is spelled, or as it reads once its escapes are decoded. */
  private contains(text: string): boolean {
    return this.matchesIn(text) || unescaped(text).some((view) => this.matchesIn(view.text));
  }

  private matchesIn(text: string): boolean {
    for (const r of this.regexes) {
      r.lastIndex = 0;
      if (r.test(text) && nextMatch(r, text, 0)) return true;
    }
    return false;
  }

  /** text with each secret replaced; one found only in a decoded view takes its whole escaped spelling with it. */
  private replaceAll(text: string): string {
    const spans = this.spans(text);
    for (const view of unescaped(text)) {
      for (const [a, b] of this.spans(view.text)) if (view.at[b]! > view.at[a]!) spans.push([view.at[a]!, view.at[b]!]);
    }
    spans.sort((x, y) => x[0] - y[0] || y[1] - x[1]);
    let out = '';
    let pos = 0;
    for (const [start, end] of spans) {
      if (end <= pos) continue;
      if (start >= pos) out += text.slice(pos, start) + REDACTED;
      pos = end;
    }
    return out + text.slice(pos);
  }

  /** Where the secrets of text are, leftmost-first across all regexes as one alternation would take them. */
  private spans(text: string): [number, number][] {
    const found: (RegExpExecArray | null)[] = this.regexes.map((r) => nextMatch(r, text, 0));
    const out: [number, number][] = [];
    let pos = 0;
    for (;;) {
      let best = -1;
      for (let i = 0; i < found.length; i++) {
        if (found[i] && found[i]!.index < pos) found[i] = nextMatch(this.regexes[i]!, text, pos);
        if (found[i] && (best < 0 || found[i]!.index < found[best]!.index)) best = i;
      }
      if (best < 0) return out;
      const m = found[best]!;
      out.push([m.index, m.index + m[0].length]);
      pos = m.index + m[0].length;
    }
  }

  /** Whether json would change anything. Values with toJSON are left to JSON.stringify to decide. */
  private dirty(value: unknown): boolean {
    if (typeof value === 'string') return this.contains(value);
    if (typeof value !== 'object' || value === null || this.clean.has(value)) return false;
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return true;
    // Remembered as clean only when frozen all the way down (then nothing in it can change).
    let frozen = Object.isFrozen(value);
    const child = (v: unknown) => {
      if (this.dirty(v)) return true;
      if (typeof v === 'object' && v !== null && !this.clean.has(v)) frozen = false;
      return false;
    };
    const found = Array.isArray(value)
      ? value.some(child)
      : Object.keys(value).some((k) => this.contains(k) || child((value as Record<string, unknown>)[k]));
    if (!found && frozen) this.clean.add(value);
    return found;
  }

  private renameKeys(obj: object): object {
    const keys = Object.keys(obj);
    if (!keys.some((k) => this.contains(k))) return obj;
    const taken = new Set(keys.filter((k) => !this.contains(k)));
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      let name = k;
      if (this.contains(k)) {
        const base = this.replaceAll(k);
        name = base;
        for (let n = 2; taken.has(name); n++) name = `${base} (${n})`;
        taken.add(name);
      }
      Object.defineProperty(out, name, {
        value: (obj as Record<string, unknown>)[k],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
}

/** How many times escapes are decoded: a key escaped in JSON that was itself escaped again, and once more. */
const UNESCAPE_LEVELS = 3;
const NUMERIC = /\\(?:u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2}))/y;
const QUOTED = '\\/"\'bfnrt';
const SIMPLE: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** A decoded view of a text: its characters, and where in the original text each one (and the end) starts. */
interface View {
  text: string;
  at: Int32Array;
}

/**
 * text as it reads with its escapes (\uXXXX, \u{X…}, \xXX, \n, \" …) decoded, once, twice, …: one view per
 * level that decodes something, each mapped back to the original; none when text holds no backslash.
 */
function unescaped(text: string): View[] {
  const views: View[] = [];
  let current: View | undefined;
  for (let level = 0; level < UNESCAPE_LEVELS && (current?.text ?? text).includes('\\'); level++) {
    const next = decodeOnce(current?.text ?? text);
    if (!next) break;
    if (current) for (let k = 0; k < next.at.length; k++) next.at[k] = current.at[next.at[k]!]!;
    current = next;
    views.push(current);
  }
  return views;
}

function decodeOnce(text: string): View | null {
  const at = new Int32Array(text.length + 1);
  const parts: string[] = [];
  let n = 0;
  let decoded = false;
  for (let i = 0; i < text.length;) {
    const slash = text.indexOf('\\', i);
    const end = slash < 0 ? text.length : slash;
    parts.push(text.slice(i, end));
    for (let k = i; k < end; k++) at[n++] = k;
    if (slash < 0) break;
    const [char, length] = escapeAt(text, slash);
    parts.push(char);
    for (let k = 0; k < char.length; k++) at[n++] = slash;
    i = slash + length;
    if (length > 1) decoded = true;
  }
  at[n] = text.length;
  return decoded ? { text: parts.join(''), at: at.subarray(0, n + 1) } : null;
}

/** The character the escape at text[i] (a backslash) stands for, and its length; a lone backslash when none. */
function escapeAt(text: string, i: number): [string, number] {
  const next = text[i + 1];
  if (next !== undefined && QUOTED.includes(next)) return [SIMPLE[next] ?? next, 2];
  if (next !== 'u' && next !== 'x') return ['\\', 1];
  NUMERIC.lastIndex = i;
  const m = NUMERIC.exec(text);
  const code = m ? parseInt(m[1] ?? m[2] ?? m[3]!, 16) : NaN;
  return m && code <= 0x10ffff ? [String.fromCodePoint(code), m[0].length] : ['\\', 1];
}

/** The first non-empty match at or after `from` (an empty match would redact nothing and loop for ever). */
function nextMatch(r: RegExp, text: string, from: number): RegExpExecArray | null {
  r.lastIndex = from;
  for (;;) {
    const m = r.exec(text);
    if (!m || m[0].length) return m;
    r.lastIndex = m.index + 1;
  }
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
