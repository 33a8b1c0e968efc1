import type { Difficulty } from '../tasks/types.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';

/** A change of a suite's curriculum level: from which to which, when and why. */
export interface LevelChange {
  id: number;
  suite: string;
  fromLevel: Difficulty | null;
  level: Difficulty;
  reason: string;
  detail: Record<string, unknown>;
  createdAt: number;
}

/** One scored collect rollout that production served at a suite's current level. */
export interface CurriculumResult {
  rolloutId: string;
  suite: string;
  level: Difficulty;
  category: string | null;
  success: boolean;
  /** The resource set that served it. */
  setId: string | null;
}

/** A suite's place in the curriculum, for status and the report. */
export interface SuiteCurriculum {
  suite: string;
  level: Difficulty;
  /** production's scored collect results at the level, overall and per category. */
  trials: number;
  successes: number;
  successRate: number | null;
  categories: { category: string; trials: number; successes: number }[];
  /** The newest level change, null while the suite is at start_level. */
  lastChange: LevelChange | null;
}

export interface LevelTally {
  trials: number;
  successes: number;
  categories: { category: string; trials: number; successes: number }[];
}

/** The curriculum's state: each suite's level changes and the results they were decided on. */
export class CurriculumRepository {
  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {}

  /** Each suite's newest level change, by suite. */
  levels(): Map<string, LevelChange> {
    const rows = this.db
      .prepare(
        `SELECT * FROM curriculum_levels c WHERE id = (SELECT MAX(id) FROM curriculum_levels WHERE suite = c.suite)
        ORDER BY suite`,
      )
      .all() as Record<string, unknown>[];
    return new Map(rows.map((r) => [r.suite as string, change(r)]));
  }

  setLevel(input: Omit<LevelChange, 'id' | 'createdAt'>): LevelChange {
    const row = this.db
      .prepare(
        `INSERT INTO curriculum_levels (suite, from_level, level, reason, detail, created_at)
        VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
      )
      .get(
        input.suite,
        input.fromLevel,
        input.level,
        this.redactor.scrub(input.reason),
        this.redactor.json(input.detail),
        Date.now(),
      ) as Record<string, unknown>;
    return change(row);
  }

  /** Newest first. */
  history(limit = 50): LevelChange[] {
    const rows = this.db.prepare('SELECT * FROM curriculum_levels ORDER BY id DESC LIMIT ?').all(limit);
    return (rows as Record<string, unknown>[]).map(change);
  }

  /** Records results; a rollout already recorded is kept as it is. */
  addResults(results: readonly CurriculumResult[]): void {
    const insert = this.db.prepare(
      `INSERT INTO curriculum_results (rollout_id, suite, level, category, success, set_id, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    );
    const now = Date.now();
    for (const r of results) insert.run(r.rolloutId, r.suite, r.level, r.category, r.success ? 1 : 0, r.setId, now);
  }

  /** The results at a suite's level; with a set id, only those that set served. */
  tally(suite: string, level: Difficulty, setId?: string): LevelTally {
    const rows = this.db
      .prepare(
        `SELECT category, COUNT(*) AS trials, SUM(success) AS successes FROM curriculum_results
        WHERE suite = ? AND level = ?${setId === undefined ? '' : ' AND set_id = ?'} GROUP BY category ORDER BY category`,
      )
      .all(suite, level, ...(setId === undefined ? [] : [setId])) as {
      category: string | null;
      trials: number | string;
      successes: number | string;
    }[];
    const categories = rows.map((r) => ({
      category: r.category ?? 'uncategorized',
      trials: Number(r.trials),
      successes: Number(r.successes),
    }));
    const sum = (k: 'trials' | 'successes') => categories.reduce((a, c) => a + c[k], 0);
    return { trials: sum('trials'), successes: sum('successes'), categories };
  }
}

function change(r: Record<string, unknown>): LevelChange {
  return {
    id: Number(r.id),
    suite: r.suite as string,
    fromLevel: r.from_level === null ? null : (Number(r.from_level) as Difficulty),
    level: Number(r.level) as Difficulty,
    reason: r.reason as string,
    detail: JSON.parse(r.detail as string) as Record<string, unknown>,
    createdAt: Number(r.created_at),
  };
}
