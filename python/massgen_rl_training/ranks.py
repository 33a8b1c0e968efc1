"""Where this process stands in a multi-process run: `accelerate launch` / torchrun set RANK and WORLD_SIZE (all
machines together), LOCAL_RANK (on this machine), GROUP_RANK (the machine's rank) and GROUP_WORLD_SIZE (machines)."""

from __future__ import annotations

import os


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, str(default)))
    except ValueError:
        return default


def process_rank() -> int:
    """Global rank under `accelerate launch`/torchrun (RANK), else 0."""
    return _env_int("RANK", 0)


def world_size() -> int:
    return max(1, _env_int("WORLD_SIZE", 1))


def local_rank() -> int:
    """Rank among this machine's processes (LOCAL_RANK), else 0."""
    return _env_int("LOCAL_RANK", 0)


def machine_rank() -> int:
    """This machine's rank (torchrun's GROUP_RANK: accelerate's --machine_rank), else 0."""
    return _env_int("GROUP_RANK", 0)


def num_machines() -> int:
    return max(1, _env_int("GROUP_WORLD_SIZE", 1))


def is_main_process() -> bool:
    return process_rank() == 0


def barrier() -> None:
    """Wait for every process (nothing to wait for in a single-process run)."""
    if world_size() > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def any_process(flag: bool) -> bool:
    """True on every process when `flag` is true on any of them; a collective call that every rank must make."""
    if world_size() > 1:
        import torch
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            tensor = torch.tensor([1 if flag else 0], dtype=torch.int32)
            if dist.get_backend() == "nccl":
                tensor = tensor.cuda()
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
            flag = bool(tensor.item())
    return flag
