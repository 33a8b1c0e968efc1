"""`serve` on the real default model, both CPU engines: streaming, tool calls and structured output."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from serve_support import NAME, QUESTION, Server, needs_model

VOTE = {
    "type": "function",
    "function": {
        "name": "vote",
        "description": "Vote for the best answer.",
        "parameters": {
            "type": "object",
            "properties": {"agent_id": {"type": "string", "enum": ["agent1", "agent2"]}, "reason": {"type": "string"}},
            "required": ["agent_id", "reason"],
        },
    },
}
ANSWER = {
    "type": "function",
    "function": {
        "name": "new_answer",
        "description": "Give an answer.",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]},
    },
}


def joined(chunks: list[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    """The streamed choice put back together: content, tool calls, logprobs, token ids, finish reason."""
    out: dict[str, Any] = {"content": "", "calls": {}, "logprobs": [], "token_ids": [], "finish_reason": None}
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            if choice["index"] != index:
                continue
            delta = choice["delta"]
            out["content"] += delta.get("content") or ""
            for call in delta.get("tool_calls", []):
                slot = out["calls"].setdefault(call["index"], {"name": "", "arguments": "", "id": None})
                slot["id"] = slot["id"] or call.get("id")
                slot["name"] += call["function"].get("name", "")
                slot["arguments"] += call["function"].get("arguments", "")
            out["logprobs"] += (choice.get("logprobs") or {}).get("content") or []
            out["token_ids"] += choice.get("token_ids") or []
            out["finish_reason"] = choice["finish_reason"] or out["finish_reason"]
    return out


@needs_model
def test_a_stream_is_the_same_completion_as_the_plain_request(server: Server):
    plain = server.chat(max_tokens=24, logprobs=True, return_token_ids=True)
    chunks, ttft = server.stream(
        max_tokens=24, logprobs=True, return_token_ids=True, stream_options={"include_usage": True}
    )
    first, last = chunks[0], chunks[-1]
    assert first["object"] == "chat.completion.chunk" and first["choices"][0]["delta"]["role"] == "assistant"
    assert first["prompt_token_ids"] == plain["prompt_token_ids"] and ttft < 60
    usage = {k: v for k, v in last["usage"].items() if k != "prompt_tokens_details"}
    assert last["choices"] == [] and usage == {k: v for k, v in plain["usage"].items() if k != "prompt_tokens_details"}
    # the same prompt again: llama.cpp feeds only its last token (test_serve_prefix.py)
    reused = last["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert reused == (plain["usage"]["prompt_tokens"] - 1 if server.engine == "llama.cpp" else 0)
    got = joined(chunks)
    want = plain["choices"][0]
    assert got["content"] == want["message"]["content"] and got["finish_reason"] == want["finish_reason"]
    assert got["token_ids"] == want["token_ids"]
    assert [e["logprob"] for e in got["logprobs"]] == pytest.approx(
        [e["logprob"] for e in want["logprobs"]["content"]], abs=1e-4
    )
    assert len({c["id"] for c in chunks}) == 1


@needs_model
def test_streamed_samples_stop_strings_and_errors(server: Server):
    plain = server.chat(n=2, temperature=1.0, seed=7, max_tokens=12)
    chunks, _ = server.stream(n=2, temperature=1.0, seed=7, max_tokens=12)
    for i in range(2):
        assert joined(chunks, i)["content"] == plain["choices"][i]["message"]["content"]
    text = server.chat(max_tokens=20)["choices"][0]["message"]["content"]
    stop = text[4:7]
    got = joined(server.stream(max_tokens=20, stop=[stop])[0])
    assert got["content"] == text[: text.index(stop)] and got["finish_reason"] == "stop"
    status, body = server.post({"model": NAME, "messages": QUESTION, "stream": True, "n": 99})
    assert status == 400 and body["error"]["param"] == "n"


@needs_model
def test_a_client_that_leaves_frees_its_row(server: Server):
    body = json.dumps({"model": NAME, "messages": QUESTION, "max_tokens": 3000, "ignore_eos": True, "stream": True})
    host, port = server.base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host.strip("[]"), int(port))) as sock:
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
        )
        assert b"text/event-stream" in sock.recv(4096)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stats = server.get("/stats")[1]
        if not stats["busy"] and stats.get("running", 0) == 0 and stats["queued"] == 0:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the abandoned stream still runs: {stats}")
    assert server.chat(max_tokens=4)["usage"]["completion_tokens"] <= 4  # and the server goes on serving


@needs_model
def test_required_tool_calls_are_valid_calls(server: Server):
    """tool_choice required: on llama.cpp the grammar makes even the 135M model write a valid call of a known tool
    with arguments that fit its schema; on transformers the call is parsed when the model writes one."""
    r = server.chat(
        tools=[VOTE, ANSWER],
        tool_choice="required",
        max_tokens=120,
        temperature=0.8,
        seed=3,
        parallel_tool_calls=False,
        messages=[{"role": "user", "content": "Answers so far: agent1 says 5, agent2 says 6. What is 2 + 3?"}],
    )
    choice = r["choices"][0]
    if server.engine != "llama.cpp":
        assert choice["finish_reason"] in ("stop", "length", "tool_calls")
        return
    assert choice["finish_reason"] == "tool_calls", choice
    # allowed_tools: the calls limited to some of the tools (a greedy reply here otherwise picks the helper)
    helper = {
        "type": "function",
        "function": {
            "name": "list_background_tools",
            "description": "List jobs.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    allowed = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [
                {"type": "function", "function": {"name": "new_answer"}},
                {"type": "function", "function": {"name": "vote"}},
            ],
        },
    }
    for temperature in (0, 1.0):
        r = server.chat(
            tools=[helper, VOTE, ANSWER],
            tool_choice=allowed,
            max_tokens=120,
            parallel_tool_calls=False,
            temperature=temperature,
            seed=2,
        )
        assert r["choices"][0]["message"]["tool_calls"][0]["function"]["name"] in ("vote", "new_answer"), r
    call = choice["message"]["tool_calls"][0]
    args = json.loads(call["function"]["arguments"])
    assert call["function"]["name"] in ("vote", "new_answer")
    if call["function"]["name"] == "vote":
        assert args["agent_id"] in ("agent1", "agent2") and isinstance(args["reason"], str)
    else:
        assert isinstance(args["content"], str)


@needs_model
def test_tool_calls_stream_as_deltas_with_token_ids_and_logprobs(server: Server):
    if server.engine != "llama.cpp":
        pytest.skip("constrained calls are the llama.cpp engine's")
    named = {"type": "function", "function": {"name": "vote"}}
    body = dict(
        tools=[VOTE, ANSWER],
        tool_choice=named,
        max_tokens=120,
        seed=5,
        temperature=0.7,
        logprobs=True,
        return_token_ids=True,
        messages=[{"role": "user", "content": "Vote for agent1 or agent2."}],
    )
    plain = server.chat(**body)["choices"][0]
    got = joined(server.stream(**body)[0])
    assert plain["finish_reason"] == got["finish_reason"] == "tool_calls"
    call = plain["message"]["tool_calls"][0]
    assert got["calls"][0]["name"] == call["function"]["name"] == "vote"
    assert got["calls"][0]["arguments"] == call["function"]["arguments"]
    assert json.loads(call["function"]["arguments"])["agent_id"] in ("agent1", "agent2")
    assert got["token_ids"] == plain["token_ids"] and len(got["logprobs"]) == len(plain["token_ids"])
    assert all(e["logprob"] <= 0 for e in got["logprobs"])


@needs_model
def test_a_call_cut_off_by_max_tokens_is_the_same_call_plain_and_streamed(server: Server):
    if server.engine != "llama.cpp":
        pytest.skip("constrained calls are the llama.cpp engine's")
    named = {"type": "function", "function": {"name": "new_answer"}}
    body = dict(
        tools=[VOTE, ANSWER],
        tool_choice=named,
        max_tokens=24,
        temperature=0,
        messages=[{"role": "user", "content": "What is 2 + 3? Explain at length."}],
    )
    plain = server.chat(**body)["choices"][0]
    got = joined(server.stream(**body)[0])
    assert plain["finish_reason"] == got["finish_reason"] == "length"
    call = plain["message"]["tool_calls"][0]["function"]
    assert call["name"] == got["calls"][0]["name"] == "new_answer"
    assert call["arguments"] == got["calls"][0]["arguments"] and '"content": "' in call["arguments"]
    assert plain["message"]["content"] is None and got["content"] == ""


@needs_model
def test_history_with_tool_results_and_auto_choice(server: Server):
    history = [
        {"role": "user", "content": "What is 2 + 3? Use the calculator."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"expression": "2 + 3"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
    ]
    calc = {
        "type": "function",
        "function": {
            "name": "calc",
            "description": "Evaluate arithmetic.",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        },
    }
    r = server.chat(messages=history, tools=[calc], max_tokens=40)
    message = r["choices"][0]["message"]
    assert message["content"] or message.get("tool_calls")
    for call in message.get("tool_calls") or []:
        assert call["function"]["name"] == "calc"


@needs_model
def test_structured_output_follows_the_schema(server: Server):
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "unit": {"type": "string", "enum": ["m", "kg"]}},
        "required": ["answer", "unit"],
        "additionalProperties": False,
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "result", "schema": schema}}
    if server.engine != "llama.cpp":
        status, body = server.post({"model": NAME, "messages": QUESTION, "response_format": fmt})
        assert status == 400 and body["error"]["param"] == "response_format"
        return
    value = json.loads(server.chat(response_format=fmt, max_tokens=60)["choices"][0]["message"]["content"])
    assert set(value) == {"answer", "unit"} and isinstance(value["answer"], int) and value["unit"] in ("m", "kg")
    ask = [{"role": "user", "content": 'Reply with a JSON object like {"answer": 5}. What is 2 + 3?'}]
    obj = server.chat(response_format={"type": "json_object"}, max_tokens=100, messages=ask)["choices"][0]
    text = obj["message"]["content"]
    assert text.startswith("{") and (obj["finish_reason"] == "length" or isinstance(json.loads(text), dict)), obj
    status, body = server.post(
        {
            "model": NAME,
            "messages": QUESTION,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nowhere"}}},
        }
    )
    assert status == 400 and body["error"]["param"] == "response_format", body


@needs_model
def test_streams_and_plain_requests_share_the_batch(server: Server):
    with ThreadPoolExecutor(4) as pool:
        streams = [pool.submit(server.stream, max_tokens=24, temperature=1.0, seed=s) for s in range(2)]
        plains = [pool.submit(server.chat, max_tokens=24, temperature=1.0, seed=s) for s in range(2)]
        for s, (st, pl) in enumerate(zip(streams, plains)):
            assert joined(st.result()[0])["content"] == pl.result()["choices"][0]["message"]["content"], s
