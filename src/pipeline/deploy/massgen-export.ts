import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../errors.js';
import { massgenExport, type MassgenExport } from '../../interop/massgen/export.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { ResourceSet } from '../../store/index.js';

/** Where a set goes as a MassGen config: `--export-massgen` (relative to the cwd), then deploy.export_massgen (relative to the config file). */
export function massgenTargets(rt: Runtime, flag?: string): string[] {
  const key = rt.config.deploy.export_massgen;
  return [...new Set([...(flag ? [path.resolve(flag)] : []), ...(key ? [path.resolve(rt.paths.baseDir, key)] : [])])];
}

/** The MassGen config of a set under today's config. */
export function massgenOf(rt: Runtime, set: ResourceSet, gateway?: MassgenGateway): MassgenExport {
  const store = rt.store();
  return massgenExport({ config: rt.config, set, resource: (id) => store.resources.get(id), gateway });
}

export interface MassgenGateway {
  url: string;
  session: string;
}

/** Before production switches: each export can be made and written (a UserError otherwise, and nothing has changed). */
export function checkMassgenTargets(rt: Runtime, set: ResourceSet, files: string[]): void {
  if (!files.length) return;
  massgenOf(rt, set);
  for (const file of files) checkTarget(file);
}

/**
 * Writes the set's MassGen config to `file` for MassGen to read: to a temporary file beside it,
 * renamed into place, so a reader sees the old config or the new one, never half of one.
 */
export function writeMassgen(
  rt: Runtime,
  set: ResourceSet,
  file: string,
  gateway?: MassgenGateway,
): { file: string; config: MassgenExport['config'] } {
  const out = massgenOf(rt, set, gateway);
  checkTarget(file);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}-${Date.now().toString(36)}.tmp`);
  try {
    fs.writeFileSync(tmp, out.yaml, { flag: 'wx' });
    fs.renameSync(tmp, file);
  } catch (err) {
    throw new UserError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return { file, config: out.config };
}

/** A new path in an existing directory, or a regular file (replaced by rename; a link or anything else is refused). */
function checkTarget(file: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch {
    if (!fs.statSync(path.dirname(file), { throwIfNoEntry: false })?.isDirectory())
      throw new UserError(`cannot write the MassGen config ${file}: directory ${path.dirname(file)} does not exist`);
    return;
  }
  if (!stat.isFile()) {
    throw new UserError(
      `refusing to write the MassGen config ${file}: it is ${stat.isSymbolicLink() ? 'a symbolic link' : stat.isDirectory() ? 'a directory' : 'not a regular file'}; it is replaced by rename, so name a regular file or a new path`,
    );
  }
}
