import { UserError } from '../errors.js';
import type { Split, SplitTask } from '../tasks/types.js';
import { canonicalJson } from '../util/hash.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';
import { NO_LIMIT } from './sql.js';

export interface StoredTask extends SplitTask {
  createdAt: number;
}

export interface TaskFilter {
  split?: Split;
  source?: string;
  limit?: number;
}

export interface UpsertResult {
  inserted: number;
  updated: number;
  unchanged: number;
}

interface TaskRaw {
  id: string;
  source: string;
  prompt: string;
  reference: string | null;
  category: string | null;
  split: Split;
  metadata: string;
  created_at: number;
}

type Row = Omit<TaskRaw, 'created_at'>;
/** What the agents are asked and what they are scored against: fixed for good once a task id is stored. */
const CONTENT = ['prompt', 'reference', 'metadata'] as const;
/** Labels that may change: where the task was loaded from, its category and its split. */
const LABELS = ['source', 'category', 'split'] as const;

/** A task definition whose id is stored with other content. */
export interface TaskConflict {
  id: string;
  source: string;
  storedSource: string;
  /** Each differing field, as `field "stored" → "new"`. */
  differs: string[];
  /** Rollouts scored against the stored content. */
  rollouts: number;
}

/** Refuses to rebind task ids: stored rollouts must keep being scored against the task they ran. */
export class TaskConflictError extends UserError {
  constructor(readonly conflicts: TaskConflict[]) {
    const differs = (d: string[]) =>
      (d.length > 4 ? [...d.slice(0, 3), `${d.length - 3} more differences`] : d).join('; ');
    const shown = conflicts
      .slice(0, 10)
      .map(
        (c) =>
          `"${c.id}" from ${c.source} (stored from ${c.storedSource}, ${c.rollouts} rollout${c.rollouts === 1 ? '' : 's'}): ${differs(c.differs)}`,
      );
    if (conflicts.length > 10) shown.push(`… and ${conflicts.length - 10} more`);
    super(
      `${conflicts.length} task id${conflicts.length === 1 ? ' is' : 's are'} already stored with different content; nothing was changed:\n  ${shown.join('\n  ')}`,
      'a task id names one task for good (rollouts and `rewards recompute` score against it): give a changed task a new id, or point store.path at another store',
    );
    this.name = 'TaskConflictError';
  }
}

/**
 * The tasks rollouts refer to, keyed by task id. An id is bound to its content (prompt, reference,
 * metadata) once stored: a different definition is refused, so old rollouts are never re-scored
 * against a task they did not run. Labels (source, category, split) are updated; created_at is kept.
 */
export class TaskRepository {
  private readonly select;
  private readonly countRollouts;

  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {
    this.select = db.prepare('SELECT id, source, prompt, reference, category, split, metadata FROM tasks WHERE id = ?');
    this.countRollouts = db.prepare('SELECT COUNT(*) FROM rollouts WHERE task_id = ?').pluck();
  }

  /** Inserts new tasks and updates changed labels, all in one write transaction; a TaskConflictError writes nothing. */
  upsertMany(tasks: readonly SplitTask[]): UpsertResult {
    const result: UpsertResult = { inserted: 0, updated: 0, unchanged: 0 };
    const insert = this.db
      .prepare(`INSERT INTO tasks (id, source, prompt, reference, category, split, metadata, created_at)
      VALUES (@id, @source, @prompt, @reference, @category, @split, @metadata, @created_at)`);
    const update = this.db.prepare(
      'UPDATE tasks SET source = @source, category = @category, split = @split WHERE id = @id',
    );
    const now = Date.now();
    this.db
      .transaction(() => {
        const rows = tasks.map((t) => this.toRow(t));
        const conflicts = this.conflictsOf(rows);
        if (conflicts.length) throw new TaskConflictError(conflicts);
        for (const row of rows) {
          const existing = this.selectRow(row.id);
          if (!existing) {
            insert.run({ ...row, created_at: now });
            result.inserted++;
          } else if (LABELS.some((k) => existing[k] !== row[k])) {
            update.run(row);
            result.updated++;
          } else {
            result.unchanged++;
          }
        }
      })
      .immediate();
    return result;
  }

  /** The definitions among these whose id is stored with other content (read only). */
  conflicts(tasks: readonly SplitTask[]): TaskConflict[] {
    return this.conflictsOf(tasks.map((t) => this.toRow(t)));
  }

  private conflictsOf(rows: readonly Row[]): TaskConflict[] {
    return rows.flatMap((row) => {
      const existing = this.selectRow(row.id);
      const differs = existing
        ? CONTENT.filter((k) => existing[k] !== row[k]).flatMap((k) =>
            k === 'metadata'
              ? metadataChanges(existing.metadata, row.metadata)
              : [`${k} ${preview(existing[k])} → ${preview(row[k])}`],
          )
        : [];
      if (!existing || !differs.length) return [];
      return [
        {
          id: row.id,
          source: row.source,
          storedSource: existing.source,
          differs,
          rollouts: this.countRollouts.get(row.id) as number,
        },
      ];
    });
  }

  private selectRow(id: string): Row | undefined {
    return this.select.get(id) as Row | undefined;
  }

  get(id: string): StoredTask | undefined {
    const row = this.db.prepare('SELECT * FROM tasks WHERE id = ?').get(id) as TaskRaw | undefined;
    return row && toTask(row);
  }

  /** Tasks in the order they were first stored. */
  list(filter: TaskFilter = {}): StoredTask[] {
    const { where, params } = whereClause(filter);
    const rows = this.db
      .prepare(`SELECT * FROM tasks ${where} ORDER BY rowid LIMIT ?`)
      .all(...params, filter.limit ?? NO_LIMIT) as TaskRaw[];
    return rows.map(toTask);
  }

  count(filter: Omit<TaskFilter, 'limit'> = {}): number {
    const { where, params } = whereClause(filter);
    return this.db
      .prepare(`SELECT COUNT(*) FROM tasks ${where}`)
      .pluck()
      .get(...params) as number;
  }

  /** What would be stored: secrets scrubbed, metadata as canonical JSON so equal content compares equal. */
  private toRow(t: SplitTask): Row {
    return {
      id: t.id,
      source: t.source,
      prompt: this.redactor.scrub(t.prompt),
      reference: this.redactor.scrubOptional(t.reference),
      category: t.category ?? null,
      split: t.split,
      metadata: this.redactor.json(JSON.parse(canonicalJson(t.metadata ?? {}))),
    };
  }
}

/** The metadata keys whose values differ, each as `metadata.key old → new`. */
function metadataChanges(stored: string, next: string): string[] {
  const a = JSON.parse(stored) as Record<string, unknown>;
  const b = JSON.parse(next) as Record<string, unknown>;
  const json = (v: unknown) => (v === undefined ? '(none)' : shorten(JSON.stringify(v)));
  return [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((k) => json(a[k]) !== json(b[k]))
    .map((k) => `metadata.${k} ${json(a[k])} → ${json(b[k])}`);
}

function preview(value: string | null): string {
  return value === null ? '(none)' : shorten(JSON.stringify(value));
}

function shorten(text: string): string {
  return text.length > 62 ? `${text.slice(0, 60)}…` : text;
}

function whereClause(f: Omit<TaskFilter, 'limit'>): { where: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const column of ['split', 'source'] as const) {
    if (f[column] === undefined) continue;
    parts.push(`${column} = ?`);
    params.push(f[column]);
  }
  return { where: parts.length ? `WHERE ${parts.join(' AND ')}` : '', params };
}

function toTask(r: TaskRaw): StoredTask {
  const task: StoredTask = {
    id: r.id,
    prompt: r.prompt,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    source: r.source,
    split: r.split,
    createdAt: r.created_at,
  };
  if (r.reference !== null) task.reference = r.reference;
  if (r.category !== null) task.category = r.category;
  return task;
}
