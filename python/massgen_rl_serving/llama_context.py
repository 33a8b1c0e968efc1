"""One llama.cpp model and context through llama-cpp-python's low-level bindings: a batch of tokens from
many sequences in, the logits of the positions asked for out; sequences dropped from or copied within
the KV cache; LoRA adapters (GGUF) set per decode.

The KV cache is laid out per sequence (the default) or shared. Per sequence, each of the `n_seq` sequences
has its own `n_ctx / n_seq` cells and attends over those only; shared (llama.cpp's unified cache), every
sequence draws from one pool of `n_ctx` cells and a prompt copied to sibling sequences (n > 1) is stored
once, but every decoded token attends over the whole used range of the pool, masked, so a step's attention
grows with the tokens of all running sequences: at 16 sequences of 120-token prompts on 2 cores, 292
tokens/s shared against 394 per sequence (bf16).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from massgen_rl_common.protocol import ScriptError


class KvFull(Exception):
    """llama_decode found no room in the KV cache for the batch."""


@dataclass(frozen=True)
class Entry:
    token: int
    pos: int
    seq: int
    logits: bool


def _lib() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ScriptError(
            "the llama.cpp engine needs llama-cpp-python in the trainer virtualenv "
            f"({exc}); run `massgen-rl doctor --fix`, or serve with --engine transformers"
        ) from None
    return llama_cpp


_QUIET = None


def _silence(lib: Any) -> None:
    """llama.cpp logs every load to stderr; keep warnings and errors only."""
    global _QUIET

    shown = [False]

    @lib.llama_log_callback
    def quiet(level: int, text: bytes, _data: Any) -> None:
        if level != 5:  # GGML_LOG_LEVEL_CONT goes on the previous message
            shown[0] = level in (3, 4)  # _WARN, _ERROR
        if shown[0]:
            import sys

            sys.stderr.write(text.decode("utf-8", "replace"))

    _QUIET = quiet  # keep the callback alive as long as the library may call it
    lib.llama_log_set(quiet, ctypes.c_void_p())


class LlamaContext:
    def __init__(
        self,
        gguf: str,
        *,
        n_ctx: int,
        n_seq: int,
        n_batch: int,
        threads: int,
        kv_f32: bool = False,
        shared_kv: bool = False,
    ) -> None:
        lib = self.lib = _lib()
        _silence(lib)
        lib.llama_backend_init()
        mparams = lib.llama_model_default_params()
        mparams.n_gpu_layers = 0
        self.model = lib.llama_model_load_from_file(gguf.encode(), mparams)
        if not self.model:
            raise ScriptError(f"llama.cpp could not load {gguf}")
        self.n_ctx_train = int(lib.llama_model_n_ctx_train(self.model))
        self.n_vocab = int(lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(self.model)))
        self._params = (n_ctx, n_seq, n_batch, threads, kv_f32, shared_kv)
        self.owns_model = True
        self._open()

    def sibling(self) -> LlamaContext:
        """Another context on the same model (its weights and LoRA adapters shared, its KV cache its own), for
        decodes run beside this one's on another thread."""
        other = object.__new__(LlamaContext)
        other.lib, other.model, other.n_ctx_train, other.n_vocab = self.lib, self.model, self.n_ctx_train, self.n_vocab
        other._params, other.owns_model = self._params, False
        other._open()
        return other

    def _open(self) -> None:
        lib = self.lib
        n_ctx, n_seq, n_batch, threads, kv_f32, shared_kv = self._params
        cparams = lib.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_batch
        cparams.n_seq_max = n_seq
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.kv_unified = shared_kv
        if kv_f32:  # exact f32 weights: an f32 KV cache and no flash attention (its CPU kernel rounds Q to f16)
            cparams.type_k = cparams.type_v = 0  # GGML_TYPE_F32
            cparams.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cparams.no_perf = True
        self.ctx = lib.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            if self.owns_model:
                lib.llama_model_free(self.model)
            raise ScriptError(f"llama.cpp could not create a context of {n_ctx} tokens for {n_seq} sequences")
        self.n_ctx = int(lib.llama_n_ctx(self.ctx))
        self.shared_kv = shared_kv
        # the cells one sequence can fill: the pool when shared, its own part of it otherwise
        self.seq_cells = self.n_ctx if shared_kv else int(lib.llama_n_ctx_seq(self.ctx))
        self.kv_layout = "shared" if shared_kv else "per-sequence"
        self.n_batch = n_batch
        self.memory = lib.llama_get_memory(self.ctx)
        self.batch = lib.llama_batch_init(n_batch, 0, 1)
        self.threads = threads
        self._adapter: Any = None  # the adapter set on the context now (None: the base weights)
        self._tokens = threading.local()  # per thread: the contexts of several lanes share one grammar's model

    def decode(self, entries: Sequence[Entry]) -> np.ndarray:
        """Runs the entries (at most n_batch); returns the logits of those with logits=True, in order."""
        b = self.batch
        for i, e in enumerate(entries):
            b.token[i] = e.token
            b.pos[i] = e.pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = e.seq
            b.logits[i] = 1 if e.logits else 0
        b.n_tokens = len(entries)
        status = self.lib.llama_decode(self.ctx, b)
        if status == 1:
            raise KvFull("no room left in the KV cache")
        if status != 0:
            raise RuntimeError(f"llama_decode failed with status {status}")
        outputs = sum(1 for e in entries if e.logits)
        if not outputs:
            return np.empty((0, self.n_vocab), dtype=np.float32)
        pointer = self.lib.llama_get_logits(self.ctx)
        return np.ctypeslib.as_array(pointer, shape=(outputs, self.n_vocab)).copy()

    def token_buffer(self) -> np.ndarray:
        """The whole vocabulary as llama_token_data (id, logit, p), for grammar masks (one buffer per thread)."""
        tokens = getattr(self._tokens, "data", None)
        if tokens is None:
            from .grammar import TOKEN_DATA

            tokens = self._tokens.data = np.zeros(self.n_vocab, dtype=TOKEN_DATA)
            tokens["id"] = np.arange(self.n_vocab, dtype=np.int32)
        return tokens

    def set_threads(self, threads: int) -> None:
        """The threads of the next decodes (llama.cpp reads them at each decode)."""
        self.lib.llama_set_n_threads(self.ctx, threads, threads)
        self.threads = threads

    def drop(self, seq: int) -> None:
        self.lib.llama_memory_seq_rm(self.memory, seq, -1, -1)

    def trim(self, seq: int, keep: int) -> bool:
        """Drops the sequence's cells from position `keep` on; False when this cache cannot cut a sequence."""
        return bool(self.lib.llama_memory_seq_rm(self.memory, seq, keep, -1))

    def copy(self, src: int, dst: int) -> None:
        self.lib.llama_memory_seq_cp(self.memory, src, dst, -1, -1)

    def load_adapter(self, path: str) -> Any:
        adapter = self.lib.llama_adapter_lora_init(self.model, path.encode())
        if not adapter:
            raise ValueError(f"llama.cpp could not load the LoRA adapter {path}")
        return adapter

    def free_adapter(self, adapter: Any, others: Sequence[LlamaContext] = ()) -> None:
        """Frees an adapter of the model: unset first on this context and on `others` that have it set."""
        for llama in (self, *others):
            if llama._adapter is adapter:
                llama.use_adapter(None)
        self.lib.llama_adapter_lora_free(adapter)

    def use_adapter(self, adapter: Any) -> None:
        """The weights of the next decode: the base (None) or the base plus one LoRA adapter at its own scale."""
        if adapter is self._adapter:
            return
        lib = self.lib
        if adapter is None:
            lib.llama_set_adapters_lora(self.ctx, None, 0, None)
        else:
            adapters = (lib.llama_adapter_lora_p_ctypes * 1)(adapter)
            scales = (ctypes.c_float * 1)(1.0)
            if lib.llama_set_adapters_lora(self.ctx, adapters, 1, scales) != 0:
                raise RuntimeError("llama.cpp refused the LoRA adapter")
        self._adapter = adapter

    def close(self) -> None:
        lib = self.lib
        if self.ctx:
            lib.llama_batch_free(self.batch)
            lib.llama_free(self.ctx)
            if self.owns_model:
                lib.llama_model_free(self.model)
            self.ctx = self.model = None
