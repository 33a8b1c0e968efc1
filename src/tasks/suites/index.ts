import type { BUILTIN_SUITES } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import type { TaskSuite } from '../types.js';
import { arithmetic } from './arithmetic.js';
import { multiStep } from './multi-step.js';
import { stringTransform } from './string-transform.js';
import { unitConversion } from './unit-conversion.js';

export type BuiltinSuiteName = (typeof BUILTIN_SUITES)[number];

/** The built-in suites, keyed by the names the config accepts. */
export const SUITES = {
  arithmetic,
  unit_conversion: unitConversion,
  string_transform: stringTransform,
  multi_step: multiStep,
} satisfies Record<BuiltinSuiteName, TaskSuite>;

export function suiteNames(): string[] {
  return Object.keys(SUITES);
}

export function getSuite(name: string): TaskSuite {
  const suite = (SUITES as Record<string, TaskSuite>)[name];
  if (!suite || !Object.hasOwn(SUITES, name)) {
    throw new UserError(`unknown task suite "${name}"; built-in suites: ${suiteNames().join(', ')}`);
  }
  return suite;
}
