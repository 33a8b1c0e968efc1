import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/gateway/api-error.js';
import { GatewayAuth, isLoopback } from '../../src/gateway/auth.js';
import { backendBody, parseChatRequest } from '../../src/gateway/request.js';
import { Sessions } from '../../src/gateway/sessions.js';
import { strip, stripBody } from '../../src/gateway/strip.js';

const NONE = { logprobs: false, tokenIds: false, usage: false };

describe('gateway parts', () => {
  it('checks keys: the variable of the matching key names the client; loopback only without keys', () => {
    const auth = new GatewayAuth(['A', 'B'], { A: 'key-a-0123456789', B: 'key-b-0123456789' });
    expect(auth.check('Bearer key-b-0123456789', '10.0.0.9')).toBe('B');
    expect(() => auth.check('Bearer key-b-012345678', '127.0.0.1')).toThrow(ApiError);
    expect(() => auth.check(undefined, '127.0.0.1')).toThrow(/missing the API key/);
    // the trace receiver also takes the key bare, as Logfire's exporters send it; no other route does
    expect(auth.check('key-a-0123456789', '10.0.0.9', true)).toBe('A');
    expect(() => auth.check('key-a-0123456789', '10.0.0.9')).toThrow(/missing the API key/);
    expect(() => auth.check('key-a-012345678', '10.0.0.9', true)).toThrow(/incorrect API key/);
    expect(() => auth.check('Basic a b', '10.0.0.9', true)).toThrow(/missing the API key/);
    const open = new GatewayAuth([], {});
    expect(open.check(undefined, '::ffff:127.0.0.1')).toBe('loopback');
    expect(() => open.check(undefined, '10.0.0.9')).toThrow(/loopback clients only/);
    expect(() => open.checkHost('0.0.0.0')).toThrow(/no client keys/);
    expect(() => new GatewayAuth(['MISSING'], {})).toThrow(/MISSING is not set/);
    expect(['127.0.0.1', '[::1]', 'localhost', '0.0.0.0'].map(isLoopback)).toEqual([true, true, true, false]);
  });

  it("asks the backend for logprobs, token ids and a stream's usage, under its own model name", () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const req = parseChatRequest(JSON.stringify({ model: 'm', messages, stream: true }));
    expect(req.wants).toEqual(NONE);
    expect(JSON.parse(backendBody(req, 'served', { logprobs: true, tokenIds: false }))).toEqual({
      model: 'served',
      messages,
      stream: true,
      logprobs: true,
      stream_options: { include_usage: true },
    });
  });

  it("strips what the client did not ask for, and leaves out a stream's usage-only chunk", () => {
    const usage = { total_tokens: 3 };
    const body = { choices: [{ logprobs: { content: [] }, token_ids: [1] }], prompt_token_ids: [2], usage };
    expect(JSON.parse(stripBody(JSON.stringify(body), NONE))).toEqual({ choices: [{ logprobs: null }], usage });
    const plain = '{"choices":[{"logprobs":null}]}';
    expect(stripBody(plain, NONE)).toBe(plain);
    expect(strip({ choices: [], usage: { total_tokens: 3 } }, NONE, true)).toBe(false);
    expect(strip({ choices: [], usage: { total_tokens: 3 } }, { ...NONE, usage: true }, true)).toBe(true);
  });

  it('groups calls by header, then user, then client; a session idle too long is ended and replaced', () => {
    let now = 0;
    const sessions = new Sessions(100, () => now);
    const src = { client: 'A', remote: '127.0.0.1' };
    const a = sessions.touch({ ...src, header: 's1' }, 0);
    expect(sessions.touch({ ...src, header: 's1', user: 'u' }, 0)).toBe(a);
    const byUser = sessions.touch({ ...src, user: 'u' }, 0);
    expect(byUser).not.toBe(a);
    const idle = sessions.touch(src, 0);
    expect([a.calls, byUser.calls, idle.calls]).toEqual([2, 1, 1]);
    now = 150;
    const next = sessions.touch(src, 150);
    expect(next).not.toBe(idle);
    const ended = sessions.close();
    expect(ended).toHaveLength(3);
    expect(new Set(ended)).toEqual(new Set([idle, a, byUser]));
    expect(sessions.close(true)).toEqual([next]);
  });
});
