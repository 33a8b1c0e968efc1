"""Lanes (massgen_rl_serving/lanes.py): which lane a request on an adapter goes to, with stand-in batchers (no model)."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from massgen_rl_serving import lanes as lanes_module


class FakeBatcher:
    def __init__(self, engine: Any, max_seqs: int, prefix_cache: bool) -> None:
        self.engine = engine
        self.jobs: list[tuple[str | None, int]] = []
        self.started = False

    def holds(self) -> set[str | None]:
        return {adapter for adapter, _ in self.jobs}

    def rows_held(self) -> int:
        return sum(rows for _, rows in self.jobs)

    def submit(self, key: Any, rows: int, payload: Any, timeout: float | None = None) -> Any:
        self.jobs.append((key.adapter, rows))
        return self, None

    def start(self) -> None:
        self.started = True


class FakeContext:
    def __init__(self) -> None:
        self.threads = 2

    def sibling(self) -> FakeContext:
        return FakeContext()


@contextmanager
def no_guard():
    yield


@pytest.fixture
def lanes(monkeypatch) -> lanes_module.Lanes:
    monkeypatch.setattr(lanes_module, "ContinuousBatcher", FakeBatcher)
    lora = SimpleNamespace(guard=SimpleNamespace(change=no_guard), slots={})
    engine = SimpleNamespace(llama=FakeContext(), lora=lora, lanes=[], threads=2)
    batcher = lanes_module.Lanes(engine, 8, max_lanes=3)
    batcher.start()
    return batcher


def send(lanes: lanes_module.Lanes, adapter: str | None, rows: int = 1) -> FakeBatcher:
    return lanes.submit(SimpleNamespace(adapter=adapter), rows, [])[0]


def test_each_adapter_in_use_gets_its_own_lane_up_to_the_cap(lanes):
    a, b = send(lanes, "a"), send(lanes, "b")
    assert a is not b and b.started and len(lanes.engine.lanes) == 1  # the second lane's context is a sibling
    base = send(lanes, None)
    assert send(lanes, "a") is a and base not in (a, b)
    assert lanes.busy() == 3
    b.jobs.append(("b", 5))
    assert send(lanes, "c") is base  # no lane left: the one with the fewest rows takes it and alternates
    assert len(lanes._lanes) == 3


def test_an_idle_lane_is_reused_before_a_new_one_is_made(lanes):
    a = send(lanes, "a")
    b = send(lanes, "b")
    b.jobs.clear()
    assert send(lanes, "c") is b and len(lanes._lanes) == 2
    b.jobs.clear()
    a.jobs.clear()
    assert send(lanes, "c") is b  # the idle lane that ran c last: its prefix cache was made under c


def test_the_threads_are_shared_among_busy_lanes(lanes):
    send(lanes, "a")
    context = lanes._lanes[0].engine.llama
    lane_lora = lanes_module.LaneLora(lanes, SimpleNamespace(threads=2, use_adapter=lambda _: None))
    lane_lora.llama.set_threads = lambda n: setattr(lane_lora.llama, "threads", n)
    lane_lora.activate(None)
    assert lane_lora.llama.threads == 2 and context.threads == 2
    send(lanes, "b")
    lane_lora.activate(None)
    assert lane_lora.llama.threads == 1
