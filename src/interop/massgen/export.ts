/**
 * A resource set as a MassGen config (`deploy --export-massgen`, `resources export-massgen`).
 *
 * The keys are the ones MassGen 0.1.97 (PyPI) reads, checked in its source: agents[].id and
 * agents[].system_message (massgen/cli/backends.py create_agents_from_config); backend type vllm
 * (InferenceBackend: keyless, VLLM_API_KEY when set) with model and base_url, and temperature and
 * max_tokens, which its Chat Completions params handler passes into every request (as it passes any key it does
 * not exclude: for models served by massgen-rl, tool_choice allowed_tools required of new_answer and vote, and
 * parallel_tool_calls false, whose grammar then makes every reply one valid call of them); orchestrator
 * voting_sensitivity, answer_novelty_requirement and max_new_answers_per_agent
 * (AgentConfig.orchestrator_runtime_direct_fields); orchestrator.coordination.max_orchestration_restarts
 * (CoordinationConfig; a top-level orchestrator key of that name is accepted but never read); and the
 * top-level timeout_settings.orchestrator_timeout_seconds (TimeoutConfig, an int). MassGen's YAML has no
 * key for the final presentation's prompt (orchestrator.presenter_agent picks who presents; the prompt's
 * message_templates override is Python-only), so a set's presenter prompt is named as not exported.
 */
import { Document, type YAMLSeq } from 'yaml';
import { fixedPort, remoteUrls, type ModelConfig, type RLConfig } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import { urlHost } from '../../serving/local-server.js';
import { modelPlan, type ModelPlan } from '../../serving/model-plan.js';
import { servedAdapterName } from '../../serving/vllm-lora.js';
import type { Resource, ResourceSet } from '../../store/index.js';
import { sessionBaseUrl } from '../../util/session-url.js';

export interface MassgenAgent {
  id: string;
  system_message: string;
  backend: {
    type: 'vllm';
    model: string;
    base_url: string;
    temperature: number;
    max_tokens: number;
    tool_choice?: typeof WORKFLOW_CALLS;
    parallel_tool_calls?: false;
  };
}

export interface MassgenConfig {
  agents: MassgenAgent[];
  orchestrator: {
    voting_sensitivity: RLConfig['orchestrator']['voting_sensitivity'];
    answer_novelty_requirement: RLConfig['orchestrator']['answer_novelty_requirement'];
    max_new_answers_per_agent?: number;
    coordination: { max_orchestration_restarts: number };
  };
  timeout_settings: { orchestrator_timeout_seconds: number };
}

export interface ExportInput {
  config: RLConfig;
  set: ResourceSet;
  /** A stored resource by id. */
  resource(id: string): Resource | undefined;
  generatedAt?: Date;
  /** Every agent through massgen-rl's gateway, its base URL naming the session and the agent (captured, joinable). */
  gateway?: { url: string; session: string };
}

export interface MassgenExport {
  config: MassgenConfig;
  /** Per agent: what serves it and what must run there (comments in the YAML). */
  notes: Record<string, string[]>;
  yaml: string;
}

/**
 * For models served by massgen-rl: every reply one call of new_answer or vote (OpenAI's allowed_tools). MassGen
 * also offers its background-tool helpers, which a small model asked to call "a tool" picks again and again.
 */
export const WORKFLOW_CALLS = {
  type: 'allowed_tools',
  allowed_tools: {
    mode: 'required',
    tools: ['new_answer', 'vote'].map((name) => ({ type: 'function', function: { name } })),
  },
} as const;

/** Settings of massgen-rl's orchestrator MassGen has no key for (named in the header). */
const UNMAPPED = ['max_rounds', 'max_action_retries', 'agent_timeout_s'] as const;

/** The MassGen config a resource set serves: one vllm agent per team member, where its weights are served. */
export function massgenExport(input: ExportInput): MassgenExport {
  const { config, set } = input;
  const notes: Record<string, string[]> = {};
  const plans = new Map<string, ModelPlan | undefined>();
  const planOf = (model: string) => {
    if (!plans.has(model)) plans.set(model, modelPlan(config, set, model, input.resource));
    return plans.get(model);
  };
  const addresses = new Map<string, string>();
  const agents = config.agents.map((a): MassgenAgent => {
    const member = set.members.agents[a.id];
    if (!member)
      throw new UserError(
        `resource set v${set.version} has no member for agent ${a.id} (it was made under an older config)`,
        'export production, or a set made since agent ' + a.id + ' was added',
      );
    const prompt = input.resource(member.prompt);
    const weights = member.weights ? input.resource(member.weights) : undefined;
    if (!prompt || (member.weights && !weights))
      throw new Error(`resource set v${set.version}: a resource of agent ${a.id} is missing from the store`);
    const model = config.models[a.model]!;
    const direct = model.local
      ? localAddress(a.model, model, planOf(a.model), a.id, set)
      : remoteAddress(a.model, model, weights);
    const behind =
      model.local && weights
        ? `production's weights, on the gateway's own server (this set's: ${label(weights)})`
        : direct.note;
    const served = input.gateway ? gatewayAddress(input.gateway, a.id, a.model, behind) : direct;
    if (model.local && !input.gateway) {
      const taken = addresses.get(served.base_url);
      if (taken !== undefined && taken !== a.model) {
        throw new UserError(
          `models.${taken} and models.${a.model} would both be served at ${served.base_url} (local.port ${model.local.port || `unset: the default ${fixedPort(model.local)}`})`,
          `give each of them its own models.<name>.local.port`,
        );
      }
      addresses.set(served.base_url, a.model);
    }
    notes[a.id] = [
      `${a.id}: prompt ${label(prompt)}; ${served.note}`,
      ...(model.api_key_env
        ? [`models.${a.model} takes its key from $${model.api_key_env}; MassGen's vllm backend reads VLLM_API_KEY`]
        : []),
      ...(a.tools.length ? [`tools (${a.tools.join(', ')}): massgen-rl's own, not exported`] : []),
    ];
    return {
      id: a.id,
      system_message: prompt.content ?? '',
      backend: {
        type: 'vllm',
        model: served.model,
        base_url: served.base_url,
        temperature: a.temperature,
        max_tokens: a.max_tokens,
        // MassGen acts only through tool calls; a small local model asked with `auto` mostly answers in prose
        ...(model.local ? { tool_choice: structuredClone(WORKFLOW_CALLS), parallel_tool_calls: false as const } : {}),
      },
    };
  });
  const o = config.orchestrator;
  const out: MassgenConfig = {
    agents,
    orchestrator: {
      voting_sensitivity: o.voting_sensitivity,
      answer_novelty_requirement: o.answer_novelty_requirement,
      ...(o.max_new_answers_per_agent !== undefined ? { max_new_answers_per_agent: o.max_new_answers_per_agent } : {}),
      coordination: { max_orchestration_restarts: o.max_orchestration_restarts },
    },
    timeout_settings: { orchestrator_timeout_seconds: Math.ceil(o.total_timeout_s) },
  };
  return { config: out, notes, yaml: render(out, notes, input) };
}

function remoteAddress(
  name: string,
  model: ModelConfig,
  weights: Resource | undefined,
): { base_url: string; model: string; note: string } {
  const [base_url = '', ...others] = remoteUrls(model);
  // A MassGen backend names one endpoint: the first replica, and the note says which were left out.
  const replicas = others.length
    ? `; models.${name} has ${others.length + 1} replicas (base_urls) and a MassGen backend names one: the first is used, not ${others.join(', ')}`
    : '';
  if (!weights)
    return { base_url, model: model.model, note: `model ${model.model} at ${base_url} (models.${name})${replicas}` };
  const adapter = servedAdapterName(name, model, weights);
  const loaded = model.lora!.load_adapters
    ? 'massgen-rl loads it there when it deploys or evaluates the set'
    : `load it there yourself (models.${name}.lora.load_adapters is false)`;
  return {
    base_url,
    model: adapter,
    note: `LoRA adapter ${adapter} = weights ${label(weights)} (${weights.path}) at ${base_url}; ${loaded}${replicas}`,
  };
}

/**
 * Where `massgen-rl serve --model NAME` listens (local.host at local.port, else at DEFAULT_SERVE_PORT), and the
 * model name the agent asks for there: the served name, or its own adapter loaded beside it by name (roles).
 */
function localAddress(
  name: string,
  model: ModelConfig,
  plan: ModelPlan | undefined,
  agent: string,
  set: ResourceSet,
): { base_url: string; model: string; note: string } {
  const l = model.local!;
  if (!plan) throw new Error(`resource set v${set.version} has no weights for agent ${agent} of local models.${name}`);
  const base_url = `http://${urlHost(l.host)}:${fixedPort(l)}/v1`;
  const asks = plan.agentModel[agent]!;
  const own = plan.named.find((n) => n.name === asks)?.weights ?? plan.primary;
  if (!plan.named.length)
    return {
      base_url,
      model: asks,
      note: `weights ${label(own)} (${own.path}) must be served at ${base_url}: massgen-rl serve --model ${name} --weights resource:${own.name}@${own.version}`,
    };
  const what = asks === model.model ? `the served name ${asks}` : `the adapter ${asks}, loaded by name beside it`;
  return {
    base_url,
    model: asks,
    note: `weights ${label(own)} (${own.path}), ${what}, on the server of ${label(plan.primary)} and ${plan.named.map((n) => n.name).join(', ')} at ${base_url}: massgen-rl serve --model ${name} --set v${set.version}`,
  };
}

/** The gateway's address for one agent: it routes models.<name> itself, so the model is the config's name. */
function gatewayAddress(gw: { url: string; session: string }, agent: string, name: string, behind: string) {
  const root = gw.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  const base_url = sessionBaseUrl(root, gw.session, agent);
  return {
    base_url,
    model: name,
    note: `through the gateway at ${root} (session ${gw.session}), which routes models.${name}: ${behind}`,
  };
}

const label = (r: Resource) => `${r.name} v${r.version}`;

function presenterLabel(input: ExportInput, id: string): string {
  const r = input.resource(id);
  return r ? label(r) : id;
}

function render(config: MassgenConfig, notes: Record<string, string[]>, input: ExportInput): string {
  const doc = new Document(config);
  const when = (input.generatedAt ?? new Date()).toISOString();
  doc.commentBefore = [
    `Generated by massgen-rl from resource set v${input.set.version} (${input.set.id}) on ${when}.`,
    'Run it with: massgen --config THIS_FILE "your question"',
    `Not exported (MassGen has no matching setting): orchestrator ${[...UNMAPPED, ...(input.config.orchestrator.delegation ? ['delegation'] : [])].join(', ')}.`,
    ...(Object.keys(input.set.members.policies ?? {}).length
      ? [
          `Not exported: the set's learned ${Object.keys(input.set.members.policies!).join(', ')} policies (massgen-rl's own; MassGen runs its fixed rules).`,
        ]
      : []),
    ...(input.set.members.presenter === undefined
      ? []
      : [
          `Not exported: the set's presenter prompt ${presenterLabel(input, input.set.members.presenter)} (MassGen's config has no key for it; its winner presents with its own system_message).`,
        ]),
  ]
    .map((l) => ` ${l}`)
    .join('\n');
  const seq = doc.get('agents') as YAMLSeq;
  config.agents.forEach((a, i) => {
    const node = seq.items[i] as { commentBefore?: string; spaceBefore?: boolean };
    node.commentBefore = notes[a.id]!.map((l) => ` ${l}`).join('\n');
    if (i > 0) node.spaceBefore = true;
  });
  return doc.toString({ lineWidth: 0 });
}
