import { describe, expect, it } from 'vitest';
import { parseChatRequest } from '../../src/gateway/request.js';
import { replaceSystemPrompt, SystemPrompts } from '../../src/gateway/system-prompt.js';
import type { Resource, ResourceSet, Store } from '../../src/store/index.js';

const PROMPT = 'You are the production solver.';
const user = (content: unknown) => ({ role: 'user', content });

describe('replaceSystemPrompt', () => {
  it("replaces the client's system message where it was, leaving every other field and message", () => {
    const body = {
      model: 'm',
      temperature: 0,
      messages: [{ role: 'system', content: 'client prompt' }, user('hi')],
    };
    const before = structuredClone(body);
    const out = replaceSystemPrompt(body, PROMPT);
    expect(out).toEqual({
      body: { model: 'm', temperature: 0, messages: [{ role: 'system', content: PROMPT }, user('hi')] },
      removed: 1,
    });
    expect(body).toEqual(before);
  });

  it('drops every system (and developer) message, the prompt taking the place of the first', () => {
    const messages = [
      user('first'),
      { role: 'developer', content: 'dev rules' },
      { role: 'assistant', content: 'ok' },
      { role: 'system', content: 'a note mid-conversation' },
      user('second'),
    ];
    const out = replaceSystemPrompt({ model: 'm', messages }, PROMPT);
    expect(out.removed).toBe(2);
    expect(out.body.messages).toEqual([
      user('first'),
      { role: 'system', content: PROMPT },
      { role: 'assistant', content: 'ok' },
      user('second'),
    ]);
  });

  it('prepends the prompt when the client sent no system message', () => {
    const out = replaceSystemPrompt(
      { model: 'm', messages: [user('hi'), { role: 'assistant', content: 'yo' }] },
      PROMPT,
    );
    expect(out.removed).toBe(0);
    expect(out.body.messages).toEqual([
      { role: 'system', content: PROMPT },
      user('hi'),
      { role: 'assistant', content: 'yo' },
    ]);
  });

  it('replaces a system message of content parts; content parts of other messages stay as they were', () => {
    const parts = [
      { type: 'text', text: 'look at this' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
    ];
    const messages = [
      {
        role: 'system',
        content: [
          { type: 'text', text: 'client' },
          { type: 'text', text: 'rules' },
        ],
      },
      user(parts),
    ];
    const out = replaceSystemPrompt({ model: 'm', messages }, PROMPT);
    expect(out.removed).toBe(1);
    expect(out.body.messages).toEqual([{ role: 'system', content: PROMPT }, user(parts)]);
  });
});

function setOf(id: string, prompts: Record<string, string>): ResourceSet {
  const agents = Object.fromEntries(
    Object.entries(prompts).map(([a, p]) => [
      a,
      { prompt: p, weights: null, from_config: { prompt: true, weights: true } },
    ]),
  );
  return { id, version: 1, parentId: null, members: { agents }, hash: id, origin: { kind: 'config' }, createdAt: 0 };
}

/** A store holding prompt resources by id, counting its reads. */
function fakeStore(resources: Record<string, Partial<Resource>>) {
  const reads: string[] = [];
  const store = {
    resources: {
      get(id: string) {
        reads.push(id);
        return resources[id] && ({ kind: 'prompt', id, ...resources[id] } as Resource);
      },
    },
  } as unknown as Store;
  return { store, reads };
}

describe('SystemPrompts', () => {
  const request = () =>
    parseChatRequest(JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'c' }, user('q')] }));
  const { store, reads } = fakeStore({
    p1: { name: 'solver', version: 1, content: 'v1 text' },
    p2: { name: 'solver', version: 2, content: 'v2 text' },
  });
  const prompts = new SystemPrompts(store, { a: { system_prompt: 'production' }, b: { system_prompt: 'client' } });
  const v1 = setOf('set-1', { a: 'p1', b: 'p1' });
  const v2 = setOf('set-2', { a: 'p2', b: 'p2' });

  it("replaces an opted-in agent's prompt from the set it is given, reading each set's prompt once", () => {
    expect(prompts.active).toBe(true);
    for (let i = 0; i < 3; i++) {
      const { request: sent, note } = prompts.apply(request(), 'a', v1);
      expect(sent.body.messages).toEqual([{ role: 'system', content: 'v1 text' }, user('q')]);
      expect(note).toEqual({ replaced: true, resource: 'solver@1', set_id: 'set-1', client_messages: 1 });
    }
    expect(reads).toEqual(['p1']);
    expect(prompts.apply(request(), 'a', v2).request.body.messages).toEqual([
      { role: 'system', content: 'v2 text' },
      user('q'),
    ]);
    expect(reads).toEqual(['p1', 'p2']);
  });

  it('leaves other requests as they came: no agent, an agent not opted in, no set, a set without the agent', () => {
    for (const [agent, set] of [
      [null, v1],
      ['b', v1],
      ['toString', v1],
      ['a', undefined],
      ['a', setOf('set-3', { b: 'p1' })],
    ] as const) {
      const sent = request();
      const out = prompts.apply(sent, agent, set);
      expect(out.request).toBe(sent);
      expect(out.note).toBeUndefined();
    }
    expect(new SystemPrompts(store, { b: { system_prompt: 'client' } }).active).toBe(false);
  });
});
