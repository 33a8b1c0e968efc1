"""The request-level categories of the serve fuzz suite: each runner sends one generated case to the server and
returns a label of its outcome; a broken promise is an AssertionError (fuzz_support.check)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from fuzz_cases import FIELDS, Raw, base, dumps, field_value, junk
from fuzz_support import Answer, check, check_stream, exchange, request, source

MAX_JSON_DEPTH = 100


@dataclass
class Ctx:
    port: int
    pid: int
    limits: dict[str, Any]
    context: int  # tokens a request's prompt and completion may take
    max_batch: int
    adapter: str  # a LoRA adapter's lora_name, and its folder
    adapter_path: str


def post(ctx: Ctx, index: int, body: bytes, path: str = "/v1/chat/completions", **headers: str) -> Answer:
    return exchange(ctx.port, request("POST", path, body, headers), source(index))


def accepted(answer: Answer, **params: Any) -> str:
    """check(), and a 200 holds a completion (or a whole stream)."""
    label = check(answer, **params)
    if answer.status == 200:
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            check_stream(answer)
        else:
            assert "choices" in answer.json() or "status" in answer.json() or "threads" in answer.json()
    return label


def body_level(answer: Answer) -> bool:
    """An error about the body as a whole (not JSON, a 5,000-digit number, too deep) or the prompt's length."""
    if answer.status not in (400, 413):
        return False
    error = answer.json()["error"]
    return error["message"].startswith("the request body") or error["code"] == "context_length_exceeded"


def wrong_type(ctx: Ctx, rng: random.Random, index: int) -> str:
    name = rng.choice(sorted(FIELDS))
    extra, also = FIELDS[name]
    body = base(**extra)
    body[name] = field_value(rng, name)
    answer = post(ctx, index, dumps(body))
    label = accepted(answer, params=None if body_level(answer) else (name, *also))
    return f"{name}:{label}"


def malformed_json(ctx: Ctx, rng: random.Random, index: int) -> str:
    text = bytearray(dumps(base(logprobs=rng.random() < 0.5)))
    op = rng.randrange(7)
    at = rng.randrange(len(text))
    if op == 0:
        del text[at:]
    elif op == 1:
        del text[at]
    elif op == 2:
        text.insert(at, ord(rng.choice('{}[]",:\\ 0-9eE.tfn')))
    elif op == 3:
        text[at] = ord(rng.choice('{}[]",:\\ x'))
    elif op == 4:
        text[at:at] = text[rng.randrange(len(text)) :][: rng.randrange(1, 40)]
    elif op == 5:
        text = bytearray(rng.choice([b"", b" ", b"null", b"[]", b"1", b'"x"', b"{", b"}", b"{}", b"tru"]))
    else:
        text = bytearray(rng.randbytes(rng.randrange(1, 300)))
    return accepted(post(ctx, index, bytes(text)))


def invalid_utf8(ctx: Ctx, rng: random.Random, index: int) -> str:
    text = dumps(base())
    at = text.index(b"Say hello") + rng.randrange(9)
    bad = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82"])
    answer = post(ctx, index, text[:at] + bad + text[at:])
    assert answer.status == 400 and "UTF-8" in answer.json()["error"]["message"], answer.body[:300]
    return accepted(answer)


def lone_surrogate(ctx: Ctx, rng: random.Random, index: int) -> str:
    bad = Raw(rng.choice(['"\\ud800"', '"x\\udfff"', '"\\udc80\\u00e9"']))
    name = rng.choice(["model", "messages", "stop", "tools", "response_format", "x-unknown", "key"])
    body = base()
    if name == "messages":
        body[name] = [{"role": "user", "content": bad}]
    elif name == "stop":
        body[name] = [bad]
    elif name == "tools":
        body[name] = [{"type": "function", "function": {"name": "f", "description": bad}}]
    elif name == "response_format":
        body[name] = {"type": "json_schema", "json_schema": {"schema": {"enum": [bad]}}}
    elif name == "key":
        body[Raw('"\\ud801k"')], name = 1, "\ud801k"  # type: ignore[index]
    else:
        body[name] = bad
    answer = post(ctx, index, dumps(body))
    assert answer.status == 400 and "surrogate" in answer.json()["error"]["message"], answer.body[:300]
    return accepted(answer, params=(name,))


def deep_json(ctx: Ctx, rng: random.Random, index: int) -> str:
    depth = rng.choice([MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, 500, 999, 5000, 100_000])
    where = rng.choice(["x-unknown", "messages", "tools"])
    deep = "[" * depth + "]" * depth
    text = dumps(base()).replace(b'"temperature"', f'"{where}": {deep}, "temperature"'.encode())
    answer = post(ctx, index, text)
    if where == "x-unknown" and depth + 1 <= MAX_JSON_DEPTH:
        return accepted(answer)
    assert answer.status in (400, 413), answer.body[:300]
    if depth + 1 > MAX_JSON_DEPTH and answer.status == 400:
        assert "levels deep" in answer.json()["error"]["message"], answer.body[:300]
    return accepted(answer, params=(where, None))


UNKNOWN = [
    "foo",
    "",
    "__proto__",
    "constructor",
    "x" * 1000,
    "é",
    "functions",
    "logit_bias",
    "presence_penalty",
    "frequency_penalty",
    "user",
    "metadata",
    "store",
    "service_tier",
    "modalities",
    "reasoning_effort",
]


def unknown_fields(ctx: Ctx, rng: random.Random, index: int) -> str:
    body = base()
    keys = rng.sample(UNKNOWN, rng.randrange(1, 5))
    for key in keys:
        body[key] = junk(rng, 1)
    answer = post(ctx, index, dumps(body))
    return accepted(answer, params=None if body_level(answer) else tuple(keys))


def limits(ctx: Ctx, rng: random.Random, index: int) -> str:
    """n, max_tokens, top_logprobs, stop and tools at their limits and one past them."""
    which = rng.choice(["n", "max_tokens", "top_logprobs", "stop", "tools"])
    past = rng.random() < 0.5
    body = base()
    if which == "n":
        body["n"] = rng.choice([ctx.max_batch + 1, 64, 65]) if past else ctx.max_batch
    elif which == "max_tokens":
        body["max_tokens"] = rng.choice([ctx.context, 10**9]) if past else rng.choice([0, 1, ctx.context - 40])
    elif which == "top_logprobs":
        body.update(logprobs=True, top_logprobs=21 if past else 20)
    elif which == "stop":
        body["stop"] = [f" {i}" for i in range(17 if past else 16)]
    else:
        tool = {"type": "function", "function": {"name": "t", "parameters": {}}}
        tools = [{**tool, "function": {"name": f"t{i}"}} for i in range(129 if past else 128)]
        body.update(tool_choice="none", tools=tools)
    answer = post(ctx, index, dumps(body))
    label = accepted(answer, params=(which, "messages"))
    return f"{which}{'+1' if past else ''}:{label}"
