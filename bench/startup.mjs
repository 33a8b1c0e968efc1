// Start-up of the Python sides of a cycle, phase by phase (docs/benchmarks.md, "Start-up"): runs
// bench/startup.py with the trainer venv's Python (3 rounds, 1 with --quick) and reports its figures.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';

const args = parseBenchArgs();
const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
const python = path.join(cache, 'massgen-rl', 'venv', 'bin', 'python');
const script = fileURLToPath(new URL('./startup.py', import.meta.url));
progress(`startup: ${python} ${script}`);
const out = JSON.parse(
  execFileSync(python, [script, '--rounds', args.quick ? '1' : '3'], { encoding: 'utf8', maxBuffer: 1 << 24 }),
);
writeResult(args.out, {
  name: 'startup',
  quick: args.quick,
  ...out,
  headline: [
    headline('bare Python interpreter', out.python_bare, 's'),
    headline('train.check (spawn to exit)', out.train_check, 's'),
    headline('model folder digest, hashed', out.digests.model_hashed, 's'),
    headline('model folder digest, from the digest cache', out.digests.model_digest, 's'),
    headline('adapter GGUF conversion, first serve', out.conversions.adapter_first, 's'),
    headline('model server, spawn to ready', out.serve_model.total, 's'),
    headline('adapter server, spawn to ready', out.serve_adapter.total, 's'),
    headline('SFT trainer, 1 LoRA step, spawn to done', out.trainer_sft_1_step.total, 's'),
  ],
});
