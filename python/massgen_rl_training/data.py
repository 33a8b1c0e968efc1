"""Reading a dataset's data.jsonl: rows, chat messages and numbers, each problem a ScriptError naming file:line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from massgen_rl_common.protocol import ScriptError


def read_jsonl(path: str) -> list[dict[str, Any]]:
    rows = []
    with open(Path(path).expanduser(), encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ScriptError(f"{path}:{number}: not a JSON line ({exc})") from None
            if not isinstance(row, dict):
                raise ScriptError(f"{path}:{number}: each line must be a JSON object")
            rows.append(row)
    if not rows:
        raise ScriptError(f"{path} holds no rows")
    return rows


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def messages(value: Any, where: str, what: str = "messages") -> list[dict[str, str]]:
    """OpenAI chat messages reduced to {role, content: str} (what chat templates and Arrow columns need)."""
    if not isinstance(value, list) or not value:
        raise ScriptError(f"{where}: {what} must be a non-empty list of chat messages")
    out = []
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ScriptError(f"{where}: {what} holds a message without a role: {message!r}"[:300])
        out.append({"role": message["role"], "content": _content_text(message.get("content"))})
    return out


def clean_number(value: Any) -> float | None:
    """A finite float, or None for anything else (None, bools, text, NaN, infinities)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def number(value: Any, where: str, what: str, required: bool = True) -> float | None:
    result = clean_number(value)
    if result is None and (required or value is not None):
        raise ScriptError(f"{where}: {what} must be a finite number, got {value!r}")
    return result
