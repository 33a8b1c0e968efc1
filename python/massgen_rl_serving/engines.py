"""Which engine serves: vLLM on a CUDA GPU, llama.cpp on CPU when installed, transformers otherwise; and
opening one of the two in-process engines with its batcher (serve, doctor's probe, the agreement check)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from massgen_rl_common.protocol import ScriptError

from .gguf_files import converters_dir

ENGINES = ("auto", "llama.cpp", "transformers", "vllm")


def llama_cpp_available() -> bool:
    """llama-cpp-python importable and llama.cpp's converters installed beside it (llama_setup.py)."""
    return importlib.util.find_spec("llama_cpp") is not None and (converters_dir() / "convert_hf_to_gguf.py").is_file()


def choose_engine(engine: str, device: str, vllm: str | None, cuda_devices: int, llama_cpp: bool) -> str:
    """auto: vLLM when it is installed AND a CUDA GPU is present; else llama.cpp unless --device cuda; else
    transformers."""
    if engine == "vllm":
        if vllm is None:
            raise ScriptError("--engine vllm: vLLM is not installed in this environment")
        if device == "cpu" or cuda_devices == 0:
            raise ScriptError("--engine vllm needs a CUDA GPU (and --device auto or cuda)")
        return "vllm"
    if engine == "llama.cpp":
        if not llama_cpp:
            raise ScriptError(
                "--engine llama.cpp: llama-cpp-python (with llama.cpp's converters) is not installed in "
                "this environment; run `massgen-rl doctor --fix`, or use --engine transformers"
            )
        if device == "cuda":
            raise ScriptError("--engine llama.cpp runs on the CPU; use --device cpu or auto")
        return "llama.cpp"
    if engine == "transformers":
        return "transformers"
    if device != "cpu" and vllm is not None and cuda_devices > 0:
        return "vllm"
    if device != "cuda" and llama_cpp:
        return "llama.cpp"
    return "transformers"


def open_local_engine(
    kind: str,
    folder: Any,
    *,
    max_seqs: int,
    on_progress: Callable[[str, str], None],
    device: str = "cpu",
    weights_type: str = "bf16",
    kv_tokens: int = 0,
    threads: int = 0,
    window_s: float = 0.0,
    shared_kv: bool = False,
    prefix_cache: bool = True,
    max_lanes: int = 4,
    merge_adapter: bool = False,
) -> tuple[Any, Any]:
    """(engine, batcher, not started) for kind llama.cpp (continuous batching of up to max_seqs sequences; an adapter
    folder merged into its base with merge_adapter) or transformers (micro-batches of up to max_seqs rows gathered
    for window_s; merge_adapter is llama.cpp's alone)."""
    if kind == "llama.cpp":
        from .lanes import Lanes
        from .llama_engine import default_threads, load_llama_engine

        engine: Any = load_llama_engine(
            folder,
            weight_type=weights_type,
            kv_tokens=kv_tokens,
            max_seqs=max_seqs,
            threads=threads or default_threads(),
            on_progress=on_progress,
            shared_kv=shared_kv,
            merge_adapter=merge_adapter,
        )
        return engine, Lanes(engine, max_seqs, prefix_cache, max_lanes)
    from .batching import Batcher
    from .engine import load_engine  # torch

    engine = load_engine(folder, device, on_progress)
    return engine, Batcher(engine.run_batch, max_seqs, window_s)
