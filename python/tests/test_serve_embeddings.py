"""/v1/embeddings of `serve`, on both CPU engines (the session's `server` fixture), against the model in-process."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from massgen_rl_serving.embeddings_api import parse_embeddings_request
from massgen_rl_serving.errors import ApiError
from serve_support import NAME, Server, needs_model, reference  # noqa: F401

TEXTS = ["The cat sat on the mat.", "Prices rose by 3% in March"]


def expected(reference, text: str) -> np.ndarray:
    """Mean over the tokens of the last hidden state (after the final norm), L2-normalized."""
    import torch

    tokenizer, model = reference
    ids = tokenizer(text)["input_ids"]
    with torch.inference_mode():
        hidden = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0].float()
    vec = hidden.mean(dim=0).numpy()
    return vec / np.linalg.norm(vec)


@needs_model
def test_embeddings_are_the_mean_pooled_normalized_last_hidden_state(server: Server, reference):
    status, body = server.post({"model": NAME, "input": TEXTS}, "/v1/embeddings")
    assert status == 200, body
    assert body["object"] == "list" and body["model"] == NAME
    tokenizer = reference[0]
    tokens = sum(len(tokenizer(t)["input_ids"]) for t in TEXTS)
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}
    vectors = [np.array(d["embedding"], dtype=np.float32) for d in body["data"]]
    assert [d["index"] for d in body["data"]] == [0, 1] and vectors[0].shape == (576,)
    for vec, text in zip(vectors, TEXTS):
        assert abs(np.linalg.norm(vec) - 1) < 1e-5
        assert float(vec @ expected(reference, text)) > 0.9999, server.engine
    # token ids give the same vector as their text; base64 is the same float32 numbers
    ids = tokenizer(TEXTS[0])["input_ids"]
    _, by_ids = server.post(
        {"model": NAME, "input": [ids], "encoding_format": "base64", "dimensions": 576}, "/v1/embeddings"
    )
    packed = np.frombuffer(base64.b64decode(by_ids["data"][0]["embedding"]), dtype="<f4")
    assert float(packed @ vectors[0]) > 0.99999


@needs_model
def test_embeddings_run_beside_generation_and_leave_it_unchanged(server: Server):
    before = server.chat()["choices"][0]["message"]["content"]
    with ThreadPoolExecutor(4) as pool:
        embeds = [pool.submit(server.post, {"model": NAME, "input": TEXTS}, "/v1/embeddings") for _ in range(2)]
        chats = [pool.submit(server.chat) for _ in range(2)]
        assert all(f.result()[0] == 200 for f in embeds)
        assert [f.result()["choices"][0]["message"]["content"] for f in chats] == [before, before]


@needs_model
def test_embeddings_errors_name_their_param(server: Server):
    for body, status, param in [
        ({"model": NAME, "input": "x", "dimensions": 8}, 400, "dimensions"),
        ({"model": NAME, "input": [[10**7]]}, 400, "input"),
        ({"model": NAME, "input": "x" * 40000}, 400, "input"),
        ({"model": "nope", "input": "x"}, 404, "model"),
    ]:
        got, payload = server.post(body, "/v1/embeddings")
        assert (got, payload["error"]["param"]) == (status, param), (body, payload)


def test_parse_embeddings_request_validation():
    req = parse_embeddings_request({"model": "m", "input": "hi"})
    assert (req.inputs, req.base64, req.dimensions) == (["hi"], False, None)
    assert parse_embeddings_request({"model": "m", "input": [1, 2]}).inputs == [[1, 2]]
    for body, param in [
        ([], None),
        ({"input": "x"}, "model"),
        ({"model": "m"}, "input"),
        ({"model": "m", "input": []}, "input"),
        ({"model": "m", "input": ["a", ""]}, "input"),
        ({"model": "m", "input": ["a", [1]]}, "input"),
        ({"model": "m", "input": [[1, -1]]}, "input"),
        ({"model": "m", "input": [True]}, "input"),
        ({"model": "m", "input": ["a"] * 2049}, "input"),
        ({"model": "m", "input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"model": "m", "input": "x", "dimensions": 0}, "dimensions"),
        ({"model": "m", "input": "x", "dimensions": True}, "dimensions"),
    ]:
        with pytest.raises(ApiError) as info:
            parse_embeddings_request(body)
        assert info.value.status == 400 and info.value.param == param, body
