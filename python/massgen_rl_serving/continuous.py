"""Continuous batching for the llama.cpp engine: one generation thread steps every running sequence by one
token per llama.cpp decode, and a request that arrives meanwhile joins at the next step instead of waiting
for the running ones to finish (its prompt is fed in chunks beside their decode tokens).

Admission is first come, first served while there is a free sequence slot and KV room for the whole
request (its prompt plus max_tokens for each of its n samples; in a shared KV cache the n samples share one
copy of the prompt, per sequence each holds its own, copied from the first once it is in).
Rows with different sampling settings run in the same step (sampling is per row); rows on different LoRA
adapters run in alternate steps, since an adapter is set per decode (lanes.py gives each adapter in use its own
batcher, on its own context, where it can). Same interface as batching.Batcher.
With the KV cache per sequence, a prompt's first tokens may come from another sequence's cache (prefix_cache.py),
and the running sequences keep the lowest ids (_compact).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .adapters import BatchKey
from .batching import BatchInfo, JobQueue, ShuttingDown, signal_done
from .errors import ApiError
from .llama_context import Entry, KvFull
from .prefix_cache import PrefixCache
from .prompt_logprobs import score_prompt
from .sampling import Row
from .seq import Seq, build_completion, sample_step


@dataclass(eq=False)
class Job:
    key: BatchKey
    rows: list[Row]
    arrived: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    seqs: list[Seq] = field(default_factory=list)
    result: Any = None
    error: BaseException | None = None
    info: BatchInfo | None = None
    admitted: float = 0.0
    first_step: int = 0
    peak_requests: int = 0
    peak_seqs: int = 0
    reserved: int = 0  # KV cells set aside at admission, given back when the job ends
    weights: Any = None  # the adapter and adapter changes its KV cache was made under (prefix_cache.py)
    stream: Any = None  # sampling.Stream of a streamed request

    def need(self, shared_kv: bool) -> int:
        """KV cells the job may fill: with a shared cache its n samples store their prompt once."""
        prompt = len(self.rows[0].prompt_ids)
        return (prompt if shared_kv else prompt * len(self.rows)) + sum(r.max_tokens for r in self.rows)


class ContinuousBatcher(JobQueue):
    def __init__(self, engine: Any, max_seqs: int, prefix_cache: bool = True) -> None:
        super().__init__()
        self.engine = engine
        self.llama = engine.llama
        self.max_seqs = max_seqs
        self._free = list(range(max_seqs))
        # a heap: new rows take the lowest free ids (unless a kept prefix is worth more), and _compact keeps the
        # running ones contiguous from 0
        self._active: list[Job] = []
        self.prefix = PrefixCache(self.llama, prefix_cache and not self.llama.shared_kv)
        self._reserved = 0
        self._steps = itertools.count(1)
        self._turn = 0
        self.step_sizes: Counter[int] = Counter()
        self.compactions = 0
        self.steps = 0
        self.busy = False
        # cumulative, for a caller's deltas over a span (the loop's per-stage profile): tokens fed, steps that
        # decoded and the rows they decoded (their mean: the batch occupancy), and the seconds of the steps,
        # split between prefill and decode by their share of the step's tokens
        self.prefill_tokens = 0
        self.decode_tokens = 0
        self.decode_steps = 0
        self.step_seconds = 0.0
        self.prefill_seconds = 0.0
        self._decoding = 0

    def submit(
        self, key: BatchKey, rows: int, payload: Sequence[Row], timeout: float | None = None
    ) -> tuple[Any, BatchInfo]:
        return self._wait(Job(key, list(payload)), timeout)

    def too_many(self, n: int) -> ApiError | None:
        """The refusal of a request for more samples than this server has sequences (none when it fits)."""
        if n <= self.max_seqs:
            return None
        return ApiError(
            400, f"n={n} is more than this server's {self.max_seqs} sequences (--max-batch-size)", param="n"
        )

    def submit_stream(self, key: BatchKey, rows: Sequence[Row], stream: Any) -> Job:
        """Queue a streamed job: its rows report each token to `stream` (sampling.Stream); returns the job."""
        return self.enqueue(Job(key, list(rows), stream=stream))

    def stats(self) -> dict[str, Any]:
        with self._cond:
            queued, running, reserved = len(self._pending), len(self._active), self._reserved
        return {
            "batches": self.steps,
            "batch_sizes": {str(k): v for k, v in sorted(self.step_sizes.items())},
            "queued": queued,
            "running": running,
            "busy": self.busy,
            "max_batch_size": self.max_seqs,
            "batch_window_ms": 0,
            "continuous": True,
            "kv_cache_tokens": self.llama.n_ctx,
            "kv_reserved": reserved,
            "kv_cache_layout": self.llama.kv_layout,
            "compactions": self.compactions,
            "prefill_tokens": self.prefill_tokens,
            "decode_tokens": self.decode_tokens,
            "decode_steps": self.decode_steps,
            "step_s": round(self.step_seconds, 6),
            "prefill_s": round(self.prefill_seconds, 6),
            "decode_s": round(self.step_seconds - self.prefill_seconds, 6),
            **self.prefix.stats(),
        }

    def holds(self) -> set[str | None]:
        """The adapters of the jobs queued or running here (empty: this batcher is idle)."""
        with self._cond:
            return {job.key.adapter for job in (*self._pending, *self._active)}

    def rows_held(self) -> int:
        with self._cond:
            return sum(len(job.rows) for job in (*self._pending, *self._active))

    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- the generation thread ----------------------------------------------------------------------

    def _admit(self) -> bool:
        """Moves jobs that fit from pending to active; waits while there is nothing to do. False: stop."""
        with self._cond:
            while not self._stopping and not self._pending and not self._active:
                self._cond.wait()
            if self._stopping:
                return False
            while self._pending:
                job = self._pending[0]
                need = job.need(self.llama.shared_kv)
                fits = len(job.rows) <= len(self._free) and self._reserved + need <= self.llama.n_ctx
                if not fits and self._active:
                    break
                refused = self.too_many(len(job.rows))
                if refused is not None:  # n larger than the slots: refused rather than waited for
                    self._pending.pop(0)
                    self._finish(job, refused)
                    continue
                self._pending.pop(0)
                job.reserved = need
                self._reserved += need
                job.admitted = time.monotonic()
                job.weights = (job.key.adapter, self.engine.lora.guard.changes)
                leader = None
                for index, row in enumerate(job.rows):
                    # siblings copy the leader's prompt; one scored for prompt_logprobs is fed whole (no cached part)
                    scored = row.prompt_logprobs is not None
                    prompt = row.prompt_ids if leader is None and not scored else ()
                    seq_id, cached = self.prefix.claim(self._free, prompt, job.weights)
                    seq = Seq(job, index, row, seq_id, job.key.sampling, leader, fed=cached, cached=cached)
                    if leader is None and not scored:
                        running = [s for j in self._active for s in j.seqs]
                        seq.source, seq.shared = self.prefix.source(running, row.prompt_ids, job.weights, cached)
                    leader = leader or seq
                    job.seqs.append(seq)
                self._active.append(job)
            return True

    def _loop(self) -> None:
        while self._admit() and not self.engine.cancel.is_set():
            self.busy = True
            try:
                self._step()
            except BaseException as exc:  # reported to the requests of the step; the thread keeps serving
                self._fail_active(exc)
            finally:
                self.busy = False
        self._fail_active(ShuttingDown("the server is shutting down"))  # requests cut short get their 503

    def _drop_cancelled(self) -> None:
        """Streamed requests whose client went away leave the batch before this step."""
        for job in [j for j in self._active if j.stream is not None and j.stream.cancelled.is_set()]:
            for seq in job.seqs:
                if not seq.dropped:
                    seq.finish = seq.finish or "cancelled"
                    self._release(seq)
            self._complete(job)

    def _step(self) -> None:
        self._drop_cancelled()
        if not self._active:
            return
        if not self.llama.shared_kv:
            self._compact()
        adapters = list(dict.fromkeys(job.key.adapter for job in self._active))
        self._turn = (self._turn + 1) % len(adapters)
        adapter = adapters[self._turn]
        jobs = [job for job in self._active if job.key.adapter == adapter]
        started = time.perf_counter()
        entries, outputs, picks, scoring = self._plan(jobs)
        step = next(self._steps)
        for job in jobs:
            job.first_step = job.first_step or step
            job.peak_requests = max(job.peak_requests, len(self._active))
            job.peak_seqs = max(job.peak_seqs, sum(len(j.seqs) for j in self._active))
        try:
            with self.engine.lora.guard.step():
                self.engine.lora.activate(adapter)
                logits = self.llama.decode(entries)
        except KvFull:
            raise ApiError(
                503,
                f"the KV cache ({self.llama.n_ctx} tokens) has no room for this request; start "
                "serve with a larger --kv-cache-tokens",
            ) from None
        self.steps += 1
        self.step_sizes[len(jobs)] += 1
        for seqs in outputs:
            leader = seqs[0]
            if leader.fed < len(leader.row.prompt_ids):  # the leader's prompt is in: its siblings share it
                leader.fed = len(leader.row.prompt_ids)
                for sibling in seqs[1:]:
                    self.llama.copy(leader.seq_id, sibling.seq_id)
                    sibling.fed = leader.fed
        for leader, row, count, start in scoring:
            scores = torch.from_numpy(logits[row : row + count])
            top = leader.row.prompt_logprobs or 0
            leader.prompt_scores += score_prompt(self.engine, leader.row.prompt_ids, scores, start, top)
        sample_step(self.engine, outputs, logits[picks] if scoring else logits)
        self._count_step(entries, time.perf_counter() - started)
        for job in jobs:
            for seq in job.seqs:
                if seq.finish is not None and not seq.dropped:
                    self._release(seq)
            if all(seq.dropped for seq in job.seqs):
                self._complete(job)

    def _count_step(self, entries: list[Entry], seconds: float) -> None:
        # _plan puts one entry per decoding row first, then the prompt chunks
        decoded = self._decoding
        prefill = len(entries) - decoded
        self.decode_tokens += decoded
        self.prefill_tokens += prefill
        self.decode_steps += 1 if decoded else 0
        self.step_seconds += seconds
        self.prefill_seconds += seconds * prefill / len(entries) if entries else 0.0

    def _compact(self) -> None:
        """Keeps the running sequences on the lowest ids: a free id below a running one takes the highest running
        sequence (its KV copied over). With the KV cache per sequence, llama.cpp splits a step into one pass per
        run of consecutive ids (16 sequences: 33 ms a step; 9 of them scattered over 0..15: 48 ms)."""
        running = sorted((seq for job in self._active for seq in job.seqs if not seq.dropped), key=lambda q: q.seq_id)
        while running and self._free and self._free[0] < running[-1].seq_id:
            top = running.pop()
            with self._cond:
                low = heapq.heappop(self._free)
                self.prefix.vacate(low, self._free)
                if top.fed or top.next_token is not None:  # nothing in its cache yet (a sibling waiting): no copy
                    self.llama.copy(top.seq_id, low)
                    self.llama.drop(top.seq_id)
                heapq.heappush(self._free, top.seq_id)
            top.seq_id = low
            running.insert(0, top)
            self.compactions += 1

    def _plan(self, jobs: list[Job]) -> tuple[list[Entry], list[Any], list[int], list[tuple[Seq, int, int, int]]]:
        """The step's batch: one token for every decoding row, then prompt chunks while there is room.
        `outputs` lists the rows that sample from one row of logits (a leader and its siblings), `picks` that row of
        each; `scoring`: (leader, first row, rows, first position) of the prompt positions scored for prompt_logprobs,
        whose logits rows come in the positions' order."""
        self._copy_shared(jobs)
        entries: list[Entry] = []
        outputs: list[Any] = []
        picks: list[int] = []
        scoring: list[tuple[Seq, int, int, int]] = []
        decoding = [seq for job in jobs for seq in job.seqs if seq.next_token is not None and seq.finish is None]
        for seq in sorted(decoding, key=lambda q: q.seq_id):  # llama.cpp batches runs of consecutive ids in order
            entries.append(Entry(seq.next_token, seq.position, seq.seq_id, True))
            outputs.append([seq])
            picks.append(len(picks))
        self._decoding = len(entries)
        room = self.llama.n_batch - len(entries)
        rows = len(picks)  # logits rows so far
        for job in jobs:
            leader = job.seqs[0]
            prompt = leader.row.prompt_ids
            if leader.fed >= len(prompt) or room <= 0 or leader.source is not None:
                continue
            take = min(room, len(prompt) - leader.fed)
            scored = leader.row.prompt_logprobs is not None
            for pos in range(leader.fed, leader.fed + take):
                entries.append(Entry(prompt[pos], pos, leader.seq_id, scored or pos == len(prompt) - 1))
            room -= take
            if scored:
                scoring.append((leader, rows, take, leader.fed))
                rows += take
            if leader.fed + take == len(prompt):
                if not scored:  # a scored chunk counted its last row already
                    rows += 1
                outputs.append(job.seqs)
                picks.append(rows - 1)
            else:
                leader.fed += take
        return entries, outputs, picks, scoring

    def _copy_shared(self, jobs: list[Job]) -> None:
        """Rows waiting for a running sequence's prompt tokens copy them once that sequence has fed them."""
        for job in jobs:
            seq = job.seqs[0]
            source = seq.source
            if source is None:
                continue
            if source.dropped:  # it ended before feeding them: this one feeds its own prompt
                seq.source = None
            elif source.fed >= seq.shared or source.next_token is not None:
                self.llama.copy(source.seq_id, seq.seq_id)
                if not self.llama.trim(seq.seq_id, seq.shared):
                    self.llama.drop(seq.seq_id)
                    seq.fed = seq.cached = 0
                else:
                    seq.fed = seq.cached = seq.shared
                    self.prefix.copied(seq.shared)
                seq.source = None

    def _release(self, seq: Seq, keep: bool = True) -> None:
        if seq.row.grammar is not None:
            seq.row.grammar.free()
        if keep:
            self.prefix.keep(seq.seq_id, seq.job.weights, seq.in_cache())
        else:
            self.prefix.forget(seq.seq_id)
        seq.dropped = True
        with self._cond:
            heapq.heappush(self._free, seq.seq_id)

    def _complete(self, job: Job) -> None:
        with self._cond:
            self._active.remove(job)
            self._reserved -= job.reserved
        finished = time.monotonic()
        job.result = [build_completion(self.engine, seq) for seq in job.seqs]
        job.info = BatchInfo(
            job.first_step,
            job.peak_requests,
            job.peak_seqs,
            (job.admitted - job.arrived) * 1000,
            (finished - job.admitted) * 1000,
        )
        signal_done(job)

    def _fail_active(self, exc: BaseException) -> None:
        for job in list(self._active):
            for seq in job.seqs:
                if not seq.dropped:
                    self._release(seq, keep=False)  # a failed step may have left its batch half in the cache
            with self._cond:
                self._active.remove(job)
                self._reserved -= job.reserved
            self._finish(job, exc)

    @staticmethod
    def _finish(job: Job, exc: BaseException) -> None:
        job.error = exc
        job.info = BatchInfo(job.first_step, job.peak_requests, job.peak_seqs, 0.0, 0.0)
        signal_done(job)
