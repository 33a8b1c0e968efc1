import fs from 'node:fs';
import path from 'node:path';
import { PRODUCTION_FILE, switchProduction, writeProductionFile } from '../resources/production-switch.js';
import { configMembers, reconcile } from '../resources/sets.js';
import type { Runtime } from '../runtime/runtime.js';
import type { AuditInput, ResourceSet } from '../store/index.js';
import { ResourceSetRepository } from '../store/resource-sets.js';

const synced = new WeakSet<Runtime>();

/**
 * The one step that brings production up to date with the config, once per runtime (a command or a loop cycle):
 * created from the config on first use; a config edit to a member that still follows the config becomes a new
 * production set (audited). Every stage that reads production runs it first; `rt.production()` only reads.
 */
export function syncProduction(rt: Runtime, trigger: AuditInput['trigger'] = 'cli'): ResourceSet {
  if (!synced.has(rt)) {
    followConfig(rt, trigger);
    synced.add(rt);
  }
  return rt.production();
}

function followConfig(rt: Runtime, trigger: AuditInput['trigger']): void {
  const ctx = rt.setContext();
  const { store } = ctx;
  const dataDir = rt.paths.dataDir;
  const pointer = store.sets.pointer('production');
  const current = pointer ? store.sets.get(pointer.setId) : undefined;
  const members = reconcile(current?.members, configMembers(ctx));
  if (current && ResourceSetRepository.hash(members) === current.hash) {
    if (!productionFileCurrent(dataDir, current)) writeProductionFile(store, dataDir);
    return;
  }
  const changed = current
    ? Object.keys(members.agents).filter(
        (a) => JSON.stringify(members.agents[a]) !== JSON.stringify(current.members.agents[a]),
      )
    : [];
  const presenterChanged = current !== undefined && members.presenter !== current.members.presenter;
  const set = store.sets.add(
    members,
    { kind: 'config', ...(current ? { changed_agents: changed } : {}) },
    current?.id ?? null,
  );
  switchProduction(store, dataDir, {
    to: set,
    action: current ? 'config' : 'init',
    trigger,
    reason: current
      ? `the config changed for ${[...changed, ...(presenterChanged ? ['the presenter'] : [])].join(', ') || 'the team'}`
      : 'initial production set from the config',
  });
}

function productionFileCurrent(dataDir: string, set: ResourceSet): boolean {
  try {
    const body = JSON.parse(fs.readFileSync(path.join(dataDir, PRODUCTION_FILE), 'utf8')) as { set?: { id?: string } };
    return body.set?.id === set.id;
  } catch {
    return false;
  }
}
