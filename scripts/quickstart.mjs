// The main job on the embedded defaults: a config (init --yes, unless one exists), the environment
// (doctor --fix: trainer venv, default model, store), a small collect with the local team, a first
// training run on its traces (DPO: the winning answer against the others), the status.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/massgen-rl.js', import.meta.url));
const env = { ...process.env, HF_HUB_OFFLINE: '1' };
const step = (args, { allow = [] } = {}) => {
  console.log(`\n$ massgen-rl ${args.join(' ')}`);
  const code = spawnSync(process.execPath, [bin, ...args], { stdio: 'inherit', env }).status ?? 1;
  if (code !== 0 && !allow.includes(code)) process.exit(code);
  return code;
};

if (!fs.existsSync(path.resolve(process.env.MASSGEN_RL_CONFIG ?? 'massgen-rl.yaml'))) step(['init', '--yes']);
step(['doctor', '--fix']);
step(['collect', '--n', '3']);
// Three tasks give a handful of pairs: the demo lowers the example gate (exit 1 would mean: collect more first).
const trained = step(['train', '--algo', 'dpo', '--max-steps', '4', '--set', 'train.gates.min_examples=1'], { allow: [1] });
if (trained === 1) console.log('\nNot enough traces to train on yet: run `massgen-rl collect` again, then `massgen-rl train`.');
step(['status']);
