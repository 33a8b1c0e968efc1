import { describe, expect, it } from 'vitest';
import { constantJson, encodeObject, jsonOf } from '../../src/llm/json-text.js';

describe('JSON text from reused parts', () => {
  it('encodes objects exactly as JSON.stringify, constants included', () => {
    const tool = constantJson({
      type: 'function',
      function: { name: 'vote', parameters: { enum: undefined, required: ['a'] } },
    });
    const system = constantJson({ role: 'system', content: 'line 1\nline "2" ✓' });
    const values: Record<string, unknown>[] = [
      {
        model: 'm',
        messages: [system, { role: 'user', content: 'hi\u2028', name: undefined }],
        temperature: undefined,
        max_tokens: 5,
        tools: [tool],
        tool_choice: 'auto',
      },
      {
        a: [1, undefined, () => 1, null, Number.NaN],
        b: Symbol('x'),
        c: new Date(0),
        d: { nested: [system] },
        'k"ey': -0,
      },
      { logprobs: [{ token: 'a', logprob: -0.5 }], token_ids: [], empty: {} },
      {},
    ];
    const specs = constantJson([{ name: 'a' }, { name: 'b' }]);
    values.push({ tools: [...specs, { name: 'c' }] });
    for (const v of values) expect(encodeObject(v)).toBe(JSON.stringify(v));
    expect(jsonOf(tool)).toBe(JSON.stringify(tool));
  });

  it('uses texts the caller supplies for some values', () => {
    const request = { model: 'm', messages: [] };
    expect(encodeObject({ turn_id: 't1', request, latency_ms: 1.5 }, { request: JSON.stringify(request) })).toBe(
      JSON.stringify({ turn_id: 't1', request, latency_ms: 1.5 }),
    );
  });

  it('freezes constants deeply, so their remembered text stays true', () => {
    const spec = constantJson({ parameters: { properties: { x: { type: 'string' } } } });
    expect(Object.isFrozen(spec.parameters.properties.x)).toBe(true);
    expect(() => {
      (spec.parameters.properties.x as { type: string }).type = 'number';
    }).toThrow(TypeError);
  });
});
