import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import {
  DEFAULT_MAX_LOOKS,
  DEFAULT_MODEL_NAME,
  DEFAULT_MODEL_REF,
  DEFAULT_PROMPT_LAYOUT,
  DEFAULT_RECIPE,
} from './defaults.js';
import { ALGOS, BUILTIN_SUITES } from './schema.js';

export const TEMPLATES_DIR = fileURLToPath(new URL('../../templates', import.meta.url));
export const SCHEMA_FILE = fileURLToPath(new URL('../../schema/massgen-rl.schema.json', import.meta.url));

export type Endpoint = { kind: 'local' } | { kind: 'remote'; baseUrl: string; model: string; apiKeyEnv?: string };

export interface InitAnswers {
  projectName: string;
  teamSize: number;
  endpoint: Endpoint;
  suite: (typeof BUILTIN_SUITES)[number];
  algo: (typeof ALGOS)[number];
}

export const DEFAULT_ANSWERS: InitAnswers = {
  projectName: 'my-agent-team',
  teamSize: 3,
  endpoint: { kind: 'local' },
  suite: 'arithmetic',
  algo: DEFAULT_RECIPE.algo,
};

/** Renders the commented config file for `massgen-rl init`. */
export function renderConfig(answers: InitAnswers, schemaPath = SCHEMA_FILE): string {
  const local = answers.endpoint.kind === 'local';
  const model =
    answers.endpoint.kind === 'local'
      ? { local: { model: DEFAULT_MODEL_NAME, local: { weights: DEFAULT_MODEL_REF } } }
      : {
          main: {
            base_url: answers.endpoint.baseUrl,
            model: answers.endpoint.model,
            ...(answers.endpoint.apiKeyEnv ? { api_key_env: answers.endpoint.apiKeyEnv } : {}),
          },
        };
  const modelName = Object.keys(model)[0]!;
  const agents = Array.from({ length: answers.teamSize }, (_, i) => ({
    id: `agent_${String.fromCharCode(97 + (i % 26))}${i >= 26 ? Math.floor(i / 26) : ''}`,
    model: modelName,
    system_prompt: 'solver',
    // The measured default team for a small local model: the first agent greedy, the others sampling.
    temperature: local && i === 0 ? 0 : 0.7,
    max_tokens: local ? 128 : 1024,
    tool_mode: local ? 'text' : 'native',
    ...(local ? { implicit_answer: true } : {}),
  }));
  const vars: Record<string, string> = {
    schema_path: schemaPath,
    project_name: JSON.stringify(answers.projectName),
    models: indent(stringify(model)),
    agents: indent(stringify(agents)),
    suite: answers.suite,
    prompt_layout: local
      ? `  # independent: each agent answers the task on its own and the answer most agents reach wins (best measured\n  # for small models); answers: later turns see the others' final answers; protocol: MassGen's full protocol text\n  prompt_layout: ${DEFAULT_PROMPT_LAYOUT}\n`
      : '',
    algo: answers.algo,
    // The measured recipe for the small local model (DEFAULT_RECIPE); the schema's defaults otherwise.
    samples: local
      ? `  samples_per_turn: ${DEFAULT_RECIPE.samples_per_turn}     # completions per decision: the extra ones are training samples, they do not act\n`
      : '',
    selection: (SELECTION_LINES[answers.algo] ?? '') + (local && answers.algo === 'dpo' ? LOCAL_DPO_LINES : ''),
    looks: local
      ? `  sequential:\n    max_looks: ${DEFAULT_MAX_LOOKS}                 # a promising candidate not yet clear is measured on more seeds\n`
      : '',
    learning_rate: local ? DEFAULT_RECIPE.learning_rate.toExponential(1) : '1.0e-5',
    epochs: local ? String(DEFAULT_RECIPE.num_train_epochs) : '1',
  };
  const template = fs.readFileSync(`${TEMPLATES_DIR}/massgen-rl.yaml.tmpl`, 'utf8');
  return template.replace(/\{\{(\w+)\}\}/g, (_, key: string) => vars[key] ?? '');
}

// The data selection that suits verifiable tasks: learn from what a reward verified right.
const SELECTION_LINES: Partial<Record<InitAnswers['algo'], string>> = {
  sft: '    select: verified             # rejection sampling: learn only from answers and samples verified right (reward: by reward_threshold)\n',
  dpo: "    pairs: correctness           # each answer verified right against the same task's answers verified wrong\n",
};

// The rest of the default team's measured DPO recipe (DEFAULT_RECIPE).
const LOCAL_DPO_LINES =
  `    loss_type: [${DEFAULT_RECIPE.loss_type.join(', ')}]      # DPO plus an SFT term on the chosen answers\n`
  + `    rationalize: { samples: ${DEFAULT_RECIPE.rationalize.samples}, max_tasks: ${DEFAULT_RECIPE.rationalize.max_tasks} }`
  + '   # tasks no completion got right: pairs from replies the reference hinted at\n'
  + `    max_suite_share: ${DEFAULT_RECIPE.max_suite_share}         # no suite above this share of the pairs\n`;

function indent(block: string): string {
  return block
    .trimEnd()
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
