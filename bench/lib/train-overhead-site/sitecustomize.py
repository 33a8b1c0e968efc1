"""Step clock for bench/train-overhead.mjs, loaded at interpreter start-up (PYTHONPATH) by both sides of the
benchmark: the trainer `massgen-rl train` launches and bench/lib/trl_direct.py. Inert unless
$MASSGEN_BENCH_STEP_CLOCK names an output file.

When `transformers.trainer` is first imported, `Trainer.__init__` is wrapped so every Trainer (SFTTrainer,
GRPOTrainer and subclasses) gets one more callback, appended after all others, on either side. It records
time.perf_counter() and the process CPU time (time.process_time()) at train begin, at each optimizer step's
end and at train end (list appends: it prints nothing and does no I/O while training), then at train end writes
one JSON file with the timestamps, the wall-clock (epoch) times of train begin/end, the TrainingArguments, the
callback classes, the training rows and the trainable parameter count, which the benchmark uses to check that
both sides train the same way.
"""

import os
import sys

# The import hook shared with the other benchmark start-up folder (bench/lib/site-common).
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site-common"))
from bench_import_hook import patch_after_import  # noqa: E402

_OUT = os.environ.get("MASSGEN_BENCH_STEP_CLOCK")
_TARGET = "transformers.trainer"


def _make_clock(trainer):
    import json
    import time

    from transformers import TrainerCallback

    class BenchStepClock(TrainerCallback):
        def __init__(self):
            self.steps = []
            self.cpu_steps = []
            self.begin = self.begin_epoch = self.cpu_begin = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.begin, self.begin_epoch, self.cpu_begin = time.perf_counter(), time.time(), time.process_time()

        def on_step_end(self, args, state, control, **kwargs):
            self.steps.append(time.perf_counter())
            self.cpu_steps.append(time.process_time())

        def on_train_end(self, args, state, control, **kwargs):
            end, end_epoch, cpu_end = time.perf_counter(), time.time(), time.process_time()
            if not state.is_world_process_zero:
                return
            model = trainer.model
            try:
                rows = len(trainer.train_dataset)
            except TypeError:
                rows = None
            body = {
                "pid": os.getpid(),
                "trainer": type(trainer).__name__,
                "begin": self.begin,
                "steps": self.steps,
                "end": end,
                "cpu_begin": self.cpu_begin,
                "cpu_steps": self.cpu_steps,
                "cpu_end": cpu_end,
                "begin_epoch": self.begin_epoch,
                "end_epoch": end_epoch,
                "global_step": state.global_step,
                "max_steps": state.max_steps,
                "callbacks": [type(c).__name__ for c in trainer.callback_handler.callbacks],
                "train_rows": rows,
                "model": type(model).__name__,
                "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
                "args": json.loads(args.to_json_string()),
            }
            tmp = f"{_OUT}.tmp-{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(body, handle)
            os.replace(tmp, _OUT)

    return BenchStepClock()


def _patch(module):
    cls = module.Trainer
    if getattr(cls, "_bench_step_clock", False):
        return
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.add_callback(_make_clock(self))

    cls.__init__ = __init__
    cls._bench_step_clock = True


if _OUT:
    patch_after_import(_TARGET, _patch)
