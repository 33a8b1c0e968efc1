"""The folder digests kept between server starts (massgen_rl_serving/digest_cache.py): reused only while the files' stats are
unchanged, always equal to hashing the files, and safe against corrupt cache files and concurrent writers."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from massgen_rl_serving import digest_cache, gguf_files

OLD_NS = 1_600_000_000 * 10**9  # files written "long ago": past the racy window


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("MASSGEN_RL_GGUF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(digest_cache, "RACY_S", 0.0)  # these files' ctimes are recent; the racy test sets it back
    return tmp_path / "cache" / gguf_files.DIGESTS_FILE


@pytest.fixture
def hashes(monkeypatch) -> list[str]:
    """Each hash of the files that folder_digest computes (rather than reads from the cache)."""
    calls: list[str] = []
    real = gguf_files._hash_files

    def counted(files, extra):
        calls.append(extra)
        return real(files, extra)

    monkeypatch.setattr(gguf_files, "_hash_files", counted)
    return calls


def reference(folder: Path, extra: str = "") -> str:
    """The digest as it was computed before there was a cache (GGUF copies already made are named by it)."""
    h = hashlib.sha256(extra.encode())
    names = ("config.json", "adapter_config.json", "tokenizer.json", "tokenizer_config.json")
    files = [folder / n for n in names if (folder / n).is_file()]
    for path in files + sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:20]


def make_folder(path: Path, weights: bytes = b"weights v1") -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(weights)
    for f in path.iterdir():
        os.utime(f, ns=(OLD_NS, OLD_NS))
    return path


def test_an_unchanged_folder_is_hashed_once(tmp_path: Path, cache: Path, hashes: list[str]):
    folder = make_folder(tmp_path / "model")
    first = gguf_files.folder_digest(folder, "bf16")
    assert first == reference(folder, "bf16")
    assert gguf_files.folder_digest(folder, "bf16") == first
    assert gguf_files.folder_digest(folder, "q8_0") != first  # extra is part of the key
    assert hashes == ["bf16", "q8_0"] and cache.is_file()


def test_a_changed_stat_hashes_again(tmp_path: Path, cache: Path, hashes: list[str]):
    folder = make_folder(tmp_path / "model")
    first = gguf_files.folder_digest(folder, "bf16")
    weights = folder / "model.safetensors"
    os.utime(weights, ns=(OLD_NS, OLD_NS + 1))  # touched: same bytes, so the same digest, but read again
    assert gguf_files.folder_digest(folder, "bf16") == first and len(hashes) == 2
    weights.write_bytes(b"weights v22")  # a new checkpoint of another size, its mtime set back
    os.utime(weights, ns=(OLD_NS, OLD_NS + 1))
    second = gguf_files.folder_digest(folder, "bf16")
    assert second != first and len(hashes) == 3
    time.sleep(0.05)  # past the kernel's timestamp tick
    weights.write_bytes(b"weights v33")  # same size and mtime as the cached stat (cp -p, rsync -a): ctime differs
    os.utime(weights, ns=(OLD_NS, OLD_NS + 1))
    assert gguf_files.folder_digest(folder, "bf16") == reference(folder, "bf16") != second
    (folder / "extra.safetensors").write_bytes(b"more")  # a new weight file
    os.utime(folder / "extra.safetensors", ns=(OLD_NS, OLD_NS))
    assert gguf_files.folder_digest(folder, "bf16") == reference(folder, "bf16")
    assert len(hashes) == 5


def test_files_written_just_now_are_not_cached(tmp_path: Path, cache: Path, hashes: list[str], monkeypatch):
    monkeypatch.setattr(digest_cache, "RACY_S", 2.0)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # a same-tick rewrite would keep this stat
    os.utime(folder / "config.json", ns=(OLD_NS, OLD_NS))  # an old mtime (a copy): its ctime is still new
    gguf_files.folder_digest(folder)
    gguf_files.folder_digest(folder)
    assert len(hashes) == 2 and not cache.exists()


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'{"version": 1, "entries": []}', b"\xff\xfe", b""])
def test_a_corrupt_cache_file_counts_as_empty(tmp_path: Path, cache: Path, hashes: list[str], raw: bytes):
    folder = make_folder(tmp_path / "model")
    cache.parent.mkdir(parents=True)
    cache.write_bytes(raw)
    assert gguf_files.folder_digest(folder) == reference(folder)
    assert json.loads(cache.read_text())["version"] == digest_cache.VERSION  # replaced by a good one
    gguf_files.folder_digest(folder)
    assert len(hashes) == 1


def test_a_cached_entry_of_another_shape_is_not_trusted(tmp_path: Path, cache: Path, hashes: list[str]):
    folder = make_folder(tmp_path / "model")
    gguf_files.folder_digest(folder)
    data = json.loads(cache.read_text())
    (entry,) = data["entries"].values()
    entry["digest"] = 7
    cache.write_text(json.dumps(data))
    assert gguf_files.folder_digest(folder) == reference(folder) and len(hashes) == 2


def test_entries_of_removed_folders_are_dropped(tmp_path: Path, cache: Path):
    gone = make_folder(tmp_path / "gone")
    gguf_files.folder_digest(gone)
    for f in gone.iterdir():
        f.unlink()
    gone.rmdir()
    gguf_files.folder_digest(make_folder(tmp_path / "kept"))
    folders = [e["folder"] for e in json.loads(cache.read_text())["entries"].values()]
    assert folders == [str((tmp_path / "kept").resolve())]


def _store_many(cache: str, folder: str, n: int) -> None:
    for i in range(n):
        entry = {"folder": folder, "files": {}, "digest": f"{Path(folder).name}-{i}"}
        digest_cache._store(Path(cache), f"{folder}\0{i % 3}", entry)


def test_concurrent_writers_never_leave_a_half_written_file(tmp_path: Path):
    cache = tmp_path / "cache" / "digests.json"
    folders = [make_folder(tmp_path / f"m{i}") for i in range(4)]
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_store_many, args=(str(cache), str(f), 60)) for f in folders]
    for w in writers:
        w.start()
    reads = 0
    while any(w.is_alive() for w in writers):
        if cache.exists():
            data = json.loads(cache.read_text())  # raises on a torn write
            assert data["version"] == digest_cache.VERSION
            reads += 1
        time.sleep(0.001)
    assert all(w.join() is None and w.exitcode == 0 for w in writers)
    entries = json.loads(cache.read_text())["entries"]
    assert entries and all(e["digest"].startswith(Path(e["folder"]).name + "-") for e in entries.values())
    assert [p.name for p in cache.parent.iterdir()] == ["digests.json"]  # no temporary files left behind
    assert reads > 0


def test_an_unwritable_cache_still_gives_the_digest(tmp_path: Path, monkeypatch, hashes: list[str]):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("MASSGEN_RL_GGUF_CACHE", str(blocker / "cache"))  # under a file: mkdir fails
    folder = make_folder(tmp_path / "model")
    assert gguf_files.folder_digest(folder) == gguf_files.folder_digest(folder) == reference(folder)
    assert len(hashes) == 2


def test_merged_copies_beyond_the_most_recently_used_are_removed(tmp_path: Path):
    copies = [tmp_path / f"merged-{i:02d}-bf16.gguf" for i in range(gguf_files.MERGED_KEPT + 3)]
    for age, copy in enumerate(copies):
        copy.write_bytes(b"gguf")
        os.utime(copy, (1_000_000 - age, 1_000_000 - age))  # copies[0] used last
    other = tmp_path / "model-abc-bf16.gguf"
    other.write_bytes(b"gguf")
    gguf_files._prune_merged(tmp_path)
    kept = copies[: gguf_files.MERGED_KEPT]
    assert sorted(p.name for p in tmp_path.glob("merged-*")) == sorted(p.name for p in kept)
    assert other.is_file()  # the base models' copies are never pruned
