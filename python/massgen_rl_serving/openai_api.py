"""The OpenAI chat-completions wire format of `serve`: request validation and response building.

No torch here: everything is plain data, so it is unit-testable without a model.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError
from .request_tools import parse_response_format, parse_tools
from .tool_calls import Tool, parse_calls

# vLLM treats temperatures below this as greedy decoding; so do we.
GREEDY_BELOW = 1e-5
MAX_N = 64
MAX_TOP_LOGPROBS = 20
MAX_STOP = 16


@dataclass(frozen=True)
class SamplingKey:
    """What a batch must share: requests with equal keys may be generated together."""

    greedy: bool
    temperature: float
    top_p: float


@dataclass
class ChatRequest:
    """A validated chat-completions request (only the fields this server acts on)."""

    messages: list[dict[str, Any]]
    model: str
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    n: int = 1
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    # vLLM's extension: the logprob of every prompt token under the model given the tokens before it, with this
    # many most likely alternatives (None: not asked)
    prompt_logprobs: int | None = None
    return_token_ids: bool = False
    ignore_eos: bool = False
    stream: bool = False
    include_usage: bool = False
    tools: list[Tool] = field(default_factory=list)
    tool_choice: Any = "auto"  # "none" | "auto" | "required" | {"name": str} | {"allowed": [str], "mode": str}
    parallel_tool_calls: bool = True
    response_format: dict[str, Any] | None = None  # {"type": "json_object"} or {"type": "json_schema", "schema"}

    @property
    def callable(self) -> list[Tool]:
        """The tools a reply may call: all, none, the named one, or the allowed_tools."""
        choice = self.tool_choice
        if choice == "none":
            return []
        if isinstance(choice, dict):
            names = [choice["name"]] if "name" in choice else choice["allowed"]
            return [t for t in self.tools if t.name in names]
        return list(self.tools)

    @property
    def calls_tools(self) -> bool:
        """Whether the reply may hold tool calls (parsed out of the text)."""
        return bool(self.callable)

    @property
    def call_required(self) -> bool:
        """The reply must be calls: required, a named function, or allowed_tools in mode required."""
        choice = self.tool_choice
        return choice == "required" or (isinstance(choice, dict) and choice.get("mode", "required") == "required")

    @property
    def sampling_key(self) -> SamplingKey:
        if self.temperature < GREEDY_BELOW:
            return SamplingKey(True, 0.0, 1.0)  # top_p means nothing to argmax
        return SamplingKey(False, self.temperature, self.top_p)


def _number(body: dict[str, Any], name: str, default: float, lo: float, hi: float, *, lo_open: bool = False) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ApiError(400, f"'{name}' must be a number", param=name)
    if value > hi or value < lo or (lo_open and value == lo):
        raise ApiError(400, f"'{name}' must be {'>' if lo_open else '>='} {lo} and <= {hi}, got {value}", param=name)
    return float(value)


def _integer(body: dict[str, Any], name: str, lo: int, hi: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"'{name}' must be an integer", param=name)
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise ApiError(400, f"'{name}' must be {bound}, got {value}", param=name)
    return value


def _flag(body: dict[str, Any], name: str, param: str | None = None) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ApiError(400, f"'{name}' must be true or false", param=param or name)
    return value


def _content(value: Any, where: str) -> str:
    """OpenAI content: a string, null, or a list of parts of which only text parts are accepted."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise ApiError(400, f"{where}: only text content parts are supported", param="messages")
            texts.append(part["text"])
        return "".join(texts)
    raise ApiError(400, f"{where}: content must be a string, null or a list of text parts", param="messages")


def normalize_messages(value: Any) -> list[dict[str, Any]]:
    """Messages as chat templates expect them: {role, content: str}, plus name/tool_call_id when given."""
    if not isinstance(value, list) or not value:
        raise ApiError(400, "'messages' is required: a non-empty list of {role, content} objects", param="messages")
    out = []
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise ApiError(400, f"{where} must be an object", param="messages")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise ApiError(400, f"{where}.role must be a non-empty string", param="messages")
        clean: dict[str, Any] = {"role": role, "content": _content(message.get("content"), where)}
        for key in ("name", "tool_call_id"):
            if isinstance(message.get(key), str):
                clean[key] = message[key]
        if message.get("tool_calls") is not None:
            clean["tool_calls"] = _history_calls(message["tool_calls"], where)
        out.append(clean)
    return out


def _history_calls(value: Any, where: str) -> list[dict[str, Any]]:
    """An assistant message's tool_calls: [{id, type: function, function: {name, arguments: str}}]."""
    if not isinstance(value, list):
        raise ApiError(400, f"{where}.tool_calls must be a list", param="messages")
    calls = []
    for j, call in enumerate(value):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ApiError(400, f"{where}.tool_calls[{j}] needs function.name", param="messages")
        args = fn.get("arguments", "")
        if not isinstance(args, (str, dict)):
            raise ApiError(400, f"{where}.tool_calls[{j}].function.arguments must be a string", param="messages")
        calls.append(
            {
                "id": call.get("id") if isinstance(call.get("id"), str) else f"call_{j}",
                "type": "function",
                "function": {"name": fn["name"], "arguments": args},
            }
        )
    return calls


def parse_chat_request(body: Any, served_name: str) -> ChatRequest:
    """Validate a decoded JSON body; raises ApiError (400). Whether the model exists is the caller's check
    (the served name or a loaded adapter: adapters.py)."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    model = body.get("model")
    if model is None:
        model = served_name  # like vLLM: a missing model means the served one
    if not isinstance(model, str):
        raise ApiError(400, "'model' must be a string", param="model")
    messages = normalize_messages(body.get("messages"))
    stream = _flag(body, "stream")
    options = body.get("stream_options")
    if options is not None and (not isinstance(options, dict) or not stream):
        raise ApiError(400, "'stream_options' must be an object, and only with stream: true", param="stream_options")
    include_usage = _flag(options or {}, "include_usage", "stream_options")

    max_tokens = _integer(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1)
    stop = body.get("stop")
    if stop is None:
        stops: list[str] = []
    elif isinstance(stop, str):
        stops = [stop]
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = list(stop)
    else:
        raise ApiError(400, "'stop' must be a string or a list of strings", param="stop")
    stops = [s for s in stops if s]
    if len(stops) > MAX_STOP:
        raise ApiError(400, f"at most {MAX_STOP} stop strings are supported", param="stop")
    stop_ids = body.get("stop_token_ids")  # vLLM extension
    if stop_ids is None:
        stop_ids = []
    elif not (
        isinstance(stop_ids, list) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in stop_ids)
    ):
        raise ApiError(400, "'stop_token_ids' must be a list of token ids", param="stop_token_ids")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ApiError(400, "'seed' must be an integer", param="seed")
    top_logprobs = _integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS) or 0
    logprobs = _flag(body, "logprobs")
    if top_logprobs and not logprobs:
        raise ApiError(400, "'top_logprobs' needs 'logprobs': true", param="top_logprobs")
    prompt_logprobs = _integer(body, "prompt_logprobs", 0, MAX_TOP_LOGPROBS)
    if prompt_logprobs is not None and stream:
        raise ApiError(400, "'prompt_logprobs' is not supported with stream: true", param="prompt_logprobs")
    tools, tool_choice = parse_tools(body)
    return ChatRequest(
        messages=messages,
        model=model,
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0, lo_open=True),
        max_tokens=max_tokens,
        n=_integer(body, "n", 1, MAX_N) or 1,
        stop=stops,
        stop_token_ids=list(stop_ids),
        seed=seed,
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        prompt_logprobs=prompt_logprobs,
        return_token_ids=_flag(body, "return_token_ids"),
        ignore_eos=_flag(body, "ignore_eos"),
        stream=stream,
        include_usage=include_usage,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=_flag(body, "parallel_tool_calls") if body.get("parallel_tool_calls") is not None else True,
        response_format=parse_response_format(body.get("response_format")),
    )


@dataclass
class Completion:
    """One generated sample, as the engine reports it."""

    token_ids: list[int]
    text: str
    finish_reason: str  # "stop" | "length"
    logprobs: list[float] | None = None
    tokens: list[str] | None = None  # the text of each token (for logprobs)
    top_logprobs: list[list[tuple[str, float]]] | None = None
    cached_tokens: int = 0  # prompt tokens an earlier request left in the KV cache
    # the request's prompt_logprobs in vLLM's shape (on the first sample of a request that asked for them)
    prompt_logprobs: list[dict[str, Any] | None] | None = None


def logprobs_content(c: Completion, top: int) -> dict[str, Any]:
    assert c.logprobs is not None and c.tokens is not None
    entries = []
    for i, (token, logprob) in enumerate(zip(c.tokens, c.logprobs)):
        alternatives = []
        if top and c.top_logprobs is not None:
            alternatives = [{"token": t, "logprob": lp, "bytes": None} for t, lp in c.top_logprobs[i][:top]]
        entries.append({"token": token, "logprob": logprob, "bytes": None, "top_logprobs": alternatives})
    return {"content": entries}


def reply_message(req: ChatRequest, text: str, finish: str) -> tuple[dict[str, Any], str]:
    """The assistant message of a completion: its tool calls parsed out of the text when the request has tools."""
    if not req.calls_tools:
        return {"role": "assistant", "content": text}, finish
    content, calls = parse_calls(text, req.callable, cut=finish == "length")
    if not req.parallel_tool_calls:
        calls = calls[:1]
    if not calls:
        return {"role": "assistant", "content": text}, finish
    wire = [
        {"id": new_call_id(), "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
    ]
    return {"role": "assistant", "content": content, "tool_calls": wire}, "tool_calls" if finish == "stop" else finish


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }


def build_response(
    req: ChatRequest, prompt_ids: list[int], completions: list[Completion], debug: dict[str, Any] | None = None
) -> dict[str, Any]:
    choices = []
    for i, c in enumerate(completions):
        message, finish = reply_message(req, c.text, c.finish_reason)
        choice: dict[str, Any] = {
            "index": i,
            "message": message,
            "logprobs": logprobs_content(c, req.top_logprobs) if req.logprobs else None,
            "finish_reason": finish,
        }
        if req.return_token_ids:
            choice["token_ids"] = list(c.token_ids)
        choices.append(choice)
    completion_tokens = sum(len(c.token_ids) for c in completions)
    response: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.model,
        "choices": choices,
        "usage": usage(len(prompt_ids), completion_tokens, completions[0].cached_tokens if completions else 0),
    }
    if req.return_token_ids:
        response["prompt_token_ids"] = list(prompt_ids)
    if req.prompt_logprobs is not None:
        response["prompt_logprobs"] = completions[0].prompt_logprobs if completions else None
    if debug is not None:
        response["massgen_rl"] = debug
    return response
