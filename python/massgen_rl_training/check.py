"""Checks a config's trainer settings before a run: each `train.<algo>` section's trainer keys against that
trainer's arguments dataclass (the one declaration of every setting: its name, as in TRL's configs, its type,
default and range), and hands them back complete, with the defaults filled in.

    python -m massgen_rl_training.check --request '{"sections": {"grpo": {...}}, "processes": 1,
                                                            "cpu_only": false}'

`done {settings: {algo: {key: value}}}`; a bad setting is an `error` naming its key path (`train.grpo.beta`), exit 2.
`doctor` and `train` run it; the keys a run is given (paths, LoRA, devices) are not settings (RUN_KEYS).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.config_args import UsageError, coerce_value, field_kind
from massgen_rl_common.protocol import run_script

from .args import JSON_FIELDS

ARGS = {"sft": "SFTArgs", "dpo": "DPOArgs", "grpo": "GRPOArgs", "ppo": "PPOArgs"}
# Set by massgen-rl for each run from its own sections (train.lora, train.deepspeed, train.fsdp, train.gpus).
RUN_KEYS = (
    "model_path",
    "output_dir",
    "dataset_path",
    "lora",
    "use_cpu",
    "bf16",
    "resume_from_checkpoint",
    "deepspeed",
    "fsdp",
    "reward_url",
    "server_url",
)

# TrainingArguments fields that transformers 5 removed, and what names the setting now.
RENAMED = {"warmup_ratio": "not a setting since transformers 5: warmup_steps below 1 is that fraction of the steps"}


@dataclass
class CheckArgs:
    """Check trainer settings; JSON in, one done or error event out."""

    request: str = field(metadata={"help": 'JSON {"sections": {algo: settings}, "processes": n, "cpu_only": bool}.'})


def args_class(algo: str) -> type:
    if algo not in ARGS:
        raise UsageError(f"unknown algorithm {algo!r} (one of {', '.join(ARGS)})")
    return getattr(importlib.import_module(f"{__package__}.{algo}"), ARGS[algo])


def setting_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name not in RUN_KEYS]


def check_settings(algo: str, settings: dict[str, Any], processes: int = 1, cpu_only: bool = False) -> dict[str, Any]:
    """The section's settings, typed and checked, with every default filled in; UsageError naming the key path."""
    cls, at = args_class(algo), f"train.{algo}"
    names = setting_names(cls)
    for key in settings:
        if key in RUN_KEYS:
            raise UsageError(
                f"{at}.{key}: set by massgen-rl for each run, not a setting (LoRA: train.lora; "
                "devices: train.gpus, train.deepspeed, train.fsdp)"
            )
        if key in RENAMED:
            raise UsageError(f"{at}.{key}: {RENAMED[key]}")
        if key not in names:
            raise UsageError(f"{at}.{key}: unknown setting of the {algo} trainer (settings: {', '.join(names)})")
    values = {
        key: value if key in JSON_FIELDS else coerce_value(f"{at}.{key}", *_kind(cls, key, value))
        for key, value in settings.items()
    }
    args = cls(model_path="", output_dir="", dataset_path="", **values)
    try:
        args.validate_settings(processes, cpu_only)
    except UsageError as exc:
        first = str(exc).split(" ", 1)[0].split(".", 1)[0]
        raise UsageError(f"{at}.{exc}" if first in names else f"{at}: {exc}") from None
    return {name: getattr(args, name) for name in names}


def _kind(cls: type, key: str, value: Any) -> tuple[Any, Any, bool]:
    kind, optional = field_kind(cls, key)
    return kind, value, optional


def main(args: CheckArgs) -> dict[str, Any]:
    try:
        request = json.loads(args.request)
        sections, processes, cpu_only = (
            request["sections"],
            int(request.get("processes", 1)),
            bool(request.get("cpu_only")),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--request must be JSON with sections: {exc}") from None
    settings, problems = {}, []
    for algo, section in sections.items():
        try:
            settings[algo] = check_settings(algo, section or {}, processes, cpu_only)
        except UsageError as exc:
            problems.append(str(exc))
    if problems:
        raise UsageError("\n".join(problems))
    return {"settings": settings}


if __name__ == "__main__":
    raise SystemExit(run_script(main, CheckArgs, prog="massgen_rl_training.check"))
