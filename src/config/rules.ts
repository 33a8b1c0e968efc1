import fs from 'node:fs';
import path from 'node:path';
import { linkTarget } from './input-file.js';
import { roleIssues } from './role-rules.js';
import { fixedPort, type RLConfig } from './schema.js';
import { machineIssues, sftIssues } from './train-rules.js';
import type { ConfigPath } from './yaml-source.js';

export interface RuleIssue {
  path: ConfigPath;
  message: string;
}

/** Cross-field rules that a schema cannot express: references between sections and files on disk. */
export function checkRules(config: RLConfig, baseDir: string): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const add = (p: ConfigPath, message: string) => issues.push({ path: p, message });
  const known = (kind: string, names: string[]) =>
    names.length ? `${kind}: ${names.join(', ')}` : `no ${kind} are defined`;
  const models = Object.keys(config.models);
  const prompts = Object.keys(config.prompts);
  const tools = Object.keys(config.tools);

  for (const [key, m] of Object.entries(config.models)) {
    const remote = Boolean(m.base_url || m.base_urls);
    if (!remote && !m.local)
      add(
        ['models', key],
        'set either base_url (a running server), base_urls (replicas of it) or local (weights served by massgen-rl)',
      );
    if (m.base_url && m.base_urls)
      add(['models', key, 'base_urls'], 'base_url and base_urls are exclusive: list every replica under base_urls');
    if (remote && m.local)
      add(
        ['models', key, 'local'],
        `${m.base_url ? 'base_url' : 'base_urls'} and local are exclusive: local weights are served on their own address`,
      );
    if (m.lora && !remote)
      add(
        ['models', key, 'lora'],
        'lora names adapters on a server at base_url; a model with local weights serves its adapters itself',
      );
    m.base_urls?.forEach((url, i) => {
      const first = m.base_urls!.findIndex((u) => sameEndpoint(u, url));
      if (first < i)
        add(['models', key, 'base_urls', i], `${url} is listed already (base_urls[${first}]); each replica once`);
    });
  }
  if (config.store.url && config.store.path)
    add(['store', 'url'], 'store.url and store.path are exclusive: a store is a PostgreSQL database or a SQLite file');
  if (config.queue.distributed && !config.store.url)
    add(
      ['queue', 'distributed'],
      'needs store.url: the workers on other machines share a PostgreSQL store and its queue',
    );
  if (config.store.url && hasPassword(config.store.url)) {
    add(
      ['store', 'url'],
      `contains a password; put it in the environment variable ${config.store.password_env} (store.password_env) instead`,
    );
  }
  for (const [key, p] of Object.entries(config.prompts)) {
    if (Boolean(p.file) === Boolean(p.text)) add(['prompts', key], 'set exactly one of file or text');
    if (p.file) requireFile(baseDir, p.file, ['prompts', key, 'file'], add);
  }
  for (const [alias, a] of Object.entries(config.gateway.aliases)) {
    if (Object.hasOwn(config.models, alias)) add(['gateway', 'aliases', alias], `"${alias}" is already a model name`);
    if (!Object.hasOwn(config.models, a.model))
      add(['gateway', 'aliases', alias, 'model'], `unknown model "${a.model}"; ${known('models', models)}`);
  }
  const agentIds = config.agents.map((a) => a.id);
  for (const id of Object.keys(config.gateway.agents)) {
    if (!agentIds.includes(id)) add(['gateway', 'agents', id], `unknown agent "${id}"; agents: ${agentIds.join(', ')}`);
  }
  const seen = new Set<string>();
  config.agents.forEach((a, i) => {
    if (seen.has(a.id)) add(['agents', i, 'id'], `duplicate agent id "${a.id}"`);
    seen.add(a.id);
    if (!Object.hasOwn(config.models, a.model))
      add(['agents', i, 'model'], `unknown model "${a.model}"; ${known('models', models)}`);
    if (!Object.hasOwn(config.prompts, a.system_prompt))
      add(['agents', i, 'system_prompt'], `unknown prompt "${a.system_prompt}"; ${known('prompts', prompts)}`);
    a.tools.forEach((t, j) => {
      if (!Object.hasOwn(config.tools, t))
        add(['agents', i, 'tools', j], `unknown tool "${t}"; ${known('tools', tools)}`);
    });
    const layout = config.orchestrator.prompt_layout;
    if ((layout === 'answers' || layout === 'independent') && a.tool_mode !== 'text') {
      add(
        ['agents', i, 'tool_mode'],
        `orchestrator.prompt_layout ${layout} is for text-mode agents; set tool_mode: text, or use prompt_layout: protocol`,
      );
    }
  });
  const presenter = config.orchestrator.presenter_prompt;
  if (presenter !== undefined && !Object.hasOwn(config.prompts, presenter))
    add(['orchestrator', 'presenter_prompt'], `unknown prompt "${presenter}"; ${known('prompts', prompts)}`);
  for (const [arm, ids] of Object.entries(config.policies.routing.arms ?? {})) {
    ids.forEach((id, j) => {
      if (!agentIds.includes(id))
        add(['policies', 'routing', 'arms', arm, j], `unknown agent "${id}"; agents: ${agentIds.join(', ')}`);
    });
  }
  config.prompt_opt.prompts?.forEach((name, i) => {
    if (!Object.hasOwn(config.prompts, name))
      add(['prompt_opt', 'prompts', i], `unknown prompt "${name}"; ${known('prompts', prompts)}`);
  });
  const optimizer = config.prompt_opt.optimizer_model;
  if (optimizer && !Object.hasOwn(config.models, optimizer))
    add(['prompt_opt', 'optimizer_model'], `unknown model "${optimizer}"; ${known('models', models)}`);
  const emb = config.policies.embedding_model;
  if (emb && !Object.hasOwn(config.models, emb))
    add(['policies', 'embedding_model'], `unknown model "${emb}"; ${known('models', models)}`);
  if (config.orchestrator.delegation?.enabled && Object.hasOwn(config.tools, 'delegate')) {
    add(['tools', 'delegate'], 'orchestrator.delegation gives every agent a tool named delegate: rename this tool');
  }
  config.tasks.sources.forEach((s, i) => {
    if ('file' in s) requireFile(baseDir, s.file, ['tasks', 'sources', i, 'file'], add);
    else if (config.tasks.curriculum.enabled && s.difficulty !== undefined)
      add(
        ['tasks', 'sources', i, 'difficulty'],
        "tasks.curriculum sets each suite's level (start_level to max_level): leave difficulty out",
      );
  });
  if (config.tasks.curriculum.enabled && !config.tasks.sources.some((s) => 'suite' in s))
    add(
      ['tasks', 'curriculum', 'enabled'],
      'the curriculum moves built-in suites through levels: tasks.sources has none',
    );
  if (config.deploy.export_massgen) {
    const ports = new Map<number, string>();
    for (const key of new Set(config.agents.map((a) => a.model))) {
      const local = config.models[key]?.local;
      if (!local) continue;
      const port = fixedPort(local);
      const other = ports.get(port);
      if (other !== undefined) {
        const why = local.port ? '' : ` (unset: \`massgen-rl serve\` listens on ${port})`;
        add(
          ['models', key, 'local', 'port'],
          `deploy.export_massgen points MassGen at each local model's server, and models.${other} and models.${key} would both be on port ${port}${why}: give each its own local.port`,
        );
      }
      ports.set(port, key);
    }
  }
  const judge = config.rewards.judge;
  if (judge.model && !Object.hasOwn(config.models, judge.model))
    add(['rewards', 'judge', 'model'], `unknown model "${judge.model}"; ${known('models', models)}`);
  if ((config.rewards.weights.judge ?? 0) !== 0) {
    if (!judge.model)
      add(['rewards', 'judge', 'model'], 'the judge reward has a weight, so name the model that judges');
    if (!judge.rubric.length)
      add(['rewards', 'judge', 'rubric'], 'the judge reward has a weight, so give at least one rubric criterion');
  }
  for (const issue of sftIssues(config.train.sft, ['train', 'sft'], models)) add(issue.path, issue.message);
  for (const issue of roleIssues(config)) add(issue.path, issue.message);
  const replayJudge = config.eval.replay.judge_model;
  if (replayJudge && !Object.hasOwn(config.models, replayJudge))
    add(['eval', 'replay', 'judge_model'], `unknown model "${replayJudge}"; ${known('models', models)}`);
  if ((config.rewards.weights.custom ?? 0) !== 0 && !config.rewards.custom)
    add(['rewards', 'custom'], 'the custom reward has a weight, so set custom.command');
  for (const key of ['script', 'deepspeed', 'accelerate_config'] as const) {
    const file = config.train[key];
    if (file) requireFile(baseDir, file, ['train', key], add);
  }
  const t = config.train;
  // The trainers' settings (train.<algo> beyond its data selection) are checked by the trainers: train.check.
  for (const issue of machineIssues(t)) add(issue.path, issue.message);
  config.privacy.redact_patterns.forEach((p, i) => {
    const problem = redactPatternProblem(p);
    if (problem) add(['privacy', 'redact_patterns', i], problem);
  });
  const cronError = checkCron(config.loop.schedule);
  if (cronError) add(['loop', 'schedule'], cronError);
  return issues;
}

/** The same endpoint, however written (case of the host, default port, trailing slash). */
function sameEndpoint(a: string, b: string): boolean {
  const norm = (u: string) => {
    const url = new URL(u);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  };
  return norm(a) === norm(b);
}

function requireFile(baseDir: string, file: string, p: ConfigPath, add: (p: ConfigPath, m: string) => void): void {
  const abs = path.resolve(baseDir, file);
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(abs);
  } catch (err) {
    const link = linkTarget(abs);
    add(
      p,
      link === null
        ? `file not found: ${abs}`
        : `a link to ${link}, which leads nowhere (${(err as NodeJS.ErrnoException).code}): ${abs}`,
    );
    return;
  }
  if (!stat.isFile()) add(p, `not a file: ${abs}`);
}

// Probes for patterns that match an empty string only in some context (\b, lookarounds, anchors).
const EMPTY_PROBES = ['', 'a', 'key: "sk-Ab_9" = 123-456\n\tx@y.z/[1] \\ é'];

/** Why a redaction pattern is unusable: invalid, or able to match nothing (it would "redact" between every character). */
export function redactPatternProblem(pattern: string): string | undefined {
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'g');
  } catch (err) {
    return `not a valid regular expression: ${(err as Error).message}`;
  }
  const probe = EMPTY_PROBES.find((text) => [...text.matchAll(re)].some((m) => m[0] === ''));
  return probe === undefined
    ? undefined
    : `matches the empty string${probe ? ` (in ${JSON.stringify(probe)})` : ''}; a redaction pattern must match at least one character, e.g. use + instead of *`;
}

const CRON_FIELD = /^(\*|\d+(-\d+)?)(\/\d+)?(,(\*|\d+(-\d+)?)(\/\d+)?)*$|^[A-Za-z]{3}(-[A-Za-z]{3})?(,[A-Za-z]{3})*$/;

function checkCron(expr: string): string | undefined {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) return `cron expression needs 5 or 6 fields, got ${fields.length}`;
  const bad = fields.find((f) => !CRON_FIELD.test(f));
  return bad ? `"${bad}" is not a valid cron field` : undefined;
}

function hasPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return /\/\/[^/@]*:[^/@]*@/.test(url);
  }
}
