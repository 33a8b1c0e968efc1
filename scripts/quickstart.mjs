// The main job on the embedded defaults: a config (init --yes, unless one exists), the environment
// (doctor --fix: trainer venv, default model, store), a small collect with the local team, the status.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/massgen-rl.js', import.meta.url));
const env = { ...process.env, HF_HUB_OFFLINE: '1' };
const step = (...args) => {
  console.log(`\n$ massgen-rl ${args.join(' ')}`);
  const code = spawnSync(process.execPath, [bin, ...args], { stdio: 'inherit', env }).status ?? 1;
  if (code !== 0) process.exit(code);
};

if (!fs.existsSync(path.resolve(process.env.MASSGEN_RL_CONFIG ?? 'massgen-rl.yaml'))) step('init', '--yes');
step('doctor', '--fix');
step('collect', '--n', '2');
step('status');
