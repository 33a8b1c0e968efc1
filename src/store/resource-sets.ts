import { canonicalJson, sha256 } from '../util/hash.js';
import { newId } from '../util/ids.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';

/** What serves one agent: its prompt version and (for locally served models) its weight version. */
export interface SetMember {
  prompt: string;
  /** A weight resource id, or null for a model served elsewhere (base_url). */
  weights: string | null;
  /** Which of the two still follows the config (a config edit replaces it; a deployed resource stays). */
  from_config: { prompt: boolean; weights: boolean };
}

export interface SetMembers {
  agents: Record<string, SetMember>;
  /** Policy resource id per decision (routing, stop, tool, delegate); absent: the team decides as it always has. */
  policies?: Record<string, string>;
  /** The prompt resource id the winner presents the final answer with (orchestrator.presenter_prompt); absent: its own system prompt. */
  presenter?: string;
  /** true: the presenter follows the config (a config edit replaces it); otherwise (a deployed version) it stays. */
  presenter_from_config?: boolean;
}

/** What produced a set: the config, a training run, a prompt-optimization run, a manual edit. */
export interface SetOrigin {
  kind: 'config' | 'training' | 'prompt' | 'policy' | 'manual' | 'candidate';
  [key: string]: unknown;
}

export interface ResourceSet {
  id: string;
  version: number;
  parentId: string | null;
  members: SetMembers;
  hash: string;
  origin: SetOrigin;
  createdAt: number;
}

export type SetRole = 'production' | 'canary';

export interface SetPointer {
  role: SetRole;
  setId: string;
  fraction: number | null;
  evalRunId: string | null;
  updatedAt: number;
}

interface SetRaw {
  id: string;
  version: number;
  parent_id: string | null;
  members: string;
  members_hash: string;
  origin: string;
  created_at: number;
}

/** Versioned resource sets, and the production and canary pointers. */
export class ResourceSetRepository {
  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {}

  static hash(members: SetMembers): string {
    return sha256(canonicalJson(members)).slice(0, 16);
  }

  /** What the set serves, without how it follows the config: two sets serving the same resources are measured alike. */
  static servingHash(members: SetMembers): string {
    const agents = Object.fromEntries(
      Object.entries(members.agents).map(([a, m]) => [a, { prompt: m.prompt, weights: m.weights }]),
    );
    // Sets without policies or a presenter keep the hash they always had (stored evaluation results stay reusable).
    const policies = members.policies && Object.keys(members.policies).length ? members.policies : undefined;
    const { presenter } = members;
    if (!policies && !presenter) return sha256(canonicalJson(agents)).slice(0, 16);
    return sha256(
      canonicalJson({ agents, ...(policies ? { policies } : {}), ...(presenter ? { presenter } : {}) }),
    ).slice(0, 16);
  }

  /** The set with these members: an existing identical one, else the next version. */
  add(members: SetMembers, origin: SetOrigin, parentId: string | null = null): ResourceSet {
    const hash = ResourceSetRepository.hash(members);
    const same = this.db
      .prepare('SELECT * FROM resource_sets WHERE members_hash = ? ORDER BY version LIMIT 1')
      .get(hash) as SetRaw | undefined;
    if (same) return toSet(same);
    const id = newId('rs');
    this.db
      .transaction(() => {
        const version = this.db
          .prepare('SELECT COALESCE(MAX(version), 0) + 1 FROM resource_sets')
          .pluck()
          .get() as number;
        this.db
          .prepare(
            'INSERT INTO resource_sets (id, version, parent_id, members, members_hash, origin, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          )
          .run(id, version, parentId, JSON.stringify(members), hash, this.redactor.json(origin), Date.now());
      })
      .immediate();
    return this.get(id)!;
  }

  get(id: string): ResourceSet | undefined {
    const row = this.db.prepare('SELECT * FROM resource_sets WHERE id = ?').get(id) as SetRaw | undefined;
    return row && toSet(row);
  }

  byVersion(version: number): ResourceSet | undefined {
    const row = this.db.prepare('SELECT * FROM resource_sets WHERE version = ?').get(version) as SetRaw | undefined;
    return row && toSet(row);
  }

  /** By id, unique id prefix, `vN` or `N`. */
  resolve(ref: string): ResourceSet | undefined {
    const v = /^v?(\d+)$/.exec(ref.trim());
    if (v) return this.byVersion(Number(v[1]));
    const rows = this.db
      .prepare("SELECT * FROM resource_sets WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 2")
      .all(ref, `${ref.replace(/[\\%_]/g, '\\$&')}%`) as SetRaw[];
    const exact = rows.find((r) => r.id === ref);
    return exact ? toSet(exact) : rows.length === 1 ? toSet(rows[0]!) : undefined;
  }

  list(limit = 100): ResourceSet[] {
    return (this.db.prepare('SELECT * FROM resource_sets ORDER BY version DESC LIMIT ?').all(limit) as SetRaw[]).map(
      toSet,
    );
  }

  pointer(role: SetRole): SetPointer | undefined {
    const r = this.db.prepare('SELECT * FROM set_pointers WHERE role = ?').get(role) as
      | { role: SetRole; set_id: string; fraction: number | null; eval_run_id: string | null; updated_at: number }
      | undefined;
    return (
      r && { role: r.role, setId: r.set_id, fraction: r.fraction, evalRunId: r.eval_run_id, updatedAt: r.updated_at }
    );
  }

  /** Sets (or, with setId null, clears) a pointer; callers wrap it with the audit record in one transaction. */
  setPointer(
    role: SetRole,
    setId: string | null,
    fraction: number | null = null,
    evalRunId: string | null = null,
  ): void {
    if (setId === null) {
      this.db.prepare('DELETE FROM set_pointers WHERE role = ?').run(role);
      return;
    }
    this.db
      .prepare(
        `INSERT INTO set_pointers (role, set_id, fraction, eval_run_id, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (role) DO UPDATE SET set_id = excluded.set_id, fraction = excluded.fraction, eval_run_id = excluded.eval_run_id, updated_at = excluded.updated_at`,
      )
      .run(role, setId, fraction, evalRunId, Date.now());
  }
}

function toSet(r: SetRaw): ResourceSet {
  return {
    id: r.id,
    version: r.version,
    parentId: r.parent_id,
    members: JSON.parse(r.members) as SetMembers,
    hash: r.members_hash,
    origin: JSON.parse(r.origin) as SetOrigin,
    createdAt: r.created_at,
  };
}
