import { UserError } from '../errors.js';
import { newId } from '../util/ids.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';
import { jsonSetNumber, jsonText, NO_LIMIT } from './sql.js';

export interface CheckpointInput {
  /** Chosen up front when the weight resource must name the checkpoint in the same transaction. */
  id?: string;
  resourceId?: string | null;
  parentId?: string | null;
  trainingRunId?: string | null;
  algo?: string | null;
  baseModel?: string | null;
  path: string;
  datasetHash?: string | null;
  traceIds?: string[] | null;
  watermark?: number | null;
  configHash?: string | null;
  metrics?: Record<string, unknown>;
}

export interface Checkpoint {
  id: string;
  resourceId: string | null;
  /** The weight resource's name and version, when there is one. */
  resourceName: string | null;
  resourceVersion: number | null;
  parentId: string | null;
  trainingRunId: string | null;
  algo: string | null;
  baseModel: string | null;
  path: string;
  datasetHash: string | null;
  traceIds: string[];
  watermark: number | null;
  configHash: string | null;
  metrics: Record<string, unknown>;
  createdAt: number;
}

export interface CheckpointFilter {
  algo?: string;
  /** Only this line: checkpoints whose weight resource has this name. */
  name?: string;
  limit?: number;
}

const SELECT = `SELECT c.*, r.name AS resource_name, r.version AS resource_version FROM checkpoints c LEFT JOIN resources r ON r.id = c.resource_id`;
type Raw = Record<string, unknown>;

/** Trained weights with their lineage: parent checkpoint, dataset, traces, watermark and config. */
export class CheckpointRepository {
  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {}

  add(input: CheckpointInput): Checkpoint {
    const id = input.id ?? newId('ck');
    this.db
      .prepare(
        `INSERT INTO checkpoints (id, resource_id, parent_id, training_run_id, algo, base_model, path, dataset_hash, trace_ids,
      watermark, config_hash, metrics, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        input.resourceId ?? null,
        input.parentId ?? null,
        input.trainingRunId ?? null,
        input.algo ?? null,
        input.baseModel ?? null,
        input.path,
        input.datasetHash ?? null,
        input.traceIds ? JSON.stringify(input.traceIds) : null,
        input.watermark ?? null,
        input.configHash ?? null,
        this.redactor.json(input.metrics ?? {}),
        Date.now(),
      );
    return this.get(id)!;
  }

  get(id: string): Checkpoint | undefined {
    const row = this.db.prepare(`${SELECT} WHERE c.id = ?`).get(id) as Raw | undefined;
    return row && toCheckpoint(row);
  }

  /** By id or unique id prefix. */
  resolve(idOrPrefix: string): Checkpoint | undefined {
    const rows = this.db
      .prepare(`${SELECT} WHERE c.id = ? OR c.id LIKE ? ESCAPE '\\' ORDER BY c.id = ? DESC LIMIT 2`)
      .all(idOrPrefix, `${idOrPrefix.replace(/[\\%_]/g, '\\$&')}%`, idOrPrefix) as Raw[];
    return rows[0] && (rows.length === 1 || rows[0].id === idOrPrefix) ? toCheckpoint(rows[0]) : undefined;
  }

  /** Newest first (insertion order, which a clock step cannot reorder). */
  list(filter: CheckpointFilter = {}): Checkpoint[] {
    const where: string[] = [];
    const params: unknown[] = [];
    for (const [col, value] of [
      ['c.algo', filter.algo],
      ['r.name', filter.name],
    ] as const) {
      if (value === undefined) continue;
      where.push(`${col} = ?`);
      params.push(value);
    }
    const rows = this.db
      .prepare(`${SELECT} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY c.rowid DESC LIMIT ?`)
      .all(...params, filter.limit ?? NO_LIMIT) as Raw[];
    return rows.map(toCheckpoint);
  }

  latest(filter: Omit<CheckpointFilter, 'limit'> = {}): Checkpoint | undefined {
    return this.list({ ...filter, limit: 1 })[0];
  }

  /** Ancestors of a checkpoint, its parent first, up to the root. */
  lineage(id: string): Checkpoint[] {
    const ids = this.db
      .prepare(
        `WITH RECURSIVE up(id, depth) AS (
        SELECT parent_id, 1 FROM checkpoints WHERE id = ? AND parent_id IS NOT NULL
        UNION ALL SELECT c.parent_id, up.depth + 1 FROM checkpoints c JOIN up ON c.id = up.id WHERE c.parent_id IS NOT NULL AND up.depth < 10000)
      SELECT id FROM up ORDER BY depth`,
      )
      .pluck()
      .all(id) as string[];
    return ids.map((a) => this.get(a)!);
  }

  children(id: string): Checkpoint[] {
    return (this.db.prepare(`${SELECT} WHERE c.parent_id = ? ORDER BY c.rowid`).all(id) as Raw[]).map(toCheckpoint);
  }

  /** Weight resources that must keep their files: production, and the rollback target of each production weight. */
  protectedResourceIds(): Set<string> {
    const ids = this.db
      .prepare(
        `SELECT resource_id FROM production WHERE kind = 'weight'
      UNION SELECT d.previous_id FROM deployments d WHERE d.kind = 'weight' AND d.previous_id IS NOT NULL
        AND d.id = (SELECT MAX(id) FROM deployments x WHERE x.kind = d.kind AND x.name = d.name)`,
      )
      .pluck()
      .all() as string[];
    return new Set(ids);
  }

  /**
   * Deletes a checkpoint row. Refuses when another checkpoint descends from it or its weights are
   * protected. Its weight resource goes too, unless history refers to it: then it stays, marked pruned.
   */
  delete(id: string): Checkpoint {
    return this.db
      .transaction(() => {
        const ck = this.get(id);
        if (!ck) throw new UserError(`no checkpoint "${id}"`);
        const child = this.children(id)[0];
        if (child) throw new UserError(`checkpoint ${id} is the parent of ${child.id}; delete that one first`);
        if (ck.resourceId && this.protectedResourceIds().has(ck.resourceId)) {
          throw new UserError(
            `checkpoint ${id} holds production weights (${ck.resourceName} v${ck.resourceVersion}) or their rollback target`,
          );
        }
        this.db.prepare('DELETE FROM checkpoints WHERE id = ?').run(id);
        if (ck.resourceId) this.dropResource(ck.resourceId);
        return ck;
      })
      .immediate();
  }

  /** Whether anything left in the store still points at these files (a fork, another resource). */
  pathInUse(path: string): boolean {
    return Boolean(
      this.db
        .prepare(
          `SELECT 1 FROM checkpoints WHERE path = ? UNION ALL
      SELECT 1 FROM resources WHERE path = ? AND ${jsonText(this.db, 'metadata', 'pruned_at')} IS NULL LIMIT 1`,
        )
        .get(path, path),
    );
  }

  private dropResource(resourceId: string): void {
    const referenced = this.db
      .prepare(
        `SELECT 1 FROM production WHERE resource_id = @id
      UNION ALL SELECT 1 FROM deployments WHERE resource_id = @id OR previous_id = @id
      UNION ALL SELECT 1 FROM evaluations WHERE candidate_id = @id OR baseline_id = @id
      UNION ALL SELECT 1 FROM resources WHERE parent_id = @id
      UNION ALL SELECT 1 FROM checkpoints WHERE resource_id = @id LIMIT 1`,
      )
      .get({ id: resourceId });
    if (!referenced) this.db.prepare('DELETE FROM resources WHERE id = ?').run(resourceId);
    else
      this.db
        .prepare(`UPDATE resources SET metadata = ${jsonSetNumber(this.db, 'metadata', 'pruned_at')} WHERE id = ?`)
        .run(Date.now(), resourceId);
  }
}

function toCheckpoint(r: Raw): Checkpoint {
  return {
    id: r.id as string,
    resourceId: r.resource_id as string | null,
    resourceName: (r.resource_name as string | null) ?? null,
    resourceVersion: (r.resource_version as number | null) ?? null,
    parentId: r.parent_id as string | null,
    trainingRunId: r.training_run_id as string | null,
    algo: r.algo as string | null,
    baseModel: r.base_model as string | null,
    path: r.path as string,
    datasetHash: r.dataset_hash as string | null,
    traceIds: r.trace_ids ? (JSON.parse(r.trace_ids as string) as string[]) : [],
    watermark: r.watermark as number | null,
    configHash: r.config_hash as string | null,
    metrics: JSON.parse(r.metrics as string) as Record<string, unknown>,
    createdAt: r.created_at as number,
  };
}
