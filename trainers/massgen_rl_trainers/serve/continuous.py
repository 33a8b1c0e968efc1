"""Continuous batching for the llama.cpp engine: one generation thread steps every running sequence by one
token per llama.cpp decode, and a request that arrives meanwhile joins at the next step instead of waiting
for the running ones to finish (its prompt is fed in chunks beside their decode tokens).

Admission is first come, first served while there is a free sequence slot and KV room for the whole
request (its prompt plus max_tokens for each of its n samples; in a shared KV cache the n samples share one
copy of the prompt, per sequence each holds its own, copied from the first once it is in).
Rows with different sampling settings run in the same step (sampling is per row); rows on different LoRA
adapters run in alternate steps, since an adapter is set per decode. Same interface as batching.Batcher.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from .adapters import BatchKey
from .batching import BatchInfo, JobQueue, ShuttingDown, signal_done
from .llama_context import Entry, KvFull
from .openai_api import ApiError
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
    stream: Any = None  # sampling.Stream of a streamed request

    def need(self, shared_kv: bool) -> int:
        """KV cells the job may fill: with a shared cache its n samples store their prompt once."""
        prompt = len(self.rows[0].prompt_ids)
        return (prompt if shared_kv else prompt * len(self.rows)) + sum(r.max_tokens for r in self.rows)


class ContinuousBatcher(JobQueue):
    def __init__(self, engine: Any, max_seqs: int) -> None:
        super().__init__()
        self.engine = engine
        self.llama = engine.llama
        self.max_seqs = max_seqs
        self._free = list(range(max_seqs))
        # a heap: new rows take the lowest free ids, so the running ones stay contiguous from 0 as far as they can;
        # with the KV cache per sequence, llama.cpp decodes a step over ids with a gap ~30 % slower than over
        # contiguous ids (16 sequences: 43 against 33 ms), and one over scattered ids several times slower
        self._active: list[Job] = []
        self._reserved = 0
        self._steps = itertools.count(1)
        self._turn = 0
        self.step_sizes: Counter[int] = Counter()
        self.steps = 0
        self.busy = False

    def submit(self, key: BatchKey, rows: int, payload: Sequence[Row], timeout: float | None = None) -> tuple[Any, BatchInfo]:
        return self._wait(Job(key, list(payload)), timeout)

    def too_many(self, n: int) -> ApiError | None:
        """The refusal of a request for more samples than this server has sequences (none when it fits)."""
        if n <= self.max_seqs:
            return None
        return ApiError(400, f"n={n} is more than this server's {self.max_seqs} sequences (--max-batch-size)", param="n")

    def submit_stream(self, key: BatchKey, rows: Sequence[Row], stream: Any) -> Job:
        """Queue a streamed job: its rows report each token to `stream` (sampling.Stream); returns the job."""
        return self.enqueue(Job(key, list(rows), stream=stream))

    def stats(self) -> dict[str, Any]:
        with self._cond:
            queued, running, reserved = len(self._pending), len(self._active), self._reserved
        return {"batches": self.steps, "batch_sizes": {str(k): v for k, v in sorted(self.step_sizes.items())},
                "queued": queued, "running": running, "busy": self.busy, "max_batch_size": self.max_seqs,
                "batch_window_ms": 0, "continuous": True, "kv_cache_tokens": self.llama.n_ctx, "kv_reserved": reserved,
                "kv_cache_layout": self.llama.kv_layout}

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
                leader = None
                for index, row in enumerate(job.rows):
                    seq = Seq(job, index, row, heapq.heappop(self._free), job.key.sampling, leader)
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
        adapters = list(dict.fromkeys(job.key.adapter for job in self._active))
        self._turn = (self._turn + 1) % len(adapters)
        adapter = adapters[self._turn]
        jobs = [job for job in self._active if job.key.adapter == adapter]
        entries, outputs = self._plan(jobs)
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
            raise ApiError(503, f"the KV cache ({self.llama.n_ctx} tokens) has no room for this request; start "
                                "serve with a larger --kv-cache-tokens") from None
        self.steps += 1
        self.step_sizes[len(jobs)] += 1
        for seqs in outputs:
            leader = seqs[0]
            if leader.fed < len(leader.row.prompt_ids):  # the leader's prompt is in: its siblings share it
                leader.fed = len(leader.row.prompt_ids)
                for sibling in seqs[1:]:
                    self.llama.copy(leader.seq_id, sibling.seq_id)
                    sibling.fed = leader.fed
        sample_step(self.engine, outputs, logits)
        for job in jobs:
            for seq in job.seqs:
                if seq.finish is not None and not seq.dropped:
                    self._release(seq)
            if all(seq.dropped for seq in job.seqs):
                self._complete(job)

    def _plan(self, jobs: list[Job]) -> tuple[list[Entry], list[Any]]:
        """The step's batch: one token for every decoding row, then prompt chunks while there is room.
        `outputs` lists, per row of logits, the rows that sample from it (a leader and its siblings)."""
        entries: list[Entry] = []
        outputs: list[Any] = []
        for job in jobs:
            for seq in job.seqs:
                if seq.next_token is not None and seq.finish is None:
                    entries.append(Entry(seq.next_token, seq.position, seq.seq_id, True))
                    outputs.append([seq])
        room = self.llama.n_batch - len(entries)
        for job in jobs:
            leader = job.seqs[0]
            prompt = leader.row.prompt_ids
            if leader.fed >= len(prompt) or room <= 0:
                continue
            take = min(room, len(prompt) - leader.fed)
            for pos in range(leader.fed, leader.fed + take):
                entries.append(Entry(prompt[pos], pos, leader.seq_id, pos == len(prompt) - 1))
            room -= take
            if leader.fed + take == len(prompt):
                outputs.append(job.seqs)
            else:
                leader.fed += take
        return entries, outputs

    def _release(self, seq: Seq) -> None:
        if seq.row.grammar is not None:
            seq.row.grammar.free()
        self.llama.drop(seq.seq_id)
        seq.dropped = True
        with self._cond:
            heapq.heappush(self._free, seq.seq_id)

    def _complete(self, job: Job) -> None:
        with self._cond:
            self._active.remove(job)
            self._reserved -= job.reserved
        finished = time.monotonic()
        job.result = [build_completion(self.engine, seq) for seq in job.seqs]
        job.info = BatchInfo(job.first_step, job.peak_requests, job.peak_seqs, (job.admitted - job.arrived) * 1000,
                             (finished - job.admitted) * 1000)
        signal_done(job)

    def _fail_active(self, exc: BaseException) -> None:
        for job in list(self._active):
            for seq in job.seqs:
                if not seq.dropped:
                    self._release(seq)
            with self._cond:
                self._active.remove(job)
                self._reserved -= job.reserved
            self._finish(job, exc)

    @staticmethod
    def _finish(job: Job, exc: BaseException) -> None:
        job.error = exc
        job.info = BatchInfo(job.first_step, job.peak_requests, job.peak_seqs, 0.0, 0.0)
        signal_done(job)
