// The main job on the embedded defaults: a config (init --yes, unless one exists), the environment
// (doctor --fix: trainer venv, default model, store), then one whole cycle of the loop — collect with the
// local team, train on its traces, evaluate the new weights against production on the same eval tasks
// and seeds, and deploy them only if the gates pass — which ends "promoted" or "not promoted" with the
// gates' numbers and the path of the HTML report. Then the status.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/massgen-rl.js', import.meta.url));
const env = { ...process.env, HF_HUB_OFFLINE: '1' };
const step = (args) => {
  console.log(`\n$ massgen-rl ${args.join(' ')}`);
  const code = spawnSync(process.execPath, [bin, ...args], { stdio: 'inherit', env }).status ?? 1;
  if (code !== 0) process.exit(code);
};

// A demo-sized cycle on CPU: 3 tasks to learn from (the example gate lowered to match), a DPO run of 4
// steps, 3 eval tasks. A real deployment sets these in massgen-rl.yaml (collect.n, loop.*, eval.n).
const demo = [
  'loop.collect_n=3',
  'train.algo=dpo',
  'train.dpo.max_steps=4',
  'train.gates.min_examples=1',
  'train.gates.min_clean_share=0',
  'eval.n=3',
].flatMap((kv) => ['--set', kv]);

if (!fs.existsSync(path.resolve(process.env.MASSGEN_RL_CONFIG ?? 'massgen-rl.yaml'))) step(['init', '--yes']);
step(['doctor', '--fix']);
step(['loop', '--once', ...demo]);
step(['status']);
