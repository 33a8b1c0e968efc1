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

// One redactor (one compiled regex) per distinct settings in a process: stores opened one after another
// share it, and V8's optimized code for it outlives each store.
const shared = new BoundedCache<string, Redactor>(16);

/** Scrubs secrets from text: one combined regex, applied at write time by the store and by loggers. */
export class Redactor {
  private readonly regex: RegExp | null;

  constructor(secrets: readonly string[], patterns: readonly string[]) {
    // A secret inside JSON text appears escaped, so look for both spellings.
    const spellings = secrets.filter((s) => s.length >= 4).flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]);
    const literals = [...new Set(spellings)]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegex);
    const all = [...literals, ...patterns.map((p) => `(?:${p})`)];
    this.regex = all.length ? new RegExp(all.join('|'), 'g') : null;
  }

  static fromSettings(settings: RedactionSettings, env: NodeJS.ProcessEnv = process.env): Redactor {
    const secrets = settings.envNames.map((n) => env[n]).filter((v): v is string => typeof v === 'string');
    const patterns = [...settings.patterns, ...(settings.builtinPatterns ? BUILTIN_PATTERNS : [])];
    return shared.get(JSON.stringify([secrets, patterns]), () => new Redactor(secrets, patterns));
  }

  static none(): Redactor {
    return new Redactor([], []);
  }

  get active(): boolean {
    return this.regex !== null;
  }

  scrub(text: string): string {
    if (!this.regex) return text;
    this.regex.lastIndex = 0;
    return this.regex.test(text) ? text.replace(this.regex, REDACTED) : text;
  }

  scrubOptional(text: string | null | undefined): string | null {
    return text == null ? null : this.scrub(text);
  }

  /** JSON-encodes a value and scrubs the result (secrets inside keys or nested strings included). */
  json(value: unknown): string {
    return this.jsonText(JSON.stringify(value ?? {}), value);
  }

  /** json(value) for a value whose JSON text (JSON.stringify(value)) the caller already has. */
  jsonText(text: string, value: unknown): string {
    if (!this.regex) return text;
    let crossed = false;
    this.regex.lastIndex = 0;
    const scrubbed = text.replace(this.regex, (match) => {
      // A match containing an unescaped quote spans JSON syntax: scrubbing it would lose or corrupt data.
      if (/(^|[^\\])"/.test(match)) crossed = true;
      return REDACTED;
    });
    return crossed ? JSON.stringify(this.deep(value ?? {})) : scrubbed;
  }

  private deep(value: unknown): unknown {
    if (typeof value === 'string') return this.scrub(value);
    if (Array.isArray(value)) return value.map((v) => this.deep(v));
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.scrub(k), this.deep(v)]));
    }
    return value;
  }
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
