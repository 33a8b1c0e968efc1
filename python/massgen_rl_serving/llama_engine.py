"""The llama.cpp engine of `serve` (CPU): the model in GGUF, continuous batching (continuous.py), and the
same tokenizer, chat template, sampling and LoRA endpoints as the transformers engine.

Tokenization stays with the transformers tokenizer of the model folder, so prompt token ids, the chat
template and the text of each token are exactly the transformers engine's; llama.cpp only computes
logits. Sampling is ours too (sampling.py): the logprob reported for a token is the one of the
distribution it was drawn from, and a seeded request draws the same tokens whatever runs beside it.

LoRA adapters (PEFT folders) are converted to GGUF LoRA on load and applied unmerged on the shared base,
per decode: rows on different adapters decode on their own lanes (lanes.py), contexts beside `llama`. A server of
one adapter alone may serve it merged into the base's weights instead (merge_adapter): the base's decode speed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from massgen_rl_common.model_folder import ModelFolder
from massgen_rl_common.protocol import ScriptError

from .gguf_files import adapter_gguf, merged_gguf, model_gguf
from .lora import ModelGuard
from .tokens import ChatTokens


class LlamaLora:
    """The GGUF adapters loaded beside the base; `guard` keeps loads and drops between decode steps."""

    def __init__(self, engine: LlamaEngine) -> None:
        self.engine = engine
        self.guard = ModelGuard()
        self.slots: dict[str, Any] = {}
        self.files: dict[str, tuple[Path, Path]] = {}  # slot -> (its adapter folder, the cached GGUF copy)

    def load(self, slot: str, path: str) -> None:
        gguf = adapter_gguf(Path(path), Path(self.engine.base_path))  # converted before the model is touched
        with self.guard.change():
            self.slots[slot] = self.engine.llama.load_adapter(str(gguf))
            self.files[slot] = (Path(path), gguf)

    def drop(self, slot: str) -> None:
        with self.guard.change():
            adapter = self.slots.pop(slot, None)
            if adapter is not None:
                self.engine.llama.free_adapter(adapter, self.engine.lanes)
            folder, gguf = self.files.pop(slot, (None, None))
        # A folder removed since its load (online GRPO's synced copies, one per sync) is never asked for again:
        # its GGUF copy would only fill the cache.
        if folder is not None and gguf is not None and not folder.exists():
            gguf.unlink(missing_ok=True)

    def activate(self, slot: str | None) -> None:
        """Call inside guard.step(): the weights of the next decode."""
        self.engine.llama.use_adapter(None if slot is None else self.slots[slot])


class LlamaEngine(ChatTokens):
    device = "cpu"
    name = "llama.cpp"

    def __init__(
        self,
        llama: Any,
        tokenizer: Any,
        folder: ModelFolder,
        base_path: str,
        gguf: Path,
        weight_type: str,
        threads: int,
        merged: str | None = None,
    ) -> None:
        self.llama = llama
        self.tokenizer = tokenizer
        self.folder = folder
        self.base_path = base_path
        self.gguf = gguf
        self.weight_type = weight_type
        self.threads = threads
        # the adapter folder merged into the weights (--merge-adapter): the served name's weights; no others load
        self.merged = merged
        self.lora = LlamaLora(self)
        self.lanes: list[Any] = []  # contexts beside `llama` on the same model, one per extra lane (lanes.py)
        self._embedder: Any = None
        self.tok_lock = threading.Lock()
        self.cancel = threading.Event()
        eos = {tokenizer.eos_token_id}
        generation = Path(base_path) / "generation_config.json"
        if generation.is_file():
            import json

            value = json.loads(generation.read_text(encoding="utf-8")).get("eos_token_id")
            eos.update(value if isinstance(value, list) else [value])
        self.eos_ids = frozenset(i for i in eos if isinstance(i, int))
        if not self.eos_ids:
            raise ScriptError("the model defines no end-of-sequence token (eos_token_id)")
        # a request's prompt and completion must fit the cells of one sequence
        self.context_len = min(llama.n_ctx_train, llama.seq_cells)

    # -- embeddings: a second context on the same model, made on the first request -------------------

    @property
    def embedding_size(self) -> int:
        return int(self.llama.lib.llama_model_n_embd(self.llama.model))

    @property
    def embed_max_tokens(self) -> int:
        return min(self.context_len, EMBED_CONTEXT)

    def embed(self, inputs: list[list[int]], adapter: str | None = None) -> Any:
        """Mean-pooled last hidden states (numpy, float32, not normalized), one llama.cpp decode per input.
        Runs as a change of the model: no decode step, adapter load or drop runs meanwhile."""
        import numpy as np

        from .llama_embed import LlamaEmbedder

        with self.lora.guard.change():
            if self._embedder is None:
                self._embedder = LlamaEmbedder(
                    self.llama, self.embed_max_tokens, self.threads, kv_f32=self.weight_type == "f32"
                )
            self._embedder.use_adapter(None if adapter is None else self.lora.slots[adapter])
            return np.stack([self._embedder.embed(ids) for ids in inputs])

    def set_threads(self, threads: int) -> None:
        """Changes the decode threads between two steps: servers that share a machine divide its cores among them."""
        with self.lora.guard.change():
            self.llama.set_threads(threads)
            self.threads = threads

    def describe(self) -> dict[str, Any]:
        return {
            "engine": self.name,
            "weights": self.weight_type,
            "threads": self.threads,
            "gguf": str(self.gguf),
            "kv_cache_tokens": self.llama.n_ctx,
            "kv_cache_layout": self.llama.kv_layout,
            "context_tokens": self.context_len,
        }


DEFAULT_KV_TOKENS = 32768
EMBED_CONTEXT = 4096  # the longest input /v1/embeddings takes (one decode: its compute buffer grows with this)


def default_threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def load_llama_engine(
    folder: ModelFolder,
    *,
    weight_type: str,
    kv_tokens: int,
    max_seqs: int,
    threads: int,
    on_progress: Callable[[str, str], None],
    shared_kv: bool = False,
    merge_adapter: bool = False,
) -> LlamaEngine:
    import torch
    from transformers import AutoTokenizer

    from .llama_context import LlamaContext

    if not kv_tokens:  # automatic, per sequence: 4096 cells each up to 16 (a MassGen prompt is ~3,400), 2048 above
        kv_tokens = (
            DEFAULT_KV_TOKENS if shared_kv else max(DEFAULT_KV_TOKENS, 4096 * min(max_seqs, 16), 2048 * max_seqs)
        )
    if not shared_kv and kv_tokens // max_seqs < 256:
        raise ScriptError(
            f"--kv-cache-tokens {kv_tokens} leaves each of the {max_seqs} sequences {kv_tokens // max_seqs} "
            "cells, fewer than 256; raise it, lower --max-batch-size or use --kv-cache-layout shared",
            kind="usage",
        )
    # torch only samples here; its spinning worker threads would take the cores from llama.cpp's decode
    torch.set_num_threads(1)

    source = folder.base if folder.adapter else str(folder.path)
    assert source is not None
    base = Path(source)
    if not (base / "config.json").is_file():
        raise ScriptError(f"the llama.cpp engine serves local model folders; {source} is not one")
    merged = folder.adapter and merge_adapter
    what = f"{source} with {folder.path} merged" if merged else f"{'base model ' if folder.adapter else ''}{source}"
    on_progress("load", f"loading {what} (llama.cpp, {weight_type}, {threads} threads)")
    gguf = (
        merged_gguf(folder.path.resolve(), base.resolve(), weight_type)
        if merged
        else model_gguf(base.resolve(), weight_type)
    )
    tokenizer_source = str(folder.path) if (folder.path / "tokenizer_config.json").is_file() else source
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    if not tokenizer.chat_template:
        raise ScriptError(f"the tokenizer in {tokenizer_source} has no chat template")
    llama = LlamaContext(
        str(gguf),
        n_ctx=kv_tokens,
        n_seq=max_seqs,
        n_batch=512,
        threads=threads,
        kv_f32=weight_type == "f32",
        shared_kv=shared_kv,
    )
    if len(tokenizer) > llama.n_vocab:
        raise ScriptError(f"the tokenizer has {len(tokenizer)} tokens but the GGUF model {llama.n_vocab}")
    return LlamaEngine(
        llama, tokenizer, folder, source, gguf, weight_type, threads, str(folder.path) if merged else None
    )
