"""The vLLM backend of `serve`: when vLLM is importable and a CUDA GPU is present, `serve` launches
vLLM's own OpenAI server (`python -m vllm.entrypoints.openai.api_server`) instead of the transformers
backend, waits until it answers /health, and then emits the same `ready` event.

Command construction is pure (unit-tested); running it needs a GPU.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from massgen_rl_common.model_folder import ModelFolder
from massgen_rl_common.protocol import ScriptError, log

# vLLM 0.10.2 added `return_token_ids` to the OpenAI server and `--logprobs-mode`.
TOKEN_IDS_SINCE = (0, 10, 2)
# ranks vLLM accepts for --max-lora-rank
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def vllm_version() -> str | None:
    """The installed vLLM version, or None when it is not importable."""
    try:
        if importlib.util.find_spec("vllm") is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def cuda_device_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # a broken CUDA setup counts as none
        return 0


def parse_version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        match = re.match(r"\d+", piece)
        parts.append(int(match.group()) if match else 0)
    return tuple(parts)


def lora_rank_bound(rank: int | None) -> int:
    """The smallest --max-lora-rank vLLM accepts that fits the adapter's rank."""
    rank = rank or 16
    return next((r for r in LORA_RANKS if r >= rank), LORA_RANKS[-1])


def free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def build_vllm_command(
    *,
    python: str,
    folder: ModelFolder,
    served_name: str,
    host: str,
    port: int,
    max_batch_size: int,
    version: str,
    extra_args: str | None = None,
) -> list[str]:
    """The argument vector that starts vLLM's OpenAI server for a model folder or a LoRA adapter.

    Adapters are served the vLLM way, unmerged: the base model under `<name>-base` and the adapter,
    via --enable-lora/--lora-modules, under `<name>` (the name clients ask for), with room for a second
    adapter that vLLM's runtime endpoints can load beside it (see vllm_env).
    """
    if port <= 0:
        raise ValueError("vLLM needs a concrete port; pick one with free_port()")
    cmd = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--host",
        host,
        "--port",
        str(port),
        "--max-num-seqs",
        str(max_batch_size),
        "--dtype",
        "auto",
    ]
    if folder.adapter:
        assert folder.base is not None
        cmd += [
            "--model",
            folder.base,
            "--served-model-name",
            f"{served_name}-base",
            "--enable-lora",
            "--lora-modules",
            f"{served_name}={folder.path}",
            "--max-lora-rank",
            str(lora_rank_bound(folder.lora_rank)),
            "--max-loras",
            "2",
        ]
    else:
        cmd += ["--model", str(folder.path), "--served-model-name", served_name]
    if parse_version(version) >= TOKEN_IDS_SINCE:
        # logprobs of the distribution actually sampled (after temperature/top-p), like the transformers backend
        cmd += ["--logprobs-mode", "processed_logprobs"]
    cmd += ["--max-logprobs", "20"]
    if extra_args:
        cmd += shlex.split(extra_args)
    return cmd


def vllm_env(folder: ModelFolder, environ: dict[str, str] | None = None) -> dict[str, str]:
    """vLLM's environment: on an adapter, its runtime LoRA endpoints on (POST /v1/load_lora_adapter and
    /v1/unload_lora_adapter, which vLLM only serves with this variable set)."""
    env = dict(os.environ if environ is None else environ)
    if folder.adapter:
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
    return env


def client_host(host: str) -> str:
    """Where a client on this machine connects for a server bound to `host`."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def url_host(host: str) -> str:
    host = client_host(host)
    return f"[{host}]" if ":" in host else host


_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an HTTP proxy


def _healthy(url: str) -> bool:
    try:
        with _direct.open(url, timeout=2) as response:
            return 200 <= response.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _terminate(proc: subprocess.Popen, grace_s: float = 30.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def run_server_process(
    cmd: list[str],
    *,
    host: str,
    port: int,
    stop: threading.Event,
    startup_timeout_s: float,
    on_ready: Callable[[], None],
    poll_s: float = 1.0,
    what: str = "vLLM",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Start an OpenAI-compatible server process, wait for its /health, call on_ready, then supervise it
    until `stop` is set (SIGTERM to it, SIGKILL after 30 s). Its stdout and stderr go to our stderr."""
    log(f"starting {what}: {shlex.join(cmd)}")
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno(), env=env
    )
    health = f"http://{url_host(host)}:{port}/health"
    deadline = time.monotonic() + startup_timeout_s
    try:
        while not _healthy(health):
            if proc.poll() is not None:
                raise ScriptError(
                    f"{what} exited with code {proc.returncode} before it was ready (its log is above, on stderr)"
                )
            if stop.is_set():
                return {"backend": what.lower(), "stopped_before_ready": True, "exit_code": _terminate(proc)}
            if time.monotonic() > deadline:
                raise ScriptError(f"{what} did not answer {health} within {startup_timeout_s:g} s")
            stop.wait(poll_s)
        on_ready()
        while not stop.wait(poll_s):
            if proc.poll() is not None:
                raise ScriptError(f"{what} exited unexpectedly with code {proc.returncode}")
        return {"backend": what.lower(), "exit_code": _terminate(proc)}
    finally:
        _terminate(proc)
