import { describe, expect, it } from 'vitest';
import { BUILTIN_SUITES } from '../../src/config/schema.js';
import { describeSuites } from '../../src/pipeline/utilities/tasks.js';
import { getSuite, heldOutTemplates } from '../../src/tasks/index.js';
import { configIn } from '../helpers.js';

describe('massgen-rl tasks', () => {
  it("describes each suite's levels, marks the default, and names the templates held out under the config's split", () => {
    const suites = describeSuites(configIn('tasks:\n  split: { salt: other, holdout_templates: 0.5 }\n').config);
    expect(suites.map((s) => s.name)).toEqual([...BUILTIN_SUITES]);
    for (const s of suites) {
      const suite = getSuite(s.name);
      expect(s.levels.map((l) => [l.level, l.default, l.describe])).toEqual(
        suite.levels.map((l) => [l.level, l.level === suite.defaultLevel, l.describe]),
      );
      for (const l of s.levels)
        expect(l.heldOut).toEqual(heldOutTemplates(s.name, suite.templates(l.level), 0.5, 'other'));
    }
    expect(suites.find((s) => s.name === 'arithmetic')!.levels[0]!.heldOut).not.toEqual({});
  });
});
