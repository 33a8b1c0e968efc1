import os from 'node:os';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';

export type AuditAction =
  | 'init'
  | 'config'
  | 'deploy'
  | 'force-deploy'
  | 'canary-start'
  | 'canary-promote'
  | 'canary-advance'
  | 'canary-stop'
  | 'canary-rollback'
  | 'rollback'
  | 'auto-rollback';

export interface AuditInput {
  action: AuditAction;
  /** What started it: the cli, the loop, the post-deploy watch. */
  trigger: 'cli' | 'loop' | 'watch' | 'collect';
  beforeSet: string | null;
  afterSet: string | null;
  evalRunId?: string | null;
  reason?: string | null;
  detail?: Record<string, unknown>;
}

export interface AuditRecord extends Required<Omit<AuditInput, 'detail'>> {
  id: number;
  actor: string;
  detail: Record<string, unknown>;
  createdAt: number;
}

/** Every change of production or canary: who or what did it, on which evaluation, from which set to which. */
export class AuditRepository {
  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {}

  add(input: AuditInput): number {
    const actor = `${os.userInfo().username}@${os.hostname()} (pid ${process.pid})`;
    const row = this.db
      .prepare(
        `INSERT INTO audit (action, trigger, actor, before_set, after_set, eval_run_id, reason, detail, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      )
      .get(
        input.action,
        input.trigger,
        actor,
        input.beforeSet,
        input.afterSet,
        input.evalRunId ?? null,
        this.redactor.scrubOptional(input.reason ?? null),
        this.redactor.json(input.detail ?? {}),
        Date.now(),
      ) as { id: number };
    return row.id;
  }

  list(opts: { limit?: number; actions?: AuditAction[] } = {}): AuditRecord[] {
    const where = opts.actions?.length ? `WHERE action IN (${opts.actions.map(() => '?').join(', ')})` : '';
    const rows = this.db
      .prepare(`SELECT * FROM audit ${where} ORDER BY id DESC LIMIT ?`)
      .all(...(opts.actions ?? []), opts.limit ?? 50) as Record<string, unknown>[];
    return rows.map((r) => ({
      id: r.id as number,
      action: r.action as AuditAction,
      trigger: r.trigger as AuditInput['trigger'],
      actor: r.actor as string,
      beforeSet: r.before_set as string | null,
      afterSet: r.after_set as string | null,
      evalRunId: r.eval_run_id as string | null,
      reason: r.reason as string | null,
      detail: JSON.parse(r.detail as string) as Record<string, unknown>,
      createdAt: r.created_at as number,
    }));
  }
}
