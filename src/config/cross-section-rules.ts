import { roleIssues } from './role-rules.js';
import { knownNames, type RuleIssue } from './rule-issue.js';
import type { RLConfig } from './schema.js';
import { agentIdIssues } from './sections/agents.js';
import { loopIssues } from './sections/loop.js';
import { fixedPort, modelIssues } from './sections/models.js';
import { privacyIssues } from './sections/privacy.js';
import { promptIssues } from './sections/prompts.js';
import { customRewardIssues, judgeIssues, referenceIssues } from './sections/rewards.js';
import { storeIssues } from './sections/store.js';
import { taskIssues } from './sections/tasks.js';
import {
  dpoIssues,
  machineIssues,
  sftIssues,
  trainFileIssues,
  WITHHELD,
  withheldReferenceKeys,
} from './sections/train.js';
import type { ConfigPath } from './yaml-source.js';

/**
 * The rules a schema cannot express: each section's own (beside its schema under sections/), and here the
 * references between sections. A config's problems are listed in this order, the one they have always come in,
 * which is why some sections' checks stand apart.
 */
export function checkRules(config: RLConfig, baseDir: string): RuleIssue[] {
  return [
    ...modelIssues(config.models),
    ...storeIssues(config.store, config.queue),
    ...promptIssues(config.prompts, baseDir),
    ...gatewayReferences(config),
    ...inAgentOrder([...agentIdIssues(config.agents), ...agentReferences(config)]),
    ...orchestrationReferences(config),
    ...taskIssues(config.tasks, baseDir),
    ...exportPortIssues(config),
    ...unknownKey(config, 'model', config.rewards.judge.model, ['rewards', 'judge', 'model']),
    ...judgeIssues(config.rewards),
    ...sftIssues(config.train.sft, ['train', 'sft'], Object.keys(config.models)),
    ...dpoIssues(config.train.dpo, ['train', 'dpo']),
    ...roleIssues(config),
    ...unknownKey(config, 'model', config.eval.replay.judge_model, ['eval', 'replay', 'judge_model']),
    ...customRewardIssues(config.rewards),
    ...referenceIssues(config.rewards),
    ...withheldReferences(config),
    // The trainers' settings (train.<algo> beyond its data selection) are checked by the trainers: train.check.
    ...trainFileIssues(config.train, baseDir),
    ...machineIssues(config.train),
    ...privacyIssues(config.privacy),
    ...loopIssues(config.loop),
  ];
}

/** rewards.references off: the keys whose work checks answers against the references are refused. */
function withheldReferences(config: RLConfig): RuleIssue[] {
  if (config.rewards.references !== 'off') return [];
  const paths: ConfigPath[] = [
    ...withheldReferenceKeys(config.train.sft).map((key) => ['train', 'sft', key]),
    ...withheldReferenceKeys(config.train.dpo).map((key) => ['train', 'dpo', key]),
    ...(config.tasks.curriculum.enabled ? [['tasks', 'curriculum', 'enabled']] : []),
  ];
  return paths.map((path) => ({ path, message: `${path.join('.')} ${WITHHELD}` }));
}

/** A key of models or prompts that `key` names and that is not there (none when `key` is unset). */
function unknownKey(config: RLConfig, kind: 'model' | 'prompt', key: string | undefined, at: ConfigPath): RuleIssue[] {
  const keys = kind === 'model' ? config.models : config.prompts;
  if (!key || Object.hasOwn(keys, key)) return [];
  return [{ path: at, message: `unknown ${kind} "${key}"; ${knownNames(`${kind}s`, Object.keys(keys))}` }];
}

function unknownAgent(config: RLConfig, id: string, at: ConfigPath): RuleIssue[] {
  const ids = config.agents.map((a) => a.id);
  return ids.includes(id) ? [] : [{ path: at, message: `unknown agent "${id}"; agents: ${ids.join(', ')}` }];
}

/** Gateway aliases route to models (under names of their own), and its per-agent settings name agents. */
function gatewayReferences(config: RLConfig): RuleIssue[] {
  const issues: RuleIssue[] = [];
  for (const [alias, a] of Object.entries(config.gateway.aliases)) {
    if (Object.hasOwn(config.models, alias))
      issues.push({ path: ['gateway', 'aliases', alias], message: `"${alias}" is already a model name` });
    issues.push(...unknownKey(config, 'model', a.model, ['gateway', 'aliases', alias, 'model']));
  }
  for (const id of Object.keys(config.gateway.agents))
    issues.push(...unknownAgent(config, id, ['gateway', 'agents', id]));
  return issues;
}

/** Each agent's model, prompt and tools exist, and its tool mode suits the orchestrator's prompt layout. */
function agentReferences(config: RLConfig): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const layout = config.orchestrator.prompt_layout;
  config.agents.forEach((a, i) => {
    issues.push(...unknownKey(config, 'model', a.model, ['agents', i, 'model']));
    issues.push(...unknownKey(config, 'prompt', a.system_prompt, ['agents', i, 'system_prompt']));
    a.tools.forEach((t, j) => {
      if (!Object.hasOwn(config.tools, t))
        issues.push({
          path: ['agents', i, 'tools', j],
          message: `unknown tool "${t}"; ${knownNames('tools', Object.keys(config.tools))}`,
        });
    });
    if ((layout === 'answers' || layout === 'independent') && a.tool_mode !== 'text')
      issues.push({
        path: ['agents', i, 'tool_mode'],
        message:
          `orchestrator.prompt_layout ${layout} is for text-mode `
          + 'agents; set tool_mode: text, or use prompt_layout: protocol',
      });
  });
  return issues;
}

/** An agent's issues together, agent by agent (its duplicate id first), as a reader goes down the file. */
function inAgentOrder(issues: RuleIssue[]): RuleIssue[] {
  return issues.sort((a, b) => Number(a.path[1]) - Number(b.path[1]));
}

/** The prompts, agents, models and tool names that the orchestrator, policies and prompt_opt refer to. */
function orchestrationReferences(config: RLConfig): RuleIssue[] {
  const { orchestrator, policies, prompt_opt: promptOpt } = config;
  const issues = unknownKey(config, 'prompt', orchestrator.presenter_prompt, ['orchestrator', 'presenter_prompt']);
  for (const [arm, ids] of Object.entries(policies.routing.arms ?? {}))
    ids.forEach((id, j) => issues.push(...unknownAgent(config, id, ['policies', 'routing', 'arms', arm, j])));
  promptOpt.prompts?.forEach((p, i) => issues.push(...unknownKey(config, 'prompt', p, ['prompt_opt', 'prompts', i])));
  issues.push(...unknownKey(config, 'model', promptOpt.optimizer_model, ['prompt_opt', 'optimizer_model']));
  issues.push(...unknownKey(config, 'model', policies.embedding_model, ['policies', 'embedding_model']));
  if (orchestrator.delegation?.enabled && Object.hasOwn(config.tools, 'delegate'))
    issues.push({
      path: ['tools', 'delegate'],
      message: 'orchestrator.delegation gives every agent a tool named delegate: rename this tool',
    });
  return issues;
}

/** A MassGen export points at each local model's server: the team's local models need ports of their own. */
function exportPortIssues(config: RLConfig): RuleIssue[] {
  if (!config.deploy.export_massgen) return [];
  const issues: RuleIssue[] = [];
  const ports = new Map<number, string>();
  for (const key of new Set(config.agents.map((a) => a.model))) {
    const local = config.models[key]?.local;
    if (!local) continue;
    const port = fixedPort(local);
    const other = ports.get(port);
    if (other !== undefined) {
      const why = local.port ? '' : ` (unset: \`massgen-rl serve\` listens on ${port})`;
      issues.push({
        path: ['models', key, 'local', 'port'],
        message:
          `deploy.export_massgen points MassGen at each local model's server, and models.${other} `
          + `and models.${key} would both be on port ${port}${why}: give each its own local.port`,
      });
    }
    ports.set(port, key);
  }
  return issues;
}
