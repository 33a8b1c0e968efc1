import { canonicalJson } from '../util/hash.js';
import type { Split, SplitTask } from '../tasks/types.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';

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
  id: string; source: string; prompt: string; reference: string | null; category: string | null;
  split: Split; metadata: string; created_at: number;
}

type Row = Omit<TaskRaw, 'created_at'>;
const CONTENT: (keyof Row)[] = ['source', 'prompt', 'reference', 'category', 'split', 'metadata'];

/** The tasks rollouts refer to. Rows are keyed by task id; created_at is kept when content changes. */
export class TaskRepository {
  constructor(private readonly db: Db, private readonly redactor: Redactor) {}

  /** Inserts new tasks and updates changed ones, all in one write transaction. */
  upsertMany(tasks: readonly SplitTask[]): UpsertResult {
    const result: UpsertResult = { inserted: 0, updated: 0, unchanged: 0 };
    const select = this.db.prepare('SELECT id, source, prompt, reference, category, split, metadata FROM tasks WHERE id = ?');
    const insert = this.db.prepare(`INSERT INTO tasks (id, source, prompt, reference, category, split, metadata, created_at)
      VALUES (@id, @source, @prompt, @reference, @category, @split, @metadata, @created_at)`);
    const update = this.db.prepare(`UPDATE tasks SET source = @source, prompt = @prompt, reference = @reference,
      category = @category, split = @split, metadata = @metadata WHERE id = @id`);
    const now = Date.now();
    this.db.transaction(() => {
      for (const task of tasks) {
        const row = this.toRow(task);
        const existing = select.get(row.id) as Row | undefined;
        if (!existing) {
          insert.run({ ...row, created_at: now });
          result.inserted++;
        } else if (CONTENT.some((k) => existing[k] !== row[k])) {
          update.run(row);
          result.updated++;
        } else {
          result.unchanged++;
        }
      }
    }).immediate();
    return result;
  }

  get(id: string): StoredTask | undefined {
    const row = this.db.prepare('SELECT * FROM tasks WHERE id = ?').get(id) as TaskRaw | undefined;
    return row && toTask(row);
  }

  /** Tasks in the order they were first stored. */
  list(filter: TaskFilter = {}): StoredTask[] {
    const { where, params } = whereClause(filter);
    const rows = this.db.prepare(`SELECT * FROM tasks ${where} ORDER BY rowid LIMIT ?`).all(...params, filter.limit ?? -1) as TaskRaw[];
    return rows.map(toTask);
  }

  count(filter: Omit<TaskFilter, 'limit'> = {}): number {
    const { where, params } = whereClause(filter);
    return this.db.prepare(`SELECT COUNT(*) FROM tasks ${where}`).pluck().get(...params) as number;
  }

  /** What would be stored: secrets scrubbed, metadata as canonical JSON so equal content compares equal. */
  private toRow(t: SplitTask): Row {
    return {
      id: t.id, source: t.source, prompt: this.redactor.scrub(t.prompt), reference: this.redactor.scrubOptional(t.reference),
      category: t.category ?? null, split: t.split, metadata: this.redactor.json(JSON.parse(canonicalJson(t.metadata ?? {}))),
    };
  }
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
    id: r.id, prompt: r.prompt, metadata: JSON.parse(r.metadata) as Record<string, unknown>, source: r.source,
    split: r.split, createdAt: r.created_at,
  };
  if (r.reference !== null) task.reference = r.reference;
  if (r.category !== null) task.category = r.category;
  return task;
}
