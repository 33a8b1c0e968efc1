"""The config keys every trainer shares (docs/trainer-protocol.md, "Trainer config") and their validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from massgen_rl_common.config_args import UsageError, parse_args

from .tis import DEFAULT_CAP, DEFAULT_THRESHOLD, validate_tis

T = TypeVar("T")

LORA_KEYS = ("r", "alpha", "dropout", "target_modules")
# Config keys whose value may be a mapping or a list (JSON on the command line), checked by their trainer.
JSON_FIELDS = ("lora", "vllm", "loss_type", "loss_weights")
MAX_STEPS = 10_000_000
# TrainingArguments' schedules that need no extra arguments (lr_scheduler_kwargs) and no evaluation loop.
SCHEDULERS = ("linear", "cosine", "constant", "constant_with_warmup", "polynomial", "inverse_sqrt")


@dataclass
class TrainArgs:
    """Keys shared by every trainer (docs/trainer-protocol.md, "Trainer config")."""

    model_path: str = field(metadata={"help": "HF model folder of the base, or a parent LoRA adapter folder."})
    output_dir: str = field(metadata={"help": "Where checkpoint-<step>/ and final/ are written."})
    dataset_path: str = field(metadata={"help": "The dataset's data.jsonl."})
    lora: dict | None = field(
        default=None,
        metadata={
            "help": "LoRA settings {r, alpha, dropout, target_modules} (JSON on the command line); null: full fine-tuning."
        },
    )
    learning_rate: float = field(
        default=1e-5, metadata={"help": "Peak learning rate (AdamW; its schedule: lr_scheduler_type, warmup_steps)."}
    )
    lr_scheduler_type: str = field(
        default="linear",
        metadata={"help": f"How the learning rate moves after warmup: {', '.join(SCHEDULERS)} (TrainingArguments)."},
    )
    warmup_steps: float = field(
        default=0,
        metadata={
            "help": "Optimizer steps of linear warmup from 0 to learning_rate; below 1, that fraction of the run's "
            "steps (TrainingArguments; transformers 5 folded warmup_ratio into it)."
        },
    )
    num_train_epochs: float = field(default=1.0, metadata={"help": "Epochs over the dataset when max_steps is -1."})
    max_steps: int = field(default=-1, metadata={"help": "Optimizer steps; -1: run num_train_epochs."})
    per_device_train_batch_size: int = field(
        default=4, metadata={"help": "Examples per device per micro-batch (grpo: completions)."}
    )
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "Micro-batches per optimizer step."})
    seed: int = field(default=42, metadata={"help": "Random seed (data order, LoRA init, sampling)."})
    use_cpu: bool | None = field(default=None, metadata={"help": "Train on CPU; null: CPU only when CUDA is absent."})
    bf16: bool | None = field(
        default=None,
        metadata={"help": "bf16 mixed precision; null: on CUDA with bf16 support or a CPU with bf16 instructions."},
    )
    save_steps: int = field(default=50, metadata={"help": "Save checkpoint-<step>/ every N steps; 0: only on stop."})
    logging_steps: int = field(default=1, metadata={"help": "Emit a step event every N optimizer steps."})
    resume_from_checkpoint: str | None = field(
        default=None,
        metadata={"help": "A checkpoint-<step> folder to resume from, or 'latest' for the newest one in output_dir."},
    )
    max_length: int | None = field(default=1024, metadata={"help": "Maximum tokens per training sequence."})
    deepspeed: str | None = field(default=None, metadata={"help": "DeepSpeed JSON config path (TrainingArguments)."})
    fsdp: str | None = field(default=None, metadata={"help": "FSDP options, e.g. 'full_shard auto_wrap'."})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "Trade compute for memory."})
    save_total_limit: int | None = field(default=None, metadata={"help": "Keep at most N checkpoint folders."})
    max_train_seconds: float | None = field(
        default=None,
        metadata={
            "help": "Wall-time budget of the training loop: after the optimizer step that reaches it, training ends "
            "as if its steps were done and final/ is saved (not a failure, unlike train.timeout_min); null: none."
        },
    )

    def validate(self, processes: int | None = None) -> None:
        """Raise UsageError on bad values: the settings, then what the run is given (paths)."""
        self.validate_settings(processes)
        validate_run(self)

    def validate_settings(self, processes: int | None = None, cpu_only: bool = False) -> None:
        """The settings alone (what `train.check` checks before a run); subclasses extend it. `processes`: the
        run's process count (default: this launch's world size); `cpu_only`: the run may not use a GPU."""
        validate_common(self)


def parse_train_args(cls: type[T], argv: list[str] | None = None, prog: str | None = None) -> T:
    """`config_args.parse_args` with JSON-valued keys (`lora`, `loss_type`), then the trainer's own validation;
    precedence defaults < config file < flags; problems raise UsageError (exit 2)."""
    args = parse_args(cls, argv, prog=prog, json_fields=JSON_FIELDS)
    args.validate()
    return args


def mapping_or_none(name: str, value: Any, allowed: Any, shape: str) -> dict[str, Any] | None:
    """A mapping-valued setting: None (or false) stays None; anything but a mapping of the allowed keys is a UsageError."""
    if value is None or value is False:
        return None
    if not isinstance(value, dict):
        raise UsageError(f"{name} must be a mapping {{{shape}}} or null, got {value!r}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise UsageError(f"unknown {name} key(s): {', '.join(map(repr, unknown))} (allowed: {', '.join(allowed)})")
    return value


def normalize_lora(value: Any) -> dict[str, Any] | None:
    """`{r, alpha, dropout, target_modules}` with defaults filled in; None stays None (full fine-tuning)."""
    value = mapping_or_none("lora", value, LORA_KEYS, "r, alpha, dropout, target_modules")
    if value is None:
        return None
    r = value.get("r", 8)
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise UsageError(f"lora.r must be a positive integer, got {r!r}")
    alpha = value.get("alpha", 2 * r)
    dropout = value.get("dropout", 0.0)
    for name, number in (("alpha", alpha), ("dropout", dropout)):
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise UsageError(f"lora.{name} must be a number, got {number!r}")
    if not 0.0 <= dropout < 1.0:
        raise UsageError(f"lora.dropout must be in [0, 1), got {dropout!r}")
    targets = value.get("target_modules")
    if targets is not None and not (
        isinstance(targets, str) or (isinstance(targets, list) and targets and all(isinstance(t, str) for t in targets))
    ):
        raise UsageError(f"lora.target_modules must be a module name list, 'all-linear' or null, got {targets!r}")
    return {"r": r, "alpha": alpha, "dropout": float(dropout), "target_modules": targets}


@dataclass
class MismatchArgs(TrainArgs):
    """The keys of the RL trainers that correct the serving/training logprob mismatch (tis.py)."""

    is_correction: str = field(
        default="auto",
        metadata={
            "help": "Truncated importance sampling against the serving/training logprob mismatch (completions with "
            "recorded logprobs; GRPO: offline mode and online generation server): auto (when a batch's mean |delta| > is_threshold), on, off "
            "(PPO: old_logprobs as set)."
        },
    )
    is_threshold: float = field(
        default=DEFAULT_THRESHOLD,
        metadata={"help": "Mean |trainer - recorded| logprob (nats) over a batch's tokens above which auto corrects."},
    )
    is_cap: float = field(default=DEFAULT_CAP, metadata={"help": "Upper bound of the per-token importance weight."})

    def validate_settings(self, processes: int | None = None, cpu_only: bool = False) -> None:
        super().validate_settings(processes, cpu_only)
        validate_tis(self.is_correction, self.is_threshold, self.is_cap)


def validate_common(args: TrainArgs) -> None:
    args.lora = normalize_lora(args.lora)
    # Every number has a ceiling: counts drive allocations and loops.
    ceilings = {
        "learning_rate": 1,
        "per_device_train_batch_size": 65_536,
        "gradient_accumulation_steps": 65_536,
        "logging_steps": MAX_STEPS,
    }
    for name, high in ceilings.items():
        value = getattr(args, name)
        if not 0 < value <= high:
            raise UsageError(f"{name} must be positive and at most {high:g}, got {value!r}")
    if args.max_steps == 0 or not -1 <= args.max_steps <= MAX_STEPS:
        raise UsageError(f"max_steps must be -1 (use num_train_epochs) or 1 to {MAX_STEPS}, got {args.max_steps}")
    if not (args.max_steps != -1 or 0 < args.num_train_epochs <= 10_000):
        raise UsageError(f"num_train_epochs must be positive and at most 10000, got {args.num_train_epochs!r}")
    if not 0 <= args.save_steps <= MAX_STEPS:
        raise UsageError(f"save_steps must be 0 (only on stop) or at most {MAX_STEPS}, got {args.save_steps}")
    if args.max_length is not None and not 8 <= args.max_length <= 1 << 20:
        raise UsageError(f"max_length must be 8 to {1 << 20}, got {args.max_length}")
    if args.max_train_seconds is not None and not 0 < args.max_train_seconds <= 7 * 86_400:
        raise UsageError(
            f"max_train_seconds must be positive and at most a week (604800), got {args.max_train_seconds!r}"
        )
    if args.lr_scheduler_type not in SCHEDULERS:
        raise UsageError(f"lr_scheduler_type must be one of {', '.join(SCHEDULERS)}, got {args.lr_scheduler_type!r}")
    warmup = args.warmup_steps
    if not (0 <= warmup <= MAX_STEPS and (warmup < 1 or float(warmup).is_integer())):
        raise UsageError(
            f"warmup_steps must be a whole number of steps (0 to {MAX_STEPS}) or a fraction of the run below 1, "
            f"got {warmup!r}"
        )
    if not 0 <= args.seed < 1 << 32:
        raise UsageError(f"seed must be 0 to {(1 << 32) - 1} (a 32-bit seed), got {args.seed}")


def validate_run(args: TrainArgs) -> None:
    """What each run is given: the start weights, the dataset, a DeepSpeed file, the checkpoint to resume."""
    model = Path(args.model_path).expanduser()
    if not ((model / "config.json").is_file() or (model / "adapter_config.json").is_file()):
        raise UsageError(f"model_path {model} is neither a model folder (config.json) nor a LoRA adapter folder")
    if not Path(args.dataset_path).expanduser().is_file():
        raise UsageError(f"dataset_path {args.dataset_path} does not exist")
    if args.deepspeed is not None and not Path(args.deepspeed).expanduser().is_file():
        raise UsageError(f"deepspeed config {args.deepspeed} does not exist")
    if args.resume_from_checkpoint not in (None, "latest"):
        checkpoint = Path(args.resume_from_checkpoint).expanduser()
        if not (checkpoint / "trainer_state.json").is_file():
            raise UsageError(f"resume_from_checkpoint {checkpoint} is not a checkpoint folder (no trainer_state.json)")
