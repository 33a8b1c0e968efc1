"""Folder digests kept between server starts, so an unchanged model folder is not read whole on every start.

A digest is reused only while every file it covers has the same name, size, mtime_ns, ctime_ns and inode as when
it was hashed (ctime cannot be set back by copying tools, unlike mtime); anything else hashes the files again, and
the content hash stays what keys the GGUF copies. Files changed (mtime or ctime) within RACY_S of being hashed are
not cached: the kernel's timestamps are coarse, and a write in the same tick would leave their stat unchanged. The cache is one JSON file, written whole to a
temporary file and renamed over the old one, so readers never see half of it; an unreadable or malformed file
counts as empty. Two servers storing at once may lose one's entry (it is hashed again next time), never mix them.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from massgen_rl_common.protocol import log

VERSION = 1
MAX_ENTRIES = 256
RACY_S = 2.0

Stats = dict[str, list[int]]


def file_stats(files: list[Path]) -> Stats:
    out = {}
    for path in files:
        st = path.stat()
        out[path.name] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    return out


def cached_digest(cache_file: Path, folder: Path, extra: str, files: list[Path], compute: Callable[[], str]) -> str:
    """compute()'s digest of `files` in `folder`, from `cache_file` when none of them changed since it was stored."""
    key = f"{folder.resolve()}\0{extra}"
    before = file_stats(files)
    entry = _read(cache_file).get(key)
    if isinstance(entry, dict) and entry.get("files") == before and isinstance(entry.get("digest"), str):
        return entry["digest"]
    digest = compute()
    newest = max((max(stats[1], stats[2]) for stats in before.values()), default=0)
    if file_stats(files) == before and time.time_ns() - newest > RACY_S * 1e9:
        _store(cache_file, key, {"folder": str(folder.resolve()), "files": before, "digest": digest})
    return digest


def _read(cache_file: Path) -> dict[str, Any]:
    try:
        data = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def _store(cache_file: Path, key: str, entry: dict[str, Any]) -> None:
    entries = {k: v for k, v in _read(cache_file).items() if k != key and _live(v)}
    entries[key] = entry  # last: the most recently stored are kept when there are too many
    kept = dict(list(entries.items())[-MAX_ENTRIES:])
    partial = None
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=cache_file.parent, prefix=".digests-", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"version": VERSION, "entries": kept}, f)
        os.replace(partial, cache_file)
    except OSError as exc:  # a read-only cache only costs the next start a hash
        log(f"serve: could not write the digest cache {cache_file}: {exc}")
        if partial:
            with contextlib.suppress(OSError):
                os.unlink(partial)


def _live(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("folder"), str) and Path(entry["folder"]).is_dir()
