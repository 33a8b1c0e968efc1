"""A llama.cpp context for /v1/embeddings beside the generation context, on the same loaded model: embeddings
on, llama.cpp's mean pooling over the sequence's tokens of the final-norm hidden state, one sequence at a time."""

from __future__ import annotations

from typing import Any

import numpy as np

from .llama_context import LlamaContext


class LlamaEmbedder(LlamaContext):
    """Shares `llama`'s model (its use_adapter sets this context's adapter only); never frees the model."""

    # Not LlamaContext.__init__: that would load the model a second time.
    def __init__(self, llama: LlamaContext, n_ctx: int, threads: int, kv_f32: bool = False) -> None:
        lib = self.lib = llama.lib
        self.model = llama.model
        cparams = lib.llama_context_default_params()
        cparams.n_ctx = cparams.n_batch = cparams.n_ubatch = n_ctx  # a whole input in one decode
        cparams.n_seq_max = 1
        cparams.n_threads = cparams.n_threads_batch = threads
        cparams.embeddings = True
        cparams.pooling_type = lib.LLAMA_POOLING_TYPE_MEAN
        if kv_f32:  # as the generation context: exact f32 weights, f32 cache, no flash attention
            cparams.type_k = cparams.type_v = 0
            cparams.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cparams.no_perf = True
        self.ctx = lib.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not create an embeddings context of {n_ctx} tokens")
        self.n_ctx = n_ctx
        self.n_embd = int(lib.llama_model_n_embd(self.model))
        self.memory = lib.llama_get_memory(self.ctx)
        self.batch = lib.llama_batch_init(n_ctx, 0, 1)
        self._adapter: Any = None

    def embed(self, ids: list[int]) -> np.ndarray:
        lib, b = self.lib, self.batch
        lib.llama_memory_clear(self.memory, True)
        for i, token in enumerate(ids):
            b.token[i] = token
            b.pos[i] = i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1
        b.n_tokens = len(ids)
        status = lib.llama_decode(self.ctx, b)
        if status != 0:
            raise RuntimeError(f"llama_decode failed with status {status}")
        pointer = lib.llama_get_embeddings_seq(self.ctx, 0)
        return np.ctypeslib.as_array(pointer, shape=(self.n_embd,)).astype(np.float32)

    def close(self) -> None:
        if self.ctx:
            self.lib.llama_batch_free(self.batch)
            self.lib.llama_free(self.ctx)
            self.ctx = None
