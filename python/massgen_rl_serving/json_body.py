"""A request body as JSON, refused with a 400 that names the problem: not UTF-8, not JSON, nested deeper than
MAX_JSON_DEPTH, or holding a lone UTF-16 surrogate (`"\\ud800"` is valid JSON but no text: it could reach the
tokenizer or an error message, and the reply could not be written as UTF-8). Unknown fields are kept: the routes
ignore what they do not know, as vLLM does."""

from __future__ import annotations

import json
from typing import Any

from .errors import ApiError

MAX_JSON_DEPTH = 100


def decode_body(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"the request body is not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    try:
        body = json.loads(text)
    except RecursionError:  # the decoder's own bound, around 1,000 levels
        raise ApiError(400, f"the request body nests JSON more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
    check_tree(body)
    return body


def check_tree(body: Any) -> None:
    """Walks the decoded body without recursion; `param` is the top-level field where the problem is."""
    stack: list[tuple[Any, int, str | None]] = [(body, 1, None)]
    while stack:
        value, depth, field = stack.pop()
        if isinstance(value, str):
            _check_text(value, field)
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_JSON_DEPTH:
            raise ApiError(400, f"the request body nests JSON more than {MAX_JSON_DEPTH} levels deep", param=field)
        if isinstance(value, dict):
            for key, item in value.items():
                name = key if depth == 1 else field
                _check_text(key, name)
                stack.append((item, depth + 1, name))
        else:
            stack.extend((item, depth + 1, field) for item in value)


def _check_text(text: str, field: str | None) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = f"'{field}'" if field else "the request body"
        raise ApiError(
            400,
            f"{where} holds a lone UTF-16 surrogate (\\u{ord(text[exc.start]):04x}), which is not text",
            param=field,
        ) from None
