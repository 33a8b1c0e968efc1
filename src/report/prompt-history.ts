import { diffWords } from 'diff';
import type { Store } from '../store/index.js';

export interface PromptChange {
  name: string;
  version: number;
  parentVersion: number;
  /** Where the version came from: apo (prompt optimization), config, … */
  source: string;
  promotedAt: number;
  action: string;
  setVersion: number | null;
  critique: string | null;
  /** Word diff against the parent version. */
  parts: { value: string; added: boolean; removed: boolean }[];
}

const PROMOTIONS = ['deploy', 'force-deploy', 'canary-promote'] as const;

/** Every prompt version that reached production through a deploy, with its word diff against its parent, newest first. */
export function promptHistory(store: Store): PromptChange[] {
  const seen = new Set<string>();
  const out: PromptChange[] = [];
  for (const a of store.audit.list({ limit: 500, actions: [...PROMOTIONS] }).reverse()) {
    const set = a.afterSet ? store.sets.get(a.afterSet) : undefined;
    if (!set) continue;
    const ids = [
      ...Object.values(set.members.agents).map((m) => m.prompt),
      ...(set.members.presenter ? [set.members.presenter] : []),
    ];
    for (const id of new Set(ids)) {
      const r = store.resources.get(id);
      const parent = r?.parentId ? store.resources.get(r.parentId) : undefined;
      if (!r || !parent || seen.has(id)) continue;
      seen.add(id);
      out.push({
        name: r.name,
        version: r.version,
        parentVersion: parent.version,
        source: typeof r.metadata.source === 'string' ? r.metadata.source : 'manual',
        promotedAt: a.createdAt,
        action: a.action,
        setVersion: set.version,
        critique: typeof r.metadata.critique === 'string' ? r.metadata.critique : null,
        parts: diffWords(parent.content ?? '', r.content ?? '').map((p) => ({
          value: p.value,
          added: Boolean(p.added),
          removed: Boolean(p.removed),
        })),
      });
    }
  }
  return out.reverse();
}
