"""`serve`: its flags, the backend choice, and the lifecycle of each backend from loading to the `done` event."""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.model_folder import inspect_model_folder
from massgen_rl_common.protocol import ScriptError, emit, log, progress

from .app import App
from .engines import ENGINES, choose_engine, llama_cpp_available, open_local_engine
from .errors import ApiError
from .gguf_files import WEIGHT_TYPES
from .http_server import make_http_server
from .lifecycle import Lifecycle, StopRequested
from .limits import Limits
from .vllm_backend import (
    build_vllm_command,
    cuda_device_count,
    free_port,
    run_server_process,
    url_host,
    vllm_env,
    vllm_version,
)

DEVICES = ("auto", "cpu", "cuda")
KV_LAYOUTS = ("per-sequence", "shared")


@dataclass
class ServeArgs:
    """Serve a model folder or LoRA adapter over an OpenAI-compatible API until SIGTERM/SIGINT."""

    model: str = field(metadata={"help": "An HF model folder, or a LoRA adapter folder (adapter_config.json)."})
    served_name: str | None = field(
        default=None, metadata={"help": "The model name clients send (default: the folder name)."}
    )
    base: str | None = field(
        default=None, metadata={"help": "Base model folder of an adapter (default: its base_model_name_or_path)."}
    )
    adapter_name: str | None = field(
        default=None,
        metadata={"help": "The lora_name of --model's adapter, beside the served name (default: its folder name)."},
    )
    host: str = field(default="127.0.0.1", metadata={"help": "Address to listen on."})
    port: int = field(
        default=0, metadata={"help": "Port to listen on; 0 picks a free one (reported in the ready event)."}
    )
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda."})
    max_batch_size: int = field(
        default=8, metadata={"help": "Most sequences generated together (a request with n=k counts k)."}
    )
    batch_window_ms: float = field(
        default=25.0, metadata={"help": "How long the first queued request waits for others to batch with."}
    )
    default_max_tokens: int = field(
        default=1024, metadata={"help": "max_tokens when a request sets none (capped by the context)."}
    )
    engine: str = field(
        default="auto",
        metadata={
            "help": "auto (vLLM when installed and a GPU is present, else llama.cpp when installed, else transformers), llama.cpp, transformers or vllm."
        },
    )
    weights_type: str = field(
        default="bf16", metadata={"help": "llama.cpp only: the GGUF weight type, bf16, f16, f32 or q8_0."}
    )
    threads: int = field(
        default=0, metadata={"help": "llama.cpp only: CPU threads (0: every core this process may use)."}
    )
    kv_cache_tokens: int = field(
        default=0,
        metadata={
            "help": "llama.cpp only: KV cache cells in all (0: 32768, or per sequence 4096 cells each up to 16 sequences and 2048 each above, when the layout is per-sequence)."
        },
    )
    kv_cache_layout: str = field(
        default="per-sequence",
        metadata={
            "help": "llama.cpp only: per-sequence (each of the --max-batch-size sequences has --kv-cache-tokens / --max-batch-size cells, the most its prompt and completion may take; faster) or shared (one pool: a single request may use every cell, n samples store their prompt once, but each token attends over the whole pool's used range)."
        },
    )
    prefix_cache: bool = field(
        default=True,
        metadata={
            "help": "llama.cpp only, per-sequence layout: a finished request's KV cache stays, and a later prompt starting with the same tokens feeds only the rest (usage.prompt_tokens_details.cached_tokens)."
        },
    )
    max_lanes: int = field(
        default=4,
        metadata={
            "help": "llama.cpp only: batchers on their own contexts, one per adapter running at once, decoding side by side (each holds a KV cache of --kv-cache-tokens; 1: every adapter alternates steps on one context)."
        },
    )
    merge_adapter: bool = field(
        default=False,
        metadata={
            "help": "llama.cpp only, --model an adapter folder: serve it merged into the base's weights (the base's decode speed; converted once per adapter and cached), loading no other adapter beside it."
        },
    )
    vllm_args: str | None = field(
        default=None, metadata={"help": "Extra arguments for vLLM's server (one shell-quoted string)."}
    )
    startup_timeout_s: float = field(default=900.0, metadata={"help": "vLLM only: how long to wait for its /health."})
    log_requests: bool = field(default=True, metadata={"help": "Log one line per chat request on stderr."})
    max_body_bytes: int = field(
        default=Limits.max_body_bytes, metadata={"help": "Largest request body; a larger one is refused with 413."}
    )
    max_header_bytes: int = field(
        default=Limits.max_header_bytes,
        metadata={"help": "Largest request line and headers together; beyond, 431 and the connection closed."},
    )
    max_headers: int = field(
        default=Limits.max_headers,
        metadata={"help": "Most header lines in a request (at most 100); beyond, 431 and the connection closed."},
    )
    max_connections: int = field(
        default=Limits.max_connections,
        metadata={"help": "Most connections open at once; beyond, 503 with Retry-After and the connection closed."},
    )
    max_connections_per_client: int = field(
        default=Limits.max_connections_per_client,
        metadata={"help": "Most connections open at once from one client address; beyond, 503 with Retry-After."},
    )
    request_timeout_s: float = field(
        default=Limits.request_timeout_s,
        metadata={
            "help": "Seconds a client has to send a request (its line, headers and body), and the longest a kept-alive "
            "connection waits for the next one; then 408 or a close."
        },
    )
    write_timeout_s: float = field(
        default=Limits.write_timeout_s,
        metadata={
            "help": "Seconds a response may wait for its client to read (a stream too); then the connection is closed "
            "and its generation stopped."
        },
    )


def _check(args: ServeArgs) -> None:
    if args.device not in DEVICES:
        raise ScriptError(f"--device must be one of {', '.join(DEVICES)}, got {args.device!r}", kind="usage")
    if args.engine not in ENGINES:
        raise ScriptError(f"--engine must be one of {', '.join(ENGINES)}, got {args.engine!r}", kind="usage")
    if args.weights_type not in WEIGHT_TYPES:
        raise ScriptError(
            f"--weights-type must be one of {', '.join(WEIGHT_TYPES)}, got {args.weights_type!r}", kind="usage"
        )
    if args.max_lanes < 1:
        raise ScriptError("--max-lanes must be at least 1", kind="usage")
    if args.threads < 0 or (args.kv_cache_tokens != 0 and args.kv_cache_tokens < 256):
        raise ScriptError(
            "--threads must not be negative and --kv-cache-tokens must be 0 (automatic) or at least 256", kind="usage"
        )
    if args.kv_cache_layout not in KV_LAYOUTS:
        raise ScriptError(
            f"--kv-cache-layout must be one of {', '.join(KV_LAYOUTS)}, got {args.kv_cache_layout!r}", kind="usage"
        )
    if not 0 <= args.port <= 65535:
        raise ScriptError(f"--port must be between 0 and 65535, got {args.port}", kind="usage")
    if args.max_batch_size < 1 or args.default_max_tokens < 1:
        raise ScriptError("--max-batch-size and --default-max-tokens must be at least 1", kind="usage")
    if args.batch_window_ms < 0:
        raise ScriptError("--batch-window-ms must not be negative", kind="usage")
    if args.served_name is not None and not args.served_name.strip():
        raise ScriptError("--served-name must not be empty", kind="usage")
    if args.adapter_name is not None and (not args.adapter_name.strip() or args.adapter_name == args.served_name):
        raise ScriptError("--adapter-name must not be empty, nor the served name", kind="usage")
    _check_limits(args)


def _check_limits(args: ServeArgs) -> None:
    if min(args.max_body_bytes, args.max_header_bytes, args.max_connections, args.max_connections_per_client) < 1:
        raise ScriptError(
            "--max-body-bytes, --max-header-bytes, --max-connections and --max-connections-per-client "
            "must be at least 1",
            kind="usage",
        )
    if not 1 <= args.max_headers <= 100:
        raise ScriptError(f"--max-headers must be between 1 and 100, got {args.max_headers}", kind="usage")
    for flag, value in (("--request-timeout-s", args.request_timeout_s), ("--write-timeout-s", args.write_timeout_s)):
        if not 0 < value < 1e6:  # also refuses nan
            raise ScriptError(f"{flag} must be a positive number of seconds, got {value}", kind="usage")


def limits_of(args: ServeArgs) -> Limits:
    return Limits(
        args.max_body_bytes,
        args.max_header_bytes,
        args.max_headers,
        args.max_connections,
        args.max_connections_per_client,
        args.request_timeout_s,
        args.write_timeout_s,
    )


def main(args: ServeArgs) -> dict[str, Any]:
    _check(args)
    life = Lifecycle()
    life.install()
    life.watch_parent()
    folder = inspect_model_folder(args.model, args.base)
    name = args.served_name or folder.path.name
    version = vllm_version()
    # CUDA is only probed (importing torch) when vLLM could use it
    engine = choose_engine(
        args.engine,
        args.device,
        version,
        cuda_device_count() if version is not None and args.device != "cpu" else 0,
        llama_cpp_available(),
    )
    try:
        if engine == "vllm":
            return _serve_vllm(args, folder, name, version or "0", life)
        return _serve_local(args, folder, name, life, engine)
    except StopRequested:
        log(f"serve: {life.signal_name} before the server was ready; stopped")
        return {"model": name, "stopped_before_ready": True}


def _serve_vllm(args: ServeArgs, folder: Any, name: str, version: str, life: Lifecycle) -> dict[str, Any]:
    port = args.port or free_port(args.host)
    cmd = build_vllm_command(
        python=sys.executable,
        folder=folder,
        served_name=name,
        host=args.host,
        port=port,
        max_batch_size=args.max_batch_size,
        version=version,
        extra_args=args.vllm_args,
    )
    progress("vllm", f"starting vLLM {version} for {folder.path} on port {port}")

    def ready() -> None:
        life.serving = True
        emit(
            "ready",
            host=args.host,
            port=port,
            base_url=f"http://{url_host(args.host)}:{port}/v1",
            model=name,
            backend="vllm",
            device="cuda",
            pid=os.getpid(),
            adapter=folder.adapter,
            adapter_name=None,
            base=folder.base if folder.adapter else str(folder.path),
            max_batch_size=args.max_batch_size,
        )

    life.serving = True  # from here on signals only set the stop event; run_server_process polls it
    return {
        "model": name,
        **run_server_process(
            cmd,
            host=args.host,
            port=port,
            stop=life.stop,
            startup_timeout_s=args.startup_timeout_s,
            on_ready=ready,
            env=vllm_env(folder),
        ),
    }


def _serve_local(args: ServeArgs, folder: Any, name: str, life: Lifecycle, kind: str) -> dict[str, Any]:
    started = time.monotonic()
    engine, batcher = open_local_engine(
        kind,
        folder,
        max_seqs=args.max_batch_size,
        on_progress=progress,
        device=args.device,
        weights_type=args.weights_type,
        kv_tokens=args.kv_cache_tokens,
        threads=args.threads,
        shared_kv=args.kv_cache_layout == "shared",
        prefix_cache=args.prefix_cache,
        max_lanes=args.max_lanes,
        window_s=args.batch_window_ms / 1000,
        merge_adapter=args.merge_adapter,
    )
    app = App(engine, batcher, name, args.default_max_tokens, args.log_requests)
    adapter_name = None
    merged = bool(getattr(engine, "merged", None))  # llama.cpp's alone
    if folder.adapter and merged:
        progress("adapter", f"serving the LoRA adapter {folder.path} merged into the base's weights")
    elif folder.adapter:  # loaded like any runtime adapter, and what the served name routes to
        adapter_name = args.adapter_name or (folder.path.name if folder.path.name != name else f"{name}-adapter")
        progress("adapter", f"loading the LoRA adapter {folder.path} as '{adapter_name}'")
        try:
            app.lora.add(adapter_name, str(folder.path), check_base=False)  # its base is the one just loaded
        except ApiError as exc:
            raise ScriptError(str(exc)) from None
        app.adapters.set_default(adapter_name)
    batcher.start()
    progress("warmup", "one short generation")
    app.warmup()
    server = make_http_server(args.host, args.port, app, limits_of(args))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="http", daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    life.serving = True
    if life.stop.is_set():  # a signal arrived between loading and now
        raise StopRequested()
    emit(
        "ready",
        host=host,
        port=port,
        base_url=f"http://{url_host(host)}:{port}/v1",
        model=name,
        backend=kind,
        device=engine.device,
        **engine.describe(),
        pid=os.getpid(),
        adapter=folder.adapter,
        adapter_name=adapter_name,
        merged=merged,
        base=engine.base_path,
        max_batch_size=args.max_batch_size,
        load_seconds=round(time.monotonic() - started, 2),
    )
    log(
        f"serve: {name} on http://{url_host(host)}:{port}/v1 ({kind} on {engine.device}, up to {args.max_batch_size} sequences at once)"
    )
    # a short wait: a signal another thread took runs its Python handler only when this thread runs again
    while not life.stop.wait(0.5):
        pass
    log(f"serve: {life.signal_name}; shutting down")
    app.stopping = True
    engine.cancel.set()
    server.shutdown()
    server.server_close()
    batcher.stop()
    app.drain(2.0)  # the requests cut short get their 503 before we exit
    stats = app.stats()
    return {
        "model": name,
        "requests": stats["requests"],
        "batches": stats["batches"],
        "batch_sizes": stats["batch_sizes"],
        "signal": life.signal_name,
    }
