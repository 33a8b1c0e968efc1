import { describe, expect, it } from 'vitest';
import { Redactor } from '../../src/store/redact.js';

describe('Redactor', () => {
  const r = Redactor.fromSettings({ envNames: ['KEY', 'UNSET', 'SHORT'], patterns: ['acct-\\d+'], builtinPatterns: true }, { KEY: 'pa"ss\\word-123', SHORT: 'ab' });

  it('scrubs env secrets, user patterns and built-in key formats', () => {
    expect(r.scrub('key=pa"ss\\word-123 acct-99 sk-abcdefghijklmnopqrstuv hf_abcdefghijklmnopqrstuvwxyz0123456789')).toBe('key=[REDACTED] [REDACTED] [REDACTED] [REDACTED]');
    expect(r.scrub('ab is too short to be treated as a secret')).toBe('ab is too short to be treated as a secret');
  });

  it('scrubs secrets inside JSON even when JSON escaping changes their spelling', () => {
    const json = r.json({ msg: 'token pa"ss\\word-123 here', list: ['acct-7'] });
    expect(JSON.parse(json)).toEqual({ msg: 'token [REDACTED] here', list: ['[REDACTED]'] });
  });

  it('keeps JSON valid when a pattern would match across JSON syntax', () => {
    const greedy = new Redactor([], ['secret.*end']);
    const json = greedy.json({ a: 'secret "x" end', b: 'secret', c: 'end' });
    expect(JSON.parse(json)).toEqual({ a: '[REDACTED]', b: 'secret', c: 'end' });
  });

  it('is a no-op without secrets or patterns', () => {
    const none = Redactor.none();
    expect(none.active).toBe(false);
    expect(none.json({ a: 'sk-abcdefghijklmnopqrstuv' })).toBe('{"a":"sk-abcdefghijklmnopqrstuv"}');
  });
});
