import type { RLConfig } from '../config/schema.js';
import type { Difficulty } from './types.js';

export type CurriculumConfig = RLConfig['tasks']['curriculum'];

/** Each built-in suite's current level, by suite name. */
export type SuiteLevels = Readonly<Record<string, Difficulty>>;

/** production's scored collect results on one suite at one level. */
export interface LevelProgress {
  suite: string;
  level: Difficulty;
  trials: number;
  successes: number;
}

export interface LevelDecision {
  advance: boolean;
  /** The level after the decision (the same one when it does not advance). */
  level: Difficulty;
  /** One line: the success measured, and the rule it was held against. */
  reason: string;
}

/** The level a suite is at: the stored one when there is one, never below start_level nor above max_level. */
export function currentLevel(stored: Difficulty | undefined, cfg: CurriculumConfig): Difficulty {
  return Math.min(Math.max(stored ?? cfg.start_level, cfg.start_level), cfg.max_level) as Difficulty;
}

/**
 * Whether a suite moves up from its level: production succeeded on at least `threshold` of at least
 * `min_tasks` scored results there, and the level is below max_level.
 */
export function decideLevel(p: LevelProgress, cfg: CurriculumConfig): LevelDecision {
  const rate = p.trials ? p.successes / p.trials : null;
  const measured = `${p.successes}/${p.trials} correct${rate === null ? '' : ` (${pct(rate)})`} at level ${p.level}`;
  const stay = (why: string): LevelDecision => ({ advance: false, level: p.level, reason: `${measured}: ${why}` });
  if (p.level >= cfg.max_level) return stay(`level ${p.level} is max_level`);
  if (p.trials < cfg.min_tasks) return stay(`fewer than min_tasks (${cfg.min_tasks}) results`);
  if (rate === null || rate < cfg.threshold) return stay(`below the threshold ${pct(cfg.threshold)}`);
  const next = (p.level + 1) as Difficulty;
  return { advance: true, level: next, reason: `${measured} ≥ threshold ${pct(cfg.threshold)}: level ${next}` };
}

const pct = (x: number) => `${(x * 100).toFixed(1).replace(/\.0$/, '')} %`;
