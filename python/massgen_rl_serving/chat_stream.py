"""A streamed chat completion: the chunks of OpenAI's `chat.completion.chunk` format, made from the tokens a
running job reports (sampling.Stream). The job is a row of the batch like any other; this side only turns
its tokens into text, logprobs and tool-call deltas, coalescing the tokens that arrived since the last chunk.
"""

from __future__ import annotations

import queue
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .openai_api import ChatRequest, new_call_id, usage
from .text_stream import Detokenizer, ToolStream, held_back

IDLE_TIMEOUT_S = 600.0  # no token for this long: the generation thread is gone


@dataclass
class Choice:
    index: int
    detok: Detokenizer
    tools: ToolStream | None
    ids: list[int] = field(default_factory=list)
    text: str = ""  # decoded so far
    sent: int = 0  # characters of `text` passed on
    called: bool = False


def stream_chunks(
    engine: Any, req: ChatRequest, prompt_ids: list[int], stream: Any, job: Any
) -> Iterator[dict[str, Any]]:
    """Yields each chunk as a dict; raises the job's error (the caller sends it as an error event)."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": req.model,
    }
    names = {t.name for t in req.callable}
    choices = [
        Choice(i, Detokenizer(engine.decode), ToolStream(names, new_call_id) if req.calls_tools else None)
        for i in range(req.n)
    ]
    first = {
        **base,
        "choices": [
            {"index": c.index, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
            for c in choices
        ],
    }
    if req.return_token_ids:
        first["prompt_token_ids"] = list(prompt_ids)
    yield first
    while True:
        events = _next_events(stream)
        over = events and events[-1] is None
        per_choice: dict[int, list[tuple]] = {}
        for event in events:
            if event is not None:
                per_choice.setdefault(event[0], []).append(event)
        for index, evs in sorted(per_choice.items()):
            chunk = _choice_chunk(engine, req, choices[index], evs)
            if chunk is not None:
                yield {**base, "choices": [chunk]}
        if over:
            break
    if job.error is not None:
        raise job.error
    if req.include_usage:
        completion = sum(len(c.ids) for c in choices)
        seqs = getattr(job, "seqs", None)  # the transformers engine keeps no cache between requests
        cached = seqs[0].cached if seqs else 0
        yield {**base, "choices": [], "usage": usage(len(prompt_ids), completion, cached)}


def _next_events(stream: Any) -> list[Any]:
    """Blocks for the next event, then takes every one already queued (None, the end, comes last)."""
    try:
        events = [stream.events.get(timeout=IDLE_TIMEOUT_S)]
    except queue.Empty:
        raise TimeoutError("the generation thread stopped reporting tokens") from None
    while events[-1] is not None:
        try:
            events.append(stream.events.get_nowait())
        except queue.Empty:
            break
    return events


def _choice_chunk(engine: Any, req: ChatRequest, c: Choice, events: list[tuple]) -> dict[str, Any] | None:
    tokens = [e[1] for e in events]
    for token in tokens:
        c.ids.append(token)
        c.text += c.detok.push(token)
    finish, cut = events[-1][4], events[-1][5]
    if finish is not None:
        full = engine.decode(c.ids)
        if cut is not None:
            full = full[:cut]
        c.text = full if full.startswith(c.text[: c.sent]) else c.text
        upto = len(c.text)
    else:
        upto = len(c.text) - held_back(c.text, req.stop)
    piece, c.sent = c.text[c.sent : upto] if upto > c.sent else "", max(c.sent, upto)
    delta: dict[str, Any] = {}
    if c.tools is not None:
        content, calls = c.tools.feed(piece, final=finish is not None)
        if content:
            delta["content"] = content
        if calls:
            c.called = True
            delta["tool_calls"] = [d.wire() for d in calls]
    elif piece:
        delta["content"] = piece
    out: dict[str, Any] = {"index": c.index, "delta": delta, "logprobs": None, "finish_reason": None}
    if req.logprobs:
        texts = engine.token_texts(tokens)
        out["logprobs"] = {"content": [_logprob(engine, t, e, req.top_logprobs) for t, e in zip(texts, events)]}
    if req.return_token_ids:
        out["token_ids"] = tokens
    if finish is not None:
        out["finish_reason"] = "tool_calls" if c.called and finish == "stop" else finish
    elif not delta and not req.logprobs and not req.return_token_ids:
        return None
    return out


def _logprob(engine: Any, text: str, event: tuple, top: int) -> dict[str, Any]:
    alternatives = []
    if top and event[3]:
        names = engine.token_texts([t for t, _ in event[3]])
        alternatives = [{"token": n, "logprob": v, "bytes": None} for n, (_, v) in zip(names, event[3][:top])]
    return {"token": text, "logprob": event[2], "bytes": None, "top_logprobs": alternatives}
