import fs from 'node:fs';
import path from 'node:path';
import type { RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import type { Resource, Store } from '../store/index.js';

/**
 * The prompt each name resolves to: the production version. The config's text seeds version 1, and an
 * edited config text becomes a new version; it is promoted only while production still follows the
 * config (a deployed version is never replaced by a config edit). The store is opened (created) only
 * once every prompt has been read; the versions are written in one transaction.
 */
export async function resolvePrompts(prompts: RLConfig['prompts'], baseDir: string, openStore: () => Store): Promise<Map<string, Resource>> {
  // Every prompt file is read before the store is opened: a bad one leaves the store as it was.
  const texts = new Map(Object.entries(prompts).map(([name, p]) => [name, p.text ?? readPrompt(path.resolve(baseDir, p.file!))]));
  const store = openStore();
  return store.write(() => resolveIn(store, prompts, texts));
}

function resolveIn(store: Store, prompts: RLConfig['prompts'], texts: Map<string, string>): Map<string, Resource> {
  const resolved = new Map<string, Resource>();
  for (const [name, p] of Object.entries(prompts)) {
    const text = texts.get(name)!;
    const versions = store.resources.list('prompt').filter((r) => r.name === name);
    const fromConfig = versions.filter((r) => r.metadata.source === 'config').at(-1);
    const production = store.resources.production('prompt', name);
    if (fromConfig?.content !== store.redactor.scrub(text)) {
      const added = store.resources.add({ kind: 'prompt', name, content: text, parentId: versions.at(-1)?.id ?? null, metadata: { source: 'config', file: p.file ?? null } });
      if (!production || production.metadata.source === 'config') {
        store.resources.setProduction(added, 'deploy', production ? 'prompt text in the config changed' : 'initial version from the config');
      }
    }
    resolved.set(name, store.resources.production('prompt', name)!);
  }
  return resolved;
}

function readPrompt(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new UserError(`cannot read prompt file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}
