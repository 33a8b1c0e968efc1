"""The TrainerCallback that speaks the protocol during `trainer.train`: `step` and `checkpoint` events, the
pending stop request turned into "save, then stop" at the end of an optimizer step, and the wall-time budget
(max_train_seconds) turned into a normal end of training."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from massgen_rl_common.protocol import emit, progress

from .data import clean_number
from .finish import fix_adapter_base
from .ranks import any_process
from .stop import STOP


def make_callback(reward_key: str | None, kl_key: str | None, mean_keys: tuple[str, ...] = ()) -> Any:
    """A TrainerCallback emitting `step` (on each log with a loss) and `checkpoint` (on each save), and turning a
    pending SIGINT/SIGTERM into save + stop at the end of the current optimizer step. `reward_key`/`kl_key`: the
    trainer's log keys reported as the step's `reward`/`kl` (None: null); `means()`: the mean over the logged steps
    of each of `mean_keys`."""
    from transformers import TrainerCallback

    class ProtocolCallback(TrainerCallback):
        def __init__(self) -> None:
            self.last_logs: dict[str, Any] = {}
            self.checkpoints: list[str] = []
            self.stopping = False
            self.stop_checkpoint: str | None = None
            self._tokens: float | None = None
            self._time = time.monotonic()
            self._sums: dict[str, list[float]] = {key: [] for key in mean_keys}
            # max_train_seconds (set by train_and_finish): the loop ends normally after the step that reaches it
            self.budget_s: float | None = None
            self.budget_reached = False
            self._began = time.monotonic()

        def means(self) -> dict[str, float]:
            return {key: sum(values) / len(values) for key, values in self._sums.items() if values}

        def on_train_begin(self, args, state, control, **kwargs):
            self._time = self._began = time.monotonic()
            self._tokens = None

        def on_step_end(self, args, state, control, **kwargs):
            # every rank must stop at the same step (saving is collective)
            if not self.stopping and any_process(STOP.requested):
                self.stopping = True
                control.should_save = True
                control.should_training_stop = True
            elif self.budget_s is not None and not self.stopping and not self.budget_reached:
                # the same decision on every rank: each must leave the loop at the same step
                if any_process(time.monotonic() - self._began >= self.budget_s):
                    self.budget_reached = True
                    control.should_training_stop = True
                    progress(
                        "budget",
                        f"max_train_seconds ({self.budget_s:g}) reached after step {state.global_step}"
                        f" of {state.max_steps}: training ends here",
                        step=state.global_step,
                    )
            return control

        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = dict(logs or {})
            if "loss" not in logs:  # the end-of-training summary (train_runtime, ...) or eval logs
                return
            self.last_logs = logs
            for key, values in self._sums.items():
                if clean_number(logs.get(key)) is not None:
                    values.append(clean_number(logs[key]))
            now = time.monotonic()
            tokens = clean_number(logs.get("num_tokens"))
            if tokens is None and state.num_input_tokens_seen:
                tokens = float(state.num_input_tokens_seen)
            tokens_per_s = None
            if tokens is not None:
                if self._tokens is not None and now > self._time and tokens >= self._tokens:
                    tokens_per_s = round((tokens - self._tokens) / (now - self._time), 2)
                self._tokens = tokens
            self._time = now
            extra = {key: clean_number(value) for key, value in logs.items() if clean_number(value) is not None}
            emit(
                "step",
                step=state.global_step,
                total_steps=state.max_steps,
                epoch=round(float(state.epoch or 0.0), 4),
                loss=clean_number(logs.get("loss")),
                reward=clean_number(logs.get(reward_key)) if reward_key else None,
                kl=clean_number(logs.get(kl_key)) if kl_key else None,
                learning_rate=clean_number(logs.get("learning_rate")),
                tokens_per_s=tokens_per_s,
                metrics=extra,
            )

        def on_save(self, args, state, control, **kwargs):
            path = str(Path(args.output_dir) / f"checkpoint-{state.global_step}")
            self.checkpoints.append(path)
            if self.stopping:
                self.stop_checkpoint = path
            if state.is_world_process_zero:
                fix_adapter_base(Path(path))
                emit("checkpoint", path=path, step=state.global_step, stopping=self.stopping)

    return ProtocolCallback()
