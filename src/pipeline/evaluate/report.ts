import fs from 'node:fs';
import path from 'node:path';
import { verifyingFamilies } from '../../config/sections/rewards.js';
import { UserError } from '../../errors.js';
import { primaryMetric } from '../../evaluation/compare.js';
import { gatherReport } from '../../report/data.js';
import { renderReport } from '../../report/html.js';
import type { Runtime } from '../../runtime/runtime.js';
import { curriculumStatus } from '../collect/curriculum.js';

const FILE_ERRORS = new Set(['EACCES', 'EPERM', 'ENOENT', 'ENOTDIR', 'EISDIR', 'EROFS', 'ENOSPC']);

export interface ReportOptions {
  /** The evaluation to show (default: the newest one with results). */
  evalRunId?: string;
  /** Where to write (default: <data_dir>/reports/eval-<id>.html, or report.html with no evaluation). */
  out?: string;
}

/**
 * Rebuilds the HTML report from the store: one self-contained file, written to a temp file and renamed
 * (a reader never sees half a page); its path is recorded on the evaluation it shows.
 */
export async function writeReport(
  rt: Runtime,
  opts: ReportOptions = {},
): Promise<{ file: string; evalRunId: string | null }> {
  const store = rt.existingStore();
  const data = gatherReport(store, {
    evalRunId: opts.evalRunId,
    metric: primaryMetric(rt.config.eval.metric),
    title: rt.config.project.name,
    curriculum: curriculumStatus(rt),
    verifying: verifyingFamilies(rt.config.rewards),
  });
  const evalRunId = data.selected?.id ?? null;
  const file = path.resolve(
    opts.out ?? path.join(rt.paths.dataDir, 'reports', evalRunId ? `eval-${evalRunId}.html` : 'report.html'),
  );
  const html = renderReport(data);
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    await fs.promises.writeFile(tmp, html);
    await fs.promises.rename(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code && FILE_ERRORS.has(code))
      throw new UserError(`cannot write the report to ${file}: ${code}`, 'pass a writable path with -o');
    throw err;
  }
  if (evalRunId) store.evaluations.setReport(evalRunId, file);
  return { file, evalRunId };
}
