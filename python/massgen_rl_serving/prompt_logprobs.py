"""vLLM's `prompt_logprobs`: for every prompt token after the first, its logprob under the model given the tokens
before it, its rank, and the request's number of most likely alternatives, each with its text. Scored by the model's
own distribution (temperature 1, no top-p, as vLLM reports them): what a teacher's per-token scores of a text are.

Both engines hand over the logits of a run of prompt positions; the scores are computed a slice at a time, so a long
prompt never holds a float32 log-softmax over the whole vocabulary for all of its positions at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

SLICE = 128  # positions per log-softmax


def score_prompt(
    engine: Any, prompt_ids: Sequence[int], logits: torch.Tensor, start: int, top: int
) -> list[dict[str, Any]]:
    """Entries for the prompt tokens at start + 1 .. start + len(logits): logits[i] is the model's output at prompt
    position start + i, which scores the token after it (a last row past the prompt's end is ignored)."""
    targets = torch.tensor(list(prompt_ids[start + 1 : start + 1 + len(logits)]), dtype=torch.long)
    out: list[dict[str, Any]] = []
    for at in range(0, len(targets), SLICE):
        scores = torch.log_softmax(logits[at : at + SLICE][: len(targets) - at].float(), dim=-1)
        wanted = targets[at : at + SLICE]
        chosen = scores.gather(-1, wanted[:, None]).squeeze(-1)
        ranks = ((scores > chosen[:, None]).sum(dim=-1) + 1).tolist()
        if top:
            top_values, top_ids = scores.topk(top, dim=-1)
            ids, values = top_ids.tolist(), top_values.tolist()
        else:
            ids = values = [[] for _ in range(len(wanted))]
        texts = iter(engine.token_texts([t for row in ids for t in row] + wanted.tolist()))
        alternatives = [[(t, v, next(texts)) for t, v in zip(row, vs)] for row, vs in zip(ids, values)]
        for token, lp, rank, alts in zip(wanted.tolist(), chosen.tolist(), ranks, alternatives):
            entry = {str(token): {"logprob": min(0.0, lp), "rank": rank, "decoded_token": next(texts)}}
            for r, (t, v, text) in enumerate(alts, start=1):
                entry.setdefault(str(t), {"logprob": min(0.0, v), "rank": r, "decoded_token": text})
            out.append(entry)
    return out
