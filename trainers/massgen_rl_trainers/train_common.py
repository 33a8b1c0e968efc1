"""What every trainer script shares: the config keys of docs/trainer-protocol.md, model/tokenizer loading (LoRA or
full fine-tuning, from a base folder or a parent adapter), the `step`/`checkpoint`/`done` events, SIGINT/SIGTERM as
"save a resumable checkpoint, then exit 130", and the final `output_dir/final` folder.

    python -m massgen_rl_trainers.<algo> --config FILE            (or flags; FILE keys as in the contract)
    accelerate launch [--config_file trainers/accelerate/cpu-2proc.yaml] -m massgen_rl_trainers.<algo> --config FILE

Layout of `output_dir`: `checkpoint-<step>/` (resumable: weights or adapter, optimizer, scheduler, RNG, trainer
state), `final/` (the servable result: a LoRA adapter whose adapter_config.json names the absolute base folder, or a
full model folder; plus the tokenizer and `massgen-rl-train.json`), and `merged-parent/` only when a parent adapter is
merged for full fine-tuning. Heavy imports (torch, transformers, trl, peft) happen inside functions.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TypeVar

from . import protocol
from .config_args import UsageError, parse_args
from .protocol import ScriptError, exception_name, log

T = TypeVar("T")

EXIT_STOPPED = 130
FINAL_DIR = "final"
MERGED_PARENT_DIR = "merged-parent"
TRAIN_MANIFEST = "massgen-rl-train.json"
LORA_KEYS = ("r", "alpha", "dropout", "target_modules")
MAPPING_FIELDS = ("lora",)  # config keys whose value is a mapping (a JSON object on the command line)


# -- arguments ----------------------------------------------------------------------------------------------------


@dataclass
class TrainArgs:
    """Keys shared by every trainer (docs/trainer-protocol.md, "Trainer config")."""

    model_path: str = field(metadata={"help": "HF model folder of the base, or a parent LoRA adapter folder."})
    output_dir: str = field(metadata={"help": "Where checkpoint-<step>/ and final/ are written."})
    dataset_path: str = field(metadata={"help": "The dataset's data.jsonl."})
    lora: dict | None = field(default=None, metadata={
        "help": "LoRA settings {r, alpha, dropout, target_modules} (JSON on the command line); null: full fine-tuning."})
    learning_rate: float = field(default=1e-5, metadata={"help": "Peak learning rate (AdamW, linear decay)."})
    num_train_epochs: float = field(default=1.0, metadata={"help": "Epochs over the dataset when max_steps is -1."})
    max_steps: int = field(default=-1, metadata={"help": "Optimizer steps; -1: run num_train_epochs."})
    per_device_train_batch_size: int = field(default=1, metadata={"help": "Examples per device per micro-batch."})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "Micro-batches per optimizer step."})
    seed: int = field(default=42, metadata={"help": "Random seed (data order, LoRA init, sampling)."})
    use_cpu: bool | None = field(default=None, metadata={"help": "Train on CPU; null: CPU only when CUDA is absent."})
    bf16: bool | None = field(default=None, metadata={"help": "bf16 mixed precision; null: on CUDA with bf16 support."})
    save_steps: int = field(default=500, metadata={"help": "Save checkpoint-<step>/ every N steps; 0: only on stop."})
    logging_steps: int = field(default=1, metadata={"help": "Emit a step event every N optimizer steps."})
    resume_from_checkpoint: str | None = field(default=None, metadata={
        "help": "A checkpoint-<step> folder to resume from, or 'latest' for the newest one in output_dir."})
    max_length: int | None = field(default=1024, metadata={"help": "Maximum tokens per training sequence."})
    deepspeed: str | None = field(default=None, metadata={"help": "DeepSpeed JSON config path (TrainingArguments)."})
    fsdp: str | None = field(default=None, metadata={"help": "FSDP options, e.g. 'full_shard auto_wrap'."})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "Trade compute for memory."})
    save_total_limit: int | None = field(default=None, metadata={"help": "Keep at most N checkpoint folders."})

    def validate(self) -> None:
        """Raise UsageError on bad values; subclasses extend it."""
        validate_common(self)


def parse_train_args(cls: type[T], argv: list[str] | None = None, prog: str | None = None) -> T:
    """`config_args.parse_args` with mapping-valued keys (`lora`), then the trainer's own validation;
    precedence defaults < config file < flags; problems raise UsageError (exit 2)."""
    args = parse_args(cls, argv, prog=prog, json_fields=MAPPING_FIELDS)
    args.validate()
    return args


def normalize_lora(value: Any) -> dict[str, Any] | None:
    """`{r, alpha, dropout, target_modules}` with defaults filled in; None stays None (full fine-tuning)."""
    if value is None or value is False:
        return None
    if not isinstance(value, dict):
        raise UsageError(f"lora must be a mapping {{r, alpha, dropout, target_modules}} or null, got {value!r}")
    unknown = sorted(set(value) - set(LORA_KEYS))
    if unknown:
        raise UsageError(f"unknown lora key(s): {', '.join(map(repr, unknown))} (allowed: {', '.join(LORA_KEYS)})")
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
    if targets is not None and not (isinstance(targets, str) or
                                    (isinstance(targets, list) and targets and all(isinstance(t, str) for t in targets))):
        raise UsageError(f"lora.target_modules must be a module name list, 'all-linear' or null, got {targets!r}")
    return {"r": r, "alpha": alpha, "dropout": float(dropout), "target_modules": targets}


def validate_common(args: TrainArgs) -> None:
    args.lora = normalize_lora(args.lora)
    model = Path(args.model_path).expanduser()
    if not ((model / "config.json").is_file() or (model / "adapter_config.json").is_file()):
        raise UsageError(f"model_path {model} is neither a model folder (config.json) nor a LoRA adapter folder")
    if not Path(args.dataset_path).expanduser().is_file():
        raise UsageError(f"dataset_path {args.dataset_path} does not exist")
    positive = {"learning_rate": args.learning_rate, "per_device_train_batch_size": args.per_device_train_batch_size,
                "gradient_accumulation_steps": args.gradient_accumulation_steps, "logging_steps": args.logging_steps}
    for name, value in positive.items():
        if not value > 0:
            raise UsageError(f"{name} must be positive, got {value!r}")
    if args.max_steps == 0 or args.max_steps < -1:
        raise UsageError(f"max_steps must be -1 (use num_train_epochs) or positive, got {args.max_steps}")
    if args.max_steps == -1 and not args.num_train_epochs > 0:
        raise UsageError("num_train_epochs must be positive when max_steps is -1")
    if args.save_steps < 0:
        raise UsageError(f"save_steps must be 0 (only on stop) or positive, got {args.save_steps}")
    if args.max_length is not None and args.max_length < 8:
        raise UsageError(f"max_length must be at least 8, got {args.max_length}")
    if args.deepspeed is not None and not Path(args.deepspeed).expanduser().is_file():
        raise UsageError(f"deepspeed config {args.deepspeed} does not exist")
    if args.resume_from_checkpoint not in (None, "latest"):
        checkpoint = Path(args.resume_from_checkpoint).expanduser()
        if not (checkpoint / "trainer_state.json").is_file():
            raise UsageError(f"resume_from_checkpoint {checkpoint} is not a checkpoint folder (no trainer_state.json)")


# -- processes and events -----------------------------------------------------------------------------------------


def process_rank() -> int:
    """Global rank under `accelerate launch`/torchrun (RANK), else 0."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def world_size() -> int:
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def is_main_process() -> bool:
    return process_rank() == 0


def emit(event: str, **fields: Any) -> None:
    """Events come from rank 0 only (errors from every rank, tagged with it)."""
    if event == "error" and not is_main_process():
        protocol.emit(event, rank=process_rank(), **fields)
    elif is_main_process():
        protocol.emit(event, **fields)


def progress(stage: str, message: str, **fields: Any) -> None:
    emit("progress", stage=stage, message=message, **fields)


def _clean_number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class Stopped(Exception):
    """Training stopped on SIGINT/SIGTERM after saving (and announcing) a resumable checkpoint."""

    def __init__(self, checkpoint: str) -> None:
        super().__init__(f"resumable checkpoint {checkpoint}")
        self.checkpoint = checkpoint


class StopRequest:
    """SIGINT/SIGTERM: ask the trainer to finish the current optimizer step, save a checkpoint and stop.
    A second signal interrupts at once (KeyboardInterrupt), except in a launcher's worker process."""

    def __init__(self) -> None:
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> "StopRequest":
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[signum] = signal.signal(signum, self._handle)
            except ValueError:  # not the main thread (embedded use)
                pass
        return self

    def uninstall(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.requested:
            if "TORCHELASTIC_RUN_ID" in os.environ or "LOCAL_RANK" in os.environ:
                # Under accelerate/torchrun a worker often gets the signal twice (from a process-group kill and
                # forwarded by the launcher); the launcher escalates to SIGKILL after its shutdown timeout anyway.
                log(f"received {name} again: still finishing the step and the checkpoint")
                return
            raise KeyboardInterrupt(f"second {name}")
        self.requested, self.signal_name = True, name
        log(f"received {name}: finishing the current step, then saving a resumable checkpoint "
            "(send it again to stop at once without one)")


STOP = StopRequest()


# -- the runner ---------------------------------------------------------------------------------------------------


def run_trainer(main: Callable[[T], dict[str, Any]], cls: type[T], argv: list[str] | None = None,
                prog: str | None = None) -> int:
    """`protocol.run_script` for trainers: exit 0 after `done`, 2 on bad config, 130 after a stop checkpoint,
    1 on any failure (one `error` event)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    try:
        args = parse_train_args(cls, argv, prog=prog)
    except UsageError as exc:
        sys.stderr.write(f"{prog or os.path.basename(sys.argv[0])}: error: {exc}\n")
        emit("error", message=str(exc), kind="usage")
        return protocol.EXIT_USAGE
    state = protocol._isolate_stdout()
    STOP.install()
    try:
        result = main(args)
        emit("done", **result)
        return 0
    except Stopped as exc:
        log(f"stopped: {exc}")
        progress("stopped", f"stopped by {STOP.signal_name} after saving a resumable checkpoint",
                 checkpoint=exc.checkpoint, signal=STOP.signal_name)
        return EXIT_STOPPED
    except UsageError as exc:  # a config problem only visible once the model/dataset are loaded
        log(f"error: {exc}")
        emit("error", message=str(exc), kind="usage")
        return protocol.EXIT_USAGE
    except ScriptError as exc:
        if exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        log(f"error: {exc}")
        emit("error", message=str(exc), **exc.fields)
        return protocol.EXIT_FAILURE
    except KeyboardInterrupt:
        emit("error", message="interrupted twice: stopped without saving a checkpoint", kind="interrupted")
        return protocol.EXIT_FAILURE
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        name = exception_name(exc)
        emit("error", message=f"{name}: {exc}", exception=name)
        return protocol.EXIT_FAILURE
    finally:
        STOP.uninstall()
        protocol._restore_stdout(state)


# -- datasets -----------------------------------------------------------------------------------------------------


def read_jsonl(path: str) -> list[dict[str, Any]]:
    rows = []
    with open(Path(path).expanduser(), encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ScriptError(f"{path}:{number}: not a JSON line ({exc})") from None
            if not isinstance(row, dict):
                raise ScriptError(f"{path}:{number}: each line must be a JSON object")
            rows.append(row)
    if not rows:
        raise ScriptError(f"{path} holds no rows")
    return rows


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def messages(value: Any, where: str, what: str = "messages") -> list[dict[str, str]]:
    """OpenAI chat messages reduced to {role, content: str} (what chat templates and Arrow columns need)."""
    if not isinstance(value, list) or not value:
        raise ScriptError(f"{where}: {what} must be a non-empty list of chat messages")
    out = []
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ScriptError(f"{where}: {what} holds a message without a role: {message!r}"[:300])
        out.append({"role": message["role"], "content": _content_text(message.get("content"))})
    return out


def number(value: Any, where: str, what: str, required: bool = True) -> float | None:
    result = _clean_number(value)
    if result is None and (required or value is not None):
        raise ScriptError(f"{where}: {what} must be a finite number, got {value!r}")
    return result


# -- model and tokenizer ------------------------------------------------------------------------------------------


@dataclass
class Policy:
    model: Any  # a PreTrainedModel, or a trainable PeftModel when continuing a parent adapter
    tokenizer: Any
    peft_config: Any  # a fresh LoraConfig for the TRL trainer to apply, or None
    adapter: bool  # the result is a LoRA adapter
    base_model: str  # absolute path of the base model folder (the adapter applies to it; lineage for full models)
    parent_adapter: str | None = None


def device_flags(args: TrainArgs) -> tuple[bool, bool]:
    """(use_cpu, bf16) with the nulls resolved: CPU when no CUDA, bf16 on CUDA with support."""
    import torch

    cuda = torch.cuda.is_available()
    use_cpu = (not cuda) if args.use_cpu is None else args.use_cpu
    if args.bf16 is None:
        bf16 = (not use_cpu) and cuda and torch.cuda.is_bf16_supported()
    else:
        bf16 = args.bf16
    return use_cpu, bf16


def lora_config(lora: dict[str, Any], base_model: str) -> Any:
    from peft import LoraConfig

    return LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                      target_modules=lora["target_modules"], bias="none", task_type="CAUSAL_LM",
                      base_model_name_or_path=base_model)


def load_tokenizer(folder: Path, fallback: str | None = None, padding_side: str = "right") -> Any:
    from transformers import AutoTokenizer

    source = folder if (folder / "tokenizer_config.json").is_file() else Path(fallback or folder)
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
        log(f"the tokenizer has no pad token: padding with eos {tokenizer.eos_token!r}")
    if not tokenizer.chat_template:
        raise ScriptError(f"the tokenizer in {source} has no chat template (chat datasets need one)")
    tokenizer.padding_side = padding_side
    return tokenizer


def load_policy(args: TrainArgs, padding_side: str = "right", wrap_lora: bool = False) -> Policy:
    """The model to train. From a full folder: LoRA (a `peft_config` for TRL, or wrapped here with `wrap_lora`) or
    full fine-tuning. From a parent adapter: keep training that adapter (with `lora`), or merge it into its base,
    save the merge to output_dir/merged-parent and fully fine-tune that (without `lora`)."""
    import torch
    from transformers import AutoModelForCausalLM

    from .serve_folders import inspect_model_folder

    try:
        folder = inspect_model_folder(args.model_path)
    except ScriptError as exc:
        raise UsageError(str(exc)) from None
    use_cpu, _ = device_flags(args)
    dtype = torch.float32  # master weights; bf16 is autocast (mixed precision)
    if not folder.adapter:
        base = str(folder.path)
        tokenizer = load_tokenizer(folder.path, padding_side=padding_side)
        model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
        peft_config = lora_config(args.lora, base) if args.lora else None
        if peft_config is not None and wrap_lora:
            from peft import get_peft_model

            model, peft_config = get_peft_model(model, peft_config), None
        return Policy(model, tokenizer, peft_config, args.lora is not None, base)

    from peft import PeftModel

    base = str(folder.base)
    if not Path(base).is_dir():
        raise UsageError(f"the parent adapter's base model {base} is not a local folder")
    tokenizer = load_tokenizer(folder.path, fallback=base, padding_side=padding_side)
    base_model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
    if args.lora:
        model = PeftModel.from_pretrained(base_model, str(folder.path), is_trainable=True)
        if folder.lora_rank is not None and folder.lora_rank != args.lora["r"]:
            log(f"continuing the parent adapter {folder.path} with its own rank r={folder.lora_rank} "
                f"(config lora.r={args.lora['r']} does not apply)")
        return Policy(model, tokenizer, None, True, base, parent_adapter=str(folder.path))
    merged_dir = Path(args.output_dir).expanduser().resolve() / MERGED_PARENT_DIR
    if is_main_process():
        progress("load", f"merging the parent adapter {folder.path} into {base} for full fine-tuning")
        merged = PeftModel.from_pretrained(base_model, str(folder.path)).merge_and_unload()
        merged.save_pretrained(merged_dir)
        tokenizer.save_pretrained(merged_dir)
        del merged
    _barrier()
    model = AutoModelForCausalLM.from_pretrained(str(merged_dir), dtype=dtype)
    return Policy(model, tokenizer, None, False, base, parent_adapter=str(folder.path))


def _barrier() -> None:
    if world_size() > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


# -- TrainingArguments --------------------------------------------------------------------------------------------


def training_kwargs(args: TrainArgs) -> dict[str, Any]:
    """Keyword arguments for TrainingArguments (and the TRL configs built on it) from the shared keys."""
    use_cpu, bf16 = device_flags(args)
    kwargs: dict[str, Any] = dict(
        output_dir=str(Path(args.output_dir).expanduser().resolve()),
        learning_rate=args.learning_rate,
        num_train_epochs=args.num_train_epochs,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.per_device_train_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        seed=args.seed,
        use_cpu=use_cpu,
        bf16=bf16,
        fp16=False,
        save_strategy="steps" if args.save_steps > 0 else "no",
        save_steps=args.save_steps if args.save_steps > 0 else 500,
        save_total_limit=args.save_total_limit,
        logging_strategy="steps",
        logging_steps=args.logging_steps,
        report_to="none",
        gradient_checkpointing=args.gradient_checkpointing,
        dataloader_pin_memory=not use_cpu,
        disable_tqdm=True,  # step events carry the progress; tqdm would only clutter stderr
    )
    if args.deepspeed:
        kwargs["deepspeed"] = str(Path(args.deepspeed).expanduser().resolve())
    if args.fsdp:
        kwargs["fsdp"] = args.fsdp
    return kwargs


def resolve_resume(args: TrainArgs) -> str | None:
    if args.resume_from_checkpoint is None:
        return None
    if args.resume_from_checkpoint == "latest":
        from transformers.trainer_utils import get_last_checkpoint

        output_dir = Path(args.output_dir).expanduser()
        last = get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None
        if last is None:
            raise UsageError(f"resume_from_checkpoint is 'latest' but {output_dir} holds no checkpoint-<step> folder")
        return str(Path(last).resolve())
    return str(Path(args.resume_from_checkpoint).expanduser().resolve())


# -- the protocol callback ----------------------------------------------------------------------------------------


def make_callback(reward_key: str | None, kl_key: str | None) -> Any:
    """A TrainerCallback emitting `step` (on each log with a loss) and `checkpoint` (on each save), and turning a
    pending SIGINT/SIGTERM into save + stop at the end of the current optimizer step."""
    from transformers import TrainerCallback

    class ProtocolCallback(TrainerCallback):
        def __init__(self) -> None:
            self.last_logs: dict[str, Any] = {}
            self.checkpoints: list[str] = []
            self.stopping = False
            self.stop_checkpoint: str | None = None
            self._tokens: float | None = None
            self._time = time.monotonic()

        def on_train_begin(self, args, state, control, **kwargs):
            self._time = time.monotonic()
            self._tokens = None

        def _stop_requested(self) -> bool:
            flag = STOP.requested
            if world_size() > 1:  # every rank must stop at the same step (saving is collective)
                import torch
                import torch.distributed as dist

                if dist.is_available() and dist.is_initialized():
                    tensor = torch.tensor([1 if flag else 0], dtype=torch.int32)
                    if dist.get_backend() == "nccl":
                        tensor = tensor.cuda()
                    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
                    flag = bool(tensor.item())
            return flag

        def on_step_end(self, args, state, control, **kwargs):
            if not self.stopping and self._stop_requested():
                self.stopping = True
                control.should_save = True
                control.should_training_stop = True
            return control

        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = dict(logs or {})
            if "loss" not in logs:  # the end-of-training summary (train_runtime, ...) or eval logs
                return
            self.last_logs = logs
            now = time.monotonic()
            tokens = _clean_number(logs.get("num_tokens"))
            if tokens is None and state.num_input_tokens_seen:
                tokens = float(state.num_input_tokens_seen)
            tokens_per_s = None
            if tokens is not None:
                if self._tokens is not None and now > self._time and tokens >= self._tokens:
                    tokens_per_s = round((tokens - self._tokens) / (now - self._time), 2)
                self._tokens = tokens
            self._time = now
            extra = {key: _clean_number(value) for key, value in logs.items()
                     if _clean_number(value) is not None}
            emit("step", step=state.global_step, total_steps=state.max_steps,
                 epoch=round(float(state.epoch or 0.0), 4), loss=_clean_number(logs.get("loss")),
                 reward=_clean_number(logs.get(reward_key)) if reward_key else None,
                 kl=_clean_number(logs.get(kl_key)) if kl_key else None,
                 learning_rate=_clean_number(logs.get("learning_rate")), tokens_per_s=tokens_per_s, metrics=extra)

        def on_save(self, args, state, control, **kwargs):
            path = str(Path(args.output_dir) / f"checkpoint-{state.global_step}")
            self.checkpoints.append(path)
            if self.stopping:
                self.stop_checkpoint = path
            if state.is_world_process_zero:
                fix_adapter_base(Path(path))
                emit("checkpoint", path=path, step=state.global_step, stopping=self.stopping)

    return ProtocolCallback()


# -- results ------------------------------------------------------------------------------------------------------


def fix_adapter_base(folder: Path, base: str | None = None) -> None:
    """Make adapter_config.json's base_model_name_or_path an absolute folder so the adapter is servable alone."""
    config_path = folder / "adapter_config.json"
    if not config_path.is_file():
        return
    config = json.loads(config_path.read_text(encoding="utf-8"))
    named = base or config.get("base_model_name_or_path")
    if isinstance(named, str) and named:
        candidate = Path(named).expanduser()
        if candidate.is_dir():
            named = str(candidate.resolve())
        if named != config.get("base_model_name_or_path"):
            config["base_model_name_or_path"] = named
            config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def train_and_finish(trainer: Any, policy: Policy, args: TrainArgs, algo: str, callback: Any,
                     extra_metrics: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run `trainer.train` (resuming if asked); on a stop request raise Stopped after the checkpoint event;
    else save output_dir/final and return the `done` fields."""
    resume = resolve_resume(args)
    progress("train", f"training ({algo}, {'LoRA' if policy.adapter else 'full fine-tuning'})"
             + (f", resuming from {resume}" if resume else "") + (f", {world_size()} processes" if world_size() > 1 else ""),
             resume_from_checkpoint=resume, processes=world_size())
    started = time.monotonic()
    output = trainer.train(resume_from_checkpoint=resume)
    if callback.stopping:
        if callback.stop_checkpoint is None:  # should not happen: should_save was set with should_training_stop
            raise ScriptError(f"stopped by {STOP.signal_name} but no checkpoint was saved")
        raise Stopped(callback.stop_checkpoint)

    final_dir = Path(trainer.args.output_dir) / FINAL_DIR
    progress("save", f"saving the final {'adapter' if policy.adapter else 'model'} to {final_dir}")
    trainer.save_model(str(final_dir))
    metrics: dict[str, Any] = {key: value for key, value in (output.metrics or {}).items()
                               if _clean_number(value) is not None}
    metrics["global_step"] = output.global_step
    metrics["training_loss"] = _clean_number(output.training_loss)
    for key, value in callback.last_logs.items():
        if _clean_number(value) is not None:
            metrics.setdefault(f"last/{key}", value)
    if extra_metrics:
        metrics.update(extra_metrics())
    metrics["wall_seconds"] = round(time.monotonic() - started, 3)
    metrics["processes"] = world_size()
    if is_main_process():
        if not (final_dir / "tokenizer_config.json").is_file():
            policy.tokenizer.save_pretrained(str(final_dir))
        if policy.adapter:
            fix_adapter_base(final_dir, policy.base_model)
        manifest = {
            "algo": algo, "adapter": policy.adapter, "base_model": policy.base_model,
            "model_path": str(Path(args.model_path).expanduser().resolve()), "parent_adapter": policy.parent_adapter,
            "dataset_path": str(Path(args.dataset_path).expanduser().resolve()), "global_step": output.global_step,
            "lora": args.lora, "metrics": metrics, "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (final_dir / TRAIN_MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
        merged = Path(trainer.args.output_dir) / MERGED_PARENT_DIR
        if merged.is_dir():  # only needed while training (reference model); a resume merges again
            shutil.rmtree(merged, ignore_errors=True)
    _barrier()
    return {"path": str(final_dir), "metrics": metrics, "adapter": policy.adapter,
            "base_model": policy.base_model if policy.adapter else None, "checkpoints": callback.checkpoints}
