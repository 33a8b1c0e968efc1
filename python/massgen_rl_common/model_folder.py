"""What a model path points at (`serve --model DIR`, a trainer's `model_path`): a full model folder, or a LoRA
adapter and its base (no torch here)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .protocol import ScriptError


@dataclass
class ModelFolder:
    path: Path
    adapter: bool
    # for adapters: the base model, a local folder (str path) or a hub id resolved from the offline HF cache
    base: str | None = None
    lora_rank: int | None = None


def _has_weights_config(folder: Path) -> bool:
    return (folder / "config.json").is_file()


def resolve_base(adapter_dir: Path, config: dict, base_arg: str | None) -> str:
    """--base wins; else adapter_config.json's base_model_name_or_path (a folder, absolute or relative to the
    adapter, or a hub id that only the local HF cache can satisfy: everything runs offline)."""
    if base_arg:
        base = Path(base_arg).expanduser()
        if not _has_weights_config(base):
            raise ScriptError(f"--base {base} is not a model folder (no config.json)")
        return str(base.resolve())
    named = config.get("base_model_name_or_path")
    if not isinstance(named, str) or not named.strip():
        raise ScriptError(
            f"{adapter_dir / 'adapter_config.json'} names no base model (base_model_name_or_path); pass --base DIR"
        )
    for candidate in (Path(named).expanduser(), adapter_dir / named):
        if candidate.is_dir():
            if not _has_weights_config(candidate):
                raise ScriptError(f"the adapter's base model folder {candidate} has no config.json; pass --base DIR")
            return str(candidate.resolve())
    if named.startswith(("/", ".", "~")):
        raise ScriptError(
            f"the adapter's base model {named} (from adapter_config.json) does not exist; pass --base DIR"
        )
    return named  # a hub id: from_pretrained (offline) or vLLM will look in the local cache


def inspect_model_folder(model: str, base_arg: str | None = None) -> ModelFolder:
    folder = Path(model).expanduser().resolve()
    if not folder.is_dir():
        raise ScriptError(f"model folder not found: {folder}")
    adapter_config = folder / "adapter_config.json"
    if adapter_config.is_file():
        try:
            config = json.loads(adapter_config.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ScriptError(f"cannot read {adapter_config}: {exc}") from None
        if not isinstance(config, dict):
            raise ScriptError(f"{adapter_config} must hold a JSON object")
        rank = config.get("r")
        return ModelFolder(
            folder,
            True,
            resolve_base(folder, config, base_arg),
            rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
        )
    if not _has_weights_config(folder):
        raise ScriptError(
            f"{folder} is neither a model folder (config.json) nor a LoRA adapter folder (adapter_config.json)"
        )
    return ModelFolder(folder, False)
