import { describe, expect, it } from 'vitest';
import { settingsHash } from '../../src/evaluation/keys.js';
import { configIn } from '../helpers.js';

const local = (extra: string) =>
  `agents: [{ id: a, model: m }]\nmodels:\n  m: { model: m, local: { weights: "builtin:smollm2-135m-instruct"${extra} } }\n`;
const hash = (yaml: string) => settingsHash(configIn(yaml, {}, {}).config);

describe('the settings a stored evaluation result is reused under', () => {
  it('an adapter served merged and served unmerged are measured apart', () => {
    expect(hash(local(''))).toBe(hash(local(', merge_adapter: true')));
    expect(hash(local(', merge_adapter: false'))).not.toBe(hash(local('')));
  });

  it('what does not change the answers keeps the key: the port and the startup timeout', () => {
    expect(hash(local(', port: 9001, startup_timeout_s: 60'))).toBe(hash(local('')));
  });
});
