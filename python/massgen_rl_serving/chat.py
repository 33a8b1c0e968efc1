"""A chat request made ready for an engine: the messages rendered (tools in the model's own template, or the
generic format of tool_calls.py), the prompt's token ids, one row per sample, and the grammar each row is
decoded under (llama.cpp engine: a tool call once required or begun, or the response_format's JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .adapters import BatchKey
from .errors import ApiError
from .openai_api import ChatRequest
from .sampling import Row, Stream, sample_seed
from .tool_calls import TRIGGER_PATTERN, Tool, call_grammar, native_tools, render_generic, render_native, schema_grammar


@dataclass
class Prepared:
    req: ChatRequest
    prompt_ids: list[int]
    rows: list[Row]
    key: BatchKey


def prepare(
    engine: Any, req: ChatRequest, slot: str | None, default_max_tokens: int, stream: Stream | None = None
) -> Prepared:
    grammar = grammar_of(engine, req)  # before the template: a bad schema is the client's error, not ours
    native = req.tools and native_tools(getattr(engine.tokenizer, "chat_template", None))
    if native:
        tools = [{"type": "function", "function": t.spec()} for t in req.tools] if req.tool_choice != "none" else None
        prompt_ids = engine.prompt_ids(render_native(req.messages), tools=tools)
    else:
        prompt_ids = engine.prompt_ids(render_generic(req.messages, req.tools, req.tool_choice))
    room = engine.context_len - len(prompt_ids)
    if room < 1:
        raise ApiError(
            400,
            f"the prompt is {len(prompt_ids)} tokens; the model's context is {engine.context_len} tokens",
            param="messages",
            code="context_length_exceeded",
        )
    max_tokens = min(req.max_tokens or default_max_tokens, room)
    rows = [
        Row(
            prompt_ids=prompt_ids,
            max_tokens=max_tokens,
            stop=tuple(req.stop),
            stop_token_ids=frozenset(req.stop_token_ids),
            seed=sample_seed(req.seed, k),
            want_logprobs=req.logprobs,
            top_logprobs=req.top_logprobs,
            prompt_logprobs=req.prompt_logprobs,
            ignore_eos=req.ignore_eos,
            grammar=grammar() if grammar else None,
            stream=stream,
            index=k,
        )
        for k in range(req.n)
    ]
    return Prepared(req, prompt_ids, rows, BatchKey(req.sampling_key, slot))


def grammar_of(engine: Any, req: ChatRequest) -> Any:
    """A factory of one row's grammar (each sample keeps its own state), or None: decoding is free."""
    if req.response_format is not None and req.calls_tools:
        raise ApiError(
            400,
            "'response_format' and tool calls cannot be combined here; send tool_choice none, or no response_format",
            param="response_format",
        )
    constrains = req.response_format is not None or (req.calls_tools and req.call_required)
    if not hasattr(engine, "llama"):
        if req.response_format is not None:
            raise ApiError(
                400,
                f"'response_format' needs grammar-constrained decoding, which the "
                f"{engine.describe()['engine']} engine does not have; serve with --engine llama.cpp",
                param="response_format",
            )
        return None  # tool calls are parsed out of free text
    if req.response_format is not None:
        text, lazy = _json_grammar(json.dumps(req.response_format, sort_keys=True)), None
    elif req.calls_tools:
        tools = json.dumps([t.spec() for t in req.callable])  # key order kept: the order properties are written in
        text = _tools_grammar(tools, req.parallel_tool_calls)
        lazy = None if constrains else [TRIGGER_PATTERN]
    else:
        return None
    param = "response_format" if req.response_format is not None else "tools"
    from .grammar import Grammar

    # each row parses its own (a grammar llama.cpp refuses is a 400 from the first, before anything is queued)
    return lambda: Grammar(engine.llama, text, lazy, param)


@lru_cache(maxsize=64)
def _tools_grammar(tools_json: str, parallel: bool) -> str:
    return call_grammar([Tool(t["name"], t["description"], t["parameters"]) for t in json.loads(tools_json)], parallel)


@lru_cache(maxsize=64)
def _json_grammar(format_json: str) -> str:
    fmt = json.loads(format_json)
    if fmt["type"] == "json_object":
        from llama_cpp.llama_grammar import JSON_GBNF

        return JSON_GBNF
    return schema_grammar(fmt["schema"], "response_format")
