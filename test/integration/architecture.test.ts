import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers.js';
import { sourceFiles, sqlFindings, sqlOutsideStore, type SqlFinding } from '../support/sql-scan.js';

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

/** Runs dependency-cruiser with the project's rules (.dependency-cruiser.cjs) over src/ of `cwd`. */
async function cruise(cwd: string): Promise<Violation[]> {
  const bin = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
  const r = await execa(
    process.execPath,
    [bin, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'],
    { cwd, reject: false },
  );
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
      'src/cli/main.ts': "import { run } from '../pipeline/collect/collect.js';\nexport const main = run;\n",
      // a collect that would switch production (a type import of what review says is fine)
      'src/pipeline/collect/collect.ts':
        "import { reviewProduction } from '../review/review.js';\nimport type { Review } from '../review/review.js';\nexport const run: [number, Review?] = [reviewProduction];\n",
      // a stage reaching up into the loop that drives it
      'src/pipeline/train/train.ts': "import { runCycle } from '../loop/loop.js';\nexport const t = runCycle;\n",
      'src/pipeline/loop/loop.ts': 'export const runCycle = 1;\n',
      'src/pipeline/review/review.ts':
        'export const reviewProduction = 1;\nexport type Review = { verdict: string };\n',
      // upward: store sits below cli and datasets
      'src/store/export.ts':
        "import { main } from '../cli/main.js';\nimport { rows } from '../datasets/rows.js';\nexport const x = [main, rows];\n",
      'src/datasets/rows.ts': "import { weights } from '../resources/weights.js';\nexport const rows = weights;\n", // a sibling of its layer
      'src/resources/weights.ts': 'export const weights = 1;\n',
      'src/llm/client.ts':
        "import Database from 'better-sqlite3';\nimport ora from 'ora';\nimport { execa } from 'execa';\nexport const y = [Database, ora, execa];\n",
      // a type-only cycle
      'src/orchestrator/turn.ts': "import type { B } from './turn-action.js';\nexport type A = { b?: B };\n",
      'src/orchestrator/turn-action.ts': "import type { A } from './turn.js';\nexport type B = { a?: A };\n",
    });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const names = new Set((await cruise(dir)).map((v) => v.rule.name));
    expect([...names].sort()).toEqual([
      'database-drivers-only-in-store',
      'layer-datasets-sibling',
      'layer-store-upward',
      'no-circular',
      'only-cli-imports-cli',
      'processes-only-in-their-owners',
      'production-switches-only-in-deploy-and-review',
      'stages-below-the-loop',
      'terminal-ui-only-in-cli-ui',
    ]);
  }, 120_000);

  it('let only deploy, review, publish, the loop and the sync step switch production', async () => {
    const switchModule = 'export const switchProduction = () => 1;\n';
    const importer = (from: string) =>
      `import { switchProduction } from '${from}';\nexport const s = switchProduction;\n`;
    const dir = tempDir({
      'tsconfig.json': fs.readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8'),
      '.dependency-cruiser.cjs': fs.readFileSync(path.join(ROOT, '.dependency-cruiser.cjs'), 'utf8'),
      'src/resources/production-switch.ts': switchModule,
      // planted: a collect and the runtime reaching the switch
      'src/pipeline/collect/collect.ts': importer('../../resources/production-switch.js'),
      'src/runtime/runtime.ts': importer('../resources/production-switch.js'),
      // allowed: the sync step and deploy
      'src/pipeline/production-sync.ts': importer('../resources/production-switch.js'),
      'src/pipeline/deploy/deploy.ts': importer('../../resources/production-switch.js'),
    });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const found = (await cruise(dir)).map((v) => `${v.rule.name}: ${v.from}`).sort();
    expect(found).toEqual([
      'production-switches-only-in-deploy-and-review: src/pipeline/collect/collect.ts',
      'production-switches-only-in-deploy-and-review: src/runtime/runtime.ts',
    ]);
  }, 120_000);
});

const where = (found: SqlFinding[]) => found.map((f) => `${f.file}:${f.line}: ${f.text}`);

describe('SQL only in src/store/ (docs/architecture.md)', () => {
  it('holds for the source tree: the rest of src/ calls repository methods', () => {
    expect(where(sqlOutsideStore(ROOT))).toEqual([]);
  });

  it('recognizes the statements the store writes', () => {
    const prepares = (f: string) => /\.(prepare|exec)\(['"`]/.test(fs.readFileSync(path.join(ROOT, f), 'utf8'));
    const preparing = sourceFiles(ROOT).filter((f) => f.startsWith('src/store/') && prepares(f));
    expect(preparing.length).toBeGreaterThan(10);
    for (const file of preparing) expect(sqlFindings(ROOT, file).length, file).toBeGreaterThan(0);
  });

  it('catches SQL, the .db handle and storeDb outside the store, not prose, comments or the store itself', () => {
    const dir = tempDir({
      'src/pipeline/count.ts': [
        '// SELECT COUNT(*) FROM rollouts, in a comment, is prose',
        'export const count = (store: any) =>',
        '  store.db.prepare(`SELECT COUNT(*) FROM rollouts WHERE num > ?`).pluck().get(1);',
      ].join('\n'),
      'src/datasets/page.ts': [
        "import { storeDb } from '../store/store.js';",
        'export const q = "DELETE FROM rewards WHERE rollout_id = ?";',
      ].join('\n'),
      'src/gateway/words.ts': [
        "export const u = 'UPDATE rollouts SET status = ?';",
        'export const i = (n: number) => `INSERT INTO spans (seq) VALUES (${n})`;',
        "export const s = (cols: string[], t: string) => db.prepare(`SELECT ${cols.join(', ')} FROM ${t}`);",
        "export const help = 'select a model from the list; SELECT the rows you want';",
      ].join('\n'),
      'src/store/rollouts.ts': "export const ok = 'SELECT * FROM rollouts';\n",
    });
    expect(where(sqlOutsideStore(dir))).toEqual([
      'src/datasets/page.ts:1: storeDb',
      'src/datasets/page.ts:2: DELETE FROM rewards WHERE rollout_id = ?',
      'src/gateway/words.ts:1: UPDATE rollouts SET status = ?',
      'src/gateway/words.ts:2: `INSERT INTO spans (seq) VALUES (${n})`',
      "src/gateway/words.ts:3: `SELECT ${cols.join(', ')} FROM ${t}`",
      'src/pipeline/count.ts:3: store.db',
      'src/pipeline/count.ts:3: SELECT COUNT(*) FROM rollouts WHERE num > ?',
    ]);
  });
});
