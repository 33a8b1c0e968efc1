import type { CopyProgress, CopyResult } from '../../store/index.js';
import { wholeNumber } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';
import type { Ui } from '../ui/output.js';

interface CopyFlags {
  to: string;
  passwordEnv?: string;
  batchSize: string;
}

/** Progress lines at most this often (a batch is a fraction of a second). */
const PROGRESS_EVERY_MS = 2000;

export const registerStore: Register = (program, ctx) => {
  const store = program
    .command('store')
    .description('the trace store itself: copy it to PostgreSQL or to a SQLite file');
  store
    .command('copy')
    .description(
      'copy the configured store (store.url or store.path) to an empty PostgreSQL database or SQLite file; resumable, verified table by table',
    )
    .requiredOption('--to <target>', 'postgres://user@host:5432/db (no password in it) or a SQLite file')
    .option(
      '--password-env <name>',
      "the environment variable with the target's PostgreSQL password (default: store.password_env)",
    )
    .option('--batch-size <n>', 'rows per committed batch', '500')
    .action(async (flags: CopyFlags) => {
      const { ui, runtime } = ctx();
      const batchSize = wholeNumber('--batch-size', flags.batchSize, 100_000);
      const [{ copyStoreTo, mismatch }, { redactUrl }] = await Promise.all([
        import('../../pipeline/utilities/store-copy.js'),
        import('../../store/index.js'),
      ]);
      const rt = await runtime();
      const progress = ui.opts.json ? undefined : ui.progress(`copying the store to ${redactUrl(flags.to)}`);
      let shown = { table: '', at: 0 };
      const onProgress = (p: CopyProgress) => {
        if (p.table === shown.table && Date.now() - shown.at < PROGRESS_EVERY_MS) return;
        shown = { table: p.table, at: Date.now() };
        progress?.update(`${p.table}: ${p.copied} of ${p.total} rows`);
      };
      let r: CopyResult;
      try {
        r = await withInterrupt(
          ui,
          'stopping after this batch; run the same command again to go on from there',
          (signal) => copyStoreTo(rt, { to: flags.to, passwordEnv: flags.passwordEnv, batchSize, signal, onProgress }),
        );
      } catch (err) {
        progress?.fail('copy stopped');
        throw err;
      }
      progress?.stop();
      if (ui.opts.json) ui.json(r);
      else render(ui, r);
      if (!r.ok) throw mismatch(r);
    });
};

function render(ui: Ui, r: CopyResult): void {
  const kept = r.resumed ? ` (resumed: ${r.kept} row(s) were copied by an earlier run)` : '';
  ui.print(`${r.source} → ${r.target} (schema v${r.schemaVersion}): ${r.copied} row(s) copied${kept}`);
  ui.table(
    ['table', 'source rows', 'target rows', 'source sha256', 'target sha256', 'same'],
    r.tables.map((t) => [
      t.table,
      t.sourceRows,
      t.targetRows,
      t.sourceHash.slice(0, 12),
      t.targetHash.slice(0, 12),
      t.ok ? ui.c.green('✓') : ui.c.red('✗'),
    ]),
  );
  if (r.ok) ui.print(`${ui.c.green('✓')} verified: every table has the same rows on both sides`);
}
