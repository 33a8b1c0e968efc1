"""SIGINT/SIGTERM during training: finish the current optimizer step, save a resumable checkpoint, exit 130."""

from __future__ import annotations

import os
import signal
from typing import Any

from massgen_rl_common.protocol import log

EXIT_STOPPED = 130


class Stopped(Exception):
    """Training stopped on SIGINT/SIGTERM after saving (and announcing) a resumable checkpoint."""

    def __init__(self, checkpoint: str) -> None:
        super().__init__(f"resumable checkpoint {checkpoint}")
        self.checkpoint = checkpoint


class StopRequest:
    """SIGINT/SIGTERM: ask the trainer to finish the current optimizer step, save a checkpoint and stop.
    A second signal interrupts at once (KeyboardInterrupt), except in a launcher's worker process.
    Used as a context manager: the handlers are installed inside the `with` block only."""

    def __init__(self) -> None:
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[signum] = signal.signal(signum, self._handle)
            except ValueError:  # not the main thread (embedded use)
                pass
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.requested:
            if "TORCHELASTIC_RUN_ID" in os.environ or "LOCAL_RANK" in os.environ:
                # Under accelerate/torchrun a worker often gets the signal twice (from a process-group kill and
                # forwarded by the launcher); the launcher escalates to SIGKILL after its shutdown timeout anyway.
                log(f"received {name} again: still finishing the step and the checkpoint")
                return
            raise KeyboardInterrupt(f"second {name}")
        self.requested, self.signal_name = True, name
        log(
            f"received {name}: finishing the current step, then saving a resumable checkpoint "
            "(send it again to stop at once without one)"
        )


STOP = StopRequest()
