import { ALGOS, BUILTIN_SUITES } from '../../config/schema.js';
import { DEFAULT_ANSWERS, type Endpoint, type InitAnswers } from '../../config/template.js';
import { UserError } from '../../errors.js';
import type { Context } from '../context.js';
import { wholeNumber } from '../flags.js';
import { input, number, select } from '../ui/prompts.js';

export interface InitAnswerFlags {
  name?: string;
  teamSize?: string;
  endpoint?: string;
  model?: string;
  apiKeyEnv?: string;
  suite?: string;
  algo?: string;
}

/** Each answer comes from its flag, else the default (--yes), else a prompt (TTY only). */
export async function initAnswers(flags: InitAnswerFlags, ctx: Context): Promise<InitAnswers> {
  const ask = !ctx.opts.yes;
  const missing: string[] = [];
  const need = <T>(flag: string, value: T | undefined, fallback: T, prompt: () => Promise<T>): Promise<T> | T => {
    if (value !== undefined) return value;
    if (!ask) return fallback;
    if (!ctx.interactive) {
      missing.push(flag);
      return fallback;
    }
    return prompt();
  };

  const projectName = await need('--name', flags.name, DEFAULT_ANSWERS.projectName, () =>
    input({ message: 'Project name', default: DEFAULT_ANSWERS.projectName }),
  );
  const teamSize = await need(
    '--team-size',
    wholeNumber('--team-size', flags.teamSize, 64),
    DEFAULT_ANSWERS.teamSize,
    async () =>
      (await number({ message: 'How many agents in the team?', default: 3, min: 1, max: 16, required: true }))!,
  );
  const endpointKind = await need('--endpoint', flags.endpoint, 'local', () =>
    select({
      message: 'Which model should the agents use?',
      choices: [
        { name: 'Bundled SmolLM2-135M-Instruct (offline, served locally)', value: 'local' },
        { name: 'An OpenAI-compatible endpoint (vLLM, Ollama, OpenAI, …)', value: 'remote' },
      ],
    }),
  );
  let endpoint: Endpoint = { kind: 'local' };
  if (endpointKind !== 'local') {
    const baseUrl =
      endpointKind === 'remote'
        ? await input({ message: 'Base URL', default: 'http://localhost:8000/v1' })
        : endpointKind;
    if (!/^https?:\/\//.test(baseUrl)) throw new UserError(`--endpoint ${baseUrl}: expected "local" or an http(s) URL`);
    const model = await need('--model', flags.model, '', () =>
      input({ message: 'Model name at that endpoint', required: true }),
    );
    if (!model) throw new UserError('--model is required with a remote --endpoint');
    const apiKeyEnv = await need(
      '--api-key-env',
      flags.apiKeyEnv,
      undefined as string | undefined,
      async () => (await input({ message: 'Env var holding the API key (empty for none)' })) || undefined,
    );
    endpoint = { kind: 'remote', baseUrl, model, apiKeyEnv };
  }
  const suite = await need(
    '--suite',
    flags.suite === undefined ? undefined : oneOf('--suite', flags.suite, BUILTIN_SUITES),
    DEFAULT_ANSWERS.suite,
    () => select({ message: 'Built-in task suite', choices: BUILTIN_SUITES.map((s) => ({ name: s, value: s })) }),
  );
  const algo = await need(
    '--algo',
    flags.algo === undefined ? undefined : oneOf('--algo', flags.algo, ALGOS),
    DEFAULT_ANSWERS.algo,
    () => select({ message: 'Training algorithm', choices: ALGOS.map((a) => ({ name: a, value: a })) }),
  );

  if (missing.length) {
    throw new UserError(
      `init needs answers but there is no terminal to ask: pass ${missing.join(', ')}`,
      'or pass --yes for the offline defaults',
    );
  }
  return { projectName, teamSize, endpoint, suite, algo };
}

function oneOf<T extends string>(flag: string, v: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v))
    throw new UserError(`${flag} ${v}: expected one of ${allowed.join(', ')}`);
  return v as T;
}
