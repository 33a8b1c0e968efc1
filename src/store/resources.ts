import { newId } from '../util/ids.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';

export type ResourceKind = 'prompt' | 'weight' | 'policy';

export interface Resource {
  id: string;
  kind: ResourceKind;
  name: string;
  version: number;
  parentId: string | null;
  content: string | null;
  path: string | null;
  metadata: Record<string, unknown>;
  createdAt: number;
}

export interface ResourceInput {
  kind: ResourceKind;
  name: string;
  parentId?: string | null;
  content?: string | null;
  path?: string | null;
  metadata?: Record<string, unknown>;
}

interface ResourceRaw {
  id: string;
  kind: ResourceKind;
  name: string;
  version: number;
  parent_id: string | null;
  content: string | null;
  path: string | null;
  metadata: string;
  created_at: number;
}

/** Versioned prompt and weight resources, and the production pointer for each (kind, name). */
export class ResourceRepository {
  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {}

  /** Adds the next version of a resource (version numbers are per kind and name). */
  add(input: ResourceInput): Resource {
    const id = newId(input.kind === 'prompt' ? 'pr' : input.kind === 'policy' ? 'po' : 'wt');
    this.db
      .transaction(() => {
        const version = this.db
          .prepare('SELECT COALESCE(MAX(version), 0) + 1 FROM resources WHERE kind = ? AND name = ?')
          .pluck()
          .get(input.kind, input.name) as number;
        this.db
          .prepare(
            `INSERT INTO resources (id, kind, name, version, parent_id, content, path, metadata, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            id,
            input.kind,
            input.name,
            version,
            input.parentId ?? null,
            this.redactor.scrubOptional(input.content),
            input.path ?? null,
            this.redactor.json(input.metadata ?? {}),
            Date.now(),
          );
      })
      .immediate();
    return this.get(id)!;
  }

  /** Adds keys to a resource's metadata (what was measured about it later, e.g. its validation scores); the content never changes. */
  annotate(id: string, patch: Record<string, unknown>): void {
    const r = this.get(id);
    if (!r) throw new Error(`no resource ${id}`);
    this.db
      .prepare('UPDATE resources SET metadata = ? WHERE id = ?')
      .run(this.redactor.json({ ...r.metadata, ...patch }), id);
  }

  get(id: string): Resource | undefined {
    const row = this.db.prepare('SELECT * FROM resources WHERE id = ?').get(id) as ResourceRaw | undefined;
    return row && toResource(row);
  }

  latest(kind: ResourceKind, name: string): Resource | undefined {
    const row = this.db
      .prepare('SELECT * FROM resources WHERE kind = ? AND name = ? ORDER BY version DESC LIMIT 1')
      .get(kind, name) as ResourceRaw | undefined;
    return row && toResource(row);
  }

  list(kind?: ResourceKind): Resource[] {
    const rows = kind
      ? this.db.prepare('SELECT * FROM resources WHERE kind = ? ORDER BY name, version').all(kind)
      : this.db.prepare('SELECT * FROM resources ORDER BY kind, name, version').all();
    return (rows as ResourceRaw[]).map(toResource);
  }

  production(kind: ResourceKind, name: string): Resource | undefined {
    const id = this.db
      .prepare('SELECT resource_id FROM production WHERE kind = ? AND name = ?')
      .pluck()
      .get(kind, name) as string | undefined;
    return id ? this.get(id) : undefined;
  }

  listProduction(): Resource[] {
    const ids = this.db.prepare('SELECT resource_id FROM production ORDER BY kind, name').pluck().all() as string[];
    return ids.map((id) => this.get(id)!);
  }

  /** Points production at a resource and records the change in the deployment history. */
  setProduction(
    resource: Resource,
    action: 'deploy' | 'rollback',
    reason: string,
    evaluationId: string | null = null,
  ): void {
    this.db
      .transaction(() => {
        const previous = this.production(resource.kind, resource.name);
        this.db
          .prepare(
            `INSERT INTO production (kind, name, resource_id, updated_at) VALUES (?, ?, ?, ?)
        ON CONFLICT (kind, name) DO UPDATE SET resource_id = excluded.resource_id, updated_at = excluded.updated_at`,
          )
          .run(resource.kind, resource.name, resource.id, Date.now());
        this.db
          .prepare(
            `INSERT INTO deployments (kind, name, resource_id, previous_id, action, evaluation_id, reason, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            resource.kind,
            resource.name,
            resource.id,
            previous?.id ?? null,
            action,
            evaluationId,
            this.redactor.scrub(reason),
            Date.now(),
          );
      })
      .immediate();
  }
}

function toResource(r: ResourceRaw): Resource {
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    version: r.version,
    parentId: r.parent_id,
    content: r.content,
    path: r.path,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    createdAt: r.created_at,
  };
}
