import type { RLConfig } from '../../config/schema.js';
import { heldOutTemplates, SUITES, type Difficulty, type HeldOut } from '../../tasks/index.js';

export interface SuiteLevelSummary {
  level: Difficulty;
  describe: string;
  default: boolean;
  /** Templates by kind whose tasks are eval-only under the config's tasks.split. */
  heldOut: HeldOut;
}

export interface SuiteSummary {
  name: string;
  describe: string;
  levels: SuiteLevelSummary[];
}

/** The built-in suites, each level with its held-out templates under this config's split (`massgen-rl tasks`). */
export function describeSuites(config: RLConfig): SuiteSummary[] {
  const { holdout_templates: fraction, salt } = config.tasks.split;
  return Object.values(SUITES).map((suite) => ({
    name: suite.name,
    describe: suite.describe,
    levels: suite.levels.map(({ level, describe }) => ({
      level,
      describe,
      default: level === suite.defaultLevel,
      heldOut: heldOutTemplates(suite.name, suite.templates(level), fraction, salt),
    })),
  }));
}
