// The nights of the label-free benchmark's arm (c), whatever sends the traffic: each night the arm's traffic reaches
// the project (lib/label-free-gateway.mjs, lib/label-free-massgen.mjs), the night's `loop --once` learns from it
// without references and its own gates decide, then the references, withheld from all of it, score production
// against the base set (1) on the eval split and, when production changed, on the transfer set.
import { Runtime } from '../../dist/runtime/runtime.js';
import { loadTasks } from '../../dist/tasks/index.js';
import { againstBase, cycle, onTransfer } from './cycles.mjs';
import { progress } from './report.mjs';

/**
 * `nights` nights of `arm`. `traffic(rt, trainTasks, night, note)` sends a night's traffic with the project open and
 * returns `{ fields, summary }`: what the night's record keeps of it and one line for the log. `load()` loads the
 * arm's project; `judge()` loads it with the references on.
 */
export async function labelFreeNights({ arm, load, judge, nights, transfer, traffic }, out) {
  for (let night = 1; night <= nights; night++) {
    const note = (m) => progress(`  ${arm} night ${night}: ${m}`);
    const rt = new Runtime(load());
    let sent;
    try {
      const train = loadTasks(rt.config.tasks, rt.paths.baseDir).filter((t) => t.split === 'train');
      sent = await traffic(rt, train, night, note);
    } finally {
      await rt.close();
    }
    note(`${sent.summary}; the night's loop`);
    const ran = await cycle(load, `  ${arm} night ${night}`, (_rt, r) => ({
      captured: r.stages.collect?.captured ?? null,
    }));
    const truth = await againstBase(judge, 1);
    const entry = { night, ...sent.fields, ...ran, production: truth.production, vsBase: truth.comparison };
    if (transfer && truth.comparison) entry.transfer = await onTransfer(judge, 1, truth.production, `  night ${night}`);
    out.nights.push(entry);
  }
  return out;
}
