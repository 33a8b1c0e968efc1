import type { Runtime } from '../../runtime/runtime.js';
import { withInterrupt } from '../interrupt.js';
import { formatDuration } from '../ui/format.js';
import type { Ui } from '../ui/output.js';

/** `train weights` with config roles: every role with a weight recipe on its own line, one table row per role. */
export async function trainRolesCommand(
  ui: Ui,
  rt: Runtime,
  opts: { all?: boolean; maxSteps?: number },
): Promise<void> {
  const { trainRoles } = await import('../../pipeline/train/roles.js');
  const bar = ui.progress('preparing');
  const stopping = 'stopping: the trainer saves a resumable checkpoint first (this can take a minute)';
  try {
    const r = await withInterrupt(ui, stopping, (signal) =>
      trainRoles(rt, {
        ...opts,
        signal,
        onStage: (m) => bar.update(m),
        onProgress: (p) =>
          bar.update(`step ${p.step}${p.totalSteps ? `/${p.totalSteps}` : ''}  loss ${p.loss?.toFixed(4) ?? '—'}`),
      }),
    );
    bar.stop();
    if (ui.opts.json) return ui.json(r);
    ui.table(
      ['role', 'recipe', 'line', 'status', 'examples', 'steps', 'time', 'weights / why not'],
      r.roles.map((x) => [
        x.role,
        x.algo,
        x.line ?? '—',
        x.status,
        x.result?.dataset.rows ?? '—',
        x.result?.steps ?? '—',
        x.result ? formatDuration(x.result.durationMs) : '—',
        x.result
          ? `${x.result.weight.name} v${x.result.weight.version} (${x.result.checkpoint.id})`
          : (x.learned ?? (x.reason ?? '').split('\n')[0]!),
      ]),
    );
    if (r.candidateSet)
      ui.print(`  candidate: set v${r.candidateSet.version} (production with what every trained role learned)`);
    else ui.print('  no role was trained: nothing to evaluate');
  } catch (err) {
    bar.stop();
    throw err;
  }
}
