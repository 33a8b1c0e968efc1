"""How fast this machine generates with the engine `serve` would pick: load it in-process and generate greedy
32-token completions of one stream for about --seconds (doctor's probe).

    python -m massgen_rl_serving.probe --model DIR [--engine auto] [--seconds 3]

Ends with `done {engine, device, threads, weights, tokens, seconds, tokens_per_s, load_s}`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.model_folder import inspect_model_folder
from massgen_rl_common.protocol import progress, run_script

from .adapters import BatchKey
from .engines import ENGINES, choose_engine, llama_cpp_available, open_local_engine
from .openai_api import SamplingKey
from .vllm_backend import vllm_version


@dataclass
class ProbeArgs:
    """Measure single-stream greedy generation speed of the serving engine."""

    model: str = field(metadata={"help": "An HF model folder."})
    engine: str = field(
        default="auto", metadata={"help": f"One of {', '.join(ENGINES)}; vllm is reported, not probed."}
    )
    seconds: float = field(default=3.0, metadata={"help": "How long to generate."})


def main(args: ProbeArgs) -> dict[str, Any]:
    folder = inspect_model_folder(args.model, None)
    vllm = vllm_version()
    kind = choose_engine(args.engine, "cpu" if vllm is None else "auto", vllm, 0, llama_cpp_available())
    started = time.monotonic()
    progress("load", f"loading {folder.path} with {kind}")
    engine, batcher = open_local_engine(kind, folder, max_seqs=1, kv_tokens=4096, on_progress=progress)
    batcher.start()
    load_s = time.monotonic() - started
    from .sampling import Row

    prompt = engine.prompt_ids([{"role": "user", "content": "Tell me about the sea."}])
    key = BatchKey(SamplingKey(True, 0.0, 1.0), None)
    batcher.submit(key, 1, [Row(prompt, 4, ignore_eos=True)])  # warm up
    tokens, begun = 0, time.monotonic()
    while time.monotonic() - begun < args.seconds:
        result, _ = batcher.submit(key, 1, [Row(prompt, 32, ignore_eos=True)])
        tokens += len(result[0].token_ids)
    seconds = time.monotonic() - begun
    batcher.stop()
    described = engine.describe()
    return {
        "engine": kind,
        "device": "cpu",
        "threads": described["threads"],
        "weights": described["weights"],
        "tokens": tokens,
        "seconds": round(seconds, 2),
        "tokens_per_s": round(tokens / seconds, 1),
        "load_s": round(load_s, 1),
    }


if __name__ == "__main__":
    sys.exit(run_script(main, ProbeArgs))
