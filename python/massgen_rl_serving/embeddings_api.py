"""The OpenAI embeddings wire format of `serve`: request validation, tokenizing the inputs, the response.

An embedding is the mean over the input's tokens of the model's last hidden state (after the final norm),
L2-normalized. No torch here; the engines compute the vectors (engine.py, llama_embed.py).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ApiError

MAX_INPUTS = 2048  # OpenAI's limit


@dataclass
class EmbeddingsRequest:
    model: str
    inputs: list[Any]  # str, or a list of token ids
    base64: bool
    dimensions: int | None


def _is_tokens(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)
    )


def parse_embeddings_request(body: Any) -> EmbeddingsRequest:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "you must provide a model parameter", param="model")
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) or _is_tokens(raw) else raw
    if not isinstance(inputs, list) or not inputs:
        raise ApiError(
            400, "'input' must be a string, an array of strings, or an array of token arrays, not empty", param="input"
        )
    if len(inputs) > MAX_INPUTS:
        raise ApiError(400, f"'input' must have at most {MAX_INPUTS} items, got {len(inputs)}", param="input")
    strings = isinstance(inputs[0], str)
    for i, item in enumerate(inputs):
        if strings and not (isinstance(item, str) and item):
            raise ApiError(400, f"input[{i}] must be a non-empty string, as the first is", param="input")
        if not strings and not _is_tokens(item):
            raise ApiError(400, f"input[{i}] must be a non-empty array of token ids (integers >= 0)", param="input")
    fmt = body.get("encoding_format")
    if fmt not in (None, "float", "base64"):
        raise ApiError(400, "'encoding_format' must be 'float' or 'base64'", param="encoding_format")
    dims = body.get("dimensions")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise ApiError(400, "'dimensions' must be a whole number of at least 1", param="dimensions")
    return EmbeddingsRequest(model, inputs, fmt == "base64", dims)


def input_ids(engine: Any, inputs: Sequence[Any], max_tokens: int) -> list[list[int]]:
    """Each input's token ids (strings tokenized as plain text, special tokens as the tokenizer adds them)."""
    vocab = len(engine.tokenizer)
    out = []
    for i, item in enumerate(inputs):
        if isinstance(item, str):
            with engine.tok_lock:
                ids = list(engine.tokenizer(item)["input_ids"])
        else:
            ids = item
            if max(ids) >= vocab:
                raise ApiError(
                    400, f"input[{i}] has token id {max(ids)}, outside the vocabulary of {vocab}", param="input"
                )
        if len(ids) > max_tokens:
            raise ApiError(
                400, f"input[{i}] has {len(ids)} tokens, more than the {max_tokens} this server embeds", param="input"
            )
        out.append(ids)
    return out


def check_dimensions(req: EmbeddingsRequest, size: int) -> None:
    """Mean-pooled hidden states are not trained to be cut short: only the model's own size is accepted."""
    if req.dimensions is not None and req.dimensions != size:
        raise ApiError(
            400,
            f"this model's embeddings have {size} dimensions and cannot be shortened to "
            f"{req.dimensions}; leave 'dimensions' out",
            param="dimensions",
        )


def normalized(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def build_embeddings_response(req: EmbeddingsRequest, model: str, vectors: np.ndarray, tokens: int) -> dict[str, Any]:
    data = []
    for i, vec in enumerate(vectors):
        emb: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii") if req.base64 else vec.tolist()
        data.append({"object": "embedding", "index": i, "embedding": emb})
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
