"""GGUF copies of transformers model folders and PEFT LoRA adapters, for the llama.cpp engine (and of a base with
an adapter merged into it).

Converted once with llama.cpp's own converters (convert_hf_to_gguf.py, convert_lora_to_gguf.py, from the
llama.cpp source that llama-cpp-python was built from; see llama_setup.py) and cached by content: the key
hashes the folder's config and weight files, so a new checkpoint in the same folder converts again and an
unchanged one never does. The hash itself is kept in digests.json beside the copies while the files' stats stay
the same (digest_cache.py), so an unchanged folder is not read whole on every start.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from massgen_rl_common.protocol import ScriptError, log

from .digest_cache import cached_digest

WEIGHT_TYPES = ("bf16", "f16", "f32", "q8_0")
# merged copies of adapters kept in the cache (production's, the candidates' of the last cycles)
MERGED_KEPT = 6
DIGESTS_FILE = "digests.json"
# GGUF conversions this process ran, and their seconds (/stats: a caller's start-up accounting)
CONVERSIONS = {"count": 0, "seconds": 0.0}
_HASHED = ("config.json", "adapter_config.json", "tokenizer.json", "tokenizer_config.json")


def converters_dir() -> Path:
    """Where llama_setup.py put llama.cpp's converters (MASSGEN_RL_LLAMA_CPP_TOOLS overrides it)."""
    override = os.environ.get("MASSGEN_RL_LLAMA_CPP_TOOLS")
    return Path(override) if override else Path(sys.prefix) / "share" / "massgen-rl" / "llama.cpp"


def cache_dir() -> Path:
    override = os.environ.get("MASSGEN_RL_GGUF_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "massgen-rl" / "gguf"


def _defining_files(folder: Path) -> list[Path]:
    files = [folder / name for name in _HASHED if (folder / name).is_file()]
    return files + sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())


def hash_folder(folder: Path, extra: str = "") -> str:
    """A hash of the files that define a model or adapter folder (config, tokenizer, every weight file)."""
    return _hash_files(_defining_files(folder), extra)


def _hash_files(files: list[Path], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for path in files:
        h.update(path.name.encode() + b"\0")
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:20]


def folder_digest(folder: Path, extra: str = "") -> str:
    """hash_folder's digest, kept in the GGUF cache's digest file while the folder's files are unchanged."""
    files = _defining_files(folder)
    return cached_digest(cache_dir() / DIGESTS_FILE, folder, extra, files, lambda: _hash_files(files, extra))


def model_gguf(folder: Path, weight_type: str) -> Path:
    """The GGUF of a transformers model folder in `weight_type`, converted on first use. Named by content alone:
    the same weights in another folder (a copy, a test's temporary one) share the one conversion."""
    out = cache_dir() / f"model-{folder_digest(folder, weight_type)}-{weight_type}.gguf"
    if not out.is_file():
        _convert("convert_hf_to_gguf.py", [str(folder), "--outtype", weight_type], out, f"{folder} ({weight_type})")
    return out


def adapter_gguf(adapter: Path, base: Path) -> Path:
    """The GGUF LoRA of a PEFT adapter folder (f32: adapters are small), converted on first use."""
    out = cache_dir() / f"lora-{adapter.name}-{folder_digest(adapter, str(base))}.gguf"
    if not out.is_file():
        _convert(
            "convert_lora_to_gguf.py",
            [str(adapter), "--base", str(base), "--outtype", "f32"],
            out,
            f"the LoRA adapter {adapter}",
        )
    return out


def merged_gguf(adapter: Path, base: Path, weight_type: str) -> Path:
    """The GGUF of `base` with the PEFT adapter merged into its weights, in `weight_type`: decoded at the base's
    speed (no LoRA products per layer). Merged in float32 and converted on first use, named by both folders'
    content; the merged transformers folder is only a step and is removed."""
    out = cache_dir() / f"merged-{folder_digest(adapter, folder_digest(base) + weight_type)}-{weight_type}.gguf"
    if out.is_file():
        os.utime(out)  # used now: the pruning below keeps it
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        folder = Path(tmp) / "merged"
        _merge(adapter, base, folder)
        _convert(
            "convert_hf_to_gguf.py",
            [str(folder), "--outtype", weight_type],
            out,
            f"the LoRA adapter {adapter} merged into {base} ({weight_type})",
        )
    _prune_merged(out.parent)
    return out


def _prune_merged(folder: Path) -> None:
    """Each merged copy is a whole model and a nightly loop makes one per candidate: the MERGED_KEPT most recently
    used stay (a server still running on a removed one keeps reading it: the file goes with its last user)."""
    copies = sorted(folder.glob("merged-*.gguf"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in copies[MERGED_KEPT:]:
        old.unlink(missing_ok=True)


def _merge(adapter: Path, base: Path, out: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log(f"serve: merging the LoRA adapter {adapter} into {base}")
    model = AutoModelForCausalLM.from_pretrained(str(base), torch_dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.save_pretrained(str(out), safe_serialization=True)
    tokenizer_source = adapter if (adapter / "tokenizer_config.json").is_file() else base
    AutoTokenizer.from_pretrained(str(tokenizer_source)).save_pretrained(str(out))


def _convert(script: str, args: list[str], out: Path, what: str) -> None:
    tool = converters_dir() / script
    if not tool.is_file():
        raise ScriptError(
            f"llama.cpp's converter {tool} is missing; run `massgen-rl doctor --fix` "
            "(it installs llama-cpp-python with its converters), or serve with --engine transformers"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f"serve: converting {what} to GGUF")
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        partial = Path(tmp) / out.name
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        env.pop("NO_LOCAL_GGUF", None)  # the converters use the gguf-py next to them, of their own version
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(tool), *args, "--outfile", str(partial)],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        CONVERSIONS["count"] += 1
        CONVERSIONS["seconds"] += time.perf_counter() - started
        if proc.returncode != 0 or not partial.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
            raise ScriptError(f"converting {what} to GGUF failed (exit {proc.returncode}): " + " | ".join(tail))
        os.replace(partial, out)  # whole or not at all: a killed conversion leaves no half file in the cache
