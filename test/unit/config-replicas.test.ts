import { describe, expect, it } from 'vitest';
import { remoteUrls } from '../../src/config/schema.js';
import { settingsHash } from '../../src/evaluation/keys.js';
import { massgenExport } from '../../src/interop/massgen/export.js';
import type { Resource, ResourceSet } from '../../src/store/index.js';
import { configIn, configIssues } from '../helpers.js';

const model = (m: string) => `agents: [{ id: a, model: stub }]\nmodels:\n  stub: ${m}\n`;
const TWO = '["http://h1:8000/v1", "http://h2:8000/v1"]';

describe('models.<key>.base_urls', () => {
  it('lists two or more replicas of one model; base_url still names one', () => {
    const { config } = configIn(model(`{ base_urls: ${TWO}, model: m }`), {}, {});
    expect(remoteUrls(config.models.stub!)).toEqual(['http://h1:8000/v1', 'http://h2:8000/v1']);
    const single = configIn(model('{ base_url: "http://h1:8000/v1", model: m }'), {}, {}).config.models.stub!;
    expect(single.base_urls).toBeUndefined();
    expect(remoteUrls(single)).toEqual(['http://h1:8000/v1']);
  });

  it('refuses base_urls with base_url or local, fewer than two, a bad URL and a repeated replica, each issue with its path', () => {
    expect(configIssues(model(`{ base_url: "http://h1:8000/v1", base_urls: ${TWO}, model: m }`))).toEqual([
      expect.stringMatching(
        /^models\.stub\.base_urls: base_url and base_urls are exclusive: list every replica under base_urls \(massgen-rl\.yaml:3:\d+\)$/,
      ),
    ]);
    expect(
      configIssues(model(`{ base_urls: ${TWO}, model: m, local: { weights: "builtin:smollm2-135m-instruct" } }`)),
    ).toEqual([expect.stringMatching(/^models\.stub\.local: base_urls and local are exclusive/)]);
    expect(configIssues(model('{ base_urls: ["http://h1:8000/v1"], model: m }'))).toEqual([
      expect.stringMatching(/^models\.stub\.base_urls: list at least 2 replicas \(for one endpoint use base_url\)/),
    ]);
    expect(configIssues(model('{ base_urls: ["http://h1:8000/v1", "file:///etc/passwd", "h3"], model: m }'))).toEqual([
      expect.stringMatching(/^models\.stub\.base_urls\[1\]: must be an http:\/\/ or https:\/\/ URL/),
      expect.stringMatching(/^models\.stub\.base_urls\[2\]: must be an http:\/\/ or https:\/\/ URL/),
    ]);
    expect(
      configIssues(
        model(
          '{ base_urls: ["http://h1:8000/v1", "http://h2:8000/v1", "http://H1:80/v1", "http://h1:8000/v1/"], model: m }',
        ),
      ),
    ).toEqual([
      expect.stringMatching(
        /^models\.stub\.base_urls\[3\]: http:\/\/h1:8000\/v1\/ is listed already \(base_urls\[0\]\); each replica once/,
      ),
    ]);
  });

  it('keeps the evaluation keys of base_url models; replicas count as a set', () => {
    const hash = (m: string) => settingsHash(configIn(model(m), {}, {}).config);
    // The key this config had before base_urls existed: stored evaluation results stay reusable.
    expect(hash('{ base_url: "http://h1:8000/v1", model: m }')).toBe('5d71d5c1e6082e43');
    expect(hash(`{ base_urls: ${TWO}, model: m }`)).toBe(
      hash('{ base_urls: ["http://h2:8000/v1", "http://h1:8000/v1"], model: m }'),
    );
    expect(hash(`{ base_urls: ${TWO}, model: m }`)).not.toBe(
      hash('{ base_urls: ["http://h1:8000/v1", "http://h3:8000/v1"], model: m }'),
    );
    expect(hash(`{ base_urls: ${TWO}, model: m }`)).not.toBe(hash('{ base_url: "http://h1:8000/v1", model: m }'));
  });

  it('exports the first replica to MassGen, whose backend names one endpoint, and says so', () => {
    const { config } = configIn(
      `${model(`{ base_urls: ${TWO}, model: m }`)}prompts: { solver: { text: Solve. } }\n`,
      {},
      {},
    );
    const prompt: Resource = {
      id: 'pr_1',
      kind: 'prompt',
      name: 'solver',
      version: 1,
      parentId: null,
      content: 'Solve.',
      path: null,
      metadata: {},
      createdAt: 0,
    };
    const set: ResourceSet = {
      id: 'rs_1',
      version: 1,
      parentId: null,
      hash: 'h',
      origin: { kind: 'manual' },
      createdAt: 0,
      members: { agents: { a: { prompt: 'pr_1', weights: null, from_config: { prompt: false, weights: false } } } },
    };
    const out = massgenExport({
      config,
      set,
      resource: (id) => (id === 'pr_1' ? prompt : undefined),
      generatedAt: new Date(0),
    });
    expect(out.config.agents[0]!.backend.base_url).toBe('http://h1:8000/v1');
    expect(out.notes.a![0]).toContain(
      'models.stub has 2 replicas (base_urls) and a MassGen backend names one: the first is used, not http://h2:8000/v1',
    );
    expect(out.yaml).toContain('the first is used, not http://h2:8000/v1');
  });
});
