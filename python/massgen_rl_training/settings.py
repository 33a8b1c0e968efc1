"""What the shared config keys become in TrainingArguments (and the TRL configs built on it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.cpu import cpu_bf16

from .args import TrainArgs


def device_flags(args: TrainArgs) -> tuple[bool, bool]:
    """(use_cpu, bf16) with the nulls resolved: CPU when no CUDA; bf16 where the device computes it natively."""
    import torch

    cuda = torch.cuda.is_available()
    use_cpu = (not cuda) if args.use_cpu is None else args.use_cpu
    if args.bf16 is not None:
        return use_cpu, args.bf16
    return use_cpu, cpu_bf16() if use_cpu else cuda and torch.cuda.is_bf16_supported()


def training_kwargs(args: TrainArgs) -> dict[str, Any]:
    """Keyword arguments for TrainingArguments (and the TRL configs built on it) from the shared keys."""
    use_cpu, bf16 = device_flags(args)
    kwargs: dict[str, Any] = dict(
        output_dir=str(Path(args.output_dir).expanduser().resolve()),
        learning_rate=args.learning_rate,
        lr_scheduler_type=args.lr_scheduler_type,
        warmup_steps=args.warmup_steps if args.warmup_steps < 1 else int(args.warmup_steps),
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
    """The checkpoint folder to resume from (`latest`: the newest in output_dir), or None."""
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
