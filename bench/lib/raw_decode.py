"""Raw llama.cpp batched decode of a model folder, without the server: S sequences each fed a short prompt,
then N steps that decode one token for every sequence (greedy), timed. The ceiling the served generation of the
cycle benchmark (bench/cycle.mjs) is compared with. Prints one JSON object.

Usage: python raw_decode.py MODEL_DIR [--seqs 16] [--steps 64] [--prompt 32] [--weights-type bf16] [--threads 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from massgen_rl_serving.gguf_files import model_gguf
from massgen_rl_serving.llama_context import Entry, LlamaContext
from massgen_rl_serving.llama_engine import default_threads


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--seqs", type=int, default=16)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--prompt", type=int, default=32)
    p.add_argument("--weights-type", default="bf16")  # the server's default
    p.add_argument("--threads", type=int, default=0)  # 0: every core, as the server
    a = p.parse_args()
    threads = a.threads or default_threads()
    gguf = model_gguf(Path(a.model).resolve(), a.weights_type)
    per_seq = a.prompt + a.steps + 8
    llama = LlamaContext(str(gguf), n_ctx=per_seq * a.seqs, n_seq=a.seqs, n_batch=512, threads=threads)
    try:
        # prompts: the same arbitrary token ids for every sequence (their content does not change the cost)
        prompt = [(7 * i + 11) % llama.n_vocab for i in range(a.prompt)]
        entries = [Entry(t, pos, s, pos == a.prompt - 1) for s in range(a.seqs) for pos, t in enumerate(prompt)]
        started = time.perf_counter()
        logits = llama.decode(entries)
        prefill_s = time.perf_counter() - started
        tokens = logits.argmax(axis=1).tolist()
        started = time.perf_counter()
        for step in range(a.steps):
            logits = llama.decode([Entry(tokens[s], a.prompt + step, s, True) for s in range(a.seqs)])
            tokens = logits.argmax(axis=1).tolist()
        decode_s = time.perf_counter() - started
    finally:
        llama.close()
    print(
        json.dumps(
            {
                "seqs": a.seqs,
                "steps": a.steps,
                "prompt_tokens": a.prompt,
                "weights_type": a.weights_type,
                "threads": threads,
                "prefill_tokens_per_s": round(a.seqs * a.prompt / prefill_s, 1),
                "decode_s": round(decode_s, 3),
                "tokens_per_s": round(a.seqs * a.steps / decode_s, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
