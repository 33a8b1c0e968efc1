import { z } from 'zod';
import { count, DAY_S, envName, name, nonNegInt, posInt, retries, timeoutMs } from '../fields.js';
import type { RuleIssue } from '../rule-issue.js';
import type { ConfigPath } from '../yaml-source.js';

/** The engines of the built-in server (`serve --engine`). */
export const SERVE_ENGINES = ['auto', 'llama.cpp', 'transformers', 'vllm'] as const;

/** The port `massgen-rl serve` listens on, and a MassGen export points at, for a local model without local.port. */
export const DEFAULT_SERVE_PORT = 8321;

const localServer = z.strictObject({
  weights: z
    .string()
    .min(1)
    .describe('builtin:<name>, a weight resource "resource:<name>[@version]", or a path to an HF folder'),
  host: z.string().default('127.0.0.1'),
  port: nonNegInt
    .max(65535)
    .default(0)
    .describe(
      `a fixed port for this model's server; 0 (the default): the servers that `
        + `collect and eval start pick a free port, while \`massgen-rl serve\` listens `
        + `on ${DEFAULT_SERVE_PORT} and \`resources export-massgen\` points MassGen there`,
    ),
  device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  engine: z
    .enum(SERVE_ENGINES)
    .default('auto')
    .describe('auto: vLLM on a CUDA GPU when installed, else llama.cpp on the CPU when installed, else transformers'),
  max_batch_size: count(1024)
    .default(16)
    .describe('most sequences generated at once (llama.cpp: running together; transformers: per batch)'),
  startup_timeout_s: posInt.max(DAY_S, `at most ${DAY_S} s (1 day)`).default(180),
  merge_adapter: z
    .boolean()
    .default(true)
    .describe(
      "llama.cpp: a run's own server of an adapter (production's or a candidate's) serves it merged into the base's "
        + "weights, at the base's decode speed (converted once per adapter, cached); the servers of `serve` and the "
        + 'gateway keep adapters unmerged, as deploys swap them; false: unmerged everywhere',
    ),
});

const httpUrl = () =>
  z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, e.g. http://localhost:8000/v1' });
export const MAX_REPLICAS = 256;

export const modelSchema = z.strictObject({
  base_url: httpUrl().optional().describe('OpenAI-compatible endpoint, e.g. http://localhost:8000/v1'),
  base_urls: z
    .array(httpUrl())
    .min(2, 'list at least 2 replicas (for one endpoint use base_url)')
    .max(MAX_REPLICAS)
    .optional()
    .describe(
      'replicas serving the same model, each an OpenAI-compatible endpoint: requests go to the '
        + 'one with the fewest under way, and fail over from one that is down (instead of base_url)',
    ),
  model: z.string().min(1),
  api_key_env: envName
    .optional()
    .describe('name of the env var holding the API key; the key itself never goes in the file'),
  local: localServer
    .optional()
    .describe('serve these weights with the built-in server instead of base_url or base_urls'),
  timeout_ms: timeoutMs().default(120_000),
  max_retries: retries.default(3),
  logprobs: z
    .boolean()
    .default(true)
    .describe('request per-token logprobs and token ids when the server supports them'),
  stream: z
    .boolean()
    .optional()
    .describe(
      "stream chat completions (server-sent events), recording each call's time to "
        + 'first token (ttft_ms); a server that rejects streaming is asked without it '
        + 'from then on (default: true for local models, false for base_url and base_urls)',
    ),
  lora: z
    .strictObject({
      line: name.describe(
        'the weight line whose LoRA adapters this server runs (e.g. the line train.base_model trains)',
      ),
      load_adapters: z
        .boolean()
        .default(true)
        .describe(
          "load adapters through the server's runtime LoRA endpoints "
            + '(vLLM: --enable-lora, VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)',
        ),
    })
    .optional()
    .describe(
      'a server at base_url (or each replica of base_urls) that serves '
        + 'adapters by name: a deployed adapter is requested as model LINE-vN',
    ),
});

export type ModelConfig = z.output<typeof modelSchema>;

/** Where a remote model is served: its base_url, or each replica of base_urls (none for local weights). */
export function remoteUrls(m: Pick<ModelConfig, 'base_url' | 'base_urls'>): string[] {
  return m.base_urls ? [...m.base_urls] : m.base_url ? [m.base_url] : [];
}

/** Whether a model's chat completions are streamed: models.X.stream, else on for the built-in server only. */
export function streamsCompletions(m: Pick<ModelConfig, 'stream' | 'local'>): boolean {
  return m.stream ?? m.local !== undefined;
}

/**
 * The port of a local model's server that others are told about (`massgen-rl serve`, a MassGen export):
 * the --port flag (0 picks a free one), else local.port, else DEFAULT_SERVE_PORT. The servers a run starts
 * for itself keep local.port, where 0 picks a free port.
 */
export function fixedPort(local: Pick<NonNullable<ModelConfig['local']>, 'port'> | undefined, flag?: number): number {
  return flag ?? (local?.port || DEFAULT_SERVE_PORT);
}

/** Each model is served one way (base_url, base_urls or local weights), and lists each replica once. */
export function modelIssues(models: Record<string, ModelConfig>): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const add = (path: ConfigPath, message: string) => issues.push({ path, message });
  for (const [key, m] of Object.entries(models)) {
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
        `${m.base_url ? 'base_url' : 'base_urls'} and local are `
          + 'exclusive: local weights are served on their own address',
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
