import { describe, expect, it } from 'vitest';
import { BUILTIN_SUITES } from '../../src/config/schema.js';
import { describeSuites } from '../../src/pipeline/tasks.js';
import { getSuite, heldOutTemplates } from '../../src/tasks/index.js';
import { configIn, hasStack, runCli, tempDir } from '../helpers.js';

describe('massgen-rl tasks', () => {
  it('describes each suite\'s levels, marks the default, and names the templates held out under the config\'s split', () => {
    const suites = describeSuites(configIn('tasks:\n  split: { salt: other, holdout_templates: 0.5 }\n').config);
    expect(suites.map((s) => s.name)).toEqual([...BUILTIN_SUITES]);
    for (const s of suites) {
      const suite = getSuite(s.name);
      expect(s.levels.map((l) => [l.level, l.default, l.describe])).toEqual(suite.levels.map((l) => [l.level, l.level === suite.defaultLevel, l.describe]));
      for (const l of s.levels) expect(l.heldOut).toEqual(heldOutTemplates(s.name, suite.templates(l.level), 0.5, 'other'));
    }
    expect(suites.find((s) => s.name === 'arithmetic')!.levels[0]!.heldOut).not.toEqual({});
  });

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
    const bad = await runCli(['tasks'], { cwd: tempDir({ 'massgen-rl.yaml': 'tasks:\n  split: { holdout_templates: 2 }\n' }) });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('tasks.split.holdout_templates');
    expect(hasStack(bad.stderr)).toBe(false);
  });
});
