import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURES, hasStack, runCli, sha, tempDir } from '../helpers.js';
import type { ScriptedServer } from '../support/scripted-server.js';
import { teamCollect } from '../support/team-collect.js';

// The built CLI, for exit codes and messages; the pipeline itself is covered in test/integration/train.test.ts.
const TRAIN_YAML = `train:
  base_model: ./base
  script: ${path.join(FIXTURES, 'trainers', 'protocol_trainer.py')}
  gates: { min_examples: 2, min_clean_share: 0, min_categories: 1 }
`;

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('massgen-rl train (the CLI)', () => {
  it('trains and prints JSON; bad input exits 2 and a gate refusal 1, without a stack or a change to the store', async () => {
    const t = await teamCollect(TRAIN_YAML, { 'base/config.json': '{}', 'base/model.safetensors': 'x' });
    server = t.server;
    const ok = await runCli(['train', '--algo', 'sft', '--max-steps', '2', '--json'], {
      cwd: t.dir,
      timeoutMs: 120_000,
    });
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ algo: 'sft', steps: 2, weight: { name: 'base', version: 1 } });

    const before = sha(t.loaded.paths.storePath);
    const cases: [string[], number, RegExp][] = [
      [['train', '--algo', 'reinforce'], 2, /argument 'reinforce' is invalid. Allowed choices are grpo, sft, dpo, ppo/],
      [['train', '--max-steps', '0'], 2, /--max-steps 0: expected a positive whole number/],
      [['train', '--algo', 'sft'], 2, /no sft examples: 0 completed rollout\(s\) after rollout #3/],
      [
        ['train', '--algo', 'dpo', '--set', 'train.gates.min_examples=99'],
        1,
        /dpo dataset failed 1 quality gate: 3 examples \(need ≥ 99\)/,
      ],
      [['train', '--from', 'ck_nope'], 2, /--from ck_nope: no checkpoint with this id/],
      [['train', '--resume', '--algo', 'sft'], 2, /--resume continues a run as it was started/],
      [
        ['train', '--machine-rank', '1'],
        2,
        /--machine-rank 1: rank 1 is out of range: train\.num_machines is 1, so a machine's rank is 0/,
      ],
      [['train', '--machine-rank', 'one'], 2, /--machine-rank one: expected a whole number/],
      // Each kind of training takes its own options only (commander's refusal, exit 2).
      [['train', 'prompts', '--machine-rank', '0'], 2, /unknown option '--machine-rank'/],
      [['train', 'prompts', '--all'], 2, /unknown option '--all'/],
      [['train', 'policy', 'stop', '--max-steps', '2'], 2, /unknown option '--max-steps'/],
      [['train', 'weights', '--policy', 'stop'], 2, /unknown option '--policy'/],
      [
        ['train', '--algo', 'sft', 'weights'],
        2,
        /--algo goes after the kind of training: massgen-rl train weights --algo sft/,
      ],
      [
        ['train', '--algo', 'apo', '--from', 'x'],
        2,
        /train --algo apo is deprecated: use massgen-rl train prompts\n.*unknown option '--from'/,
      ],
      [['train', 'weights', '--max-steps', '0'], 2, /--max-steps 0: expected a positive whole number/],
      // --algo after the kind reaches that kind (the old train-level --algo once took it and refused the run)
      [['train', 'weights', '--algo', 'dpo', '--max-steps', '0'], 2, /--max-steps 0: expected a positive whole number/],
      [['--json', 'train', 'weights', '--algo', 'nope'], 2, /argument 'nope' is invalid. Allowed choices are grpo/],
      [['train', 'policy', 'stop'], 2, /only 0 usable stop decision\(s\) in the store/],
      // The old spelling runs the same command, after one deprecation line.
      [
        ['train', '--algo', 'bandit', '--policy', 'stop'],
        2,
        /^warning train --algo bandit is deprecated: use massgen-rl train policy stop\nerror: only 0 usable stop decision\(s\) in the store/,
      ],
      [['train', '--set', 'train.num_machines=2'], 2, /train\.main_process_ip: required with num_machines 2/],
      [
        [
          'train',
          '--resume',
          '--set',
          'train.num_machines=2',
          '--set',
          'train.num_processes=2',
          '--set',
          'train.main_process_ip=127.0.0.1',
        ],
        2,
        /--resume: a run over 2 machines cannot be resumed/,
      ],
      [
        [
          'train',
          '--resume',
          '--machine-rank',
          '1',
          '--set',
          'train.num_machines=2',
          '--set',
          'train.num_processes=2',
          '--set',
          'train.main_process_ip=127.0.0.1',
        ],
        2,
        /--resume: a run over several machines cannot be resumed; machine 0 holds its checkpoint/,
      ],
    ];
    for (const [args, code, message] of cases) {
      const r = await runCli(args, { cwd: t.dir, timeoutMs: 120_000 });
      expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(code);
      expect(r.stderr).toMatch(message);
      expect(hasStack(r.stderr)).toBe(false);
    }
    expect(sha(t.loaded.paths.storePath)).toBe(before);
  }, 180_000);

  it('without a store says to collect first (exit 2)', async () => {
    const r = await runCli(['train'], { cwd: tempDir(), timeoutMs: 60_000 });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/no traces to train on yet .*run `massgen-rl collect` first/s);
  });
});
