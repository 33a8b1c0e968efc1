"""`serve`'s tool calling, structured output and streamed text: the pure parts (no model)."""

from __future__ import annotations

import json

import pytest

from massgen_rl_serving.errors import ApiError
from massgen_rl_serving.openai_api import Completion, build_response, parse_chat_request
from massgen_rl_serving.text_stream import Detokenizer, ToolStream, held_back
from massgen_rl_serving.tool_calls import Tool, call_grammar, native_tools, parse_calls, render_generic

NAME = "m"
USER = [{"role": "user", "content": "hi"}]
VOTE = {
    "type": "function",
    "function": {
        "name": "vote",
        "description": "Vote.",
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
        "description": "Answer.",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]},
    },
}
TOOLS = [
    Tool("vote", "Vote.", VOTE["function"]["parameters"]),
    Tool("new_answer", "Answer.", ANSWER["function"]["parameters"]),
]


def parse(**body):
    return parse_chat_request({"messages": USER, **body}, NAME)


def test_tool_fields_are_parsed_and_checked():
    req = parse(tools=[VOTE, ANSWER])
    assert [t.name for t in req.tools] == ["vote", "new_answer"] and req.tool_choice == "auto" and req.calls_tools
    assert parse(tools=[VOTE], tool_choice="none").calls_tools is False
    assert parse(tools=[VOTE], tool_choice={"type": "function", "function": {"name": "vote"}}).tool_choice == {
        "name": "vote"
    }
    assert parse(tools=[VOTE], parallel_tool_calls=False).parallel_tool_calls is False
    allowed = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [
                {"type": "function", "function": {"name": "vote"}},
                {"type": "function", "function": {"name": "absent"}},
            ],
        },
    }
    req = parse(tools=[VOTE, ANSWER], tool_choice=allowed)
    assert [t.name for t in req.callable] == ["vote"] and req.call_required
    assert not parse(
        tools=[VOTE], tool_choice={**allowed, "allowed_tools": {**allowed["allowed_tools"], "mode": "auto"}}
    ).call_required
    assert parse(tools=[VOTE]).call_required is False and parse(tools=[VOTE], tool_choice="required").call_required
    assert parse(stream=True, stream_options={"include_usage": True}).include_usage is True
    assert parse(
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    ).response_format == {"type": "json_schema", "schema": {"type": "object"}}
    for bad, param in [
        ({"tools": [VOTE], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": [VOTE], "tool_choice": "sometimes"}, "tool_choice"),
        ({"tools": {"a": 1}}, "tools"),
        ({"tools": [{"type": "function", "function": {"name": "a b"}}]}, "tools"),
        ({"tools": [VOTE, VOTE]}, "tools"),
        ({"tools": [{"type": "retrieval"}]}, "tools"),
        (
            {
                "tools": [ANSWER],
                "tool_choice": {
                    "type": "allowed_tools",
                    "allowed_tools": {
                        "mode": "required",
                        "tools": [{"type": "function", "function": {"name": "vote"}}],
                    },
                },
            },
            "tool_choice",
        ),
        ({"tools": [ANSWER], "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "x"}}}, "tool_choice"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"response_format": {"type": "yaml"}}, "response_format"),
        ({"response_format": {"type": "json_schema"}}, "response_format"),
        ({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"function": {}}]}]}, "messages"),
    ]:
        with pytest.raises(ApiError) as info:
            parse_chat_request({"messages": USER, **bad}, NAME)
        assert info.value.status == 400 and info.value.param == param, bad


def test_history_with_calls_and_results_renders_in_the_generic_format():
    req = parse(
        tools=[VOTE],
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Pick one."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "vote", "arguments": '{"agent_id": "agent1", "reason": "r"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "counted"},
        ],
    )
    out = render_generic(req.messages, req.tools, req.tool_choice)
    assert out[0]["role"] == "system" and out[0]["content"].startswith("Be brief.\n\nYou can call tools.")
    assert '"name": "vote"' in out[0]["content"] and "<tool_call>" in out[0]["content"]
    assert out[2] == {
        "role": "assistant",
        "content": '<tool_call>\n{"name": "vote", "arguments": {"agent_id": "agent1", "reason": "r"}}\n</tool_call>',
    }
    assert out[3] == {"role": "user", "content": "<tool_response>\ncounted\n</tool_response>"}
    assert render_generic(req.messages, req.tools, "none")[0]["content"] == "Be brief."  # no tools offered
    assert "Call the tool vote now." in render_generic(USER, req.tools, {"name": "vote"})[0]["content"]
    allowed = render_generic(USER, req.tools, {"allowed": ["vote"], "mode": "required"})[0]["content"]
    assert "Call one of these tools now: vote." in allowed


def test_calls_are_parsed_out_of_the_text():
    text = (
        'Let me vote.\n<tool_call>\n{"name": "vote", "arguments": {"agent_id": "agent1", "reason": "ok"}}\n</tool_call>'
    )
    content, calls = parse_calls(text, TOOLS)
    assert content == "Let me vote." and [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("vote", {"agent_id": "agent1", "reason": "ok"})
    ]
    assert calls[0].arguments == '{"agent_id": "agent1", "reason": "ok"}'  # as written
    two = '<tool_call>{"name": "vote", "arguments": {}}</tool_call>\n<tool_call>{"name": "new_answer", "arguments": {"content": "5"}}'
    assert [c.name for c in parse_calls(two, TOOLS)[1]] == ["vote", "new_answer"]  # the last one cut at max_tokens
    for text in ("no call here", '<tool_call>{"name": "other", "arguments": {}}</tool_call>', "<tool_call>{broken"):
        assert parse_calls(text, TOOLS) == (text, [])


CALL = '<tool_call>\n{"name": "vote", "arguments": {"agent_id": "agent1", "reason": "r"}}\n</tool_call>'
QUOTING = (
    '<tool_call>\n{"name": "vote", "arguments": {"agent_id": "agent1", "reason": "a \\" </tool_call>"}}\n</tool_call>'
)


def test_a_close_tag_inside_a_string_does_not_end_the_call():
    """An answer may quote `</tool_call>` (the grammar allows it inside a JSON string): the call ends at the tag
    after its JSON."""
    content, calls = parse_calls("Hi " + QUOTING + " bye", TOOLS)
    assert content == "Hi  bye" and [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("vote", {"agent_id": "agent1", "reason": 'a " </tool_call>'})
    ]


def test_a_call_cut_off_in_its_open_tag_is_not_content():
    """max_tokens can end a further call inside `<tool_call>` (the grammar allows only that after a call)."""
    for cut in ("\n<tool_call", "\n<", "<tool_"):
        content, calls = parse_calls(CALL + cut, TOOLS)
        assert content is None and [c.name for c in calls] == ["vote"], cut
    assert parse_calls("a <tool_call", TOOLS) == ("a <tool_call", [])  # no call: the text as it is


def test_response_carries_tool_calls_and_finish_reason():
    req = parse(tools=[VOTE, ANSWER])
    c = Completion([1, 2], '<tool_call>{"name": "new_answer", "arguments": {"content": "5"}}</tool_call>', "stop")
    choice = build_response(req, [0], [c])["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]
    assert (
        call["type"] == "function"
        and call["id"].startswith("call_")
        and call["function"] == {"name": "new_answer", "arguments": '{"content": "5"}'}
    )
    plain = build_response(parse(), [0], [c])["choices"][0]  # no tools asked for: the text as it is
    assert plain["message"] == {"role": "assistant", "content": c.text} and plain["finish_reason"] == "stop"
    one = parse(tools=[VOTE, ANSWER], parallel_tool_calls=False)
    two = Completion([1], c.text + c.text, "stop")
    assert len(build_response(one, [0], [two])["choices"][0]["message"]["tool_calls"]) == 1


def test_grammar_text_names_each_tool_and_its_arguments():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python's JSON-Schema converter (massgen-rl doctor --fix)")
    text = call_grammar(TOOLS, parallel=False)
    assert text.startswith("root ::= tool-call\n") and '"<tool_call>"' in text and "tool-call-json ::=" in text
    assert '\\"agent1\\"' in text and '\\"new_answer\\"' in text
    # strings without raw control characters: JSON forbids them (the converter's own rule lets them through)
    assert 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |' in text and 'char ::= [^"\\\\] |' not in text
    only = call_grammar(
        parse(tools=[VOTE, ANSWER], tool_choice={"type": "function", "function": {"name": "vote"}}).callable,
        parallel=True,
    )
    assert '\\"new_answer\\"' not in only and "{0,15}" in only
    assert native_tools("{% for t in tools %}<tool_call>{% endfor %}") and not native_tools("{{ messages }}")


class Tokens:
    """A toy tokenizer: each id is a piece of text; 9 and 10 are two halves of one UTF-8 character."""

    pieces = {
        1: "Hel",
        2: "lo",
        3: " <tool",
        4: "_call>",
        5: '{"name": "vote", ',
        6: '"arguments": {"agent_id"',
        7: ': "agent1"}}',
        8: "</tool_call>",
    }

    def decode(self, ids):
        data = b"".join(self.pieces[i].encode() if i in self.pieces else {9: b"\xc3", 10: b"\xa9"}[i] for i in ids)
        return data.decode("utf-8", errors="replace")


def test_detokenizer_sends_whole_characters_only():
    d = Detokenizer(Tokens().decode)
    assert [d.push(t) for t in (1, 2, 9, 10)] == ["Hel", "lo", "", "é"]
    assert held_back("say STO", ["STOP"]) == 3 and held_back("say", ["STOP"]) == 0


def test_tool_stream_splits_content_and_call_deltas():
    ids = iter(["call_1", "call_2"])
    stream = ToolStream({"vote"}, lambda: next(ids))
    out = [stream.feed(Tokens.pieces[i]) for i in range(1, 9)]
    content = "".join(c for c, _ in out)
    deltas = [d.wire() for _, ds in out for d in ds]
    assert content == "Hello"  # as parse_calls: the whitespace before a call is not content
    assert deltas[0] == {"index": 0, "id": "call_1", "type": "function", "function": {"name": "vote", "arguments": ""}}
    args = "".join(d["function"].get("arguments", "") for d in deltas)
    assert args == '{"agent_id": "agent1"}' and all(d["index"] == 0 for d in deltas)
    assert stream.calls == 1


@pytest.mark.parametrize(
    "text",
    [
        CALL + "\n" + CALL,
        CALL + "\n" + CALL + "\n<tool_call",
        CALL + "\n<tool_",
        "Let me vote.\n" + CALL,
        "Let me vote.\n" + CALL + "\n\nDone.\n",
        "\n" + CALL + "\nDone.",
        "Just text.\n\n",
        "Just text <tool_call",
        "Hi " + CALL[:-40],
        CALL + "\n" + CALL[:30],
        "Hi " + CALL[:24],
        QUOTING + "\n" + CALL,
        QUOTING[:-30],
    ],
    ids=[
        "two calls",
        "a third cut off",
        "a second cut off",
        "text then a call",
        "text around a call",
        "a call then text",
        "no call",
        "no call, a tag begun",
        "cut in its arguments",
        "a second cut in its arguments",
        "cut in its name",
        "a call quoting the close tag",
        "cut after quoting the close tag",
    ],
)
def test_a_streamed_reply_has_the_content_and_calls_of_the_same_text_unstreamed(text: str):
    """Fed a character at a time (as tokens arrive), the stream's content and calls are parse_calls' on the
    whole text: no whitespace between calls, no call cut off in its open tag, becomes content."""
    ids = iter(f"call_{i}" for i in range(9))
    stream = ToolStream({"vote"}, lambda: next(ids))
    content, calls = "", {}
    for i, ch in enumerate(text):
        piece, deltas = stream.feed(ch, final=i == len(text) - 1)
        content += piece
        for d in deltas:
            slot = calls.setdefault(d.index, ["", ""])
            slot[0] += d.name or ""
            slot[1] += d.arguments
    want_content, want_calls = parse_calls(text, TOOLS, cut=True)
    assert content == (want_content or "")
    assert list(calls.values()) == [[c.name, c.arguments] for c in want_calls]


# -- drawing under a grammar (seq.constrained) ---------------------------------------------------------------------


class ListGrammar:
    """A grammar that allows a fixed set of tokens, counting whole-vocabulary masks."""

    def __init__(self, allowed: set[int], vocab: int) -> None:
        self.allowed, self.vocab, self.masks = allowed, vocab, 0

    def allows(self, token: int) -> bool:
        return token in self.allowed

    def allowed_among(self, tokens):
        import numpy as np

        return np.array([int(t) in self.allowed for t in tokens], dtype=bool)

    def mask(self):
        import numpy as np

        self.masks += 1
        out = np.zeros(self.vocab, dtype=bool)
        out[list(self.allowed)] = True
        return out

    def accept(self, token: int) -> None:
        assert token in self.allowed


def draw(logits, allowed: set[int], *, greedy: bool = True, logprobs: bool = False, top: int = 0, seed: int = 0):
    import torch

    from massgen_rl_serving.openai_api import SamplingKey
    from massgen_rl_serving.sampling import Row, sampling_logprobs
    from massgen_rl_serving.seq import Seq, constrained

    key = SamplingKey(greedy, 0.0 if greedy else 1.0, 1.0)
    grammar = ListGrammar(allowed, len(logits))
    row = Row([1], 4, seed=seed, want_logprobs=logprobs, top_logprobs=top, grammar=grammar)
    seq = Seq(None, 0, row, 0, key)
    lps = sampling_logprobs(logits[None], key)[0]
    first = int(lps.argmax()) if greedy else int(torch.multinomial(lps.exp(), 1, generator=seq.generator))
    token, lp, tops = constrained(seq, lps, logits, first, float(lps[first]), None)
    exact = torch.log_softmax(logits, -1).masked_fill(
        ~torch.from_numpy(ListGrammar(allowed, len(logits)).mask()), float("-inf")
    )
    return token, lp, tops, exact - torch.logsumexp(exact, -1), grammar.masks


def test_a_refused_draw_is_redrawn_among_the_likely_tokens_without_the_whole_vocabulary():
    import torch

    # a peaked distribution, as a language model's: the tokens past the 256 most likely hold ~1e-11 of the mass
    order = torch.randperm(4000, generator=torch.Generator().manual_seed(1)).tolist()
    logits = torch.empty(4000)
    logits[order] = -0.1 * torch.arange(4000.0)
    allowed = set(order[5:2000:7])  # the five most likely refused
    token, lp, tops, exact, masks = draw(logits, allowed, logprobs=True, top=3)
    assert token == int(exact.argmax()) and masks == 0
    assert lp == pytest.approx(float(exact[token]), abs=1e-3)
    want = exact.topk(3)
    assert [t for t, _ in tops] == want.indices.tolist()
    assert [v for _, v in tops] == pytest.approx(want.values.tolist(), abs=1e-3)
    # only unlikely tokens allowed: the whole vocabulary, exactly
    token, lp, _, exact, masks = draw(logits, set(order[3000:]), logprobs=True)
    assert masks == 1 and token == int(exact.argmax()) and lp == pytest.approx(float(exact[token]), abs=1e-6)
    # a flat distribution leaves too much mass outside the candidates to renormalize over them
    _, lp, _, exact, masks = draw(torch.zeros(4000), set(range(0, 4000, 3)), logprobs=True)
    assert masks == 1 and lp == pytest.approx(float(exact.max()), abs=1e-6)


def test_sampling_under_a_grammar_draws_from_the_allowed_tokens_renormalized():
    import torch

    logits = torch.tensor([3.0, 2.5, 2.0, 1.0, 0.5, 0.0] + [-2.0] * 50)
    allowed = {1, 3, 4}
    counts = torch.zeros(len(logits))
    for seed in range(3000):
        token, _, _, exact, masks = draw(logits, allowed, greedy=False, seed=seed)
        counts[token] += 1
        assert masks == 0
    freq = counts / counts.sum()
    assert set(counts.nonzero().flatten().tolist()) <= allowed
    assert freq[[1, 3, 4]].tolist() == pytest.approx(exact.exp()[[1, 3, 4]].tolist(), abs=0.03)
