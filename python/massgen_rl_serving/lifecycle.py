"""When `serve` stops: SIGTERM/SIGINT, or the parent process going away."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from massgen_rl_common.protocol import log


class StopRequested(BaseException):
    """SIGTERM/SIGINT before the server was ready (BaseException: library code must not swallow it)."""


class Lifecycle:
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.serving = False
        self.signal_name: str | None = None

    def install(self) -> None:
        def handler(signum: int, _frame: Any) -> None:
            self.signal_name = signal.Signals(signum).name
            self.stop.set()
            if not self.serving:
                raise StopRequested()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def watch_parent(self) -> None:
        """Stop when the process that started us dies (it can no longer stop us: no orphaned servers)."""
        parent = os.getppid()
        if parent <= 1:
            return

        def watch() -> None:
            while not self.stop.wait(1.0):
                if os.getppid() != parent:
                    # stop first: the parent's end of our stderr may be gone with it
                    self.signal_name = "parent-exit"
                    self.stop.set()
                    log("serve: the parent process exited; shutting down")

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
