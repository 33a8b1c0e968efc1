"""Prompt prefix reuse on the llama.cpp engine (per-sequence KV layout): a finished request's sequence id keeps
its KV cache, and a new request whose prompt starts with the same tokens takes that id and feeds only the
rest; a request whose prompt starts like one a running sequence is feeding (or has fed) waits for those tokens
and copies them (`source`). MassGen's agents send the same system prompt and tools with every request, and each
agent's next request repeats most of its last one, so most of a ~3,400-token prompt is already in some cache.

A kept cache is only reused under the weights that made it: the same adapter, and no adapter loaded or dropped
since (the guard's change count). Usage reports the reused tokens as `prompt_tokens_details.cached_tokens`.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

# a reused id above the lowest free one is then moved down to keep the running ids together (a copy of its whole
# KV buffer, continuous._compact): take the lowest free id unless another reuses this many more tokens
GAP_WORTH_TOKENS = 64


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    if not n:
        return 0
    differs = np.asarray(a[:n]) != np.asarray(b[:n])
    first = int(differs.argmax())
    return first if differs[first] else n


class PrefixCache:
    def __init__(self, llama: Any, enabled: bool) -> None:
        self.llama = llama
        self.enabled = enabled
        self._kept: dict[int, tuple[Hashable, list[int]]] = {}  # free sequence id -> (weights tag, tokens in its KV)
        self.reused_tokens = 0
        self.reused_requests = 0

    def claim(self, free: list[int], prompt: Sequence[int], tag: Hashable) -> tuple[int, int]:
        """Takes a sequence id out of the `free` heap for a request starting with `prompt`; returns it and how many
        of the prompt's first tokens its KV cache already holds (never the whole prompt: the last token is fed
        again, for its logits)."""
        lowest = free[0]
        best, best_len = lowest, 0
        limit = len(prompt) - 1
        if self.enabled and limit > 0:  # no prompt (a sibling's, a scored one): nothing to reuse
            lengths = {
                i: min(common_prefix(tokens, prompt), limit)
                for i, (kept_tag, tokens) in self._kept.items()
                if kept_tag == tag
            }
            best_len = lengths.get(lowest, 0)
            for i, n in lengths.items():
                if n > best_len + (GAP_WORTH_TOKENS if i != lowest else 0):
                    best, best_len = i, n
        free.remove(best)
        heapq.heapify(free)
        kept = self._kept.pop(best, None)
        if best_len and not self.llama.trim(best, best_len):  # a cache that cannot be cut (not a plain KV cache)
            best_len = 0
        if kept is not None and not best_len:
            self.llama.drop(best)
        if best_len:
            self.reused_tokens += best_len
            self.reused_requests += 1
        return best, best_len

    def keep(self, seq_id: int, tag: Hashable, tokens: list[int]) -> None:
        """The id is free again; its KV cache holds `tokens`, made under the weights `tag`."""
        if self.enabled and tokens:
            self._kept[seq_id] = (tag, tokens)
        else:
            self.llama.drop(seq_id)

    def vacate(self, seq_id: int, free: list[int]) -> None:
        """`seq_id` (free) is about to take a running sequence's KV: a kept cache worth it moves to another free id
        (one holding nothing, else the one holding the least), the rest is dropped."""
        kept = self._kept.pop(seq_id, None)
        if kept is None:
            return
        others = [i for i in free if i != seq_id]
        if len(kept[1]) < GAP_WORTH_TOKENS or not others:
            self.llama.drop(seq_id)
            return
        to = min(others, key=lambda i: (len(self._kept[i][1]) if i in self._kept else -1, -i))
        self._kept.pop(to, None)
        self.llama.copy(seq_id, to)
        self.llama.drop(seq_id)  # its cells only: the buffer copy, done at the next decode, reads the data
        self._kept[to] = kept

    def forget(self, seq_id: int) -> None:
        self._kept.pop(seq_id, None)
        self.llama.drop(seq_id)

    def source(self, running: Sequence[Any], prompt: Sequence[int], tag: Hashable, cached: int) -> tuple[Any, int]:
        """The running sequence (seq.Seq, same weights) whose prompt shares the most first tokens with `prompt`, if
        that beats the `cached` tokens it has by GAP_WORTH_TOKENS (a copy of a whole KV buffer); else (None, 0)."""
        best, best_len = None, cached + GAP_WORTH_TOKENS
        if self.enabled:
            for seq in running:
                if seq.job.weights == tag and not seq.dropped and seq.index == 0:
                    n = min(common_prefix(seq.row.prompt_ids, prompt), len(prompt) - 1)
                    if n > best_len:
                        best, best_len = seq, n
        return (best, best_len) if best is not None else (None, 0)

    def copied(self, tokens: int) -> None:
        self.reused_tokens += tokens
        self.reused_requests += 1

    def stats(self) -> dict[str, Any]:
        return {
            "prefix_cache": self.enabled,
            "prefix_cache_kept": len(self._kept),
            "prefix_cache_reused_tokens": self.reused_tokens,
            "prefix_cache_reused_requests": self.reused_requests,
        }
