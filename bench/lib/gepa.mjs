// GEPA (PyPI `gepa`, its default adapter) optimizing one system prompt against an OpenAI-compatible server: the
// apo benchmark's reference optimizer. bench/gepa-optimize.py does the work in the GEPA venv (./gepa-venv.mjs);
// this writes its input, runs it and returns its result.
//
// Budget: maxMetricCalls counts task-model calls, one per (candidate, example): the seed's valset pass, then each
// iteration's parent and child minibatches and, when the child beats its parent on the minibatch, a full valset
// pass. GEPA checks the budget only between iterations, so metricCallsUsed can exceed it by up to
// 2 * reflectionMinibatchSize + valset.length - 1 (gepaWorstCaseCalls; minibatches are padded to full size).
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureGepaVenv } from './gepa-venv.mjs';
import { makeTempDir, removeTempDir } from './temp-dir.mjs';

const SCRIPT = fileURLToPath(new URL('../gepa-optimize.py', import.meta.url));

/**
 * The most metric calls a GEPA run given maxMetricCalls can use: the seed's valset pass always runs, and an
 * iteration that starts one call under the budget still spends both minibatches and a valset pass.
 */
export function gepaWorstCaseCalls(maxMetricCalls, reflectionMinibatchSize, valSize) {
  return maxMetricCalls <= valSize ? valSize : maxMetricCalls - 1 + 2 * reflectionMinibatchSize + valSize;
}

/**
 * Runs GEPA once. trainset/valset rows: { input, answer, additional_context? } (answer: the reference the default
 * evaluator looks for in the response). Returns the script's JSON with camelCase keys, e.g. { bestPrompt,
 * bestValScore, seedValScore, valScores, metricCallsUsed, reflectionCalls, reflectionTokens, taskLmTokens,
 * reflections, egressRefused, wallS }.
 */
export async function runGepa({
  baseUrl,
  model,
  seedPrompt,
  trainset,
  valset,
  maxMetricCalls,
  seed = 0,
  reflectionMinibatchSize = 3,
  maxTokens = 256,
  reflectionMaxTokens = 1024,
  temperature,
  maxWorkers,
  apiKey,
  timeoutMs = 30 * 60_000,
  env = process.env,
  log,
}) {
  const python = await ensureGepaVenv({ env, log });
  const dir = makeTempDir('gepa');
  try {
    const input = path.join(dir, 'input.json');
    const output = path.join(dir, 'output.json');
    fs.writeFileSync(
      input,
      JSON.stringify({
        seed_prompt: seedPrompt,
        trainset,
        valset,
        base_url: baseUrl,
        model,
        max_metric_calls: maxMetricCalls,
        seed,
        reflection_minibatch_size: reflectionMinibatchSize,
        max_tokens: maxTokens,
        reflection_max_tokens: reflectionMaxTokens,
        temperature,
        max_workers: maxWorkers,
        api_key: apiKey,
      }),
    );
    try {
      await execa(python, [SCRIPT, '--input', input, '--output', output], {
        cwd: dir,
        timeout: timeoutMs,
        all: true,
        env: {
          ...env,
          HOME: dir,
          XDG_CACHE_HOME: path.join(dir, '.cache'),
          HF_HUB_OFFLINE: '1',
          LITELLM_LOCAL_MODEL_COST_MAP: 'True',
          LITELLM_TELEMETRY: 'False',
          DO_NOT_TRACK: '1',
          NO_PROXY: '127.0.0.1,localhost',
          no_proxy: '127.0.0.1,localhost',
          PYTHONUNBUFFERED: '1',
          PYTHONWARNINGS: 'ignore',
        },
      });
    } catch (err) {
      const tail = (err.all ?? '').trim().split('\n').slice(-20).join('\n');
      throw new Error(`GEPA run failed (${err.shortMessage ?? err.message})\n${tail}`);
    }
    return camel(JSON.parse(fs.readFileSync(output, 'utf8')));
  } finally {
    removeTempDir(dir);
  }
}

function camel(value) {
  if (Array.isArray(value)) return value.map(camel);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replace(/_([a-z])/g, (_, c) => c.toUpperCase()), camel(v)]),
  );
}
