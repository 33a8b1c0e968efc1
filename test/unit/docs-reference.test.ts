import { Command, Option } from 'commander';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { commandReference } from '../../scripts/docs/command-reference.mjs';
import { configReference } from '../../scripts/docs/config-reference.mjs';
import { BEGIN, END, replaceGenerated } from '../../scripts/docs/markdown.mjs';
import { buildProgram } from '../../src/cli/program.js';
import { configSchema } from '../../src/config/schema.js';

const read = (file: string) => fs.readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });

describe('generated references', () => {
  it('docs/configuration.md is what the config schema generates (else: npm run docs)', () => {
    const page = read('docs/configuration.md');
    expect(replaceGenerated(page, configReference(jsonSchema(configSchema)), 'docs/configuration.md')).toBe(page);
  });

  it('docs/commands.md is what the CLI generates (else: npm run docs)', () => {
    const page = read('docs/commands.md');
    expect(replaceGenerated(page, commandReference(buildProgram().program), 'docs/commands.md')).toBe(page);
  });

  it('lists every config key with its type, bounds, default and description', () => {
    const schema = z.strictObject({
      store: z.strictObject({
        busy_timeout_ms: z.int().positive().max(3_600_000).default(15_000).describe('wait for a | lock'),
        name: z.string().describe('a <name>'),
      }),
      models: z.record(z.string(), z.strictObject({ url: z.url().optional(), mode: z.enum(['a', 'b']).default('a') })),
    });
    const text = configReference(jsonSchema(schema));
    expect(text).toContain('| `store.busy_timeout_ms` | integer 1–3,600,000 | `15000` | wait for a \\| lock |');
    expect(text).toContain('| `store.name` | string | required | a &lt;name> |');
    expect(text).toContain('| `models.<name>.url` | URL |  |  |');
    expect(text).toContain('| `models.<name>.mode` | `a` \\| `b` | `a` |  |');
  });

  it('lists every command with its arguments and options, hidden ones left out', () => {
    const program = new Command('tool').option('--json', 'as JSON');
    const sub = program.command('copy').description('copy it').argument('<from>', 'the source');
    sub.option('--batch-size <n>', 'rows per batch', '500').addOption(new Option('--old').hideHelp());
    program.command('secret', { hidden: true });
    const text = commandReference(program);
    expect(text).toContain('| `--json` | as JSON |');
    expect(text).toContain('| [`tool copy`](#tool-copy) | copy it |');
    expect(text).toContain('| `<from>` | the source |');
    expect(text).toContain('| `--batch-size <n>` | rows per batch (default: "500") |');
    expect(text).not.toContain('--old');
    expect(text).not.toContain('secret');
  });

  it('replaces only what lies between the markers, and refuses a page without them', () => {
    const page = `# Title\n\nhand-written\n\n${BEGIN}\n\nold\n\n${END}\n\nafter\n`;
    const expected = `# Title\n\nhand-written\n\n${BEGIN}\n\nnew\n\n${END}\n\nafter\n`;
    expect(replaceGenerated(page, 'new', 'x.md')).toBe(expected);
    expect(() => replaceGenerated('# Title\n', 'new', 'x.md')).toThrow(/x\.md: the markers/);
  });
});
