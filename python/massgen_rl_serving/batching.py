"""Micro-batching for `serve`: one generation thread owns the model; HTTP threads submit jobs and wait.

The oldest pending job leads each batch. The thread waits until `window_s` after that job arrived (or
until the batch is full), then takes, in arrival order, every pending job whose key equals the leader's
while the batch has room for its rows (`max_rows` sequences; a job larger than that still runs, alone).
Jobs with other keys stay queued for later batches. Requests that arrive while a batch is generating
simply queue up, so under load batches form without waiting for the window at all.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any


class ShuttingDown(Exception):
    """The server stopped before the job ran."""


@dataclass
class BatchInfo:
    batch_id: int
    requests: int
    sequences: int
    queue_ms: float
    generate_ms: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "batch_requests": self.requests,
            "batch_sequences": self.sequences,
            "queue_ms": round(self.queue_ms, 1),
            "generate_ms": round(self.generate_ms, 1),
        }


@dataclass
class Job:
    key: Hashable
    rows: int
    payload: Any
    arrived: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None
    info: BatchInfo | None = None
    stream: Any = None  # sampling.Stream of a streamed request


def signal_done(job: Any) -> None:
    """The job is over (result or error set): wake its waiter, and a streamed request's reader."""
    job.done.set()
    if job.stream is not None:
        job.stream.events.put(None)


# run_batch(key, payloads) -> one result per payload, in order
RunBatch = Callable[[Hashable, Sequence[Any]], Sequence[Any]]


class JobQueue:
    """Jobs queued by HTTP threads for the one generation thread (`_loop`), and the wait for their result."""

    def __init__(self) -> None:
        self._pending: list[Any] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="generation", daemon=True)

    def _loop(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def enqueue(self, job: Any) -> Any:
        """Queues a job without waiting for it (a streamed request reads its stream instead)."""
        with self._cond:
            if self._stopping:
                raise ShuttingDown("the server is shutting down")
            self._pending.append(job)
            self._cond.notify_all()
        return job

    def _wait(self, job: Any, timeout: float | None) -> tuple[Any, BatchInfo]:
        self.enqueue(job)
        if not job.done.wait(timeout):
            with self._cond:
                if job in self._pending:
                    self._pending.remove(job)
            raise TimeoutError("generation did not finish in time")
        if job.error is not None:
            raise job.error
        assert job.info is not None
        return job.result, job.info

    def stop(self, timeout: float = 10.0) -> None:
        """Fail queued jobs, let the running work finish (up to `timeout`), stop the thread."""
        with self._cond:
            self._stopping = True
            pending, self._pending = self._pending, []
            self._cond.notify_all()
        for job in pending:
            job.error = ShuttingDown("the server is shutting down")
            signal_done(job)
        if self._thread.is_alive():
            self._thread.join(timeout)


class Batcher(JobQueue):
    def __init__(self, run_batch: RunBatch, max_rows: int = 8, window_s: float = 0.025) -> None:
        self.run_batch = run_batch
        self.max_rows = max(1, max_rows)
        self.window_s = max(0.0, window_s)
        self._ids = itertools.count(1)
        super().__init__()
        self.batch_sizes: Counter[int] = Counter()  # requests per batch -> how many batches
        self.batches = 0
        self.busy = False

    def submit(self, key: Hashable, rows: int, payload: Any, timeout: float | None = None) -> tuple[Any, BatchInfo]:
        """Queue a job and block until its batch ran; re-raises the batch's exception."""
        return self._wait(Job(key, max(1, rows), payload), timeout)

    def submit_stream(self, key: Hashable, rows: Sequence[Any], stream: Any) -> Any:
        """Queue a streamed job: its rows report each token to `stream` (sampling.Stream); returns the job."""
        return self.enqueue(Job(key, max(1, len(rows)), list(rows), stream=stream))

    def stats(self) -> dict[str, Any]:
        with self._cond:
            queued, batches, sizes = len(self._pending), self.batches, sorted(self.batch_sizes.items())
        return {
            "batches": batches,
            "batch_sizes": {str(k): v for k, v in sizes},
            "queued": queued,
            "busy": self.busy,
            "max_batch_size": self.max_rows,
            "batch_window_ms": round(self.window_s * 1000, 3),
        }

    def _take(self) -> list[Job]:
        """Jobs for the next batch, chosen under the lock; [] when stopping."""
        with self._cond:
            while True:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return []
                leader = self._pending[0]
                chosen, rows = self._compatible(leader)
                remaining = leader.arrived + self.window_s - time.monotonic()
                if rows >= self.max_rows or remaining <= 0:
                    break
                self._cond.wait(remaining)
            for job in chosen:
                self._pending.remove(job)
            return chosen

    def _compatible(self, leader: Job) -> tuple[list[Job], int]:
        chosen, rows = [leader], leader.rows
        for job in self._pending[1:]:
            if job.key == leader.key and rows + job.rows <= self.max_rows:
                chosen.append(job)
                rows += job.rows
        return chosen, rows

    def _loop(self) -> None:
        while True:
            jobs = self._take()
            if not jobs:
                return
            batch_id = next(self._ids)
            started = time.monotonic()
            self.busy = True
            try:
                results = list(self.run_batch(jobs[0].key, [job.payload for job in jobs]))
                if len(results) != len(jobs):
                    raise RuntimeError(f"the batch returned {len(results)} results for {len(jobs)} jobs")
                error = None
            except BaseException as exc:  # reported to every waiting request; the thread keeps serving
                results, error = [None] * len(jobs), exc
            finally:
                self.busy = False
            generate_ms = (time.monotonic() - started) * 1000
            with self._cond:
                self.batches += 1
                self.batch_sizes[len(jobs)] += 1
            sequences = sum(job.rows for job in jobs)
            for job, result in zip(jobs, results):
                job.info = BatchInfo(batch_id, len(jobs), sequences, (started - job.arrived) * 1000, generate_ms)
                job.result, job.error = result, error
                signal_done(job)
