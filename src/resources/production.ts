import fs from 'node:fs';
import path from 'node:path';
import type { AuditInput, ResourceSet, Store } from '../store/index.js';
import { ResourceSetRepository } from '../store/resource-sets.js';
import { PRODUCTION_FILE, switchProduction, writeProductionFile } from './production-switch.js';
import { configMembers, reconcile, type SetContext } from './sets.js';

/**
 * The production set, brought up to date with the config first: created from the config on first use;
 * a config edit to a member that still follows the config becomes a new production set (audited).
 */
export function productionSet(ctx: SetContext, dataDir: string, trigger: AuditInput['trigger'] = 'cli'): ResourceSet {
  const { store } = ctx;
  const implied = configMembers(ctx);
  const pointer = store.sets.pointer('production');
  const current = pointer ? store.sets.get(pointer.setId) : undefined;
  const members = reconcile(current?.members, implied);
  if (current && ResourceSetRepository.hash(members) === current.hash) {
    if (!productionFileCurrent(dataDir, current)) writeProductionFile(store, dataDir);
    return current;
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
  return set;
}

/** The canary set and the share of rollouts it serves, when a canary runs. */
export function canary(store: Store): { set: ResourceSet; fraction: number } | undefined {
  const p = store.sets.pointer('canary');
  const set = p && store.sets.get(p.setId);
  return set && p.fraction ? { set, fraction: p.fraction } : undefined;
}

function productionFileCurrent(dataDir: string, set: ResourceSet): boolean {
  try {
    const body = JSON.parse(fs.readFileSync(path.join(dataDir, PRODUCTION_FILE), 'utf8')) as { set?: { id?: string } };
    return body.set?.id === set.id;
  } catch {
    return false;
  }
}
