"""The text of a streamed completion as its tokens arrive: incremental detokenization, stop strings held
back, and tool calls split out of the text as OpenAI's streamed deltas.

Pure Python: the tokenizer comes in as a decode function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .tool_calls import (
    CALL_CLOSE,
    CALL_OPEN,
    arguments_part,
    arguments_so_far,
    close_at,
    complete_name,
    open_tag_start,
)

Decode = Callable[[Sequence[int]], str]


class Detokenizer:
    """New text per token: decodes a short window of recent tokens rather than the whole completion, and holds
    back a token that ends in the middle of a UTF-8 character (decoded as U+FFFD) until the next one."""

    def __init__(self, decode: Decode) -> None:
        self.decode = decode
        self.ids: list[int] = []
        self.prefix = 0  # start of the window
        self.read = 0  # tokens already turned into text

    def push(self, token: int) -> str:
        self.ids.append(token)
        before = self.decode(self.ids[self.prefix : self.read])
        after = self.decode(self.ids[self.prefix :])
        if len(after) > len(before) and not after.endswith("\ufffd"):
            self.prefix, self.read = self.read, len(self.ids)
            return after[len(before) :]
        return ""


def held_back(text: str, stops: Sequence[str]) -> int:
    """How many trailing characters could be the start of a stop string (not sent until that is known)."""
    hold = 0
    for stop in stops:
        for k in range(min(len(stop) - 1, len(text)), hold, -1):
            if text.endswith(stop[:k]):
                hold = k
                break
    return hold


@dataclass
class ToolDelta:
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index}
        if self.id is not None:
            out.update(id=self.id, type="function")
        function: dict[str, Any] = {}
        if self.name is not None:
            function["name"] = self.name
        if self.arguments or self.name is not None:
            function["arguments"] = self.arguments
        out["function"] = function
        return out


@dataclass
class ToolStream:
    """Splits streamed text into content and tool-call deltas: text outside `<tool_call>` blocks is content;
    inside a call, the name goes out once it is complete, then the arguments as they grow. The content is what
    parse_calls makes of the whole text: once a call began, whitespace at its ends is not content, nor is a
    further call cut off in its open tag."""

    names: set[str]
    make_id: Callable[[], str]
    buffer: str = ""
    in_call: bool = False
    calls: int = 0
    sent_args: int = -1  # characters of the current call's arguments sent (-1: name not sent yet)
    opened: bool = False  # a call began
    sent: bool = False  # content was sent
    pending: str = ""  # trailing whitespace of the content: sent only when more content follows

    def feed(self, text: str, final: bool = False) -> tuple[str, list[ToolDelta]]:
        self.buffer += text
        content, deltas = "", []
        while True:
            if not self.in_call:
                at = self.buffer.find(CALL_OPEN)
                if at < 0:
                    keep = open_tag_start(self.buffer) if self.opened or not final else 0
                    content += self._content(self.buffer[: len(self.buffer) - keep], final)
                    self.buffer = "" if final else self.buffer[len(self.buffer) - keep :]
                    return content, deltas
                content += self._content(self.buffer[:at], False)
                self.buffer = self.buffer[at + len(CALL_OPEN) :]
                self.in_call, self.opened, self.sent_args = True, True, -1
            end = close_at(self.buffer)
            body = self.buffer if end < 0 else self.buffer[:end]
            deltas += self._call_deltas(body, complete=end >= 0 or final)
            if end < 0:
                return content, deltas
            self.buffer = self.buffer[end + len(CALL_CLOSE) :]
            self.in_call = False
            if self.sent_args >= 0:
                self.calls += 1

    def _content(self, text: str, final: bool) -> str:
        text = self.pending + text
        if final and not self.opened:  # no call: the text as it is
            self.pending = ""
            return text
        body = text.rstrip()
        self.pending = text[len(body) :]
        if self.opened and not self.sent:
            body = body.lstrip()
        self.sent = self.sent or bool(body)
        return body

    def _call_deltas(self, body: str, complete: bool) -> list[ToolDelta]:
        stripped = body.lstrip()
        if self.sent_args < 0:
            name = complete_name(stripped)
            if name is None or name not in self.names:
                return []
            self.sent_args = 0
            out = [ToolDelta(self.calls, self.make_id(), name)]
        else:
            out = []
        args = arguments_part(stripped)
        if args is None:
            return out
        args = arguments_so_far(args, ended=complete)
        if len(args) > self.sent_args:
            if out:
                out[0].arguments = args[self.sent_args :]
            else:
                out.append(ToolDelta(self.calls, arguments=args[self.sent_args :]))
            self.sent_args = len(args)
        return out
