"""Every process of a run trains the same thing. On one machine they read one config; over several machines each
machine wrote its own (from its own copy of the traces), so before the first step the processes compare what they
are about to train on: the dataset's bytes, the settings, and the start weights' files."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from massgen_rl_common.protocol import ScriptError

from .ranks import machine_rank, process_rank, world_size

# Where a machine keeps things, not what it trains: free to differ between machines.
PLACES = ("model_path", "output_dir", "dataset_path", "resume_from_checkpoint", "reward_url", "deepspeed")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
HASHED_WEIGHTS_MAX = 256 * 1024**2  # adapters are hashed whole; a full model's files by name and size


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(args: Any) -> dict[str, Any]:
    """What this process is about to train on: dataset hash, settings without paths, start weight files."""
    settings = {key: value for key, value in dataclasses.asdict(args).items() if key not in PLACES}
    model = Path(args.model_path).expanduser()
    weights = {}
    for path in sorted(model.iterdir()):
        if path.is_file() and path.suffix in WEIGHT_SUFFIXES:
            size = path.stat().st_size
            weights[path.name] = _sha256(path) if size <= HASHED_WEIGHTS_MAX else size
    return {"dataset": _sha256(Path(args.dataset_path).expanduser()), "settings": settings, "weights": weights}


def _differences(other: dict[str, Any], main: dict[str, Any]) -> list[str]:
    there, here = f"on rank {other['rank']}", "on rank 0"
    out = []
    if other["dataset"] != main["dataset"]:
        out.append(f"the dataset (sha256 {other['dataset'][:12]} {there}, {main['dataset'][:12]} {here})")
    a, b = other["settings"], main["settings"]
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if keys:
        out.append("settings " + ", ".join(f"{k} ({a.get(k)!r} {there}, {b.get(k)!r} {here})" for k in keys))
    if other["weights"] != main["weights"]:
        out.append("the start weights' files")
    return out


def require_same_run(args: Any) -> None:
    """A collective call every rank makes before training: ScriptError on every rank when any process differs from
    rank 0 in its dataset, settings or start weights (nothing happens in a single-process run)."""
    if world_size() <= 1:
        return
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    mine = {"rank": process_rank(), "machine": machine_rank(), **fingerprint(args)}
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, mine)
    main = gathered[0]
    for other in gathered[1:]:
        differences = _differences(other, main)
        if differences:
            raise ScriptError(
                f"rank {other['rank']} (machine {other['machine']}) would train on something else than rank 0: "
                f"{'; '.join(differences)}. Every machine must build the same run: the same traces (a copy of machine "
                f"0's store), config and train flags",
                rank_differs=other["rank"],
            )
