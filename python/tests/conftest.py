"""Shared helpers: run a script the way the TypeScript CLI does, and provision the model once per session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]
os.environ["HF_HUB_OFFLINE"] = "1"  # also for anything imported in-process


@dataclass
class ScriptRun:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    seconds: float

    @property
    def last(self) -> dict[str, Any]:
        return self.events[-1]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == kind]


def run_module(module: str, *args: str, timeout: float = 600, path_before: Path | None = None) -> ScriptRun:
    """`python -m MODULE ARGS` (`massgen_rl_training.sft`, `massgen_rl_serving.models.provision`, ...) with
    PYTHONPATH=python; checks every stdout line is an event."""
    python_path = os.pathsep.join(str(p) for p in (path_before, PYTHON_DIR) if p is not None)
    env = {**os.environ, "PYTHONPATH": python_path, "HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.monotonic() - started
    events = []
    for line in proc.stdout.splitlines():
        event = json.loads(line)  # the protocol: nothing but JSON objects on stdout
        assert isinstance(event, dict) and "event" in event, line
        events.append(event)
    return ScriptRun(proc.returncode, events, proc.stderr, seconds)


@dataclass
class Provisioned:
    path: Path
    run: ScriptRun

    @property
    def reused(self) -> bool:
        return bool(self.run.last.get("reused"))


@pytest.fixture(scope="session")
def provisioned_model(tmp_path_factory: pytest.TempPathFactory) -> Provisioned:
    """The default model, in $MASSGEN_RL_DEFAULT_MODEL_DIR (reused if already there) or a temp dir."""
    configured = os.environ.get("MASSGEN_RL_DEFAULT_MODEL_DIR")
    out = Path(configured) if configured else tmp_path_factory.mktemp("models") / "smollm2-135m-instruct"
    run = run_module("massgen_rl_serving.models.provision", "--out", str(out))
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.last["event"] == "done", run.events
    print(f"\nmodels.provision: {run.seconds:.1f}s (reused={run.last.get('reused')}) -> {out}", file=sys.stderr)
    return Provisioned(out, run)


@pytest.fixture(scope="session", params=["transformers", "llama.cpp"])
def server(request):
    """One real server per CPU engine for the whole session (test_serve.py, test_serve_stream.py)."""
    from serve_support import MODEL_DIR, NAME, Server, engine_args

    if not (MODEL_DIR / "config.json").is_file():
        pytest.skip(f"no converted default model at {MODEL_DIR} (run `massgen-rl doctor --fix`)")
    srv = Server(
        "--model",
        str(MODEL_DIR),
        "--served-name",
        NAME,
        "--max-batch-size",
        "4",
        "--batch-window-ms",
        "50",
        *engine_args(request.param),
    )
    srv.engine = request.param
    print(f"\nserve ({srv.engine}): ready in {srv.startup_seconds:.1f}s", file=sys.stderr)
    yield srv
    code, events = srv.stop()
    assert code == 0, "".join(srv.stderr)[-3000:]
    assert events[-1]["event"] == "done" and events[-1]["signal"] == "SIGTERM", events[-1]
