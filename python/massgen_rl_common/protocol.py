"""The JSON-lines protocol spoken to the TypeScript CLI, and the runner every script goes through.

stdout carries only events, one JSON object per line, each with an "event" key:
  {"event": "progress", "stage": ..., "message": ...}
  {"event": "done", ...result fields}
  {"event": "error", "message": ...}
Free-form logs go to stderr. `run_script` parses the arguments, points file descriptor 1 at stderr
while the script runs (so prints from libraries and subprocesses cannot corrupt the stream), emits
`done` with whatever `main` returns, and maps failures to exit codes: 2 bad arguments, 1 anything else,
130 interrupted. Trainers use it too (`train.runner.run_trainer`), with their own argument parser,
signal handling, stop outcome and process rank.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import IO, Any, TypeVar

from .config_args import UsageError, parse_args

T = TypeVar("T")

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_events: IO[str] | None = None  # where events go while run_script isolates stdout; None: sys.stdout
_rank = 0  # set by run_script: a process of a multi-process job other than rank 0 emits only errors
_echo: str | None = None  # set by run_script: where such a process logs its other events instead (a prefix), or None


class ScriptError(Exception):
    """An expected failure: reported as an error event (with `fields`) without a traceback."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.fields = fields


def emit(event: str, **fields: Any) -> None:
    """Write one event as a single JSON line and flush it (on a rank other than 0: errors only, tagged with it; its
    other events go to stderr behind the `echo` prefix given to run_script, if any)."""
    if _rank:
        if event != "error":
            if _echo is not None:
                log(_echo, json.dumps({"event": event, **fields}, default=str, ensure_ascii=False))
            return
        fields = {"rank": _rank, **fields}
    stream = _events or sys.stdout
    try:
        stream.write(json.dumps({"event": event, **fields}, default=str, ensure_ascii=False) + "\n")
        stream.flush()
    except BrokenPipeError:
        pass  # the reader is gone (its process killed): there is no one left to tell


def progress(stage: str, message: str, **fields: Any) -> None:
    emit("progress", stage=stage, message=message, **fields)


def done(**fields: Any) -> None:
    emit("done", **fields)


def error(message: str, **fields: Any) -> None:
    emit("error", message=message, **fields)


def log(*parts: Any) -> None:
    """Free-form text for humans: stderr only (dropped once its reader is gone)."""
    try:
        print(*parts, file=sys.stderr, flush=True)
    except BrokenPipeError:
        pass


def report_usage(exc: UsageError, prog: str | None = None) -> None:
    """Bad arguments: one line on stderr (argparse style) and an error event of kind "usage"."""
    sys.stderr.write(f"{prog or os.path.basename(sys.argv[0])}: error: {exc}\n")
    error(str(exc), kind="usage")


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


def run_script(
    main: Callable[[T], dict[str, Any] | None],
    cls: type[T],
    argv: list[str] | None = None,
    prog: str | None = None,
    *,
    parse: Callable[..., T] = parse_args,
    rank: int = 0,
    during: AbstractContextManager[Any] | None = None,
    on_exception: Callable[[BaseException], int | None] | None = None,
    echo: str | None = None,
) -> int:
    """Run `main(args)` under the protocol; returns the process exit code.

    `parse(cls, argv, prog=prog)` builds the arguments (UsageError: exit 2). `rank` is the process's rank in a
    multi-process job. `during` is entered around `main` (signal handlers, say). `on_exception(exc)` sees a failure
    first: it returns an exit code once it has reported the failure, or None for the default handling. `echo`: a
    process of a rank other than 0 logs the events it does not emit on stderr, behind this prefix.
    """
    global _rank, _echo
    _rank, _echo = rank, echo
    try:
        try:
            args = parse(cls, argv, prog=prog)
        except UsageError as exc:
            report_usage(exc, prog)
            return EXIT_USAGE
        state = _isolate_stdout()
        try:
            with during or nullcontext():
                return _outcome(main, args, on_exception)
        finally:
            _restore_stdout(state)
    finally:
        _rank, _echo = 0, None


def _outcome(
    main: Callable[[T], dict[str, Any] | None], args: T, on_exception: Callable[[BaseException], int | None] | None
) -> int:
    try:
        done(**(main(args) or {}))
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        code = on_exception(exc) if on_exception else None
        return report_failure(exc) if code is None else code


def report_failure(exc: BaseException) -> int:
    """One error event (a traceback on stderr where it helps a human); returns the exit code."""
    if isinstance(exc, UsageError):  # a config problem only visible once main looked at the model or data
        log(f"error: {exc}")
        error(str(exc), kind="usage")
        return EXIT_USAGE
    if isinstance(exc, ScriptError):
        if exc.__cause__ is not None:  # a wrapped library failure: keep its traceback for humans
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        log(f"error: {exc}")
        error(str(exc), **exc.fields)
        return EXIT_FAILURE
    if isinstance(exc, KeyboardInterrupt):
        error("interrupted")
        return EXIT_INTERRUPTED
    traceback.print_exception(exc, file=sys.stderr)  # anything unexpected: traceback for humans, one line for the CLI
    name = exception_name(exc)
    error(f"{name}: {exc}", exception=name)
    return EXIT_FAILURE
