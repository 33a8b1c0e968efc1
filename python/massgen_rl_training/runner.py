"""`protocol.run_script` set up for trainers: their config parser, the stop handler, events from rank 0 only (the
other machines' first processes log theirs)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from massgen_rl_common.protocol import EXIT_FAILURE, error, log, progress, run_script

from .args import parse_train_args
from .ranks import local_rank, machine_rank, process_rank
from .stop import EXIT_STOPPED, STOP, Stopped

T = TypeVar("T")


def run_trainer(
    main: Callable[[T], dict[str, Any]], cls: type[T], argv: list[str] | None = None, prog: str | None = None
) -> int:
    """Exit 0 after `done`, 2 on a bad config, 130 after a stop checkpoint, 1 on any failure (one `error` event).
    The first process of a machine other than 0 logs its steps on stderr (that machine's log) behind `[machine N]`."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    echo = f"[machine {machine_rank()}]" if machine_rank() > 0 and local_rank() == 0 else None
    return run_script(
        main,
        cls,
        argv,
        prog,
        parse=parse_train_args,
        rank=process_rank(),
        during=STOP,
        on_exception=_stop_outcome,
        echo=echo,
    )


def _stop_outcome(exc: BaseException) -> int | None:
    if isinstance(exc, Stopped):
        log(f"stopped: {exc}")
        progress(
            "stopped",
            f"stopped by {STOP.signal_name} after saving a resumable checkpoint",
            checkpoint=exc.checkpoint,
            signal=STOP.signal_name,
        )
        return EXIT_STOPPED
    if isinstance(exc, KeyboardInterrupt):  # with the stop handler installed: a second signal
        error("interrupted twice: stopped without saving a checkpoint", kind="interrupted")
        return EXIT_FAILURE
    return None
