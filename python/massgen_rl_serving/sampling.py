"""What both CPU engines of `serve` share: a row to generate, per-sample seeds, and the distribution a
token is drawn from (so the logprob reported for a token is the one of the distribution it came from).

Imports torch: loaded only once a model is being served.
"""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .openai_api import SamplingKey

_seed_source = random.SystemRandom()


@dataclass
class Row:
    """One sequence to generate (a request with n=k contributes k rows)."""

    prompt_ids: list[int]
    max_tokens: int
    stop: Sequence[str] = ()
    stop_token_ids: frozenset[int] = frozenset()
    seed: int | None = None
    want_logprobs: bool = False
    top_logprobs: int = 0
    prompt_logprobs: int | None = None  # the request's (scored once per request, on its first row)
    ignore_eos: bool = False
    grammar: Any = None  # grammar.Grammar: the tokens allowed next (llama.cpp engine)
    stream: Stream | None = None  # streamed requests: each token is reported as it is drawn
    index: int = 0  # the row's choice index in its request


@dataclass
class Stream:
    """What a streamed request's HTTP thread reads: (index, token, logprob, top, finish, cut) per drawn token,
    then None once the request is over; `cancelled` is set when its client went away."""

    events: queue.SimpleQueue[Any] = field(default_factory=queue.SimpleQueue)
    cancelled: threading.Event = field(default_factory=threading.Event)


def sample_seed(seed: int | None, index: int) -> int | None:
    """The seed of sample `index` of a request: sample 0 uses the request's seed itself."""
    if seed is None:
        return None
    return (seed + index * 1_000_003) % (2**63)


def sampling_logprobs(logits: torch.Tensor, key: SamplingKey) -> torch.Tensor:
    """Log-probabilities of the distribution each next token is drawn from.

    Sampling: softmax(logits / temperature), restricted to the top-p nucleus and renormalized, so
    a reported logprob is exactly log P(token) under the distribution actually sampled (what
    vLLM calls processed_logprobs, and what importance ratios in RL need). Greedy decoding
    (temperature 0) has no proper distribution (argmax is a point mass), so it reports the
    model's unscaled distribution, log_softmax(logits) at temperature 1.
    """
    if key.greedy:
        return torch.log_softmax(logits, dim=-1)
    scores = logits / key.temperature
    if key.top_p < 1.0:
        sorted_scores, order = scores.sort(dim=-1, descending=True)
        probs = sorted_scores.softmax(dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs
        # keep the smallest prefix whose mass reaches top_p (the first token is always kept)
        sorted_scores = sorted_scores.masked_fill(mass_before >= key.top_p, float("-inf"))
        scores = torch.empty_like(scores).scatter_(-1, order, sorted_scores)
    return torch.log_softmax(scores, dim=-1)


def new_generator(seed: int | None, device: str = "cpu") -> torch.Generator:
    """A row's random generator: seeded from the request (same seed, same tokens), else from the OS."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed if seed is not None else _seed_source.getrandbits(63))
    return gen
