import { describe, expect, it } from 'vitest';
import type { describeSuites } from '../../src/pipeline/utilities/tasks.js';
import { hasStack, runCli, tempDir } from '../helpers.js';

// What the command prints is built in describeSuites (test/unit/tasks-command.test.ts).
describe('massgen-rl tasks', () => {
  it('prints them, and --json gives the same summary', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'tasks:\n  split: { holdout_templates: 0 }\n' });
    const text = await runCli(['tasks'], { cwd: dir });
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toContain('multi_step — ');
    expect(text.stdout).toMatch(/0 \(default\) +│ word problems of one or two additions/);
    expect(text.stdout).toMatch(/│ 2 +│ 2–4 steps/);
    const json = await runCli(['--json', 'tasks'], { cwd: dir });
    const parsed = JSON.parse(json.stdout) as ReturnType<typeof describeSuites>;
    expect(parsed.flatMap((s) => s.levels.map((l) => l.heldOut))).toEqual(Array(16).fill({}));
    const bad = await runCli(['tasks'], {
      cwd: tempDir({ 'massgen-rl.yaml': 'tasks:\n  split: { holdout_templates: 2 }\n' }),
    });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('tasks.split.holdout_templates');
    expect(hasStack(bad.stderr)).toBe(false);
  });
});
