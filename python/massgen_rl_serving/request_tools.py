"""The tool and structured-output fields of a chat request: `tools`, `tool_choice`, `response_format`."""

from __future__ import annotations

import re
from typing import Any

from .errors import ApiError
from .tool_calls import Tool

MAX_TOOLS = 128
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def parse_tools(body: dict[str, Any]) -> tuple[list[Tool], Any]:
    raw = body.get("tools")
    if raw is None:
        raw = []
    if not isinstance(raw, list) or len(raw) > MAX_TOOLS:
        raise ApiError(400, f"'tools' must be a list of at most {MAX_TOOLS} function tools", param="tools")
    tools = [_tool(t, i) for i, t in enumerate(raw)]
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ApiError(400, "'tools' names a function twice", param="tools")
    return tools, _choice(body.get("tool_choice"), tools)


def _tool(value: Any, i: int) -> Tool:
    where = f"tools[{i}]"
    if not isinstance(value, dict) or value.get("type", "function") != "function":
        raise ApiError(400, f"{where} must be {{type: function, function: {{name, parameters}}}}", param="tools")
    fn = value.get("function")
    if not isinstance(fn, dict):
        raise ApiError(400, f"{where}.function must be an object", param="tools")
    name = fn.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ApiError(400, f"{where}.function.name must be 1-64 letters, digits, _ . or -", param="tools")
    description = fn.get("description", "")
    parameters = fn.get("parameters", {})
    if not isinstance(description, str):
        raise ApiError(400, f"{where}.function.description must be a string", param="tools")
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise ApiError(400, f"{where}.function.parameters must be a JSON Schema object", param="tools")
    return Tool(name, description, parameters)


def _choice(value: Any, tools: list[Tool]) -> Any:
    if value is None:
        return "auto" if tools else "none"
    if value in ("none", "auto", "required"):
        if value == "required" and not tools:
            raise ApiError(400, "tool_choice 'required' needs 'tools'", param="tool_choice")
        return value
    if isinstance(value, dict) and value.get("type") == "allowed_tools":
        return _allowed(value.get("allowed_tools"), tools)
    fn = value.get("function") if isinstance(value, dict) and value.get("type") == "function" else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str):
        raise ApiError(
            400,
            "'tool_choice' must be none, auto, required, {type: function, function: {name}} or "
            "{type: allowed_tools, allowed_tools: {mode, tools}}",
            param="tool_choice",
        )
    if name not in {t.name for t in tools}:
        raise ApiError(400, f"tool_choice names the function '{name}', which is not in 'tools'", param="tool_choice")
    return {"name": name}


def _allowed(value: Any, tools: list[Tool]) -> dict[str, Any]:
    """allowed_tools {mode, tools: [{type: function, function: {name}}]}: the calls limited to those of them that
    are in `tools` (a client such as MassGen sends one allowed list while its tools vary by turn)."""
    mode = value.get("mode") if isinstance(value, dict) else None
    listed = value.get("tools") if isinstance(value, dict) else None
    if mode not in ("auto", "required") or not isinstance(listed, list):
        raise ApiError(400, "tool_choice allowed_tools needs mode (auto or required) and tools", param="tool_choice")
    names = []
    for entry in listed:
        fn = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ApiError(
                400, "each allowed_tools.tools entry must be {type: function, function: {name}}", param="tool_choice"
            )
        names.append(fn["name"])
    present = [t.name for t in tools if t.name in names]
    if not present:
        raise ApiError(
            400, f"none of the allowed tools ({', '.join(names) or 'none'}) is in 'tools'", param="tool_choice"
        )
    return {"allowed": present, "mode": mode}


def parse_response_format(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise ApiError(
                400, "response_format json_schema needs json_schema.schema (an object)", param="response_format"
            )
        return {"type": "json_schema", "schema": schema}
    raise ApiError(400, "'response_format' must be {type: text | json_object | json_schema}", param="response_format")
