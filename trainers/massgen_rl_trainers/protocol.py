"""The JSON-lines protocol spoken to the TypeScript CLI.

stdout carries only events, one JSON object per line, each with an "event" key:
  {"event": "progress", "stage": ..., "message": ...}
  {"event": "done", ...result fields}
  {"event": "error", "message": ...}
Free-form logs go to stderr. `run_script` parses the arguments, points file descriptor 1 at stderr
while the script runs (so prints from libraries and subprocesses cannot corrupt the stream), emits
`done` with whatever `main` returns, and maps failures to exit codes: 2 bad arguments, 1 anything else.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import IO, Any, Callable, TypeVar

from .config_args import UsageError, parse_args

T = TypeVar("T")

EXIT_FAILURE = 1
EXIT_USAGE = 2

_events: IO[str] | None = None  # where events go while run_script isolates stdout; None: sys.stdout


class ScriptError(Exception):
    """An expected failure: reported as an error event (with `fields`) without a traceback."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.fields = fields


def emit(event: str, **fields: Any) -> None:
    """Write one event as a single JSON line and flush it."""
    stream = _events or sys.stdout
    stream.write(json.dumps({"event": event, **fields}, default=str, ensure_ascii=False) + "\n")
    stream.flush()


def progress(stage: str, message: str, **fields: Any) -> None:
    emit("progress", stage=stage, message=message, **fields)


def done(**fields: Any) -> None:
    emit("done", **fields)


def error(message: str, **fields: Any) -> None:
    emit("error", message=message, **fields)


def log(*parts: Any) -> None:
    """Free-form text for humans: stderr only."""
    print(*parts, file=sys.stderr, flush=True)


def parse_or_exit(cls: type[T], argv: list[str] | None = None, prog: str | None = None) -> T:
    """`config_args.parse_args`, exiting with code 2 (message on stderr, error event on stdout) on bad args."""
    try:
        return parse_args(cls, argv, prog=prog)
    except UsageError as exc:
        name = prog or os.path.basename(sys.argv[0])
        sys.stderr.write(f"{name}: error: {exc}\n")
        error(str(exc), kind="usage")
        raise SystemExit(EXIT_USAGE) from None


def _isolate_stdout() -> tuple[int, Any] | None:
    """Send fd 1 (and sys.stdout) to stderr; events keep a private copy of the real stdout."""
    global _events
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError):  # no real fd (embedded use): keep writing events to sys.stdout
        return None
    _events = os.fdopen(os.dup(saved), "w", encoding="utf-8", buffering=1)
    previous, sys.stdout = sys.stdout, sys.stderr
    return saved, previous


def _restore_stdout(state: tuple[int, Any] | None) -> None:
    global _events
    if state is None:
        return
    saved, previous = state
    _events.close()
    _events = None
    os.dup2(saved, 1)
    os.close(saved)
    sys.stdout = previous


def exception_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def run_script(main: Callable[[T], dict[str, Any]], cls: type[T], argv: list[str] | None = None,
               prog: str | None = None) -> int:
    """Run `main(args)` under the protocol; returns the process exit code."""
    args = parse_or_exit(cls, argv, prog=prog)
    state = _isolate_stdout()
    try:
        result = main(args)
        done(**(result or {}))
        return 0
    except ScriptError as exc:
        if exc.__cause__ is not None:  # a wrapped library failure: keep its traceback for humans
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        log(f"error: {exc}")
        error(str(exc), **exc.fields)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except Exception as exc:  # anything unexpected: traceback for humans, one line for the CLI
        traceback.print_exc(file=sys.stderr)
        name = exception_name(exc)
        error(f"{name}: {exc}", exception=name)
        return EXIT_FAILURE
    finally:
        _restore_stdout(state)
