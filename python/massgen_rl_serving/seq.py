"""One running sequence of the continuous batcher, and what a decode step does to it: draw its next token
from the logits (the same sampling as the transformers engine: sampling.py), record the token's logprob,
and decide whether it stopped (end of sequence, a stop token or string, max_tokens)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .openai_api import Completion, SamplingKey
from .sampling import Row, new_generator, sampling_logprobs


@dataclass(eq=False)
class Seq:
    job: Any
    index: int
    row: Row
    seq_id: int
    sampling: SamplingKey
    leader: Seq | None = None  # n > 1: the sibling whose prompt this one copies
    fed: int = 0  # prompt tokens in the KV cache
    cached: int = 0  # of those, how many an earlier request left there (prefix_cache.py)
    source: Seq | None = None  # a running sequence whose first `shared` prompt tokens this one waits to copy
    shared: int = 0
    next_token: int | None = None  # drawn, not yet fed
    ids: list[int] = field(default_factory=list)
    lps: list[float] = field(default_factory=list)
    tops: list[list[tuple[int, float]]] = field(default_factory=list)
    finish: str | None = None
    cut: int | None = None
    dropped: bool = False
    generator: torch.Generator | None = None
    prompt_scores: list[dict[str, Any]] = field(default_factory=list)  # prompt_logprobs, as its positions are fed

    def __post_init__(self) -> None:
        if not self.sampling.greedy:
            self.generator = new_generator(self.row.seed)

    @property
    def position(self) -> int:
        """Where next_token goes in the sequence."""
        return len(self.row.prompt_ids) + len(self.ids) - 1

    def in_cache(self) -> list[int]:
        """The tokens this sequence's KV cache holds between steps."""
        if self.next_token is None:
            return list(self.row.prompt_ids[: self.fed])
        return list(self.row.prompt_ids) + self.ids[:-1]


def sample_step(engine: Any, outputs: Sequence[Sequence[Seq]], logits: np.ndarray) -> None:
    """Draws one token for every row: outputs[i] are the rows that sample from logits row i."""
    groups: dict[SamplingKey, list[tuple[int, Seq]]] = {}
    for i, seqs in enumerate(outputs):
        for seq in seqs:
            groups.setdefault(seq.sampling, []).append((i, seq))
    scores = torch.from_numpy(logits)
    for key, members in groups.items():
        rows = torch.tensor([i for i, _ in members])
        logprobs = sampling_logprobs(scores.index_select(0, rows), key)
        if key.greedy:
            chosen = logprobs.argmax(dim=-1)
        else:
            probs = logprobs.exp()
            chosen = torch.cat(
                [torch.multinomial(probs[b], 1, generator=seq.generator) for b, (_, seq) in enumerate(members)]
            )
        chosen_lp = logprobs.gather(-1, chosen[:, None]).squeeze(-1).tolist()
        want_top = max(seq.row.top_logprobs for _, seq in members)
        top_values = top_ids = None
        if want_top:
            values, ids = logprobs.topk(want_top, dim=-1)
            top_values, top_ids = values.tolist(), ids.tolist()
        for b, (i, seq) in enumerate(members):
            token, lp = int(chosen[b]), chosen_lp[b]
            top = None
            if seq.row.top_logprobs and top_ids is not None and top_values is not None:
                top = [
                    (t, v)
                    for t, v in zip(top_ids[b][: seq.row.top_logprobs], top_values[b][: seq.row.top_logprobs])
                    if v != float("-inf")
                ]
            if seq.row.grammar is not None:
                token, lp, top = constrained(seq, logprobs[b], scores[i], token, lp, top)
            advance(engine, seq, token, lp, top)


CANDIDATES = 256  # tokens checked against the grammar in one call before the whole vocabulary (~0.05 against ~6.5 ms)
LOGPROB_CANDIDATES = 1024  # when logprobs are reported: more of the mass among the candidates
# nats: how far a logprob renormalized over the allowed candidates may be from the exact one (bf16 weights already
# put the engine's logprobs ~2e-3 from the model's)
LOGPROB_SLACK = 1e-3


def constrained(
    seq: Seq, logprobs: torch.Tensor, logits: torch.Tensor, token: int, lp: float, top: list[tuple[int, float]] | None
) -> tuple[int, float, list[tuple[int, float]] | None]:
    """The token drawn under the row's grammar. The draw itself when the grammar takes it; else the best allowed of
    the most likely CANDIDATES tokens (greedy: the masked argmax) or the first allowed of CANDIDATES fresh draws
    (sampling: rejection, the same distribution as drawing from the allowed tokens). A reported logprob is
    renormalized over the allowed tokens; the allowed most likely candidates give that total to LOGPROB_SLACK when
    the rest of the vocabulary holds little enough mass. The whole-vocabulary mask (costly) is the fallback."""
    grammar, row = seq.row.grammar, seq.row
    if not row.want_logprobs and grammar.allows(token):
        grammar.accept(token)
        return token, lp, top
    k = min(LOGPROB_CANDIDATES if row.want_logprobs else CANDIDATES, logprobs.numel())
    if seq.sampling.greedy or row.want_logprobs:
        values, ids = logprobs.topk(k)
        allowed = torch.from_numpy(grammar.allowed_among(ids.numpy()))
    if seq.sampling.greedy:
        picked = int(ids[allowed.nonzero()[0, 0]]) if allowed.any() else None
    else:
        draws = torch.multinomial(logprobs.exp(), k, replacement=True, generator=seq.generator)
        taken = torch.from_numpy(grammar.allowed_among(draws.numpy()))
        picked = int(draws[taken.nonzero()[0, 0]]) if taken.any() else None
    if picked is not None and not row.want_logprobs:
        grammar.accept(picked)
        return picked, float(logprobs[picked]), top
    if picked is not None:
        kept = values[allowed]
        within = float(torch.logsumexp(kept, dim=-1).exp())
        rest = max(0.0, 1.0 - float(values.exp().sum()))  # the mass of the tokens not among the candidates
        # the allowed total is within + (0..rest): its midpoint is within rest / 2 / within nats of the true one
        if rest <= 2 * LOGPROB_SLACK * within and len(kept) >= row.top_logprobs:
            total = torch.tensor(within + rest / 2).log()
            if row.top_logprobs:
                top = [
                    (t, min(0.0, v - float(total)))
                    for t, v in zip(ids[allowed][: row.top_logprobs].tolist(), kept[: row.top_logprobs].tolist())
                    if v != float("-inf")
                ]
            grammar.accept(picked)
            return picked, min(0.0, float(logprobs[picked] - total)), top  # float32 rounding: never above 0
    return _masked(seq, logprobs, logits, token, lp, top)


def _masked(
    seq: Seq, logprobs: torch.Tensor, logits: torch.Tensor, token: int, lp: float, top: list[tuple[int, float]] | None
) -> tuple[int, float, list[tuple[int, float]] | None]:
    """The draw from the allowed tokens of the whole vocabulary."""
    grammar, row = seq.row.grammar, seq.row
    allowed = torch.from_numpy(grammar.mask())
    masked = logprobs.masked_fill(~allowed, float("-inf"))
    if not torch.isfinite(masked).any():  # top-p left no allowed token: the allowed ones at the temperature
        masked = torch.log_softmax(logits / max(seq.sampling.temperature, 1e-5), dim=-1).masked_fill(
            ~allowed, float("-inf")
        )
    if not torch.isfinite(masked).any():  # the grammar allows nothing (cannot happen for a valid grammar)
        seq.finish = "stop"
        return token, lp, top
    masked = masked - torch.logsumexp(masked, dim=-1)
    if seq.sampling.greedy:
        token = int(masked.argmax())
    else:
        token = int(torch.multinomial(masked.exp(), 1, generator=seq.generator))
    if row.top_logprobs:
        values, ids = masked.topk(row.top_logprobs)
        top = [(t, v) for t, v in zip(ids.tolist(), values.tolist()) if v != float("-inf")]
    grammar.accept(token)
    return token, float(masked[token]), top


def advance(engine: Any, seq: Seq, token: int, logprob: float, top: list[tuple[int, float]] | None) -> None:
    row = seq.row
    seq.ids.append(token)
    seq.lps.append(logprob)
    if top is not None:
        seq.tops.append(top)
    seq.next_token = token
    if seq.finish is not None:
        pass
    elif (token in engine.eos_ids and not row.ignore_eos) or token in row.stop_token_ids:
        seq.finish = "stop"
    elif row.grammar is not None and row.grammar.ends(token):
        seq.finish = "stop"
    elif row.stop and (hits := [i for i in (engine.decode(seq.ids).find(s) for s in row.stop) if i >= 0]):
        seq.finish, seq.cut = "stop", min(hits)
    elif len(seq.ids) >= row.max_tokens:
        seq.finish = "length"
    if row.stream is not None:
        row.stream.events.put((row.index, token, logprob, top, seq.finish, seq.cut))


def build_completion(engine: Any, seq: Seq) -> Completion:
    row = seq.row
    text = engine.decode(seq.ids)
    if seq.cut is not None:
        text = text[: seq.cut]
    completion = Completion(
        token_ids=seq.ids, text=text, finish_reason=seq.finish or "length", cached_tokens=seq.job.seqs[0].cached
    )
    if row.prompt_logprobs is not None and seq.index == 0:
        completion.prompt_logprobs = [None, *seq.prompt_scores]
    if row.want_logprobs:
        completion.logprobs = seq.lps
        completion.tokens = engine.token_texts(seq.ids)
        if row.top_logprobs:
            completion.top_logprobs = [
                list(zip(engine.token_texts([t for t, _ in step]), [v for _, v in step])) for step in seq.tops
            ]
    return completion
