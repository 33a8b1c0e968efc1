"""The end of a training run: `trainer.train`, then the servable `output_dir/final` folder with its manifest, and
the `done` fields (or Stopped, after a stop checkpoint)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from massgen_rl_common.protocol import ScriptError, progress

from .agree import require_same_run
from .args import TrainArgs
from .data import clean_number
from .policy import MERGED_PARENT_DIR, Policy
from .ranks import barrier, is_main_process, num_machines, world_size
from .settings import resolve_resume
from .stop import STOP, Stopped

FINAL_DIR = "final"
TRAIN_MANIFEST = "massgen-rl-train.json"


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


def train_and_finish(
    trainer: Any,
    policy: Policy,
    args: TrainArgs,
    algo: str,
    callback: Any,
    extra_metrics: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run `trainer.train` (resuming if asked); on a stop request raise Stopped after the checkpoint event;
    else save output_dir/final and return the `done` fields."""
    require_same_run(args)
    resume = resolve_resume(args)
    machines = num_machines()
    progress(
        "train",
        f"training ({algo}, {'LoRA' if policy.adapter else 'full fine-tuning'})"
        + (f", resuming from {resume}" if resume else "")
        + (f", {world_size()} processes" if world_size() > 1 else "")
        + (f" on {machines} machines" if machines > 1 else ""),
        resume_from_checkpoint=resume,
        processes=world_size(),
        machines=machines,
    )
    started = time.monotonic()
    callback.budget_s = args.max_train_seconds
    output = trainer.train(resume_from_checkpoint=resume)
    if callback.stopping:
        if callback.stop_checkpoint is None:  # should not happen: should_save was set with should_training_stop
            raise ScriptError(f"stopped by {STOP.signal_name} but no checkpoint was saved")
        raise Stopped(callback.stop_checkpoint)

    final_dir = Path(trainer.args.output_dir) / FINAL_DIR
    progress("save", f"saving the final {'adapter' if policy.adapter else 'model'} to {final_dir}")
    trainer.save_model(str(final_dir))
    metrics: dict[str, Any] = {
        key: value for key, value in (output.metrics or {}).items() if clean_number(value) is not None
    }
    metrics["global_step"] = output.global_step
    metrics["training_loss"] = clean_number(output.training_loss)
    for key, value in callback.last_logs.items():
        if clean_number(value) is not None:
            metrics.setdefault(f"last/{key}", value)
    if extra_metrics:
        metrics.update(extra_metrics())
    metrics["wall_seconds"] = round(time.monotonic() - started, 3)
    if args.max_train_seconds is not None:
        metrics["budget_reached"] = callback.budget_reached
    metrics["processes"] = world_size()
    metrics["machines"] = machines
    if is_main_process():
        if not (final_dir / "tokenizer_config.json").is_file():
            policy.tokenizer.save_pretrained(str(final_dir))
        if policy.adapter:
            fix_adapter_base(final_dir, policy.base_model)
        manifest = {
            "algo": algo,
            "adapter": policy.adapter,
            "base_model": policy.base_model,
            "model_path": str(Path(args.model_path).expanduser().resolve()),
            "parent_adapter": policy.parent_adapter,
            "dataset_path": str(Path(args.dataset_path).expanduser().resolve()),
            "global_step": output.global_step,
            "lora": args.lora,
            "metrics": metrics,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (final_dir / TRAIN_MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
        merged = Path(trainer.args.output_dir) / MERGED_PARENT_DIR
        if merged.is_dir():  # only needed while training (reference model); a resume merges again
            shutil.rmtree(merged, ignore_errors=True)
    barrier()
    return {
        "path": str(final_dir),
        "metrics": metrics,
        "adapter": policy.adapter,
        "base_model": policy.base_model if policy.adapter else None,
        "checkpoints": callback.checkpoints,
    }
