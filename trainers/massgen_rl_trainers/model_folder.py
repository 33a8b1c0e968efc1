"""What makes a provisioned model folder valid, and cleanup of staging folders left by killed runs.

No heavy imports: the reuse check must answer in milliseconds.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

MODEL_NAME = "smollm2-135m-instruct"
MANIFEST_NAME = "massgen-rl-model.json"
REQUIRED_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
MANIFEST_KEYS = ("name", "source", "gguf_sha256", "eos_token", "pad_token", "eos_token_id", "pad_token_id",
                 "num_parameters", "torch_dtype", "created_at")


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest if it is a complete provisioned model folder, else None."""
    try:
        manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("name") != MODEL_NAME:
        return None
    if any(key not in manifest for key in MANIFEST_KEYS):
        return None
    if not all((folder / name).is_file() for name in REQUIRED_FILES):
        return None
    if not any(folder.glob("*.safetensors")):
        return None
    return manifest


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_staging(out: Path) -> list[Path]:
    """Delete `.<name>.staging-<pid>-*` folders beside `out` whose process is gone; returns them."""
    removed = []
    for path in out.parent.glob(f".{out.name}.staging-*"):
        pid_text = path.name.removeprefix(f".{out.name}.staging-").split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
