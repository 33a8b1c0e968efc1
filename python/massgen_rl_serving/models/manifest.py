"""What makes a provisioned default model folder valid: its manifest `massgen-rl-model.json` and files.

No heavy imports: the reuse check must answer in milliseconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MODEL_NAME = "smollm2-135m-instruct"
MANIFEST_NAME = "massgen-rl-model.json"
REQUIRED_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
MANIFEST_KEYS = (
    "name",
    "source",
    "gguf_sha256",
    "eos_token",
    "pad_token",
    "eos_token_id",
    "pad_token_id",
    "num_parameters",
    "torch_dtype",
    "created_at",
)


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
