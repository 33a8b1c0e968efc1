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

// The quickstart's size, set here only: the embedded defaults and their recipe (DPO on correctness pairs) on the four
// built-in suites at 60 tasks each, 30 % held out for the evaluation: 126 orchestrations to learn from and 114 to
// evaluate on, enough for the gates to see a real gain (README, "What to expect"). A project's own massgen-rl.yaml
// sets these under tasks.
const SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];
const TASKS_PER_SUITE = 60;
const EVAL_FRACTION = 0.3;
const demo = [
  `tasks.sources=${JSON.stringify(SUITES.map((suite) => ({ suite, n: TASKS_PER_SUITE })))}`,
  `tasks.split.eval_fraction=${EVAL_FRACTION}`,
].flatMap((kv) => ['--set', kv]);

if (!fs.existsSync(path.resolve(process.env.MASSGEN_RL_CONFIG ?? 'massgen-rl.yaml'))) step(['init', '--yes']);
step(['doctor', '--fix']);
step(['loop', '--once', ...demo]);
step(['status']);
