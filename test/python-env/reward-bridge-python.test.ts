import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PYTHON_DIR } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { FIXTURES } from '../helpers.js';
import { bridgeFor } from '../support/reward-bridge.js';

// The reward bridge (test/integration/reward-bridge.test.ts) called from the trainer venv's Python.
describe('reward bridge', () => {
  it('agrees on the wire format with the Python trainer side (make_bridge_reward)', async () => {
    const { loaded, bridge } = await bridgeFor();
    const python = venvPython(loaded.paths.venvDir);
    expect(fs.existsSync(python), `trainer venv python at ${python}`).toBe(true);
    // Called the way GRPOTrainer calls a reward function: keyword arguments, conversational completions,
    // the dataset's extra column (meta_json) and trainer extras swallowed by **kwargs.
    const code = `
import json, sys
from massgen_rl_training.reward_bridge import make_bridge_reward
fn = make_bridge_reward(sys.argv[1], 30.0)
prompt = [{"role": "user", "content": "What is 6 x 7?"}]
texts = ["ANSWER: 42", "ANSWER: 41", "VOTE: agent2 | better"]
meta = json.dumps({"rollout_id": "r1", "rollout_num": 1, "task_id": "mul", "category": "arithmetic", "agent": "a", "seq": 4,
                   "kind": "answer", "group_id": "g1"})
out = fn(prompts=[prompt] * 3, completions=[[{"role": "assistant", "content": t}] for t in texts],
         completion_ids=[[1, 2]] * 3, meta_json=[meta] * 3, trainer_state=None)
print(json.dumps(out))
`;
    const r = await execa(python, ['-c', code, bridge.url], {
      env: { PYTHONPATH: PYTHON_DIR },
      reject: false,
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const [right, wrong, vote] = JSON.parse(String(r.stdout)) as (number | null)[];
    expect(right).toBe(2);
    expect(wrong).toBeLessThan(2);
    expect(vote).toBeNull();

    // A reward that cannot compute fails the trainer with the bridge's message (after its retries of a 5xx).
    const crash = path.join(FIXTURES, 'rewards', 'crash.mjs');
    const failing = await bridgeFor(
      `rewards:\n  weights: { custom: 1 }\n  custom: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(crash)}] }\n`,
    );
    const failed = await execa(python, ['-c', code, failing.bridge.url], {
      env: { PYTHONPATH: PYTHON_DIR },
      reject: false,
      timeout: 60_000,
    });
    expect(failed.exitCode).not.toBe(0);
    expect(String(failed.stderr)).toMatch(
      /ScriptError: reward bridge .* answered HTTP 500: .*reward custom: custom reward command .* exited with code 3/,
    );
  }, 90_000);
});
