import path from 'node:path';
import { readRegularFile } from '../config/input-file.js';
import type { RLConfig } from '../config/schema.js';
import type { Resource, Store } from '../store/index.js';

/**
 * The prompt each name resolves to: the production version. The config's text seeds version 1, and an
 * edited config text becomes a new version; it is promoted only while production still follows the
 * config (a deployed version is never replaced by a config edit).
 */
export function resolvePrompts(prompts: RLConfig['prompts'], baseDir: string, store: Store): Map<string, Resource> {
  const resolved = new Map<string, Resource>();
  for (const [name, p] of Object.entries(prompts)) {
    const text = p.text ?? readPrompt(path.resolve(baseDir, p.file!));
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
  return readRegularFile(file, 'prompt file').trim();
}
