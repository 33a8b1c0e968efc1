import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/gateway/backends.js';
import { CanaryModels } from '../../src/gateway/canary-models.js';
import { SetModels } from '../../src/gateway/set-models.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { withAgentWeights } from '../../src/resources/sets.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import type { ResourceSet } from '../../src/store/index.js';
import { configIn } from '../helpers.js';
import { startScriptedServer } from '../support/scripted-server.js';

// The gateway asks a local model's server, for each agent a request names, for the adapter the arm's set gives that
// agent: production's loaded at start (by name beside the served weights), a canary's loaded on first use.
const CONFIG = `models:
  mine: { model: smol, local: { weights: ./base } }
agents:
  - { id: solver, model: mine }
  - { id: checker, model: mine }
`;

describe('the gateway and roles that share one local model', () => {
  it('routes each named agent to its own adapter on production and on a canary; an unnamed request to the served name', async () => {
    const stub = await startScriptedServer(() => ({ content: 'ok' }));
    const loaded = configIn(CONFIG, {
      'base/config.json': '{}',
      'checker/adapter_config.json': '{}',
    });
    try {
      await withRuntime(loaded, async (rt) => {
        const store = rt.store();
        const production0 = syncProduction(rt);
        const base = store.resources.get(production0.members.agents.solver!.weights!)!;
        const adapter = (name: string) =>
          registerCheckpoint(store, {
            path: `${loaded.paths.baseDir}/${name}`,
            name,
            algo: 'sft',
            adapter: true,
            baseModel: './base',
            baseResourceId: base.id,
            basePath: base.path!,
          }).resource;
        const [checker1, checker2] = [adapter('checker'), adapter('checker')];
        const production = store.sets.add(
          withAgentWeights(production0.members, ['checker'], checker1.id),
          { kind: 'candidate' },
          production0.id,
        );
        const canary = store.sets.add(
          withAgentWeights(production.members, ['checker'], checker2.id),
          { kind: 'candidate' },
          production.id,
        );
        expect(rt.servingPlan('mine', production)).toMatchObject({
          primary: { id: base.id },
          named: [{ name: 'checker-v1' }],
          agentModel: { solver: 'smol', checker: 'checker-v1' },
        });

        const backend = { name: 'mine', model: 'smol', baseUrls: [stub.baseUrl] } as unknown as Backend;
        const setModels = new SetModels(rt);
        expect(setModels.production(backend, production, 'checker')).toBe('checker-v1');
        expect(setModels.production(backend, production, 'solver')).toBe('smol');
        expect(setModels.production(backend, production, null)).toBe('smol');

        const errors: unknown[] = [];
        const canaries = new CanaryModels(rt, setModels, (e) => errors.push(e));
        const asked = (agent: string | null, set: ResourceSet = canary) =>
          canaries.model(backend, set, production, agent);
        expect(await asked('checker')).toBe('checker-v2');
        expect(await asked('solver')).toBe('smol'); // the canary gives the solver production's weights
        expect(await asked(null)).toBeNull(); // the model's agents differ and the request names none
        expect(errors.map(String)).toEqual([expect.stringMatching(/names none of them/)]);
        expect(stub.loraCalls).toEqual([
          { action: 'load', lora_name: 'checker-v2', lora_path: `${loaded.paths.baseDir}/checker` },
        ]);
      });
    } finally {
      await stub.close();
    }
  });
});
