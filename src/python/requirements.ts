import fs from 'node:fs';
import path from 'node:path';
import { sha256 } from '../util/hash.js';
import { PYTHON_DIR } from './module.js';

export interface Requirements {
  /** Pinned runtime dependencies, then test dependencies, as pip specifiers. */
  specs: string[];
  /** Packages built from source for this CPU by massgen_rl_serving.llama_setup (llama-cpp-python). */
  built: string[];
  hash: string;
}

/** Reads the pinned dependency lists from python/pyproject.toml (the `dependencies`, `test` and `llama_cpp` arrays). */
export function readRequirements(pyproject = path.join(PYTHON_DIR, 'pyproject.toml')): Requirements {
  const text = fs.readFileSync(pyproject, 'utf8');
  const specs = [...tomlArray(text, 'dependencies'), ...tomlArray(text, 'test')];
  const built = tomlArray(text, 'llama_cpp');
  if (!specs.length) throw new Error(`${pyproject}: no dependencies found`);
  return { specs, built, hash: sha256([...specs, ...built].join('\n')).slice(0, 16) };
}

function tomlArray(text: string, key: string): string[] {
  const match = new RegExp(`^${key}\\s*=\\s*\\[([^\\]]*)\\]`, 'm').exec(text);
  if (!match) return [];
  return [...match[1]!.matchAll(/"([^"]+)"|'([^']+)'/g)].map((m) => (m[1] ?? m[2])!);
}

/** `name==version` → { name: version } for the exact pins. */
export function pinnedVersions(specs: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    specs
      .map((s) => /^([A-Za-z0-9_.-]+)\s*==\s*([^\s;,]+)/.exec(s))
      .filter((m) => m !== null)
      .map((m) => [m![1]!.toLowerCase(), m![2]!]),
  );
}
