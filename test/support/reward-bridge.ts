import { afterEach } from 'vitest';
import type { LoadedConfig } from '../../src/config/load.js';
import { startRewardBridge, type RewardBridge } from '../../src/rewards/bridge.js';
import { openStore } from '../../src/runtime/store.js';
import type { Store } from '../../src/store/index.js';
import { configIn } from '../helpers.js';

const TASKS = [
  {
    id: 'mul',
    prompt: 'What is 6 x 7?',
    reference: '42',
    metadata: { answer_type: 'number', tolerance: 0 },
    source: 'tasks.jsonl',
    split: 'train' as const,
  },
  { id: 'open', prompt: 'Write a haiku about rain.', metadata: {}, source: 'tasks.jsonl', split: 'train' as const },
];
export const PROMPT = [{ role: 'user', content: 'What is 6 x 7?' }];

const open: { store: Store; bridge?: RewardBridge }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.bridge?.close();
    o.store.close();
  }
});

/** A project with TASKS in its store and a bridge on its rewards config. */
export async function bridgeFor(
  rewardsYaml = 'rewards:\n  weights: { exact: 1, numeric: 1, coordination: 0.2 }\n',
  opts: { maxBodyBytes?: number; concurrency?: number; signal?: AbortSignal } = {},
) {
  const loaded: LoadedConfig = configIn(rewardsYaml);
  const store = openStore(loaded);
  const entry: (typeof open)[number] = { store };
  open.push(entry);
  store.tasks.upsertMany(TASKS);
  entry.bridge = await startRewardBridge({ store, rewards: loaded.config.rewards, ...opts });
  return { loaded, bridge: entry.bridge };
}
