"""Generated request bodies for the serve fuzz suite: a valid small chat request with one field given a value of
another type or shape (`junk`), and the request as JSON text with raw tokens JSON's own dumper will not write
(NaN, a 5,000-digit number, a lone surrogate escape)."""

from __future__ import annotations

import json
import random
from typing import Any

NAME = "fuzz-model"
MESSAGES = [{"role": "user", "content": "Say hello."}]
TOOL = {
    "type": "function",
    "function": {
        "name": "f",
        "description": "A tool.",
        "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
    },
}
# the chat fields and what a valid request needs beside each (`param` names the field; the others may be named too)
FIELDS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "messages": ({}, ()),
    "model": ({}, ()),
    "temperature": ({}, ()),
    "top_p": ({}, ()),
    "max_tokens": ({}, ()),
    "max_completion_tokens": ({}, ()),
    "n": ({}, ()),
    "seed": ({}, ()),
    "stop": ({}, ()),
    "stop_token_ids": ({}, ()),
    "logprobs": ({}, ()),
    "top_logprobs": ({"logprobs": True}, ()),
    "stream": ({}, ()),
    "stream_options": ({"stream": True}, ()),
    "tools": ({"tool_choice": "auto"}, ("tool_choice",)),
    "tool_choice": ({"tools": [TOOL]}, ()),
    "response_format": ({}, ()),
    "parallel_tool_calls": ({"tools": [TOOL]}, ()),
    "return_token_ids": ({}, ()),
    "ignore_eos": ({}, ()),
}


class Raw:
    """JSON text written as is."""

    def __init__(self, text: str) -> None:
        self.text = text


def base(**extra: Any) -> dict[str, Any]:
    """A valid request that ends within a few tokens: max_tokens 2, or a stop at the first space or newline."""
    return {"model": NAME, "messages": MESSAGES, "temperature": 0, "max_tokens": 2, "stop": [" ", "\n"], **extra}


def dumps(value: Any) -> bytes:
    raws: list[str] = []

    def swap(v: Any) -> Any:
        if isinstance(v, Raw):
            raws.append(v.text)
            return f"\x00raw{len(raws) - 1}\x00"
        if isinstance(v, dict):
            return {swap(k): swap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(value))
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00raw{i}\x00"), raw)
    return text.encode("utf-8")


STRINGS = [
    "",
    "x",
    "auto",
    "none",
    "required",
    "text",
    "json_object",
    "json_schema",
    "function",
    "user",
    "system",
    "assistant",
    "tool",
    NAME,
    "\x00",
    "é漢字🙂",
    "<tool_call>",
    "{}",
    "null",
    "-1",
]
INTS = [0, 1, -1, 2, 3, 16, 17, 20, 21, 64, 65, 128, 129, 2**31, 2**63, -(2**63), 10**40]
FLOATS = [0.0, -0.0, 0.5, 1.5, 2.0, 2.5, -1.5, 1e308, 5e-324, 1e-6]


def junk(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(11 if depth < 3 else 7)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice(INTS)
    if kind == 2:
        return rng.choice(FLOATS)
    if kind == 3:
        return rng.choice(STRINGS) if rng.random() < 0.8 else "ab " * rng.randrange(1, 800)
    if kind == 4:
        return Raw(rng.choice(["NaN", "Infinity", "-Infinity", "1e999", "-0", "9" * rng.choice([30, 5000])]))
    if kind == 5:
        return Raw(rng.choice(['"\\ud800"', '"a\\udfff"', '"\\u0000"']))
    if kind == 6:
        return rng.choice([[], {}])
    if kind in (7, 8):
        return [junk(rng, depth + 1) for _ in range(rng.randrange(1, 4))]
    return {
        rng.choice(["type", "function", "name", "role", "content", "x", "schema"]): junk(rng, depth + 1)
        for _ in range(rng.randrange(1, 4))
    }


def schema(rng: random.Random, depth: int = 0) -> Any:
    """A JSON Schema, sometimes valid, for tools and response_format (the grammar converter's input)."""
    if depth > 2 or rng.random() < 0.2:
        return junk(rng, 2)
    keys = {
        "type": lambda: rng.choice(
            ["object", "string", "integer", "number", "array", "boolean", "null", "x", 5, ["string", "null"]]
        ),
        "properties": lambda: (
            {rng.choice(["a", "b", ""]): schema(rng, depth + 1)} if rng.random() < 0.8 else junk(rng, 2)
        ),
        "required": lambda: rng.choice([["a"], ["zz"], 5, "a", []]),
        "items": lambda: schema(rng, depth + 1),
        "enum": lambda: rng.choice([["a", 1], [], "x", [None]]),
        "minLength": lambda: rng.choice(INTS + ["1"]),
        "maxLength": lambda: rng.choice(INTS),
        "minItems": lambda: rng.choice(INTS),
        "maxItems": lambda: rng.choice(INTS),
        "minimum": lambda: rng.choice(INTS + FLOATS),
        "pattern": lambda: rng.choice(["^a+$", "((", "a", "^[$"]),
        "$ref": lambda: rng.choice(["#/x", "#", "#/properties/a"]),
        "additionalProperties": lambda: junk(rng, 2),
        "anyOf": lambda: [schema(rng, depth + 1)],
        "format": lambda: rng.choice(["date", "uuid", "x"]),
    }
    return {k: keys[k]() for k in rng.sample(sorted(keys), rng.randrange(1, 4))}


def field_value(rng: random.Random, name: str) -> Any:
    """A value for `name`: shaped like the field about half the time, otherwise anything."""
    if rng.random() < 0.4:
        return junk(rng)
    if name == "messages":
        message = {"role": rng.choice(["user", "assistant", "system", "tool", junk(rng, 2)]), "content": junk(rng, 1)}
        if rng.random() < 0.3:
            message["tool_calls"] = rng.choice(
                [junk(rng, 1), [{"function": {"name": junk(rng, 2), "arguments": junk(rng, 2)}}]]
            )
        if rng.random() < 0.2:
            message["content"] = [{"type": rng.choice(["text", "image_url", junk(rng, 2)]), "text": junk(rng, 2)}]
        return rng.choice([[message], [*MESSAGES, message], [message, *MESSAGES]])
    if name == "tools":
        fn = {
            "name": rng.choice(["f", "g", "bad name", "", junk(rng, 2)]),
            "description": junk(rng, 2),
            "parameters": schema(rng),
        }
        return [{"type": rng.choice(["function", junk(rng, 2)]), "function": fn}][: rng.randrange(2)] or [fn]
    if name == "tool_choice":
        return rng.choice(
            [
                {"type": "function", "function": {"name": junk(rng, 1)}},
                {"type": "allowed_tools", "allowed_tools": {"mode": junk(rng, 2), "tools": junk(rng, 1)}},
                {"type": "function", "function": {"name": "f"}},
                "required",
                "none",
            ]
        )
    if name == "response_format":
        return rng.choice(
            [
                {"type": junk(rng, 2)},
                {"type": "json_schema", "json_schema": junk(rng, 1)},
                {"type": "json_schema", "json_schema": {"schema": schema(rng)}},
                {"type": "json_object"},
            ]
        )
    if name == "stream_options":
        return {"include_usage": junk(rng, 2)}
    if name in ("stop", "stop_token_ids"):
        return [junk(rng, 2) for _ in range(rng.randrange(1, 20))]
    return junk(rng, 1)
