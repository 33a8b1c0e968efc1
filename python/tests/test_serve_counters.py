"""/stats' cumulative counters of the llama.cpp engine, as a caller's deltas over a span read them (the loop's
per-stage profile, src/pipeline/loop/cycle-profile.ts)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from serve_support import Server, needs_model

COUNTERS = ("prefill_tokens", "decode_tokens", "decode_steps", "step_s", "prefill_s", "decode_s", "batches")


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in COUNTERS}


@needs_model
def test_the_counters_add_up_to_the_requests_tokens_and_steps(server: Server):
    if server.engine != "llama.cpp":
        pytest.skip("the step counters are the continuous batcher's (llama.cpp)")
    _, before = server.get("/stats")
    assert before["conversions"] >= 0 and before["convert_s"] >= 0
    questions = ["Count from one to twenty.", "Name twenty fruits.", "List the planets.", "Spell the alphabet."]
    bodies = [{"messages": [{"role": "user", "content": q}], "max_tokens": 24, "ignore_eos": True} for q in questions]
    with ThreadPoolExecutor(len(bodies)) as pool:
        replies = list(pool.map(lambda b: server.chat(**b), bodies))
    _, after = server.get("/stats")
    d = delta(before, after)
    completion = sum(r["usage"]["completion_tokens"] for r in replies)
    fed = sum(r["usage"]["prompt_tokens"] - r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in replies)
    # each row's first token is sampled from its prompt's last position; every later one feeds its predecessor
    assert completion == 4 * 24 and d["decode_tokens"] == completion - len(replies), (d, replies)
    assert d["prefill_tokens"] == fed, (d, fed)
    # four rows decoding side by side: more than one row a decoding step, never more than four
    assert 1 < d["decode_tokens"] / d["decode_steps"] <= 4, d
    assert d["decode_steps"] <= d["batches"]
    assert d["step_s"] > 0 and d["prefill_s"] > 0 and d["decode_s"] > 0
    assert d["prefill_s"] + d["decode_s"] == pytest.approx(d["step_s"], abs=1e-5)
