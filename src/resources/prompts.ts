import path from 'node:path';
import { readRegularFile } from '../config/input-file.js';
import type { RLConfig } from '../config/schema.js';
import type { Resource, Store } from '../store/index.js';

/**
 * Each configured prompt's config version: the config's text seeds version 1, and an edited text becomes
 * a new version (source: config). Which version serves each agent is the production resource set's
 * business (resources/sets.ts): a config version replaces production only where production follows the config.
 */
export function configPrompts(prompts: RLConfig['prompts'], baseDir: string, store: Store): Map<string, Resource> {
  // Every prompt file is read before anything is written: a bad one leaves the store as it was.
  const texts = new Map(
    Object.entries(prompts).map(([name, p]) => [name, p.text ?? readPrompt(path.resolve(baseDir, p.file!))]),
  );
  const resolved = new Map<string, Resource>();
  for (const [name, p] of Object.entries(prompts)) {
    const text = texts.get(name)!;
    const versions = store.resources.list('prompt').filter((r) => r.name === name);
    const fromConfig = versions.filter((r) => r.metadata.source === 'config').at(-1);
    const current =
      fromConfig && fromConfig.content === store.redactor.scrub(text)
        ? fromConfig
        : store.resources.add({
            kind: 'prompt',
            name,
            content: text,
            parentId: versions.at(-1)?.id ?? null,
            metadata: { source: 'config', file: p.file ?? null },
          });
    resolved.set(name, current);
  }
  return resolved;
}

/** Reads every prompt file now (before anything is written), so a bad one is an input error. */
export function checkPromptFiles(prompts: RLConfig['prompts'], baseDir: string): void {
  for (const p of Object.values(prompts)) if (p.file) readPrompt(path.resolve(baseDir, p.file));
}

function readPrompt(file: string): string {
  return readRegularFile(file, 'prompt file').trim();
}
