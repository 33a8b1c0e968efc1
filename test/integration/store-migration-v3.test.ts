import Database from 'better-sqlite3';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/migrations.js';
import { storeDb } from '../../src/store/store.js';
import { sqliteOf, tempDir } from '../helpers.js';

/** A store as massgen-rl left it at schema version 2: a prompt resource, production pointing at it, a child version. */
function storeAtV2(file: string): void {
  const db = new Database(file);
  db.exec(
    'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  for (const m of MIGRATIONS.filter((x) => x.version <= 2)) {
    db.exec(m.sql);
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, 1);
  }
  db.pragma('user_version = 2');
  db.prepare(
    "INSERT INTO resources (id, kind, name, version, parent_id, content, metadata, created_at) VALUES ('pr_1', 'prompt', 'solver', 1, NULL, 'Solve it.', '{}', 1)",
  ).run();
  db.prepare(
    "INSERT INTO resources (id, kind, name, version, parent_id, content, metadata, created_at) VALUES ('pr_2', 'prompt', 'solver', 2, 'pr_1', 'Solve it well.', '{}', 2)",
  ).run();
  db.prepare(
    "INSERT INTO production (kind, name, resource_id, updated_at) VALUES ('prompt', 'solver', 'pr_2', 3)",
  ).run();
  db.close();
}

describe('schema version 3: policy resources', () => {
  it('rebuilds the resources table of an existing store keeping every row and reference, then takes policies', () => {
    expect(LATEST_SCHEMA_VERSION).toBeGreaterThanOrEqual(3);
    const file = path.join(tempDir({}), 'store.sqlite');
    storeAtV2(file);
    const store = Store.open({ path: file });
    try {
      expect(store.stats().schemaVersion).toBe(LATEST_SCHEMA_VERSION);
      expect(store.resources.list('prompt').map((r) => [r.id, r.version, r.parentId, r.content])).toEqual([
        ['pr_1', 1, null, 'Solve it.'],
        ['pr_2', 2, 'pr_1', 'Solve it well.'],
      ]);
      expect(store.resources.production('prompt', 'solver')?.id).toBe('pr_2');
      const policy = store.resources.add({ kind: 'policy', name: 'stop', content: '{}', metadata: {} });
      expect(policy).toMatchObject({ kind: 'policy', name: 'stop', version: 1 });
      expect(policy.id).toMatch(/^po_/);
      expect(sqliteOf(store).pragma('foreign_key_check')).toEqual([]);
      expect(sqliteOf(store).pragma('foreign_keys', { simple: true })).toBe(1);
      // References are still enforced after the rebuild.
      expect(() =>
        storeDb(store)
          .prepare(
            "INSERT INTO production (kind, name, resource_id, updated_at) VALUES ('policy', 'x', 'po_missing', 1)",
          )
          .run(),
      ).toThrow(/FOREIGN KEY/);
    } finally {
      store.close();
    }
  });
});
