import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { UserError, errorMessage } from '../errors.js';
import type { LlmClient } from '../llm/types.js';
import type { Store } from '../store/index.js';
import type { Task } from '../tasks/types.js';
import { BodyRefused, readBody } from '../util/http-body.js';
import { MalformedRequest, parseRewardRequest, type RewardRequest } from './bridge-request.js';
import { scoreCompletion, SINGLE_ANSWER_FAMILIES, singleAnswerWeights } from './completion.js';
import type { RewardsConfig, RewardUsage } from './types.js';

export const REWARD_BRIDGE_PATH = '/rewards';

export interface RewardBridgeOptions {
  store: Store;
  /** The config's rewards slice: weights of the single-answer families, their settings. */
  rewards: RewardsConfig;
  /** Needed when rewards.weights.judge is non-zero. */
  judge?: { client: LlmClient; model: string };
  /** Cancels running reward computations and closes the bridge. */
  signal?: AbortSignal;
  host?: string;
  /** Completions scored at once, across requests (default 8). */
  concurrency?: number;
  maxBodyBytes?: number;
}

export interface RewardBridge {
  /** The `reward_url` for the GRPO trainer (online mode). */
  readonly url: string;
  /** Requests answered with rewards. */
  readonly calls: number;
  /** Completions given a numeric (non-null) reward. */
  readonly scored: number;
  /** Tokens the judge spent so far. */
  readonly usage: Readonly<RewardUsage>;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The reward bridge of online GRPO: POST {"prompts": [[messages]], "completions": [str], "meta": [{...}]}
 * → {"rewards": [number|null]}, each completion scored against the task named by its meta.task_id with the
 * single-answer reward families (see scoreCompletion). Null for a vote, an unknown task, or when no family
 * scores. A malformed request is a 400, a reward that cannot compute a 500 with its message.
 */
export async function startRewardBridge(opts: RewardBridgeOptions): Promise<RewardBridge> {
  const weights = singleAnswerWeights(opts.rewards.weights);
  if (!Object.keys(weights).length) {
    throw new UserError(
      'online GRPO scores each sampled answer on its own, but no single-answer reward family has a weight',
      `give one of ${SINGLE_ANSWER_FAMILIES.join(', ')} a non-zero weight in rewards.weights`,
    );
  }
  if (weights.judge !== undefined && !opts.judge)
    throw new UserError(
      'the judge reward has a weight, so the reward bridge needs the judge model (rewards.judge.model)',
    );
  opts.signal?.throwIfAborted();
  const limit = limiter(opts.concurrency ?? 8);
  const usage: RewardUsage = { judgeTokens: 0, judgeCalls: 0 };
  const counts = { requests: 0, calls: 0, scored: 0 };
  const ctx = { config: opts.rewards, judge: opts.judge, signal: opts.signal, usage };

  async function rewardsFor(body: RewardRequest): Promise<(number | null)[]> {
    const request = ++counts.requests;
    const tasks = new Map<string, Task | null>();
    const taskOf = (id: unknown): Task | null => {
      if (typeof id !== 'string') return null;
      if (!tasks.has(id)) tasks.set(id, opts.store.tasks.get(id) ?? null);
      return tasks.get(id)!;
    };
    const rewards = await Promise.all(
      body.completions.map((text, i) => {
        const meta = body.meta[i]!;
        const task = taskOf(meta.task_id);
        if (!task) return null;
        const agent = typeof meta.agent === 'string' && meta.agent ? meta.agent : 'policy';
        return limit(() => scoreCompletion({ id: `grpo-sample-${request}-${i}`, text, task, agent }, ctx, weights));
      }),
    );
    counts.calls++;
    counts.scored += rewards.filter((r) => r !== null).length;
    return rewards;
  }

  const maxBody = opts.maxBodyBytes ?? 32 * 1024 * 1024;
  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    void (async () => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== REWARD_BRIDGE_PATH) throw new HttpError(404, `not found: POST ${REWARD_BRIDGE_PATH}`);
      if (req.method !== 'POST')
        throw new HttpError(405, `method ${req.method} not allowed: POST ${REWARD_BRIDGE_PATH}`);
      const body = parseRewardRequest(await readRequest(req, maxBody));
      return { rewards: await rewardsFor(body) };
    })().then(
      (payload) => send(res, 200, payload),
      (err: unknown) => {
        send(res, err instanceof HttpError ? err.status : err instanceof MalformedRequest ? 400 : 500, {
          error: errorMessage(err),
        });
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const onAbort = () => void close();
  const close = () =>
    new Promise<void>((resolve) => {
      opts.signal?.removeEventListener('abort', onAbort);
      server.close(() => resolve());
      server.closeAllConnections();
    });
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}${REWARD_BRIDGE_PATH}`,
    get calls() {
      return counts.calls;
    },
    get scored() {
      return counts.scored;
    },
    usage,
    close,
  };
}

function send(res: http.ServerResponse, status: number, payload: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
  if (status === 405) headers.allow = 'POST';
  if (status === 413) headers.connection = 'close';
  res.writeHead(status, headers).end(JSON.stringify(payload));
}

async function readRequest(req: http.IncomingMessage, max: number): Promise<string> {
  try {
    return await readBody(req, max);
  } catch (err) {
    if (err instanceof BodyRefused) throw new HttpError(err.reason === 'too_large' ? 413 : 400, err.message);
    throw err;
  }
}

/** Runs at most n of the given functions at once, the rest in call order. */
function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    if (active < n) active++;
    else await new Promise<void>((resolve) => waiting.push(resolve)); // the finishing call hands over its slot
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}
