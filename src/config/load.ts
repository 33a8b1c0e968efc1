import path from 'node:path';
import type { z } from 'zod';
import { UserError } from '../errors.js';
import { stableHash } from '../util/hash.js';
import { checkRules } from './cross-section-rules.js';
import {
  DEFAULT_CONFIG_FILE,
  DEFAULT_MAX_LOOKS,
  DEFAULT_PROMPT_LAYOUT,
  DEFAULT_RECIPE,
  LABEL_FREE_WEIGHTS,
} from './defaults.js';
import { InputFileError, present, readRegularFile } from './input-file.js';
import { interpolateEnv, type InterpolationIssue } from './interpolate.js';
import { applyOverrides } from './overrides.js';
import { resolvePaths, type ResolvedPaths } from './paths.js';
import { migrateLoopSteps, migrateRenamedKeys, migrateRenamedOverride } from './renamed-keys.js';
import { configSchema, type RLConfig } from './schema.js';
import { migrateOverride, migrateTrainKeys } from './train-migration.js';
import { YamlSource, type ConfigPath } from './yaml-source.js';

export interface LoadOptions {
  /** Explicit config file (the --config flag); falls back to MASSGEN_RL_CONFIG, then ./massgen-rl.yaml. */
  configPath?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  overrides?: readonly string[];
}

export interface LoadedConfig {
  config: RLConfig;
  /** The file read, or null when the embedded defaults were used. */
  file: string | null;
  paths: ResolvedPaths;
  hash: string;
  /** The environment the config was read with: API keys and secrets to scrub come from it. */
  env: NodeJS.ProcessEnv;
  /** Old spellings read and what they now are (each names the old key and the new one). */
  deprecations: string[];
}

export class ConfigError extends UserError {
  constructor(readonly issues: string[]) {
    super(
      `invalid configuration (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n  ${issues.join('\n  ')}`,
    );
  }
}

export function loadConfig(opts: LoadOptions = {}): LoadedConfig {
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  const explicit = opts.configPath ?? env.MASSGEN_RL_CONFIG;
  const file = path.resolve(cwd, explicit ?? DEFAULT_CONFIG_FILE);
  const text = readConfigText(file, explicit !== undefined);

  let source: YamlSource;
  let raw: unknown;
  if (text === null) {
    source = YamlSource.embedded('<embedded defaults>');
    raw = {};
  } else {
    const parsed = YamlSource.parse(path.relative(cwd, file) || file, text);
    if (parsed.errors.length) throw new ConfigError(parsed.errors);
    source = parsed.source;
    raw = parsed.value;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw new ConfigError([
        `${source.file}:1:1: the config must be a mapping of sections (project, models, agents, …)`,
      ]);
    }
  }
  return fromRaw(raw as Record<string, unknown>, source, text === null ? null : file, { ...opts, cwd, env });
}

/** Validates an already-parsed raw config (used by loadConfig and by tests building configs in code). */
export function fromRaw(
  raw: Record<string, unknown>,
  source: YamlSource,
  file: string | null,
  opts: LoadOptions & { cwd: string; env: NodeJS.ProcessEnv },
): LoadedConfig {
  const envIssues: InterpolationIssue[] = [];
  const interpolated = interpolateEnv(raw, opts.env, envIssues) as Record<string, unknown>;
  if (envIssues.length) throw new ConfigError(envIssues.map((i) => format((p) => source.locate(p), i.path, i.message)));

  const deprecations = [...migrateRenamedKeys(interpolated), ...migrateTrainKeys(interpolated)];
  const overrides = (opts.overrides ?? []).flatMap((spec) => {
    const specs = migrateOverride(migrateRenamedOverride(spec));
    if (specs[0] !== spec)
      deprecations.push(
        `--set ${spec.slice(0, spec.indexOf('='))} is deprecated: use --set ${specs.map((o) => o.slice(0, o.indexOf('='))).join(', --set ')}`,
      );
    return specs;
  });
  const off = referencesOff(interpolated, overrides);
  withDefaultTeam(interpolated, off);
  if (off) withLabelFreeWeights(interpolated);
  // Overrides apply on top of the defaults, so `--set agents.0.temperature=0` edits the default team.
  const defaulted = overrides.length ? configSchema.safeParse(interpolated) : undefined;
  const withOverrides = applyOverrides(structuredClone(defaulted?.success ? defaulted.data : interpolated), overrides);
  if (overrides.length) deprecations.push(...migrateLoopSteps(withOverrides));
  const located = locator(source, overrides);
  const result = configSchema.safeParse(withOverrides);
  if (!result.success)
    throw new ConfigError(byLine(flattenIssues(result.error.issues).map((i) => formatZod(located, i))));

  const baseDir = file ? path.dirname(file) : opts.cwd;
  const ruleIssues = checkRules(result.data, baseDir);
  if (ruleIssues.length) throw new ConfigError(ruleIssues.map((i) => format(located, i.path, i.message)));

  return {
    config: result.data,
    file,
    paths: resolvePaths(result.data, baseDir, opts.env),
    hash: stableHash(result.data),
    env: opts.env,
    deprecations,
  };
}

/**
 * The embedded default team (a config without `agents`) comes with the prompt layout, the evaluation's looks and,
 * unless train.algo is set, the training recipe it was measured best with (DEFAULT_RECIPE); keys already set win.
 * With rewards.references off the recipe comes without rationalized pairs, which check answers against references,
 * and without its cap on a suite's share: agreement's pairs come mostly from the suite the team agrees on, and the cap
 * cut a collect's 34 to 9 (docs/benchmarks.md, learning without references).
 */
function withDefaultTeam(raw: Record<string, unknown>, referencesOff: boolean): void {
  if (raw.agents !== undefined) return;
  const orchestrator = section(raw, 'orchestrator');
  if (orchestrator && orchestrator.prompt_layout === undefined)
    raw.orchestrator = { ...orchestrator, prompt_layout: DEFAULT_PROMPT_LAYOUT };
  const evaluation = section(raw, 'eval'),
    sequential = evaluation && section(evaluation, 'sequential');
  if (evaluation && sequential && sequential.max_looks === undefined)
    raw.eval = { ...evaluation, sequential: { ...sequential, max_looks: DEFAULT_MAX_LOOKS } };
  const train = section(raw, 'train'),
    collect = section(raw, 'collect');
  if (!train || !collect || train.algo !== undefined) return;
  const { algo, samples_per_turn, rationalize, max_suite_share, ...keys } = DEFAULT_RECIPE;
  const own = section(train, algo);
  if (!own) return;
  const recipe = {
    ...structuredClone(keys),
    ...(referencesOff ? {} : { rationalize: { ...rationalize }, max_suite_share }),
  };
  raw.train = { ...train, algo, [algo]: { ...recipe, ...own } };
  if (collect.samples_per_turn === undefined) raw.collect = { ...collect, samples_per_turn };
}

/** Whether rewards.references is off, in the file or by --set (the last one wins). */
function referencesOff(raw: Record<string, unknown>, overrides: readonly string[]): boolean {
  let off = section(raw, 'rewards')?.references === 'off';
  for (const o of overrides)
    if (o.startsWith('rewards.references=')) off = o.slice(o.indexOf('=') + 1).trim() === 'off';
  return off;
}

/**
 * rewards.references off without rewards.weights in the file: the label-free weights, as the default's read the
 * reference. --set rewards.weights.* edits them like any default.
 */
function withLabelFreeWeights(raw: Record<string, unknown>): void {
  const rewards = section(raw, 'rewards');
  if (rewards && rewards.weights === undefined) raw.rewards = { ...rewards, weights: { ...LABEL_FREE_WEIGHTS } };
}

/** A mapping section of the raw config ({} when absent); undefined when it is something else (the schema reports it). */
function section(raw: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const v = raw[key] ?? {};
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function readConfigText(file: string, explicit: boolean): string | null {
  // Only a missing file means the embedded defaults: a massgen-rl.yaml that is a broken link is an error.
  if (!explicit && !present(file)) return null;
  try {
    return readRegularFile(file, 'config file');
  } catch (err) {
    if (!(err instanceof InputFileError)) throw err;
    if (err.code === 'ENOENT')
      throw new UserError(`config file not found: ${file}`, 'create one with `massgen-rl init`');
    if (err.code === 'EISDIR') throw new UserError(`config path is a directory, not a file: ${file}`);
    throw err;
  }
}

type Issue = z.core.$ZodIssue;

/** A union failure is reported through the branch that came closest to matching. */
function flattenIssues(issues: readonly Issue[], prefix: PropertyKey[] = []): Issue[] {
  return issues.flatMap((issue) => {
    const full = { ...issue, path: [...prefix, ...issue.path] } as Issue;
    if (issue.code !== 'invalid_union' || !issue.errors.length) return [full];
    const best = [...issue.errors].sort((a, b) => a.length - b.length)[0]!;
    return flattenIssues(best, full.path);
  });
}

type Locate = (p: ConfigPath, key?: string) => string;

/** Values set with --set are reported as coming from the flag, not from the file. */
function locator(source: YamlSource, overrides: readonly string[]): Locate {
  const keys = overrides.map((o) => o.slice(0, o.indexOf('=')));
  return (p, key) => {
    const full = (key === undefined ? p : [...p, key]).join('.');
    const flag = keys.find((k) => full === k || full.startsWith(`${k}.`));
    return flag ? `--set ${flag}` : source.locate(p, key);
  };
}

function formatZod(source: Locate, issue: Issue): string {
  const p = issue.path.map((k) => (typeof k === 'symbol' ? String(k) : k));
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => format(source, [...p, k], 'unknown key', k, p)).join('\n  ');
  }
  return format(source, p, issue.message);
}

function format(locate: Locate, p: ConfigPath, message: string, unknownKey?: string, parent?: ConfigPath): string {
  const where = unknownKey === undefined ? locate(p) : locate(parent ?? [], unknownKey);
  return `${formatPath(p) || '(root)'}: ${message} (${where})`;
}

/** Orders messages as they appear in the file; messages without a line keep their place at the end. */
function byLine(messages: string[]): string[] {
  const pos = (m: string) => {
    const match = /:(\d+):(\d+)\)$/.exec(m);
    return match ? Number(match[1]) * 1e6 + Number(match[2]) : Number.MAX_SAFE_INTEGER;
  };
  return messages.flatMap((m) => m.split('\n  ')).sort((a, b) => pos(a) - pos(b));
}

export function formatPath(p: ConfigPath): string {
  return p.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');
}
