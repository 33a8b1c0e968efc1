/** Versioned schema migrations. Append only: never edit a migration that has shipped. */
export interface Migration {
  version: number;
  name: string;
  /** SQLite. */
  sql: string;
  /** PostgreSQL, when the SQLite text does not translate (see postgresSql). */
  postgres?: string;
}

/** Run tables: listed newest first by start time, then by insertion (rowid). */
const RUN_TABLES = ['collect_runs', 'training_runs', 'eval_runs', 'loop_runs'];

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  prompt TEXT NOT NULL,
  reference TEXT,
  category TEXT,
  split TEXT NOT NULL CHECK (split IN ('train', 'eval')),
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
);
CREATE TABLE collect_runs (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  config_hash TEXT,
  params TEXT NOT NULL DEFAULT '{}',
  summary TEXT,
  error TEXT,
  pid INTEGER, host TEXT,
  started_at INTEGER NOT NULL, finished_at INTEGER
);
CREATE TABLE rollouts (
  num INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  run_id TEXT REFERENCES collect_runs(id) ON DELETE SET NULL,
  task_id TEXT REFERENCES tasks(id) ON DELETE SET NULL,
  source TEXT NOT NULL DEFAULT 'collect',
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  error TEXT,
  final_answer TEXT,
  winner TEXT,
  total_reward REAL,
  tokens INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),
  tool_calls INTEGER NOT NULL DEFAULT 0 CHECK (tool_calls >= 0),
  messages INTEGER NOT NULL DEFAULT 0 CHECK (messages >= 0),
  wall_ms REAL NOT NULL DEFAULT 0 CHECK (wall_ms >= 0),
  metadata TEXT NOT NULL DEFAULT '{}',
  pid INTEGER, host TEXT,
  started_at INTEGER NOT NULL, finished_at INTEGER
);
CREATE INDEX rollouts_run ON rollouts(run_id);
CREATE INDEX rollouts_task ON rollouts(task_id);
CREATE INDEX rollouts_status ON rollouts(status);
-- An ordinary rowid table: WITHOUT ROWID stores payloads over ~1 KB on overflow pages (2x the file, half the ingest rate).
CREATE TABLE spans (
  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  parent_seq INTEGER,
  type TEXT NOT NULL CHECK (type IN ('prompt', 'tool', 'reward', 'coordination', 'message')),
  name TEXT NOT NULL,
  agent TEXT,
  started_at REAL NOT NULL,
  duration_ms REAL NOT NULL DEFAULT 0,
  payload TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (rollout_id, seq)
);
CREATE TABLE rewards (
  id INTEGER PRIMARY KEY,
  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,
  channel TEXT NOT NULL,
  family TEXT NOT NULL,
  value REAL NOT NULL,
  reason TEXT,
  agent TEXT,
  target_seq INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX rewards_rollout ON rewards(rollout_id);
CREATE TABLE resources (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('prompt', 'weight')),
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  parent_id TEXT REFERENCES resources(id),
  content TEXT,
  path TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  UNIQUE (kind, name, version)
);
CREATE TABLE production (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  resource_id TEXT NOT NULL REFERENCES resources(id),
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (kind, name)
);
CREATE TABLE training_runs (
  id TEXT PRIMARY KEY,
  algo TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  config TEXT NOT NULL DEFAULT '{}',
  dataset_hash TEXT,
  metrics TEXT,
  log_path TEXT,
  error TEXT,
  pid INTEGER, host TEXT,
  started_at INTEGER NOT NULL, finished_at INTEGER
);
CREATE TABLE training_metrics (
  run_id TEXT NOT NULL REFERENCES training_runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  metrics TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, step)
);
CREATE TABLE checkpoints (
  id TEXT PRIMARY KEY,
  resource_id TEXT REFERENCES resources(id),
  parent_id TEXT REFERENCES checkpoints(id),
  training_run_id TEXT REFERENCES training_runs(id),
  algo TEXT,
  base_model TEXT,
  path TEXT NOT NULL,
  dataset_hash TEXT,
  trace_ids TEXT,
  watermark INTEGER,
  config_hash TEXT,
  metrics TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
);
CREATE TABLE evaluations (
  id TEXT PRIMARY KEY,
  candidate_id TEXT REFERENCES resources(id),
  baseline_id TEXT REFERENCES resources(id),
  run_id TEXT REFERENCES collect_runs(id),
  metrics TEXT NOT NULL DEFAULT '{}',
  passed INTEGER,
  created_at INTEGER NOT NULL
);
CREATE TABLE deployments (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  resource_id TEXT NOT NULL REFERENCES resources(id),
  previous_id TEXT REFERENCES resources(id),
  action TEXT NOT NULL CHECK (action IN ('deploy', 'rollback')),
  evaluation_id TEXT REFERENCES evaluations(id),
  reason TEXT,
  created_at INTEGER NOT NULL
);
CREATE TABLE loop_runs (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  step TEXT,
  state TEXT NOT NULL DEFAULT '{}',
  error TEXT,
  pid INTEGER, host TEXT,
  started_at INTEGER NOT NULL, finished_at INTEGER
);
`,
  },
  {
    version: 2,
    name: 'resource sets, evaluations per task and seed, audit, locks',
    sql: `
-- A resource set names, per agent, the prompt and weight versions that serve it (members JSON:
-- {"agents": {"<id>": {"prompt": "<resource id>", "weights": "<resource id>"|null, "from_config": {"prompt": bool, "weights": bool}}}}).
CREATE TABLE resource_sets (
  id TEXT PRIMARY KEY,
  version INTEGER NOT NULL UNIQUE,
  parent_id TEXT REFERENCES resource_sets(id),
  members TEXT NOT NULL,
  members_hash TEXT NOT NULL,
  origin TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
);
CREATE INDEX resource_sets_hash ON resource_sets(members_hash);
CREATE TABLE set_pointers (
  role TEXT PRIMARY KEY CHECK (role IN ('production', 'canary')),
  set_id TEXT NOT NULL REFERENCES resource_sets(id),
  fraction REAL,
  eval_run_id TEXT,
  updated_at INTEGER NOT NULL
);
CREATE TABLE audit (
  id INTEGER PRIMARY KEY,
  action TEXT NOT NULL,
  trigger TEXT NOT NULL,
  actor TEXT NOT NULL,
  before_set TEXT REFERENCES resource_sets(id),
  after_set TEXT REFERENCES resource_sets(id),
  eval_run_id TEXT,
  reason TEXT,
  detail TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
);
CREATE TABLE eval_runs (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  baseline_set TEXT NOT NULL REFERENCES resource_sets(id),
  candidate_set TEXT NOT NULL REFERENCES resource_sets(id),
  trigger TEXT NOT NULL DEFAULT 'cli',
  params TEXT NOT NULL DEFAULT '{}',
  summary TEXT,
  report_path TEXT,
  error TEXT,
  pid INTEGER, host TEXT,
  started_at INTEGER NOT NULL, finished_at INTEGER
);
-- One row per served resources (the prompts and weights of a set, by content) × task (by content) × sampling
-- seed × run settings: a result measured once is reused, whichever set with those resources asks again.
CREATE TABLE eval_results (
  serving_hash TEXT NOT NULL,
  set_id TEXT NOT NULL REFERENCES resource_sets(id),
  task_hash TEXT NOT NULL,
  seed INTEGER NOT NULL,
  settings_hash TEXT NOT NULL,
  task_id TEXT NOT NULL,
  category TEXT,
  rollout_id TEXT REFERENCES rollouts(id) ON DELETE SET NULL,
  eval_run_id TEXT REFERENCES eval_runs(id) ON DELETE SET NULL,
  status TEXT NOT NULL,
  reward REAL,
  success INTEGER,
  consensus INTEGER NOT NULL,
  rounds INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  wall_ms REAL NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (serving_hash, task_hash, seed, settings_hash)
);
CREATE TABLE locks (
  name TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  acquired_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
);
ALTER TABLE rollouts ADD COLUMN resource_set_id TEXT REFERENCES resource_sets(id);
`,
  },
  {
    version: 3,
    name: 'policy resources',
    // SQLite cannot change a CHECK in place: the table is rebuilt, the way SQLite documents it (foreign
    // keys off while it runs, checked before the commit: see migrate()).
    sql: `
CREATE TABLE resources_v3 (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('prompt', 'weight', 'policy')),
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  parent_id TEXT REFERENCES resources(id),
  content TEXT,
  path TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  UNIQUE (kind, name, version)
);
INSERT INTO resources_v3 (id, kind, name, version, parent_id, content, path, metadata, created_at)
  SELECT id, kind, name, version, parent_id, content, path, metadata, created_at FROM resources;
DROP TABLE resources;
ALTER TABLE resources_v3 RENAME TO resources;
`,
    postgres: `
ALTER TABLE resources DROP CONSTRAINT resources_kind_check;
ALTER TABLE resources ADD CONSTRAINT resources_kind_check CHECK (kind IN ('prompt', 'weight', 'policy'));
`,
  },
  {
    version: 4,
    name: 'runs ordered by insertion',
    // Runs started in the same millisecond are ordered by when they were inserted: SQLite's run tables
    // have a rowid already; PostgreSQL's get one, numbered in the order the rows are stored.
    sql: '-- SQLite: nothing to do (the run tables are rowid tables).',
    postgres: `${RUN_TABLES.map((t) => `ALTER TABLE ${t} ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY;`).join('\n')}\n`,
  },
  {
    version: 5,
    name: 'evaluation items of replays',
    sql: `
-- One row per replayed captured call of an evaluation (eval.source gateway): its paired score and how it was
-- scored (judge: the position-swapped preference; reference: the reward families on both answers).
CREATE TABLE eval_items (
  eval_run_id TEXT NOT NULL REFERENCES eval_runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('judge', 'reference')),
  rollout_id TEXT REFERENCES rollouts(id) ON DELETE SET NULL,
  span_seq INTEGER,
  seed INTEGER NOT NULL,
  task_id TEXT,
  score REAL NOT NULL,
  baseline_value REAL,
  candidate_value REAL,
  agreed INTEGER,
  detail TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  PRIMARY KEY (eval_run_id, idx)
);
`,
  },
  {
    version: 6,
    name: 'curriculum levels and results',
    sql: `
-- Each change of a built-in suite's curriculum level, with when and why; the newest row is the suite's level.
CREATE TABLE curriculum_levels (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  suite TEXT NOT NULL,
  from_level INTEGER,
  level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 3),
  reason TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
);
CREATE INDEX curriculum_levels_suite ON curriculum_levels(suite, id);
-- Production's scored collect rollouts at a suite's current level: what a level change is decided on.
CREATE TABLE curriculum_results (
  rollout_id TEXT PRIMARY KEY,
  suite TEXT NOT NULL,
  level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 3),
  category TEXT,
  success INTEGER NOT NULL CHECK (success IN (0, 1)),
  created_at INTEGER NOT NULL
);
CREATE INDEX curriculum_results_level ON curriculum_results(suite, level);
`,
  },
  {
    version: 7,
    name: 'curriculum results by production set',
    sql: `
-- The resource set that served each result: a suite moves up on what production, as it is now, does.
ALTER TABLE curriculum_results ADD COLUMN set_id TEXT;
UPDATE curriculum_results SET set_id = (SELECT resource_set_id FROM rollouts WHERE rollouts.id = curriculum_results.rollout_id);
CREATE INDEX curriculum_results_set ON curriculum_results(suite, level, set_id);
`,
  },
  {
    version: 8,
    name: 'evaluation results checked against withheld references',
    sql: `
-- rewards.references off: the final answer against the reference the loop withheld (null otherwise).
ALTER TABLE eval_results ADD COLUMN checked INTEGER;
`,
  },
  {
    version: 9,
    name: 'rollouts exported over OTLP',
    sql: `
-- Which finished rollouts an OTLP endpoint has acknowledged: a backfill resumes after them, the continuous export
-- sends the rest (nothing is lost while a collector is down: it stays here as not exported).
CREATE TABLE otlp_exports (
  target TEXT NOT NULL,
  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,
  spans INTEGER NOT NULL,
  exported_at REAL NOT NULL,
  PRIMARY KEY (target, rollout_id)
);
`,
  },
];

// Migration 1 creates these two with their rowid on PostgreSQL; migration 4 adds it to the run tables.
const CREATED_WITH_ROWID = ['tasks', 'checkpoints'];

/** Tables the code orders by SQLite's implicit rowid: on PostgreSQL they get a `rowid` identity column. */
export const ROWID_TABLES: readonly string[] = [...CREATED_WITH_ROWID, ...RUN_TABLES];

/**
 * A migration for PostgreSQL: its own text, or the SQLite text with SQLite's types spelled for PostgreSQL
 * (timestamps in ms need BIGINT; an INTEGER PRIMARY KEY is SQLite's auto-numbered rowid; references are
 * deferrable). Tables that the
 * code orders by SQLite's implicit rowid get one as an identity column.
 */
export function postgresSql(m: Migration): string {
  if (m.postgres !== undefined) return m.postgres;
  return (
    m.sql
      .replace(/INTEGER PRIMARY KEY( AUTOINCREMENT)?/g, 'BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY')
      .replace(/\bINTEGER\b/g, 'BIGINT')
      .replace(/\bREAL\b/g, 'DOUBLE PRECISION')
      // Deferrable, so that a store copy may insert a table's rows before those they point at.
      .replace(/REFERENCES \w+\(\w+\)( ON DELETE (SET NULL|CASCADE))?/g, '$& DEFERRABLE')
      .replace(
        new RegExp(`^(CREATE TABLE (${CREATED_WITH_ROWID.join('|')}) \\()$`, 'gm'),
        '$1\n  rowid BIGINT GENERATED ALWAYS AS IDENTITY,',
      )
  );
}

export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
