"""Per-step CPU cost of the bundled trainers' ProtocolCallback, outside any training (for bench/train-overhead.mjs).

    python bench/lib/protocol_callback_cost.py [--steps N]

Calls what a Trainer calls on the callback for each optimizer step with logging_steps 1 (on_step_end, then on_log
with a GRPO-sized logs dict as TRL 1.16 produces it) N times, the `step` events going to stdout exactly as in a
trainer run (one JSON line written and flushed per step: a pipe when the benchmark runs this). Prints one JSON
line on stderr: {"steps", "us_per_step", "cpu_us_per_step"}. This is the deterministic part of the wrapper's
per-step cost in the trainer process; the A/B runs measure it together with everything else, under noise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(prog="protocol_callback_cost.py")
    parser.add_argument("--steps", type=int, default=5000)
    opts = parser.parse_args()
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from massgen_rl_training.callbacks import make_callback

    callback = make_callback(reward_key="reward", kl_key=None)
    args = TrainingArguments(output_dir="/tmp/unused-protocol-cost", use_cpu=True, report_to="none")
    state = TrainerState(max_steps=opts.steps, num_input_tokens_seen=0)
    control = TrainerControl()
    logs = {
        "loss": -0.0643,
        "grad_norm": 1.123,
        "learning_rate": 1e-05,
        "num_tokens": 394.0,
        "completions/mean_length": 11.0,
        "completions/min_length": 10.0,
        "completions/max_length": 12.0,
        "completions/clipped_ratio": 0.0,
        "completions/mean_terminated_length": 11.0,
        "completions/min_terminated_length": 10.0,
        "completions/max_terminated_length": 12.0,
        "rewards/recorded_reward/mean": 0.125,
        "rewards/recorded_reward/std": 0.5303,
        "reward": 0.125,
        "reward_std": 0.5303,
        "frac_reward_zero_std": 0.0,
        "entropy": 2.974,
        "clip_ratio/low_mean": 0.0,
        "clip_ratio/high_mean": 0.0,
        "clip_ratio/region_mean": 0.0,
        "clip_ratio/low_min": 0.0,
        "clip_ratio/high_max": 0.0,
        "step_time": 2.5,
        "epoch": 0.0044,
    }
    callback.on_train_begin(args, state, control)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for step in range(1, opts.steps + 1):
        state.global_step = step
        state.epoch = step / 1000
        logs["num_tokens"] += 400.0
        callback.on_step_end(args, state, control)
        callback.on_log(args, state, control, logs=dict(logs))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    sys.stderr.write(
        json.dumps(
            {
                "steps": opts.steps,
                "us_per_step": round(wall / opts.steps * 1e6, 1),
                "cpu_us_per_step": round(cpu / opts.steps * 1e6, 1),
            }
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
