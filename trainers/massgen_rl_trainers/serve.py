"""Serve a model folder (or a LoRA adapter) over an OpenAI-compatible HTTP API.

    python -m massgen_rl_trainers.serve --model DIR [--served-name NAME] [--base DIR] [--host H] [--port N]
        [--device auto|cpu|cuda] [--max-batch-size N] [--batch-window-ms MS] [--backend auto|transformers|vllm]

Events on stdout (the JSON-lines protocol): `progress` while loading (stages `load`, `adapter`, `warmup`,
or `vllm`), then `ready {host, port, base_url, model, backend, device, pid, adapter, max_batch_size}` once
the server answers, and `done {requests, batches, batch_sizes}` after a clean shutdown on SIGTERM or
SIGINT (exit code 0). Startup failures are `error` events (exit code 1).

HTTP (transformers backend):
  GET  /health                200 {"status": "ok", "model": NAME} (503 while shutting down)
  GET  /v1/models             {"object": "list", "data": [{"id": NAME, "object": "model", ...}]}
  POST /v1/chat/completions   OpenAI chat completions, non-streaming: messages, model, temperature
                              (0 = greedy), top_p, max_tokens / max_completion_tokens, n, seed, stop,
                              logprobs, top_logprobs, plus vLLM's return_token_ids, stop_token_ids and
                              ignore_eos.
                              Errors are OpenAI-style {"error": {message, type, param, code}}: 400 for
                              malformed JSON or invalid fields, 404 for another model's name.
  GET  /stats                 {"requests", "batches", "batch_sizes": {requests per batch: count}, ...}

This server produces text only: `tools` / `tool_choice` are accepted and ignored (the response then
carries the header `X-Massgen-Rl-Tools: ignored`); agents using it should use text tool calling.
Every response has a non-standard `massgen_rl` field: {batch_id, batch_requests, batch_sequences,
queue_ms, generate_ms}. With return_token_ids, `prompt_token_ids` is top-level and each choice has
`token_ids` (the completion's tokens, including the end-of-sequence token, as vLLM does);
`usage.completion_tokens` counts the same tokens, and logprobs hold one entry per such token.

If vLLM is importable and a CUDA GPU is present (and --device is not cpu), vLLM's own OpenAI server is
launched instead (see serve_vllm.py); the events are the same.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .protocol import ScriptError, emit, log, progress, run_script
from .serve_folders import inspect_model_folder
from .serve_openai import ApiError, build_response, error_body, parse_chat_request
from .serve_vllm import (build_vllm_command, choose_backend, cuda_device_count, free_port, run_server_process,
                         url_host, vllm_version)

MAX_BODY_BYTES = 32 * 1024 * 1024
DEVICES = ("auto", "cpu", "cuda")
BACKENDS = ("auto", "transformers", "vllm")


@dataclass
class ServeArgs:
    """Serve a model folder or LoRA adapter over an OpenAI-compatible API until SIGTERM/SIGINT."""

    model: str = field(metadata={"help": "An HF model folder, or a LoRA adapter folder (adapter_config.json)."})
    served_name: str | None = field(default=None, metadata={"help": "The model name clients send (default: the folder name)."})
    base: str | None = field(default=None, metadata={"help": "Base model folder of an adapter (default: its base_model_name_or_path)."})
    host: str = field(default="127.0.0.1", metadata={"help": "Address to listen on."})
    port: int = field(default=0, metadata={"help": "Port to listen on; 0 picks a free one (reported in the ready event)."})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda."})
    max_batch_size: int = field(default=8, metadata={"help": "Most sequences generated together (a request with n=k counts k)."})
    batch_window_ms: float = field(default=25.0, metadata={"help": "How long the first queued request waits for others to batch with."})
    default_max_tokens: int = field(default=1024, metadata={"help": "max_tokens when a request sets none (capped by the context)."})
    backend: str = field(default="auto", metadata={"help": "auto (vLLM when installed and a GPU is present), transformers or vllm."})
    vllm_args: str | None = field(default=None, metadata={"help": "Extra arguments for vLLM's server (one shell-quoted string)."})
    startup_timeout_s: float = field(default=900.0, metadata={"help": "vLLM only: how long to wait for its /health."})
    log_requests: bool = field(default=True, metadata={"help": "Log one line per chat request on stderr."})


class _StopRequested(BaseException):
    """SIGTERM/SIGINT before the server was ready (BaseException: library code must not swallow it)."""


class _Lifecycle:
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.serving = False
        self.signal_name: str | None = None

    def install(self) -> None:
        def handler(signum: int, _frame: Any) -> None:
            self.signal_name = signal.Signals(signum).name
            self.stop.set()
            if not self.serving:
                raise _StopRequested()

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
                    log("serve: the parent process exited; shutting down")
                    self.signal_name = "parent-exit"
                    self.stop.set()

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class App:
    """Request handling, independent of the HTTP plumbing."""

    def __init__(self, engine: Any, batcher: Any, name: str, args: ServeArgs) -> None:
        self.engine = engine
        self.batcher = batcher
        self.name = name
        self.args = args
        self.created = int(time.time())
        self.stopping = False
        self.requests = 0
        self.failures = 0
        self.in_flight = 0  # POSTs being handled, responses not yet written
        self._lock = threading.Lock()

    def track(self, delta: int) -> None:
        with self._lock:
            self.in_flight += delta

    def drain(self, timeout_s: float) -> None:
        """Wait (briefly) until every handled request has written its response."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)

    def health(self) -> tuple[int, dict[str, Any]]:
        if self.stopping:
            return 503, {"status": "stopping", "model": self.name}
        return 200, {"status": "ok", "model": self.name}

    def models(self) -> dict[str, Any]:
        folder = self.engine.folder
        return {"object": "list", "data": [{
            "id": self.name, "object": "model", "created": self.created, "owned_by": "massgen-rl",
            "root": str(folder.path), "parent": folder.base if folder.adapter else None,
            "max_model_len": self.engine.context_len,
        }]}

    def stats(self) -> dict[str, Any]:
        with self._lock:
            counts = {"requests": self.requests, "failed_requests": self.failures}
        return {**counts, **self.batcher.stats()}

    def chat(self, body: Any) -> tuple[dict[str, Any], dict[str, str]]:
        from .serve_batching import ShuttingDown
        from .serve_engine import Row, sample_seed

        with self._lock:
            self.requests += 1
        try:
            if self.stopping:
                raise ApiError(503, "the server is shutting down")
            req = parse_chat_request(body, self.name)
            prompt_ids = self.engine.prompt_ids(req.messages)
            room = self.engine.context_len - len(prompt_ids)
            if room < 1:
                raise ApiError(400, f"the prompt is {len(prompt_ids)} tokens; the model's context is "
                                    f"{self.engine.context_len} tokens", param="messages",
                               code="context_length_exceeded")
            max_tokens = min(req.max_tokens or self.args.default_max_tokens, room)
            rows = [Row(prompt_ids=prompt_ids, max_tokens=max_tokens, stop=tuple(req.stop),
                        stop_token_ids=frozenset(req.stop_token_ids), seed=sample_seed(req.seed, k),
                        want_logprobs=req.logprobs, top_logprobs=req.top_logprobs, ignore_eos=req.ignore_eos)
                    for k in range(req.n)]
            try:
                completions, info = self.batcher.submit(req.sampling_key, len(rows), rows)
            except ShuttingDown as exc:
                raise ApiError(503, str(exc)) from None
        except Exception:
            with self._lock:
                self.failures += 1
            raise
        headers = {"X-Massgen-Rl-Tools": "ignored"} if req.tools_ignored else {}
        return build_response(req, prompt_ids, completions, debug=info.as_dict()), headers


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "massgen-rl-serve"
    server: "_HttpServer"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # requests are logged by do_POST; health polls would only be noise

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, close: bool = False) -> None:
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _error(self, exc: ApiError, close: bool = False) -> None:
        self._send(exc.status, exc.body(), close=close)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        app = self.server.app
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/health":
            self._send(*app.health())
        elif path == "/v1/models":
            self._send(200, app.models())
        elif path == "/stats":
            self._send(200, app.stats())
        else:
            self._error(ApiError(404, f"no route GET {path or '/'}", code="not_found"))

    def do_POST(self) -> None:  # noqa: N802
        started = time.monotonic()
        app = self.server.app
        path = urlsplit(self.path).path.rstrip("/")
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._error(ApiError(411, "a Content-Length header is required"), close=True)
            return
        if int(length) > MAX_BODY_BYTES:
            self._error(ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes"), close=True)
            return
        raw = self.rfile.read(int(length))
        if path != "/v1/chat/completions":
            self._error(ApiError(404, f"no route POST {path or '/'}", code="not_found"))
            return
        status = 200
        app.track(+1)
        try:
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
            response, headers = app.chat(body)
            self._send(200, response, headers)
        except ApiError as exc:
            status = exc.status
            self._error(exc)
        except Exception as exc:  # a bug or a generation failure: 500, traceback on stderr
            status = 500
            traceback.print_exc()
            self._send(500, error_body(f"generation failed: {type(exc).__name__}: {exc}", "server_error"))
        finally:
            app.track(-1)
        if app.args.log_requests:
            log(f"POST {path} {status} {time.monotonic() - started:.2f}s")


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    app: App


class _HttpServer6(_HttpServer):
    address_family = socket.AF_INET6


def make_http_server(host: str, port: int, app: App) -> _HttpServer:
    cls = _HttpServer6 if ":" in host else _HttpServer
    try:
        server = cls((host, port), _Handler)
    except OSError as exc:
        raise ScriptError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server.app = app
    return server


def _check(args: ServeArgs) -> None:
    if args.device not in DEVICES:
        raise ScriptError(f"--device must be one of {', '.join(DEVICES)}, got {args.device!r}", kind="usage")
    if args.backend not in BACKENDS:
        raise ScriptError(f"--backend must be one of {', '.join(BACKENDS)}, got {args.backend!r}", kind="usage")
    if not 0 <= args.port <= 65535:
        raise ScriptError(f"--port must be between 0 and 65535, got {args.port}", kind="usage")
    if args.max_batch_size < 1 or args.default_max_tokens < 1:
        raise ScriptError("--max-batch-size and --default-max-tokens must be at least 1", kind="usage")
    if args.batch_window_ms < 0:
        raise ScriptError("--batch-window-ms must not be negative", kind="usage")
    if args.served_name is not None and not args.served_name.strip():
        raise ScriptError("--served-name must not be empty", kind="usage")


def main(args: ServeArgs) -> dict[str, Any]:
    _check(args)
    life = _Lifecycle()
    life.install()
    life.watch_parent()
    folder = inspect_model_folder(args.model, args.base)
    name = args.served_name or folder.path.name
    version = vllm_version()
    # CUDA is only probed (importing torch) when vLLM could use it
    backend = choose_backend(args.backend, args.device, version,
                             cuda_device_count() if version is not None and args.device != "cpu" else 0)
    try:
        if backend == "vllm":
            return _serve_vllm(args, folder, name, version or "0", life)
        return _serve_transformers(args, folder, name, life)
    except _StopRequested:
        log(f"serve: {life.signal_name} before the server was ready; stopped")
        return {"model": name, "stopped_before_ready": True}


def _serve_vllm(args: ServeArgs, folder: Any, name: str, version: str, life: _Lifecycle) -> dict[str, Any]:
    port = args.port or free_port(args.host)
    cmd = build_vllm_command(python=sys.executable, folder=folder, served_name=name, host=args.host, port=port,
                             max_batch_size=args.max_batch_size, version=version, extra_args=args.vllm_args)
    progress("vllm", f"starting vLLM {version} for {folder.path} on port {port}")

    def ready() -> None:
        life.serving = True
        emit("ready", host=args.host, port=port, base_url=f"http://{url_host(args.host)}:{port}/v1", model=name,
             backend="vllm", device="cuda", pid=os.getpid(), adapter=folder.adapter, max_batch_size=args.max_batch_size)

    life.serving = True  # from here on signals only set the stop event; run_server_process polls it
    return {"model": name, **run_server_process(cmd, host=args.host, port=port, stop=life.stop,
                                                startup_timeout_s=args.startup_timeout_s, on_ready=ready)}


def _serve_transformers(args: ServeArgs, folder: Any, name: str, life: _Lifecycle) -> dict[str, Any]:
    from .serve_batching import Batcher
    from .serve_engine import load_engine

    started = time.monotonic()
    engine = load_engine(folder, args.device, progress)
    progress("warmup", "one short generation")
    engine.warmup()
    batcher = Batcher(engine.run_batch, args.max_batch_size, args.batch_window_ms / 1000)
    app = App(engine, batcher, name, args)
    server = make_http_server(args.host, args.port, app)
    batcher.start()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="http", daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    life.serving = True
    if life.stop.is_set():  # a signal arrived between loading and now
        raise _StopRequested()
    emit("ready", host=host, port=port, base_url=f"http://{url_host(host)}:{port}/v1", model=name,
         backend="transformers", device=engine.device, pid=os.getpid(), adapter=folder.adapter,
         max_batch_size=args.max_batch_size, load_seconds=round(time.monotonic() - started, 2))
    log(f"serve: {name} on http://{url_host(host)}:{port}/v1 ({engine.device}, batches of up to {args.max_batch_size})")
    while not life.stop.wait(3600):
        pass
    log(f"serve: {life.signal_name}; shutting down")
    app.stopping = True
    engine.cancel.set()
    server.shutdown()
    server.server_close()
    batcher.stop()
    app.drain(2.0)  # the requests cut short get their 503 before we exit
    stats = app.stats()
    return {"model": name, "requests": stats["requests"], "batches": stats["batches"],
            "batch_sizes": stats["batch_sizes"], "signal": life.signal_name}


if __name__ == "__main__":
    code = run_script(main, ServeArgs, prog="massgen_rl_trainers.serve")
    sys.stdout.flush()
    sys.stderr.flush()
    # The done event is out and every thread has stopped: skip the interpreter's teardown of torch and
    # transformers, which takes seconds on CPU and would only delay whoever waits for us to exit.
    os._exit(code)
