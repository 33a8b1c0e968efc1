"""Prompt prefix reuse on the llama.cpp engine (prefix_cache.py): a repeated prompt and a prompt that starts like a
running one feed only their new tokens, and every answer is what the model gives without the reuse; running
sequences keep contiguous ids (continuous._compact)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from massgen_rl_serving.prefix_cache import PrefixCache, common_prefix
from serve_support import MODEL_DIR, NAME, Server, engine_args, needs_model, reference, teacher_forced_logprobs  # noqa: F401

SYSTEM = (
    "You are one agent of a team answering questions. Answer briefly and exactly. If you do not know, say so. "
    "Prefer numbers to words, and name your sources when you have any. "
) * 3


def team(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


def cached(reply: dict[str, Any]) -> int:
    return reply["usage"]["prompt_tokens_details"]["cached_tokens"]


@pytest.fixture(scope="module")
def uncached():
    """A llama.cpp server without prefix reuse: what the same requests give when every prompt is fed whole."""
    if not (MODEL_DIR / "config.json").is_file():
        pytest.skip(f"no converted default model at {MODEL_DIR}")
    srv = Server(
        "--model",
        str(MODEL_DIR),
        "--served-name",
        NAME,
        "--max-batch-size",
        "4",
        "--no-prefix-cache",
        *engine_args("llama.cpp"),
    )
    yield srv
    srv.stop()


def llama_only(server: Server) -> None:
    if server.engine != "llama.cpp":
        pytest.skip("the transformers engine keeps no KV cache between requests")


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0 and common_prefix([5], [6]) == 0


class KvStub:
    """The KV cache calls PrefixCache makes, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []

    def trim(self, seq: int, keep: int) -> bool:
        self.calls.append(("trim", seq, keep))
        return True

    def drop(self, seq: int) -> None:
        self.calls.append(("drop", seq, None))


def test_a_claim_without_a_prompt_reuses_nothing_and_clears_what_was_kept():
    """A sibling of n > 1 and a prompt scored for prompt_logprobs claim an id with no prompt: none of a kept cache
    on it counts as theirs (it used to count -1 tokens, from a prefix limit of len(prompt) - 1)."""
    kv = KvStub()
    cache = PrefixCache(kv, True)
    cache.keep(0, "base", [1, 2, 3])
    free = [0, 1]
    assert cache.claim(free, (), "base") == (0, 0)
    assert kv.calls == [("drop", 0, None)] and free == [1]
    assert cache.stats()["prefix_cache_reused_tokens"] == 0
    cache.keep(0, "base", [1, 2, 3])
    assert cache.claim([0, 1], [1, 2, 3, 4], "base") == (0, 3)  # a prompt that starts like it still reuses it


@needs_model
def test_a_repeated_prompt_feeds_only_its_last_token_and_answers_the_same(server: Server, uncached: Server, reference):
    llama_only(server)
    _, model = reference
    body = {"messages": team("What is 12 times 12?"), "max_tokens": 12, "logprobs": True, "return_token_ids": True}
    first, again = server.chat(**body), server.chat(**body)
    prompt = again["usage"]["prompt_tokens"]
    assert cached(first) < prompt - 1 and cached(again) == prompt - 1, (first["usage"], again["usage"])
    want = uncached.chat(**body)
    assert cached(want) == 0
    for reply in (first, again):
        assert reply["choices"][0]["token_ids"] == want["choices"][0]["token_ids"]
    lps = [e["logprob"] for e in again["choices"][0]["logprobs"]["content"]]
    ids = again["choices"][0]["token_ids"]
    assert lps == pytest.approx(teacher_forced_logprobs(model, again["prompt_token_ids"], ids, 1.0), abs=2e-3)


@needs_model
def test_concurrent_prompts_with_one_start_share_it_and_running_ids_stay_together(server: Server, uncached: Server):
    """Four requests with the same long system prompt arrive together: one feeds it, the others copy it. The first
    ends early, below the others: the highest running sequence moves into its id. Greedy answers are unchanged."""
    llama_only(server)
    questions = ["Name a prime number.", "What is the capital of Italy?", "How many days has a week?", "Name a color."]
    bodies = [
        {"messages": team(q), "max_tokens": 16 if i == 0 else 48, "ignore_eos": True, "return_token_ids": True}
        for i, q in enumerate(questions)
    ]
    want = [uncached.chat(**b)["choices"][0]["message"]["content"] for b in bodies]
    before = server.get("/stats")[1]
    with ThreadPoolExecutor(len(bodies)) as pool:
        first = pool.submit(server.chat, **bodies[0])
        time.sleep(0.1)
        rest = list(pool.map(lambda b: server.chat(**b), bodies[1:]))
        replies = [first.result(), *rest]
    assert [r["choices"][0]["message"]["content"] for r in replies] == want
    prompts = [r["prompt_token_ids"] for r in replies]
    shared = min(common_prefix(prompts[0], p) for p in prompts[1:])  # the system prompt and the template around it
    assert shared > 100 and all(cached(r) >= shared for r in rest), [r["usage"] for r in replies]
    after = server.get("/stats")[1]
    assert after["prefix_cache"] is True and after["running"] == 0
    assert after["prefix_cache_reused_requests"] >= before["prefix_cache_reused_requests"] + 3
    assert after["compactions"] > before["compactions"], (before, after)


@needs_model
def test_a_kept_cache_is_not_reused_after_the_weights_change(server: Server):
    """Adapters loaded or dropped (any change under the model guard, as POST /threads) retire every kept cache."""
    llama_only(server)
    body = {"messages": team("What is 3 plus 4?"), "max_tokens": 4}
    server.chat(**body)
    again = server.chat(**body)
    assert cached(again) == again["usage"]["prompt_tokens"] - 1
    threads = server.get("/stats")[1]["threads"]
    assert server.post({"threads": threads}, path="/threads")[0] == 200
    assert cached(server.chat(**body)) == 0


@needs_model
def test_without_prefix_reuse_nothing_is_kept(uncached: Server):
    body = {"messages": team("Name a river."), "max_tokens": 4}
    assert [cached(uncached.chat(**body)) for _ in range(2)] == [0, 0]
    stats = uncached.get("/stats")[1]
    assert stats["prefix_cache"] is False and stats["prefix_cache_kept"] == 0
