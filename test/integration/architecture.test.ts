import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers.js';

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

/** Runs dependency-cruiser with the project's rules (.dependency-cruiser.cjs) over src/ of `cwd`. */
async function cruise(cwd: string): Promise<Violation[]> {
  const bin = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
  const r = await execa(process.execPath, [bin, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], { cwd, reject: false });
  if (!r.stdout.trim().startsWith('{')) throw new Error(`dependency-cruiser failed (exit ${r.exitCode}): ${r.stderr}`);
  const report = JSON.parse(r.stdout) as { summary: { violations: Violation[]; totalCruised: number } };
  expect(report.summary.totalCruised).toBeGreaterThan(0);
  return report.summary.violations;
}

const show = (vs: Violation[]) => vs.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).join('\n');

describe('import rules (docs/architecture.md)', () => {
  it('hold for the source tree', async () => {
    const violations = await cruise(ROOT);
    expect(violations, show(violations)).toEqual([]);
  }, 120_000);

  it('catch a forbidden import of every kind', async () => {
    const dir = tempDir({
      'tsconfig.json': fs.readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8'),
      '.dependency-cruiser.cjs': fs.readFileSync(path.join(ROOT, '.dependency-cruiser.cjs'), 'utf8'),
      'src/cli/main.ts': "import { run } from '../pipeline/collect.js';\nexport const main = run;\n",
      'src/pipeline/collect.ts': "export const run = 1;\n",
      // upward: store sits below cli and datasets
      'src/store/export.ts': "import { main } from '../cli/main.js';\nimport { rows } from '../datasets/rows.js';\nexport const x = [main, rows];\n",
      'src/datasets/rows.ts': "import { weights } from '../resources/weights.js';\nexport const rows = weights;\n", // a sibling of its layer
      'src/resources/weights.ts': "export const weights = 1;\n",
      'src/llm/client.ts': "import Database from 'better-sqlite3';\nimport ora from 'ora';\nimport { execa } from 'execa';\nexport const y = [Database, ora, execa];\n",
      // a type-only cycle
      'src/orchestrator/turn.ts': "import type { B } from './turn-action.js';\nexport type A = { b?: B };\n",
      'src/orchestrator/turn-action.ts': "import type { A } from './turn.js';\nexport type B = { a?: A };\n",
    });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const names = new Set((await cruise(dir)).map((v) => v.rule.name));
    expect([...names].sort()).toEqual([
      'database-drivers-only-in-store', 'layer-datasets-sibling', 'layer-store-upward', 'no-circular', 'only-cli-imports-cli',
      'processes-only-in-their-owners', 'terminal-ui-only-in-cli-ui',
    ]);
  }, 120_000);
});
