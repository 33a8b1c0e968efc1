import { UserError } from '../../errors.js';
import { unitName } from '../../interop/massgen/convert.js';
import {
  parseMassgenLogs,
  writeImportedRollout,
  type ImportOptions,
  type ImportSummary,
  type ImportUnitRef,
} from '../../interop/massgen/import.js';
import type { Runtime } from '../../runtime/runtime.js';

export type { ImportOptions, ImportSummary } from '../../interop/massgen/import.js';

/** Imports MassGen log directories as rollouts: every unit is read and checked before anything is written. */
export function importMassgenLogs(rt: Runtime, opts: ImportOptions): ImportSummary {
  const parsed = parseMassgenLogs(opts.dir);
  if (parsed.failed.length && !opts.skipInvalid) {
    const n = parsed.failed.length;
    throw new UserError(
      `${n} MassGen log ${n === 1 ? 'directory is' : 'directories are'} malformed; nothing was imported:\n  ${parsed.failed.map((f) => f.message).join('\n  ')}`,
      'fix or remove them, or pass --skip-invalid to import the rest',
    );
  }
  const summary: ImportSummary = {
    source: parsed.root,
    logs: parsed.logs,
    imported: [],
    skipped: parsed.skipped,
    failed: parsed.failed,
  };
  if (!parsed.converted.length) return summary;
  const store = rt.store();
  for (const { unit, rollout } of parsed.converted) {
    const ref = { log: unit.log, turn: unit.turn, attempt: unit.attempt };
    if (writeImportedRollout(store, rollout)) {
      const { gateway_calls: captured, otlp_calls: traced } = store.rollouts.get(rollout.id)?.metadata ?? {};
      summary.imported.push({
        ...ref,
        rollout_id: rollout.id,
        ...(typeof captured === 'number' ? { gateway_calls: captured } : {}),
        ...(typeof traced === 'number' ? { otlp_calls: traced } : {}),
        status: rollout.finish.status,
        winner: rollout.finish.winner ?? null,
        answers: rollout.stats.answers,
        votes: rollout.stats.votes,
        rounds: rollout.stats.rounds,
        spans: rollout.spans.length,
      });
    } else {
      summary.skipped.push({
        ...ref,
        rollout_id: rollout.id,
        reason: 'already imported',
        detail: `${unitName(unit)} is already in the store as ${rollout.id}`,
      });
    }
  }
  const order = (a: ImportUnitRef, b: ImportUnitRef) =>
    a.log.localeCompare(b.log) || a.turn - b.turn || (a.attempt ?? 0) - (b.attempt ?? 0);
  summary.skipped.sort(order);
  return summary;
}
