import fs from 'node:fs';
import path from 'node:path';
import type { AuditAction, AuditInput, ResourceSet, SetMembers, Store } from '../store/index.js';
import { describeMembers } from './sets.js';

export const PRODUCTION_FILE = 'production.json';

export interface SwitchInput {
  to: ResourceSet;
  action: AuditAction;
  trigger: AuditInput['trigger'];
  reason: string;
  evalRunId?: string | null;
  detail?: Record<string, unknown>;
  /** End the canary in the same transaction (it became production, or production moved past it). */
  clearCanary?: boolean;
}

/**
 * Points production at a set: the pointer, each resource's own production pointer and the audit record
 * change in one transaction (production is the old set or the new one, never a mix); the file for
 * outside tools is then replaced by rename. Returns the audit record id.
 */
export function switchProduction(store: Store, dataDir: string, input: SwitchInput): number {
  const id = store.transaction(() => {
    const before = store.sets.pointer('production')?.setId ?? null;
    store.sets.setPointer('production', input.to.id, null, input.evalRunId ?? null);
    if (input.clearCanary) store.sets.setPointer('canary', null);
    syncResourcePointers(store, input.to.members, input.reason);
    return store.audit.add({
      action: input.action,
      trigger: input.trigger,
      beforeSet: before,
      afterSet: input.to.id,
      evalRunId: input.evalRunId,
      reason: input.reason,
      detail: input.detail,
    });
  });
  writeProductionFile(store, dataDir);
  return id;
}

/** Each resource's production pointer follows the production set (what `status`, training's start weights and prune read). */
function syncResourcePointers(store: Store, members: SetMembers, reason: string): void {
  const ids = new Set(
    [
      ...Object.values(members.agents).flatMap((m) => [m.prompt, m.weights]),
      ...Object.values(members.policies ?? {}),
      members.presenter,
    ].filter((x): x is string => Boolean(x)),
  );
  for (const id of ids) {
    const r = store.resources.get(id);
    if (r && store.resources.production(r.kind, r.name)?.id !== r.id)
      store.resources.setProduction(r, 'deploy', reason);
  }
}

/** `<data_dir>/production.json`: the production set in full, for tools outside massgen-rl; written to a temp file and renamed. */
export function writeProductionFile(store: Store, dataDir: string): string {
  const pointer = store.sets.pointer('production');
  const set = pointer && store.sets.get(pointer.setId);
  const file = path.join(dataDir, PRODUCTION_FILE);
  if (!set) return file;
  const resource = (id: string | null) => {
    const r = id ? store.resources.get(id) : undefined;
    return r
      ? {
          id: r.id,
          name: r.name,
          version: r.version,
          ...(r.kind === 'weight'
            ? { path: r.path, adapter: Boolean(r.metadata.adapter), base_path: r.metadata.base_path ?? null }
            : {}),
        }
      : null;
  };
  const body = {
    set: { id: set.id, version: set.version, origin: set.origin },
    since: pointer.updatedAt,
    agents: Object.fromEntries(
      Object.entries(set.members.agents).map(([a, m]) => [
        a,
        { prompt: resource(m.prompt), weights: resource(m.weights) },
      ]),
    ),
    ...(set.members.presenter === undefined ? {} : { presenter: { prompt: resource(set.members.presenter) } }),
    summary: describeMembers(store, set.members),
  };
  fs.mkdirSync(dataDir, { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, `${JSON.stringify(body, null, 2)}\n`);
  fs.renameSync(tmp, file);
  return file;
}
