"""Lanes: several continuous batchers on one llama.cpp model, so rows on different LoRA adapters decode at once.

llama.cpp sets a LoRA adapter per context, for the whole batch of a decode, so one context decodes the rows of
one adapter per step: with three adapters in use, each step holds a third of the rows and a step's fixed cost
(graph, thread barriers) is paid three times per token of every row. A lane is a ContinuousBatcher with its own
generation thread and its own context on the shared model (weights and adapters loaded once, a KV cache each):
a request goes to the lane already running its adapter, else to an idle lane, else to a new lane (up to
max_lanes, `serve --max-lanes`), else to the lane with the fewest rows, which then alternates its adapters per
step as before. The lanes decode side by side, the engine's threads divided among the busy ones (one at least).

Measured on 2 cores, 16 rows on three adapters (raw decodes, tokens/s): one context, rows of an adapter on
consecutive sequence ids 283, interleaved ids 108; three contexts of one thread each, decoding at once, 524;
one adapter on one context, 613.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .adapters import BatchKey
from .batching import BatchInfo
from .continuous import ContinuousBatcher
from .errors import ApiError
from .sampling import Row

MAX_LANES = 4  # each lane holds a KV cache as large as the first one's (--kv-cache-tokens)


class LaneLora:
    """The engine's adapters as one lane sees them: activate() sets them on the lane's context."""

    def __init__(self, lanes: Lanes, llama: Any) -> None:
        self.lanes = lanes
        self.llama = llama
        self.guard = lanes.engine.lora.guard

    def activate(self, slot: str | None) -> None:
        """Inside guard.step(): the lane's adapter and its share of the engine's threads for the next decode."""
        self.llama.use_adapter(None if slot is None else self.lanes.engine.lora.slots[slot])
        share = max(1, self.lanes.engine.threads // max(1, self.lanes.busy()))
        if share != self.llama.threads:
            self.llama.set_threads(share)


class LaneEngine:
    """The engine as one lane's batcher uses it: its own context and adapter switch, the rest shared."""

    def __init__(self, lanes: Lanes, llama: Any) -> None:
        self._engine = lanes.engine
        self.llama = llama
        self.lora = LaneLora(lanes, llama)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


class Lanes:
    """Same interface as ContinuousBatcher (submit, submit_stream, too_many, stats, start, stop)."""

    def __init__(self, engine: Any, max_seqs: int, prefix_cache: bool = True, max_lanes: int = MAX_LANES) -> None:
        self.engine = engine
        self.max_seqs = max_seqs
        self.prefix_cache = prefix_cache
        self.max_lanes = max(1, max_lanes)
        self._lock = threading.Lock()
        self._started = False
        self._lanes = [ContinuousBatcher(LaneEngine(self, engine.llama), max_seqs, prefix_cache)]
        self._last: dict[int, str | None] = {}  # the adapter a lane ran last (its prefix cache was made under it)

    def busy(self) -> int:
        return sum(1 for lane in self._lanes if lane.holds())

    def submit(
        self, key: BatchKey, rows: int, payload: Sequence[Row], timeout: float | None = None
    ) -> tuple[Any, BatchInfo]:
        return self._route(key.adapter).submit(key, rows, payload, timeout)

    def submit_stream(self, key: BatchKey, rows: Sequence[Row], stream: Any) -> Any:
        return self._route(key.adapter).submit_stream(key, rows, stream)

    def too_many(self, n: int) -> ApiError | None:
        return self._lanes[0].too_many(n)

    def _route(self, adapter: str | None) -> ContinuousBatcher:
        with self._lock:
            held = [(lane, lane.holds()) for lane in self._lanes]
            lane = next((lane for lane, adapters in held if adapter in adapters), None)
            idle = [lane for lane, adapters in held if not adapters]
            if lane is None and idle:
                lane = next((x for x in idle if self._last.get(id(x), adapter) == adapter), idle[0])
            if lane is None and len(self._lanes) < self.max_lanes:
                lane = self._add()
            if lane is None:
                lane = min(held, key=lambda item: item[0].rows_held())[0]
            self._last[id(lane)] = adapter
            return lane

    def _add(self) -> ContinuousBatcher:
        """A new lane on a context beside the first (made under a change: no step or adapter load runs meanwhile)."""
        with self.engine.lora.guard.change():
            llama = self.engine.llama.sibling()
            self.engine.lanes.append(llama)
        lane = ContinuousBatcher(LaneEngine(self, llama), self.max_seqs, self.prefix_cache)
        self._lanes.append(lane)
        if self._started:
            lane.start()
        return lane

    def start(self) -> None:
        with self._lock:
            self._started = True
            for lane in self._lanes:
                lane.start()

    def stop(self, timeout: float = 10.0) -> None:
        with self._lock:
            lanes = list(self._lanes)
        for lane in lanes:
            lane.stop(timeout)
        for lane in lanes[1:]:
            if not lane.alive():  # a thread still stepping keeps its context
                lane.llama.close()

    def stats(self) -> dict[str, Any]:
        per_lane = [lane.stats() for lane in list(self._lanes)]
        total = dict(per_lane[0])
        sizes: Counter[str] = Counter()
        for stats in per_lane:
            sizes.update(stats["batch_sizes"])
        for key, value in total.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key in SUMMED:
                total[key] = sum(stats[key] for stats in per_lane)
        total["busy"] = any(stats["busy"] for stats in per_lane)
        total["batch_sizes"] = {k: sizes[k] for k in sorted(sizes, key=int)}
        total["lanes"] = len(per_lane)
        return total


SUMMED = frozenset(
    "batches queued running kv_reserved compactions prefill_tokens decode_tokens decode_steps step_s prefill_s "
    "decode_s prefix_cache_kept prefix_cache_reused_tokens prefix_cache_reused_requests".split()
)
