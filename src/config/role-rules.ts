import type { RuleIssue } from './rule-issue.js';
import type { RLConfig } from './schema.js';
import type { RoleConfig } from './sections/roles.js';
import { ALGOS } from './sections/train-selection.js';
import { dpoIssues, sftIssues, WITHHELD, withheldReferenceKeys } from './sections/train.js';
import type { ConfigPath } from './yaml-source.js';

/**
 * The cross-field rules of `roles`: every call belongs to one role (an agent, the presenter, the delegated
 * sub-tasks and each policy are claimed once), members and models exist, and a recipe fits its members and
 * weights (a weight recipe needs weights it can train, bandit learns decisions only, apo needs agents).
 */
export function roleIssues(config: RLConfig): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const add = (path: ConfigPath, message: string) => issues.push({ path, message });
  const owners = new Map<string, string>();
  const claim = (key: string, what: string, role: string, path: ConfigPath) => {
    const first = owners.get(key);
    if (first === undefined) owners.set(key, role);
    else if (first === role) add(path, `${what} is listed twice`);
    else add(path, `${what} is already claimed by role "${first}": each call belongs to one role`);
  };
  const trained = new Map<string, string>();
  for (const [name, r] of Object.entries(config.roles ?? {})) {
    const at: ConfigPath = ['roles', name];
    memberIssues(config, r, at, add, (key, what, path) => claim(key, what, name, path));
    recipeIssues(config, r, at, add);
    weightIssues(config, r, at, add);
    if (r.weights && isWeightRecipe(r)) {
      const line = r.weights.lora !== undefined ? `lora ${r.weights.lora}` : `model ${r.weights.model}`;
      const first = trained.get(line);
      if (first === undefined) trained.set(line, name);
      else add([...at, 'weights'], `role "${first}" trains ${line} already: give each trained role its own weights`);
    }
  }
  return issues;
}

type Add = (path: ConfigPath, message: string) => void;

function isWeightRecipe(r: RoleConfig): boolean {
  return r.recipe !== undefined && (ALGOS as readonly string[]).includes(r.recipe.algo);
}

function memberIssues(
  config: RLConfig,
  r: RoleConfig,
  at: ConfigPath,
  add: Add,
  claim: (key: string, what: string, path: ConfigPath) => void,
): void {
  const ids = config.agents.map((a) => a.id);
  r.agents.forEach((id, j) => {
    if (ids.includes(id)) claim(`agent:${id}`, `agent "${id}"`, [...at, 'agents', j]);
    else add([...at, 'agents', j], `unknown agent "${id}"; agents: ${ids.join(', ')}`);
  });
  if (r.presenter) {
    claim('presenter', 'presenter: true', [...at, 'presenter']);
    const layout = config.orchestrator.prompt_layout;
    if (layout === 'answers' || layout === 'independent')
      add(
        [...at, 'presenter'],
        `orchestrator.prompt_layout ${layout} makes no presentation call (the winner's answer is the final answer)`,
      );
  }
  if (r.delegate) {
    claim('delegate', 'delegate: true', [...at, 'delegate']);
    if (!config.orchestrator.delegation?.enabled)
      add([...at, 'delegate'], 'there are no delegated sub-tasks: orchestrator.delegation.enabled is off');
  }
  r.policies.forEach((kind, j) => claim(`policy:${kind}`, `policy ${kind}`, [...at, 'policies', j]));
}

function recipeIssues(config: RLConfig, r: RoleConfig, at: ConfigPath, add: Add): void {
  const recipe = r.recipe;
  if (!recipe) return;
  const algo = recipe.algo;
  if (algo === 'bandit') {
    if (!r.policies.length)
      add(
        [...at, 'policies'],
        'recipe bandit learns orchestration decisions: list them (routing, stop, tool, delegate)',
      );
    if (r.agents.length || r.presenter || r.delegate)
      add(
        [...at, 'recipe', 'algo'],
        'recipe bandit learns decisions only: give the agents, presenter or delegated sub-tasks a role of their own',
      );
    if (r.weights) add([...at, 'weights'], 'recipe bandit trains no weights: leave weights out');
    return;
  }
  if (r.policies.length)
    add([...at, 'policies'], `decisions are learned by recipe bandit, not ${algo}: give them a role of their own`);
  if (algo === 'apo') {
    if (!r.agents.length)
      add([...at, 'agents'], "recipe apo optimizes the system prompts of the role's agents: list them");
    for (const prompt of new Set(config.agents.filter((a) => r.agents.includes(a.id)).map((a) => a.system_prompt))) {
      const outside = config.agents.find((a) => a.system_prompt === prompt && !r.agents.includes(a.id));
      if (outside)
        add(
          [...at, 'agents'],
          `recipe apo optimizes the system prompts of the role's agents, and prompt ${prompt} is also agent `
            + `${outside.id}'s, outside the role: give the role's agents a prompt of their own`,
        );
    }
    const optimizer = recipe.optimizer_model;
    if (optimizer !== undefined && !Object.hasOwn(config.models, optimizer))
      add(
        [...at, 'recipe', 'optimizer_model'],
        `unknown model "${optimizer}"; models: ${Object.keys(config.models).join(', ')}`,
      );
    return;
  }
  if (!r.weights)
    add([...at, 'weights'], `recipe ${algo} trains weights: name them (lora: <line> or model: <models key>)`);
  if (r.delegate && !r.agents.length && !r.presenter && algo !== 'ppo')
    add(
      [...at, 'recipe', 'algo'],
      `${algo} rows come from answers, votes and presentations; `
        + `a delegated sub-task's calls are none of those: use ppo`,
    );
  if (algo === 'sft') {
    issues(sftIssues(recipe, [...at, 'recipe'], Object.keys(config.models)), add);
    if (!r.agents.length && recipe.select === 'verified')
      add(
        [...at, 'recipe', 'select'],
        'verified rows are answers and samples, which a role without agents has none of',
      );
    if (!r.agents.length && !recipe.include_presentation)
      add([...at, 'recipe', 'include_presentation'], 'a role without agents has no sft rows but its presentation');
  }
  if (algo === 'dpo') issues(dpoIssues(recipe, [...at, 'recipe']), add);
  const asks = recipe as Parameters<typeof withheldReferenceKeys>[0];
  if (config.rewards.references === 'off')
    for (const key of withheldReferenceKeys(asks)) add([...at, 'recipe', key], WITHHELD);
}

function weightIssues(config: RLConfig, r: RoleConfig, at: ConfigPath, add: Add): void {
  const own = r.weights?.model;
  if (own !== undefined && !Object.hasOwn(config.models, own)) {
    add([...at, 'weights', 'model'], `unknown model "${own}"; models: ${Object.keys(config.models).join(', ')}`);
    return;
  }
  const agents = config.agents.filter((a) => r.agents.includes(a.id));
  if (own !== undefined)
    for (const a of agents.filter((x) => x.model !== own))
      add([...at, 'weights', 'model'], `agent "${a.id}" runs on models.${a.model}: a role's agents run on its model`);
  if (!r.weights || !isWeightRecipe(r)) return;
  for (const key of own !== undefined ? [own] : [...new Set(agents.map((a) => a.model))]) {
    const m = config.models[key];
    if (m && !m.local && !m.lora)
      add(
        [...at, 'weights'],
        `recipe ${r.recipe!.algo} trains weights, but models.${key} is a remote endpoint that cannot load them: `
          + `serve it with local, set models.${key}.lora (a server that loads adapters), or use recipe apo`,
      );
    else if (m && !m.local && m.lora && r.weights.lora !== undefined && m.lora.line !== r.weights.lora)
      add(
        [...at, 'weights', 'lora'],
        `models.${key} runs adapters of line "${m.lora.line}" (models.${key}.lora.line), not "${r.weights.lora}": `
          + `name that line here, or give the role's agents a model whose lora.line is ${r.weights.lora}`,
      );
  }
}

function issues(found: RuleIssue[], add: Add): void {
  for (const issue of found) add(issue.path, issue.message);
}
