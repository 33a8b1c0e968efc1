"""Grammar-constrained decoding on the llama.cpp engine: llama.cpp's GBNF grammar sampler, used only as a
token filter beside our own sampling (sampling.py), so a constrained token's logprob is still read from
the distribution it was drawn from (renormalized over the tokens the grammar allows).

A lazy grammar (tool_choice auto) lets the text run free until a trigger pattern (`<tool_call>`) appears,
then constrains from the trigger on. Each sequence has its own sampler: the grammar's state is its text.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .errors import ApiError

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class Grammar:
    """One sequence's grammar state. Created on an HTTP thread, then used by the generation thread only."""

    def __init__(self, llama: Any, text: str, trigger_patterns: list[str] | None = None, param: str = "tools") -> None:
        lib = self.lib = llama.lib
        self.llama = llama
        vocab = self.vocab = lib.llama_model_get_vocab(llama.model)
        if trigger_patterns:
            patterns = (ctypes.c_char_p * len(trigger_patterns))(*[p.encode() for p in trigger_patterns])
            self.sampler = lib.llama_sampler_init_grammar_lazy_patterns(
                vocab, text.encode(), b"root", patterns, len(trigger_patterns), None, 0
            )
        else:
            self.sampler = lib.llama_sampler_init_grammar(vocab, text.encode(), b"root")
        if not self.sampler:
            raise ApiError(400, "llama.cpp could not parse the grammar made for this request", param=param)
        self.one = np.zeros(1, dtype=TOKEN_DATA)

    def _apply(self, data: np.ndarray) -> None:
        array = self.lib.llama_token_data_array(data.ctypes.data_as(self.lib.llama_token_data_p), len(data), -1, False)
        self.lib.llama_sampler_apply(self.sampler, ctypes.byref(array))

    def allows(self, token: int) -> bool:
        """Whether the grammar accepts `token` next (one token checked: the common case costs little)."""
        self.one["id"][0], self.one["logit"][0] = token, 0.0
        self._apply(self.one)
        return bool(self.one["logit"][0] == 0.0)

    def allowed_among(self, tokens: np.ndarray) -> np.ndarray:
        """Which of `tokens` the grammar accepts next (a bool array; one call for all of them)."""
        data = np.zeros(len(tokens), dtype=TOKEN_DATA)
        data["id"] = tokens
        self._apply(data)
        return data["logit"] == 0.0

    def mask(self) -> np.ndarray:
        """The tokens the grammar accepts next, over the whole vocabulary (a bool array)."""
        data = self.llama.token_buffer()
        data["logit"] = 0.0
        self._apply(data)
        return data["logit"] == 0.0

    def ends(self, token: int) -> bool:
        """An end-of-generation token (what a finished grammar allows next)."""
        return bool(self.lib.llama_vocab_is_eog(self.vocab, token))

    def accept(self, token: int) -> None:
        self.lib.llama_sampler_accept(self.sampler, token)

    def free(self) -> None:
        if self.sampler:
            self.lib.llama_sampler_free(self.sampler)
            self.sampler = None

    def __del__(self) -> None:  # a request refused before it ran
        try:
            self.free()
        except Exception:
            pass
