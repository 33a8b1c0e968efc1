// Rewrites the generated parts of docs/configuration.md (from the zod config schema) and docs/commands.md
// (from the commander program) after a build: `npm run docs`. test/unit/docs-reference.test.ts fails when
// the committed pages differ from what this would write.
import fs from 'node:fs';
import { z } from 'zod';
import { buildProgram } from '../dist/cli/program.js';
import { configSchema } from '../dist/config/schema.js';
import { commandReference } from './docs/command-reference.mjs';
import { configReference } from './docs/config-reference.mjs';
import { replaceGenerated } from './docs/markdown.mjs';

const pages = {
  'docs/configuration.md': configReference(z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' })),
  'docs/commands.md': commandReference(buildProgram().program),
};
for (const [file, generated] of Object.entries(pages)) {
  const url = new URL(`../${file}`, import.meta.url);
  const page = fs.readFileSync(url, 'utf8');
  const text = replaceGenerated(page, generated, file);
  if (text !== page) {
    fs.writeFileSync(url, text);
    console.log(`wrote ${file}`);
  }
}
