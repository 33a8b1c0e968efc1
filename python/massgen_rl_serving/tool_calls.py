"""Tool calling for models whose chat template has none: the documented generic format (docs/serving.md).

The tools go into the system prompt, and a call is written as
    <tool_call>
    {"name": "NAME", "arguments": {...}}
    </tool_call>
(the format of Hermes and Qwen templates, so a model whose own template renders tools that way is served
with its template instead). Past calls and tool results in the history are rendered in the same format,
so what a model reads is what it is asked to write. The grammar that constrains a call (llama.cpp engine)
is built from the tools' JSON Schemas by llama.cpp's converter.

Pure data: no torch, no model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import ApiError

_DECODER = json.JSONDecoder()
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
MAX_PARALLEL_CALLS = 16


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def native_tools(chat_template: str | None) -> bool:
    """A template that renders tools and `<tool_call>` itself (Hermes, Qwen, SmolLM3) is used as it is."""
    return bool(chat_template) and "tools" in chat_template and CALL_OPEN in chat_template


def tool_prompt(tools: list[Tool], choice: Any) -> str:
    lines = [
        "You can call tools. To call one, reply with exactly:",
        CALL_OPEN,
        '{"name": "<tool name>", "arguments": <the arguments as a JSON object>}',
        CALL_CLOSE,
        "The tools:",
    ]
    lines += [json.dumps(t.spec(), ensure_ascii=False) for t in tools]
    if isinstance(choice, dict) and "name" in choice:
        lines.append(f"Call the tool {choice['name']} now.")
    elif isinstance(choice, dict) and choice["mode"] == "required":
        lines.append(f"Call one of these tools now: {', '.join(choice['allowed'])}.")
    elif isinstance(choice, dict):
        lines.append(f"Call only these tools: {', '.join(choice['allowed'])}.")
    elif choice == "required":
        lines.append("Call one of the tools now.")
    return "\n".join(lines)


def call_text(name: str, arguments: Any) -> str:
    """A past call as the model writes one (arguments: a JSON string, as OpenAI sends them, or an object)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass  # kept as the string it is
    return f"{CALL_OPEN}\n{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}\n{CALL_CLOSE}"


def render_generic(messages: list[dict[str, Any]], tools: list[Tool], choice: Any) -> list[dict[str, Any]]:
    """The messages for a template without tools: the tool prompt in the system message, calls and results as
    text (a tool result is a user turn inside <tool_response>, as Hermes templates write it)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = "\n".join(call_text(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"])
            out.append({"role": "assistant", "content": "\n".join(p for p in (m["content"], calls) if p)})
        elif m["role"] == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{m['content']}\n</tool_response>"})
        else:
            out.append({k: v for k, v in m.items() if k != "tool_calls"})
    if tools and choice != "none":
        prompt = tool_prompt(tools, choice)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{prompt}"}
        else:
            out.insert(0, {"role": "system", "content": prompt})
    return out


def render_native(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages for a template that renders tools: call arguments as objects, as HF templates expect."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                args = c["function"]["arguments"]
                try:
                    args = json.loads(args) if isinstance(args, str) and args.strip() else (args or {})
                except ValueError:
                    pass
                calls.append(
                    {
                        "type": "function",
                        "id": c.get("id"),
                        "function": {"name": c["function"]["name"], "arguments": args},
                    }
                )
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


@dataclass
class ParsedCall:
    name: str
    arguments: str  # JSON text, as OpenAI returns it


def parse_calls(text: str, tools: list[Tool], cut: bool = False) -> tuple[str | None, list[ParsedCall]]:
    """The content and the calls of a completion. A block that is not a call of a known tool stays content. `cut`
    (max_tokens ended the text): a last call cut off is not content, and once its name is complete it is a call
    with the arguments as far as they came, as a stream sends it."""
    names = {t.name for t in tools}
    calls: list[ParsedCall] = []
    content: list[str] = []
    last = 0
    for start, body, end in _blocks(text):
        call = _call_of(body.strip(), names)
        if call is None:
            continue
        content.append(text[last:start])
        calls.append(call)
        last = end
    rest = text[last:]
    begun = rest.find(CALL_OPEN) if cut else -1
    begun = begun if begun >= 0 and close_at(rest[begun + len(CALL_OPEN) :]) < 0 else -1
    if begun >= 0:
        content.append(rest[:begun])
        calls += _cut_call(rest[begun + len(CALL_OPEN) :], names)
    else:
        content.append(_without_cut_call(rest) if calls else rest)
    joined = "".join(content).strip()
    return (joined or None) if calls or begun >= 0 else text, calls


def _blocks(text: str) -> list[tuple[int, str, int]]:
    """Each `<tool_call>` block: (start, body, end), a block left open running to the end of the text."""
    out = []
    at = text.find(CALL_OPEN)
    while at >= 0:
        begin = at + len(CALL_OPEN)
        close = close_at(text[begin:])
        end = len(text) if close < 0 else begin + close + len(CALL_CLOSE)
        out.append((at, text[begin : begin + close] if close >= 0 else text[begin:], end))
        at = text.find(CALL_OPEN, end)
    return out


# a whole JSON string (skipped), the close tag, or a quote that opens a string not closed yet
_CLOSE_SCAN = re.compile(r'"(?:[^"\\]|\\.)*"|' + re.escape(CALL_CLOSE) + '|"', re.S)


def close_at(body: str) -> int:
    """Where `</tool_call>` ends a call's body: the first one outside a JSON string (an answer may quote the tag),
    or -1. Scanned by the regex engine: a stream calls it on the growing body at every token."""
    for match in _CLOSE_SCAN.finditer(body):
        if match.group() == CALL_CLOSE:
            return match.start()
        if match.group() == '"':  # a string still open: what follows is inside it
            return -1
    return -1


def _without_cut_call(rest: str) -> str:
    """The text after the last call, less a further call cut off by max_tokens (in its open tag or after)."""
    if CALL_OPEN in rest and close_at(rest[rest.index(CALL_OPEN) + len(CALL_OPEN) :]) < 0:
        return rest[: rest.index(CALL_OPEN)]
    return rest[: len(rest) - open_tag_start(rest)]


def _cut_call(body: str, names: set[str]) -> list[ParsedCall]:
    """The call whose text max_tokens cut off, once its name is complete (none before)."""
    body = body.lstrip()
    name = complete_name(body)
    if name is None or name not in names:
        return []
    return [ParsedCall(name, arguments_so_far(arguments_part(body) or "", ended=True))]


def arguments_so_far(args: str, ended: bool) -> str:
    """A call's arguments text: the JSON value once it is complete; of a call that ended without one, what there is."""
    try:
        _, end = _DECODER.raw_decode(args)
        return args[:end]
    except ValueError:
        return args.rstrip().removesuffix("}") if ended else args


def open_tag_start(text: str) -> int:
    """How many trailing characters of `text` could begin `<tool_call>`."""
    for k in range(min(len(CALL_OPEN) - 1, len(text)), 0, -1):
        if text.endswith(CALL_OPEN[:k]):
            return k
    return 0


def _call_of(body: str, names: set[str]) -> ParsedCall | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        return ParsedCall(value["name"], args)
    raw = arguments_part(body.strip())  # the arguments as written, so a streamed call reads the same
    if raw is not None:
        try:
            return ParsedCall(value["name"], raw[: json.JSONDecoder().raw_decode(raw)[1]])
        except ValueError:
            pass
    return ParsedCall(value["name"], json.dumps(args, ensure_ascii=False))


def complete_name(body: str) -> str | None:
    """The call's name once its JSON string is complete."""
    rest = _after_key(body, "name")
    try:
        value = json.JSONDecoder().raw_decode(rest)[0] if rest else None
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def arguments_part(body: str) -> str | None:
    """The text after `"arguments":` (whitespace trimmed), or None until it has begun."""
    return _after_key(body, "arguments")


def _after_key(body: str, key: str) -> str | None:
    at = body.find(f'"{key}"')
    rest = body[at + len(key) + 2 :].lstrip() if at >= 0 else ""
    return rest[1:].lstrip() or None if rest.startswith(":") else None


def call_grammar(chosen: list[Tool], parallel: bool) -> str:
    """GBNF for one call (or up to MAX_PARALLEL_CALLS), each `{"name": N, "arguments": A}` with N one of the
    chosen tools and A valid for N's schema. Raises ApiError(400, param tools) when the converter cannot handle
    a schema."""
    variants = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": _object_schema(t.parameters)},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in chosen
    ]
    schema = variants[0] if len(variants) == 1 else {"oneOf": variants}
    body = schema_grammar(schema, "tools", prop_order=["name", "arguments"])
    body = re.sub(r"^root ::=", "tool-call-json ::=", body, flags=re.M)
    more = f' ("\\n"? tool-call){{0,{MAX_PARALLEL_CALLS - 1}}}' if parallel else ""
    return f'root ::= tool-call{more}\ntool-call ::= "{CALL_OPEN}" "\\n"? tool-call-json "\\n"? "{CALL_CLOSE}"\n{body}'


_CONVERTER_CHAR = 'char ::= [^"\\\\] |'
_JSON_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


def schema_grammar(schema: Any, param: str, prop_order: list[str] | None = None) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # llama-cpp-python's copy of llama.cpp's converter

    try:
        text = json_schema_to_gbnf(json.dumps(schema), prop_order)
    except Exception as exc:  # the converter raises assorted errors on schemas it cannot express
        raise ApiError(
            400, f"the JSON Schema cannot be turned into a grammar: {type(exc).__name__}: {exc}", param=param
        ) from None
    # its string characters include raw control characters, which JSON forbids (JSON.parse rejects them)
    return text.replace(_CONVERTER_CHAR, _JSON_CHAR)


def _object_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    return parameters if parameters.get("properties") or parameters.get("type") else {"type": "object"}


TRIGGER_PATTERN = r"^[\s\S]*?(" + re.escape(CALL_OPEN) + r")[\s\S]*$"
