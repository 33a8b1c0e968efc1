"""`serve`: the OpenAI-compatible server on the real default model, plus its pure parts (request parsing,
batching, the vLLM command line)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from conftest import PYTHON_DIR
from massgen_rl_common.model_folder import ModelFolder, inspect_model_folder
from massgen_rl_common.protocol import ScriptError
from massgen_rl_serving.batching import Batcher
from massgen_rl_serving.engines import choose_engine, llama_cpp_available
from massgen_rl_serving.errors import ApiError
from massgen_rl_serving.openai_api import parse_chat_request
from massgen_rl_serving.vllm_backend import build_vllm_command, lora_rank_bound, run_server_process, vllm_env
from serve_support import (  # noqa: F401
    ENGINES,
    MODEL_DIR,
    NAME,
    QUESTION,
    Server,
    engine_args,
    needs_model,
    prompt_ids,
    reference,
    teacher_forced_logprobs,
)


@needs_model
def test_health_and_models(server: Server):
    assert (
        server.ready["model"] == NAME and server.ready["backend"] == server.engine and server.ready["device"] == "cpu"
    )
    assert server.ready["base_url"] == f"{server.base}/v1"
    assert [e["stage"] for e in server.events if e["event"] == "progress"] == ["load", "warmup"]
    assert server.get("/health") == (200, {"status": "ok", "model": NAME})
    status, models = server.get("/v1/models")
    assert status == 200 and models["object"] == "list"
    assert [m["id"] for m in models["data"]] == [NAME]
    assert models["data"][0]["root"] == str(MODEL_DIR.resolve()) and models["data"][0]["max_model_len"] == 8192


@needs_model
def test_chat_completion_has_openai_shape_and_usage(server: Server):
    r = server.chat()
    assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-") and r["model"] == NAME
    [choice] = r["choices"]
    assert choice["index"] == 0 and choice["message"]["role"] == "assistant"
    assert "5" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop" and choice["logprobs"] is None and "token_ids" not in choice
    usage = r["usage"]
    assert usage["prompt_tokens"] > 10 and 0 < usage["completion_tokens"] <= 16
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert "prompt_token_ids" not in r
    assert r["massgen_rl"]["batch_requests"] >= 1


@needs_model
def test_greedy_decoding_is_deterministic(server: Server):
    a = server.chat(return_token_ids=True)
    b = server.chat(return_token_ids=True)
    assert a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"]
    assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"]


@needs_model
def test_token_ids_match_the_tokenizer(server: Server, reference):
    tokenizer, _ = reference
    messages = [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": "Name a colour."}]
    r = server.chat(messages=messages, return_token_ids=True, max_tokens=12)
    choice = r["choices"][0]
    assert r["prompt_token_ids"] == prompt_ids(tokenizer, messages)
    assert len(r["prompt_token_ids"]) == r["usage"]["prompt_tokens"]
    assert len(choice["token_ids"]) == r["usage"]["completion_tokens"]
    assert tokenizer.decode(choice["token_ids"], skip_special_tokens=True) == choice["message"]["content"]
    if choice["finish_reason"] == "stop":  # the end-of-sequence token is part of the completion, as with vLLM
        assert choice["token_ids"][-1] == tokenizer.eos_token_id


@needs_model
def test_greedy_logprobs_are_the_models_own(server: Server, reference):
    tokenizer, model = reference
    r = server.chat(logprobs=True, top_logprobs=3, return_token_ids=True)
    choice = r["choices"][0]
    content = choice["logprobs"]["content"]
    assert len(content) == len(choice["token_ids"]) == r["usage"]["completion_tokens"]
    for entry, token_id in zip(content, choice["token_ids"]):
        assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"} and entry["bytes"] is None
        assert math.isfinite(entry["logprob"]) and entry["logprob"] <= 0
        assert entry["token"] == tokenizer.decode([token_id])
        # greedy: the chosen token is the most likely one
        assert len(entry["top_logprobs"]) == 3
        assert entry["top_logprobs"][0]["token"] == entry["token"]
        assert entry["top_logprobs"][0]["logprob"] == pytest.approx(entry["logprob"])
    expected = teacher_forced_logprobs(model, r["prompt_token_ids"], choice["token_ids"], 1.0)
    assert [e["logprob"] for e in content] == pytest.approx(expected, abs=2e-3)


def prompt_scores(model: Any, prompt: list[int]) -> Any:
    """The float32 model's log-distribution at every prompt position but the last (each scores the next token)."""
    import torch

    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([prompt])).logits[0].float()
    return torch.log_softmax(logits[:-1], dim=-1)


@needs_model
def test_prompt_logprobs_score_every_prompt_token_as_the_model_does(server: Server, reference):
    """vLLM's prompt_logprobs: None for the first token, then each prompt token's logprob, rank and text with the
    asked number of most likely alternatives; the same again when the prompt's start is in the prefix cache; next to
    n samples and a decode already running."""
    tokenizer, model = reference
    long = [{"role": "user", "content": "Tell me about the sea. " * 40}]
    with ThreadPoolExecutor(2) as pool:  # another request decodes while the scored prompt is fed
        running = pool.submit(server.chat, messages=long, max_tokens=24, temperature=0)
        replies = [server.chat(prompt_logprobs=2, max_tokens=2, temperature=0, return_token_ids=True) for _ in (1, 2)]
        replies.append(server.chat(prompt_logprobs=0, n=2, max_tokens=2, temperature=0.7, return_token_ids=True))
        assert running.result()["choices"][0]["finish_reason"] in ("stop", "length")
    prompt = replies[0]["prompt_token_ids"]
    want = prompt_scores(model, prompt)
    for r in replies:
        assert r["prompt_token_ids"] == prompt and r["usage"]["prompt_tokens"] == len(prompt)
        entries = r["prompt_logprobs"]
        assert len(entries) == len(prompt) and entries[0] is None
        top = 2 if r is not replies[-1] else 0
        for position, (token, entry) in enumerate(zip(prompt[1:], entries[1:])):
            scores = want[position]
            mine = entry[str(token)]
            assert mine["decoded_token"] == tokenizer.decode([token])
            assert mine["logprob"] == pytest.approx(float(scores[token]), abs=2e-3)
            higher = [int((scores > scores[token] + d).sum()) for d in (2e-3, -2e-3)]  # near ties either way
            assert 1 + higher[0] <= mine["rank"] <= 1 + higher[1]
            # the alternatives: ranks 1..top, the prompt's token among them when it is one of the top
            alternatives = {int(t): e for t, e in entry.items() if int(t) != token}
            assert sorted(e["rank"] for e in alternatives.values()) == [
                k for k in range(1, top + 1) if k != mine["rank"]
            ]
            for t, e in alternatives.items():
                assert e["logprob"] == pytest.approx(float(scores[t]), abs=2e-3)
                assert e["decoded_token"] == tokenizer.decode([t])
    # the second one's prompt was in the prefix cache, and was scored all the same
    assert replies[1]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    first, second = (r["prompt_logprobs"][1:] for r in replies[:2])
    assert [sorted(e) for e in second] == [sorted(e) for e in first]
    assert all("prompt_logprobs" not in c for c in replies[0]["choices"])


@needs_model
def test_sampled_logprobs_are_under_the_temperature_scaled_distribution(server: Server, reference):
    _, model = reference
    r = server.chat(temperature=0.7, seed=11, logprobs=True, return_token_ids=True, max_tokens=10)
    choice = r["choices"][0]
    got = [e["logprob"] for e in choice["logprobs"]["content"]]
    assert len(got) == len(choice["token_ids"]) and all(e["top_logprobs"] == [] for e in choice["logprobs"]["content"])
    assert got == pytest.approx(
        teacher_forced_logprobs(model, r["prompt_token_ids"], choice["token_ids"], 0.7), abs=2e-3
    )
    assert got != pytest.approx(
        teacher_forced_logprobs(model, r["prompt_token_ids"], choice["token_ids"], 1.0), abs=2e-3
    )


@needs_model
def test_n_samples_and_seeds(server: Server):
    body = {
        "messages": [{"role": "user", "content": "Write a word."}],
        "temperature": 1.0,
        "n": 2,
        "seed": 5,
        "max_tokens": 8,
        "return_token_ids": True,
        "logprobs": True,
    }
    a, b = server.chat(**body), server.chat(**body)
    assert [c["index"] for c in a["choices"]] == [0, 1]
    assert a["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in a["choices"])
    assert all(len(c["logprobs"]["content"]) == len(c["token_ids"]) for c in a["choices"])
    assert [c["token_ids"] for c in a["choices"]] == [c["token_ids"] for c in b["choices"]]  # seeded: reproducible
    assert a["massgen_rl"]["batch_sequences"] >= 2


@needs_model
def test_stop_strings_and_max_tokens(server: Server):
    full = server.chat()["choices"][0]["message"]["content"]
    assert "=" in full, full
    stopped = server.chat(stop=["="], return_token_ids=True)["choices"][0]
    assert stopped["finish_reason"] == "stop" and stopped["message"]["content"] == full[: full.index("=")]
    short = server.chat(max_tokens=2, return_token_ids=True)
    assert short["choices"][0]["finish_reason"] == "length" and len(short["choices"][0]["token_ids"]) == 2
    assert short["usage"]["completion_tokens"] == 2


@needs_model
def test_concurrent_requests_are_batched_by_sampling_settings(server: Server):
    if server.engine == "llama.cpp":
        pytest.skip("llama.cpp batches continuously: test_requests_join_a_running_batch")
    questions = ["What is 1 + 1?", "What is 7 + 2?", "Name a fruit."]
    bodies = [{"messages": [{"role": "user", "content": q}], "max_tokens": 10} for q in questions]
    bodies.append({"messages": [{"role": "user", "content": "Name a fruit."}], "max_tokens": 10, "temperature": 0.9})
    alone = [server.chat(**b)["choices"][0]["message"]["content"] for b in bodies[:3]]
    started = time.monotonic()
    with ThreadPoolExecutor(len(bodies) + 1) as pool:
        # keep the generation thread busy so that the four requests below surely queue up together
        blocker = pool.submit(server.chat, max_tokens=24)
        time.sleep(0.3)
        results = list(pool.map(lambda b: server.chat(**b), bodies))
        assert blocker.result()["massgen_rl"]["batch_requests"] == 1
    seconds = time.monotonic() - started
    batches = [r["massgen_rl"] for r in results]
    assert {b["batch_id"] for b in batches[:3]} == {batches[0]["batch_id"]}, batches  # the greedy ones together
    assert batches[0]["batch_requests"] == 3 and batches[0]["batch_sequences"] == 3
    assert batches[3]["batch_id"] != batches[0]["batch_id"] and batches[3]["batch_requests"] == 1, batches
    # left padding changes nothing: batched greedy output equals unbatched
    assert [r["choices"][0]["message"]["content"] for r in results[:3]] == alone
    status, stats = server.get("/stats")
    assert status == 200 and stats["batch_sizes"].get("3", 0) >= 1, stats
    print(f"\nblocker + 4 concurrent requests in {seconds:.2f}s, batches {batches}", file=sys.stderr)


@needs_model
def test_requests_join_a_running_batch(server: Server):
    """Continuous batching: requests that arrive while another generates join it at its next step, whatever
    their sampling settings, and greedy output is the same as alone."""
    if server.engine != "llama.cpp":
        pytest.skip(
            "the transformers engine batches per request group: test_concurrent_requests_are_batched_by_sampling_settings"
        )
    questions = ["What is 1 + 1?", "Name a fruit."]  # with the blocker: the server's 4 sequences
    bodies = [{"messages": [{"role": "user", "content": q}], "max_tokens": 10} for q in questions]
    bodies.append(
        {"messages": [{"role": "user", "content": "Name a fruit."}], "max_tokens": 10, "temperature": 0.9, "seed": 3}
    )
    alone = [server.chat(**b)["choices"][0]["message"]["content"] for b in bodies]
    with ThreadPoolExecutor(len(bodies) + 1) as pool:
        blocker = pool.submit(server.chat, max_tokens=60, ignore_eos=True)
        time.sleep(0.5)
        results = list(pool.map(lambda b: server.chat(**b), bodies))
        blocking = blocker.result()["massgen_rl"]
    assert not any(r["massgen_rl"]["queue_ms"] > 2000 for r in results), [r["massgen_rl"] for r in results]
    # the blocker saw the others join (it started alone), and they ran beside it, not after it
    assert blocking["batch_requests"] >= 2 and all(r["massgen_rl"]["batch_id"] > blocking["batch_id"] for r in results)
    assert max(r["massgen_rl"]["batch_sequences"] for r in results) >= 3
    assert [r["choices"][0]["message"]["content"] for r in results] == alone  # seeded and greedy: as alone
    status, stats = server.get("/stats")
    assert status == 200 and stats["continuous"] is True and stats["queued"] == 0 and stats["running"] == 0, stats


def sampled(srv: Server, questions: list[str], max_tokens: int) -> list[dict[str, Any]]:
    """One seeded sample at temperature 1 per question, with its token ids and logprobs."""
    return [
        srv.chat(
            messages=[{"role": "user", "content": q}],
            temperature=1.0,
            seed=k,
            max_tokens=max_tokens,
            logprobs=True,
            return_token_ids=True,
        )
        for k, q in enumerate(questions)
    ]


def logprob_diffs(samples: list[dict[str, Any]], model: Any) -> list[float]:
    """|served − float32 teacher-forced| logprob of every sampled token, sorted."""
    diffs = []
    for r in samples:
        got = [e["logprob"] for e in r["choices"][0]["logprobs"]["content"]]
        want = teacher_forced_logprobs(model, r["prompt_token_ids"], ids_of(r), 1.0)
        diffs += [abs(a - b) for a, b in zip(got, want)]
    return sorted(diffs)


@needs_model
def test_bf16_logprobs_agree_with_the_trainer(reference):
    """The llama.cpp engine's default weights (bf16): served logprobs vs the trainer's float32 ones on the same
    sampled tokens (the figure the RL trainers' importance-sampling correction is about)."""
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed in this venv")
    _, model = reference
    srv = Server("--model", str(MODEL_DIR), "--served-name", NAME, "--engine", "llama.cpp")
    try:
        samples = sampled(srv, ["Tell me about the sea.", "What is 12 * 3?", "Write a haiku about rain."], 48)
    finally:
        srv.stop()
    diffs = logprob_diffs(samples, model)
    mean, p99 = sum(diffs) / len(diffs), diffs[min(len(diffs) - 1, int(0.99 * len(diffs)))]
    print(
        f"\nbf16 llama.cpp vs float32 trainer: mean |dlogprob| {mean:.4f}, p99 {p99:.4f} over {len(diffs)} tokens",
        file=sys.stderr,
    )
    assert srv.ready["weights"] == "bf16" and mean < 0.1 and p99 < 1.0


@needs_model
def test_kv_cache_layouts_bound_the_context_per_sequence_or_by_the_pool():
    """Per sequence (the default), each of the --max-batch-size sequences owns its share of the cells: that share
    is the context a request gets, and n samples each hold their prompt; shared, one request may use the pool.
    Greedy output is the same either way."""
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed in this venv")
    long_question = [{"role": "user", "content": "Repeat after me: " + "one two three four five " * 120}]
    outputs = {}
    for layout, context in (("per-sequence", 512), ("shared", 2048)):
        srv = Server(
            "--model",
            str(MODEL_DIR),
            "--served-name",
            NAME,
            "--engine",
            "llama.cpp",
            "--max-batch-size",
            "4",
            "--kv-cache-tokens",
            "2048",
            "--kv-cache-layout",
            layout,
        )
        try:
            _, models = srv.get("/v1/models")
            assert models["data"][0]["max_model_len"] == context
            status, payload = srv.post({"model": NAME, "messages": long_question, "max_tokens": 8, "temperature": 0})
            if layout == "per-sequence":
                assert status == 400 and payload["error"]["code"] == "context_length_exceeded", payload
                assert "512" in payload["error"]["message"], payload
            else:
                assert status == 200 and payload["usage"]["prompt_tokens"] > 512, payload
            # n samples, each in its own sequence (per sequence) or sharing one copy of the prompt (shared)
            r = srv.chat(n=3, temperature=1.0, seed=11, max_tokens=12)
            assert len(r["choices"]) == 3
            outputs[layout] = (
                srv.chat(max_tokens=24)["choices"][0]["message"]["content"],
                [c["message"]["content"] for c in r["choices"]],
            )
            _, stats = srv.get("/stats")
            assert stats["kv_cache_layout"] == layout and stats["running"] == 0 and stats["kv_reserved"] == 0, stats
        finally:
            srv.stop()
    assert outputs["per-sequence"][0] == outputs["shared"][0]
    assert outputs["per-sequence"][1][0] == outputs["shared"][1][0]  # the same seed, the same first sample


def test_too_few_kv_cells_per_sequence_is_a_usage_error():
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed in this venv")
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "massgen_rl_serving",
            "--model",
            str(MODEL_DIR),
            "--engine",
            "llama.cpp",
            "--max-batch-size",
            "32",
            "--kv-cache-tokens",
            "4096",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode != 0 and events[-1]["event"] == "error", events
    assert "128 cells" in events[-1]["message"] and "--kv-cache-layout shared" in events[-1]["message"], events[-1]


@needs_model
def test_request_errors(server: Server):
    status, body = server.post(b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error" and "JSON" in body["error"]["message"]
    status, body = server.post({"model": NAME})
    assert status == 400 and body["error"]["param"] == "messages"
    status, body = server.post({"model": NAME, "messages": []})
    assert status == 400 and "messages" in body["error"]["message"]
    status, body = server.post({"model": "gpt-4o", "messages": QUESTION})
    assert status == 404 and body["error"]["code"] == "model_not_found" and "gpt-4o" in body["error"]["message"]
    status, body = server.post({"model": NAME, "messages": QUESTION, "temperature": 5})
    assert status == 400 and body["error"]["param"] == "temperature"
    status, body = server.post({"model": NAME, "messages": QUESTION, "stream": "yes"})
    assert status == 400 and body["error"]["param"] == "stream"
    status, body = server.post({"model": NAME, "messages": QUESTION}, path="/v1/completions")
    assert status == 404 and "error" in body
    assert server.get("/nope")[0] == 404
    assert server.get("/health")[0] == 200  # still serving


@needs_model
def test_threads_change_between_steps(server: Server):
    """POST /threads: the llama.cpp engine decodes on that many threads from its next step (servers of one run
    divide the cores); the output does not change with them. The transformers engine has no such setting."""
    if server.engine != "llama.cpp":
        status, body = server.post({"threads": 1}, path="/threads")
        assert status == 400 and body["error"]["param"] == "threads" and "transformers" in body["error"]["message"]
        return
    started = server.ready["threads"]
    assert server.get("/stats")[1]["threads"] == started >= 1
    long = {"max_tokens": 40, "ignore_eos": True}
    before = server.chat(**long)["choices"][0]["message"]["content"]
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(server.chat, max_tokens=80, ignore_eos=True)  # the change waits for its step
        time.sleep(0.3)
        assert server.post({"threads": 1}, path="/threads") == (200, {"threads": 1})
        assert running.result()["usage"]["completion_tokens"] == 80
    assert server.get("/stats")[1]["threads"] == 1
    assert server.chat(**long)["choices"][0]["message"]["content"] == before
    for bad in ({"threads": 0}, {"threads": "2"}, {"threads": True}, {"threads": 1025}, {}, [2]):
        status, body = server.post(bad, path="/threads")
        assert status == 400 and body["error"]["param"] == "threads", (bad, body)
    assert server.post({"threads": started}, path="/threads") == (200, {"threads": started})
    assert server.get("/stats")[1]["threads"] == started


@needs_model
@pytest.mark.filterwarnings("ignore::FutureWarning")  # peft calls a deprecated transformers helper
def test_lora_adapter_is_served_on_its_base(server: Server, reference, tmp_path: Path):
    from peft import LoraConfig, get_peft_model

    _, model = reference
    adapter = tmp_path / "adapter"
    # fresh LoRA weights are zero on one side: the adapted model answers exactly like the base
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    peft_model.save_pretrained(adapter)
    peft_model.unload()  # give the module-scoped reference model back unchanged
    config = json.loads((adapter / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(MODEL_DIR)
    (adapter / "adapter_config.json").write_text(json.dumps(config))

    srv = Server("--model", str(adapter), "--served-name", NAME, *engine_args(server.engine))
    try:
        assert srv.ready["adapter"] is True
        assert [e["stage"] for e in srv.events if e["event"] == "progress"] == ["load", "adapter", "warmup"]
        assert srv.get("/v1/models")[1]["data"][0]["parent"] == str(MODEL_DIR.resolve())
        assert (
            srv.chat(return_token_ids=True)["choices"][0]["token_ids"]
            == server.chat(return_token_ids=True)["choices"][0]["token_ids"]
        )
        with ThreadPoolExecutor(1) as pool:  # a request still generating at shutdown gets a 503
            cut_short = pool.submit(
                srv.post, {"model": NAME, "messages": QUESTION, "max_tokens": 2000, "ignore_eos": True}
            )
            time.sleep(1.0)
            code, events = srv.stop()
            status, body = cut_short.result(timeout=30)
        assert status == 503 and body["error"]["message"] == "the server is shutting down"
    finally:
        if srv.proc.poll() is None:
            code, events = srv.stop()
    assert code == 0 and events[-1]["event"] == "done"


def test_a_folder_without_a_model_fails_fast(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "massgen_rl_serving", "--model", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["event"] == "error" and "neither a model folder" in events[-1]["message"]
    assert not any(e["event"] == "ready" for e in events)


# -- pure parts ---------------------------------------------------------------------------------------


def test_parse_chat_request_defaults_and_validation():
    req = parse_chat_request({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}, NAME)
    assert req.model == NAME and req.messages == [{"role": "user", "content": "hi"}]
    assert (req.temperature, req.top_p, req.n, req.max_tokens, req.stop) == (1.0, 1.0, 1, None, [])
    assert req.sampling_key.greedy is False
    assert parse_chat_request({"messages": QUESTION, "temperature": 0, "top_p": 0.5}, NAME).sampling_key.greedy is True
    req = parse_chat_request({"messages": QUESTION, "max_completion_tokens": 7, "stop": "x"}, NAME)
    assert (req.max_tokens, req.stop, req.tools, req.tool_choice, req.stream) == (7, ["x"], [], "none", False)
    for bad, param in [
        ({"messages": QUESTION, "n": 0}, "n"),
        ({"messages": QUESTION, "top_p": 0}, "top_p"),
        ({"messages": QUESTION, "max_tokens": 1.5}, "max_tokens"),
        ({"messages": QUESTION, "seed": "x"}, "seed"),
        ({"messages": QUESTION, "top_logprobs": 2}, "top_logprobs"),
        ({"messages": QUESTION, "prompt_logprobs": -1}, "prompt_logprobs"),
        ({"messages": QUESTION, "prompt_logprobs": 21}, "prompt_logprobs"),
        ({"messages": QUESTION, "prompt_logprobs": True}, "prompt_logprobs"),
        ({"messages": QUESTION, "prompt_logprobs": 0, "stream": True}, "prompt_logprobs"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages"),
    ]:
        with pytest.raises(ApiError) as info:
            parse_chat_request(bad, NAME)
        assert info.value.status == 400 and info.value.param == param, bad


def test_sampling_distribution_temperature_and_top_p():
    import torch

    from massgen_rl_serving.openai_api import SamplingKey
    from massgen_rl_serving.sampling import sampling_logprobs

    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    assert torch.allclose(sampling_logprobs(logits, SamplingKey(True, 0.0, 1.0)), torch.log_softmax(logits, -1))
    assert torch.allclose(sampling_logprobs(logits, SamplingKey(False, 0.5, 1.0)), torch.log_softmax(logits / 0.5, -1))
    probs = torch.softmax(logits, -1)[0]  # about 0.64, 0.24, 0.09, 0.03
    nucleus = sampling_logprobs(logits, SamplingKey(False, 1.0, 0.8)).exp()[0]
    kept = probs[:2] / probs[:2].sum()  # 0.64 < 0.8 <= 0.88: the two most likely tokens, renormalized
    assert torch.allclose(nucleus, torch.cat([kept, torch.zeros(2)]))
    assert sampling_logprobs(logits, SamplingKey(False, 1.0, 0.1)).exp()[0].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_batcher_groups_by_key_and_respects_the_batch_size():
    seen: list[tuple[str, list[str]]] = []
    gate = threading.Event()

    def run(key, payloads):
        gate.wait(5)
        seen.append((key, list(payloads)))
        return [p.upper() for p in payloads]

    batcher = Batcher(run, max_rows=3, window_s=0.2)
    batcher.start()
    jobs = [("a", 1, "x1"), ("b", 1, "y1"), ("a", 2, "x2"), ("a", 1, "x3"), ("a", 1, "x4")]
    results: dict[str, Any] = {}

    def submit(job):
        results[job[2]] = batcher.submit(*job)

    threads = [threading.Thread(target=submit, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
        time.sleep(0.01)  # arrival order
    gate.set()
    for t in threads:
        t.join(5)
    batcher.stop()
    assert {k: v[0] for k, v in results.items()} == {"x1": "X1", "y1": "Y1", "x2": "X2", "x3": "X3", "x4": "X4"}
    # rows: x1 (1) + x2 (2) fill the first batch of 3; y1 waits for its own; x3 and x4 go together
    assert seen == [("a", ["x1", "x2"]), ("b", ["y1"]), ("a", ["x3", "x4"])]
    assert results["x2"][1].requests == 2 and results["x2"][1].sequences == 3
    assert batcher.stats()["batch_sizes"] == {"1": 1, "2": 2}


def test_engine_choice():
    for llama in (False, True):
        assert choose_engine("auto", "auto", "0.11.0", 1, llama) == "vllm"
        assert choose_engine("auto", "cuda", "0.11.0", 2, llama) == "vllm"
        assert choose_engine("transformers", "auto", "0.11.0", 1, llama) == "transformers"
        assert choose_engine("auto", "cuda", None, 1, llama) == "transformers"  # a GPU without vLLM
    cpu = "llama.cpp"
    assert (
        choose_engine("auto", "cpu", "0.11.0", 1, True) == cpu
        and choose_engine("auto", "cpu", "0.11.0", 1, False) == "transformers"
    )
    assert (
        choose_engine("auto", "auto", None, 1, True) == cpu
        and choose_engine("auto", "auto", None, 1, False) == "transformers"
    )
    assert choose_engine("auto", "auto", "0.11.0", 0, True) == cpu
    assert choose_engine("llama.cpp", "auto", "0.11.0", 1, True) == cpu
    with pytest.raises(ScriptError, match="not installed"):
        choose_engine("vllm", "auto", None, 1, True)
    with pytest.raises(ScriptError, match="CUDA"):
        choose_engine("vllm", "auto", "0.11.0", 0, True)
    with pytest.raises(ScriptError, match="llama-cpp-python"):
        choose_engine("llama.cpp", "auto", None, 0, False)
    with pytest.raises(ScriptError, match="runs on the CPU"):
        choose_engine("llama.cpp", "cuda", None, 0, True)


def test_vllm_command_for_a_model_folder(tmp_path: Path):
    (tmp_path / "config.json").write_text("{}")
    folder = inspect_model_folder(str(tmp_path))
    cmd = build_vllm_command(
        python="/venv/bin/python",
        folder=folder,
        served_name="m",
        host="127.0.0.1",
        port=8123,
        max_batch_size=16,
        version="0.11.0",
        extra_args="--gpu-memory-utilization 0.5",
    )
    assert cmd[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    flags = dict(zip(cmd, cmd[1:]))
    assert flags["--model"] == str(tmp_path) and flags["--served-model-name"] == "m"
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "8123" and flags["--max-num-seqs"] == "16"
    assert flags["--logprobs-mode"] == "processed_logprobs" and flags["--gpu-memory-utilization"] == "0.5"
    assert "--enable-lora" not in cmd
    old = build_vllm_command(
        python="p", folder=folder, served_name="m", host="h", port=1, max_batch_size=1, version="0.9.2"
    )
    assert "--logprobs-mode" not in old  # flag unknown before 0.10.2
    with pytest.raises(ValueError):
        build_vllm_command(
            python="p", folder=folder, served_name="m", host="h", port=0, max_batch_size=1, version="0.11"
        )


def test_vllm_command_for_an_adapter(tmp_path: Path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "../base", "r": 24}))
    folder = inspect_model_folder(str(adapter))
    assert folder == ModelFolder(adapter.resolve(), True, str(base.resolve()), 24)
    cmd = build_vllm_command(
        python="p", folder=folder, served_name="agent", host="0.0.0.0", port=9000, max_batch_size=8, version="0.10.2"
    )
    flags = dict(zip(cmd, cmd[1:]))
    assert flags["--model"] == str(base.resolve()) and flags["--served-model-name"] == "agent-base"
    assert "--enable-lora" in cmd and flags["--lora-modules"] == f"agent={adapter.resolve()}"
    assert flags["--max-loras"] == "2"  # a second adapter fits beside it, loaded at runtime
    assert vllm_env(folder, {"PATH": "/bin"}) == {"PATH": "/bin", "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    assert vllm_env(inspect_model_folder(str(base)), {"PATH": "/bin"}) == {"PATH": "/bin"}
    assert flags["--max-lora-rank"] == "32" and lora_rank_bound(None) == 16 and lora_rank_bound(600) == 512
    with pytest.raises(ScriptError, match="--base"):
        (adapter / "adapter_config.json").write_text(json.dumps({"r": 8}))
        inspect_model_folder(str(adapter))
    assert inspect_model_folder(str(adapter), str(base)).base == str(base.resolve())


FAKE_SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == '/health' else 404); self.send_header('Content-Length', '0'); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"""


def test_server_process_supervision_with_a_stand_in_for_vllm():
    from massgen_rl_serving.vllm_backend import free_port

    port = free_port("127.0.0.1")
    stop = threading.Event()
    ready: list[float] = []

    def on_ready():
        ready.append(time.monotonic())
        threading.Timer(0.3, stop.set).start()

    result = run_server_process(
        [sys.executable, "-c", FAKE_SERVER, str(port)],
        host="127.0.0.1",
        port=port,
        stop=stop,
        startup_timeout_s=30,
        on_ready=on_ready,
        poll_s=0.1,
        what="fake",
    )
    assert ready and result["backend"] == "fake" and result["exit_code"] == -signal.SIGTERM
    with pytest.raises(ScriptError, match="exited with code 3 before it was ready"):
        run_server_process(
            [sys.executable, "-c", "raise SystemExit(3)"],
            host="127.0.0.1",
            port=port,
            stop=threading.Event(),
            startup_timeout_s=30,
            on_ready=lambda: None,
            poll_s=0.1,
            what="fake",
        )


# -- LoRA adapters loaded at runtime --------------------------------------------------------------------


@pytest.fixture(scope="module")
def adapters(reference, tmp_path_factory) -> dict[str, Path]:
    """Two LoRA adapters of the default model with random (non-zero) weights: each answers its own way."""
    import torch
    from peft import LoraConfig, get_peft_model

    _, model = reference
    out = {}
    for name, seed in (("alpha", 1), ("beta", 2)):
        torch.manual_seed(seed)
        peft_model = get_peft_model(
            model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        )
        path = tmp_path_factory.mktemp("adapters") / name
        peft_model.save_pretrained(path)
        peft_model.unload()  # give the module-scoped reference model back unchanged
        config = json.loads((path / "adapter_config.json").read_text())
        config["base_model_name_or_path"] = str(MODEL_DIR)
        (path / "adapter_config.json").write_text(json.dumps(config))
        out[name] = path.resolve()
    return out


def lora(srv: Server, action: str, **body: Any) -> tuple[int, Any]:
    return srv.post(body, path=f"/v1/{action}")


def ids_of(response: dict[str, Any]) -> list[int]:
    return response["choices"][0]["token_ids"]


def reset(srv: Server) -> None:
    """The served name back on the base model, and every adapter unloaded."""
    assert lora(srv, "set_default_adapter", lora_name=None)[0] == 200
    for card in srv.get("/v1/models")[1]["data"][1:]:
        assert lora(srv, "unload_lora_adapter", lora_name=card["id"])[0] == 200


@needs_model
@pytest.mark.filterwarnings("ignore::FutureWarning")  # peft calls a deprecated transformers helper
def test_runtime_adapters_load_beside_the_base_and_answer_by_name(server: Server, adapters, reference, tmp_path: Path):
    from peft import PeftModel

    srv = server
    base = srv.chat(return_token_ids=True)
    try:
        status, body = lora(srv, "load_lora_adapter", lora_name="alpha", lora_path=str(adapters["alpha"]))
        assert status == 200 and body["message"] == "Success: LoRA adapter 'alpha' added successfully.", body
        status, body = lora(srv, "load_lora_adapter", lora_name="alpha", lora_path=str(adapters["beta"]))
        assert status == 400 and body["error"]["message"] == "The lora adapter 'alpha' has already been loaded."
        status, body = lora(srv, "load_lora_adapter", lora_name="full", lora_path=str(MODEL_DIR))
        assert status == 400 and "not a LoRA adapter folder (no adapter_config.json)" in body["error"]["message"]
        other_base = tmp_path / "other-base"
        other_base.mkdir()
        (other_base / "config.json").write_text("{}")
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        for f in adapters["beta"].iterdir():
            (foreign / f.name).write_bytes(f.read_bytes())
        config = json.loads((foreign / "adapter_config.json").read_text())
        (foreign / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(other_base)}))
        status, body = lora(srv, "load_lora_adapter", lora_name="foreign", lora_path=str(foreign))
        assert (
            status == 400
            and f"is for the base model {other_base.resolve()}, but this server's base model is {MODEL_DIR.resolve()}"
            in body["error"]["message"]
        ), body
        status, body = lora(srv, "load_lora_adapter", lora_name=NAME, lora_path=str(adapters["beta"]))
        assert status == 400 and "served model name" in body["error"]["message"]
        assert lora(srv, "load_lora_adapter", lora_name="x")[1]["error"]["param"] == "lora_path"

        status, models = srv.get("/v1/models")
        assert [(m["id"], m["root"], m["parent"], m["adapter"]) for m in models["data"]] == [
            (NAME, str(MODEL_DIR.resolve()), None, None),
            ("alpha", str(adapters["alpha"]), str(MODEL_DIR.resolve()), "alpha"),
        ]

        # by name: the adapter's own distribution (teacher-forced in-process), not the base's
        r = srv.chat(model="alpha", logprobs=True, return_token_ids=True)
        assert r["model"] == "alpha" and ids_of(r) != ids_of(base)
        chunks, _ = srv.stream(model="alpha", return_token_ids=True)  # streamed: the same adapter, the same tokens
        assert {c["model"] for c in chunks} == {"alpha"}
        assert [t for c in chunks for ch in c["choices"] for t in ch.get("token_ids") or []] == ids_of(r)
        _, model = reference
        adapted = PeftModel.from_pretrained(model, str(adapters["alpha"]))
        try:
            expected = teacher_forced_logprobs(adapted, r["prompt_token_ids"], ids_of(r), 1.0)
        finally:
            adapted.unload()
        assert [e["logprob"] for e in r["choices"][0]["logprobs"]["content"]] == pytest.approx(expected, abs=2e-3)
        assert ids_of(srv.chat(return_token_ids=True)) == ids_of(base)  # the served name: still the base model
        status, body = srv.post({"model": "gamma", "messages": QUESTION})
        assert (
            status == 404
            and body["error"]["message"] == f"The model `gamma` does not exist. This server serves `{NAME}`, `alpha`."
        )
    finally:
        reset(srv)
    assert lora(srv, "unload_lora_adapter", lora_name="alpha") == (
        404,
        {
            "error": {
                "message": "The lora adapter 'alpha' cannot be found.",
                "type": "invalid_request_error",
                "param": "lora_name",
                "code": "model_not_found",
            }
        },
    )


@needs_model
def test_the_served_name_routes_to_the_default_adapter(server: Server, adapters):
    srv = server
    base = srv.chat(return_token_ids=True)
    try:
        assert lora(srv, "load_lora_adapter", lora_name="alpha", lora_path=str(adapters["alpha"]))[0] == 200
        alpha = srv.chat(model="alpha", return_token_ids=True)
        status, body = lora(srv, "set_default_adapter", lora_name="alpha")
        assert status == 200 and (body["model"], body["lora_name"], body["previous"]) == (NAME, "alpha", None)
        r = srv.chat(return_token_ids=True)
        assert r["model"] == NAME and ids_of(r) == ids_of(alpha) != ids_of(base)
        served = srv.get("/v1/models")[1]["data"][0]
        assert (served["id"], served["root"], served["parent"], served["adapter"]) == (
            NAME,
            str(adapters["alpha"]),
            str(MODEL_DIR.resolve()),
            "alpha",
        )
        status, body = lora(srv, "unload_lora_adapter", lora_name="alpha")
        assert status == 400 and "route it elsewhere first" in body["error"]["message"]
        assert lora(srv, "set_default_adapter", lora_name="gamma")[0] == 404
        assert lora(srv, "set_default_adapter", lora_name="alpha", model="other")[0] == 404

        status, body = lora(srv, "set_default_adapter", lora_name=None)
        assert status == 200 and (body["lora_name"], body["previous"], body["root"]) == (
            None,
            "alpha",
            str(MODEL_DIR.resolve()),
        )
        assert ids_of(srv.chat(return_token_ids=True)) == ids_of(base)
        status, body = lora(srv, "unload_lora_adapter", lora_name="alpha")
        assert status == 200 and body["in_flight"] == 0
        assert [m["id"] for m in srv.get("/v1/models")[1]["data"]] == [NAME]
        assert srv.post({"model": "alpha", "messages": QUESTION})[0] == 404
        assert srv.get("/stats")[1]["adapters"] == []
        # loaded again (new weights in the model under the same name): it answers as before
        assert lora(srv, "load_lora_adapter", lora_name="alpha", lora_path=str(adapters["alpha"]))[0] == 200
        assert ids_of(srv.chat(model="alpha", return_token_ids=True)) == ids_of(alpha)
    finally:
        reset(srv)


@needs_model
def test_an_adapter_served_merged_samples_as_the_adapter_does_and_loads_no_other(adapters, reference):
    """--merge-adapter: the adapter's weights merged into the base's (one GGUF, cached by content); its sampled tokens'
    logprobs agree with the float32 PEFT model's as the bf16 base's agree with the base, and no adapter loads beside it."""
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed in this venv")
    from peft import PeftModel

    _, model = reference
    args = ("--model", str(adapters["alpha"]), "--served-name", NAME, "--engine", "llama.cpp", "--merge-adapter")
    srv = Server(*args)
    try:
        assert srv.ready["merged"] is True and srv.ready["adapter"] is True and srv.ready["adapter_name"] is None
        assert Path(srv.ready["gguf"]).name.startswith("merged-")
        samples = sampled(srv, ["Tell me about the sea.", "What is 12 * 3?"], 32)
        status, body = lora(srv, "load_lora_adapter", lora_name="beta", lora_path=str(adapters["beta"]))
        assert status == 409 and "merged" in body["error"]["message"] and body["error"]["param"] == "lora_path", body
    finally:
        srv.stop()
    peft_model = PeftModel.from_pretrained(model, str(adapters["alpha"]))
    try:
        diffs = logprob_diffs(samples, peft_model)
    finally:
        peft_model.unload()  # the module-scoped reference model back unchanged
    assert sum(diffs) / len(diffs) < 0.1 and diffs[min(len(diffs) - 1, int(0.99 * len(diffs)))] < 1.0, diffs[-5:]
    again = Server(*args)  # the merged GGUF is reused: no second merge or conversion
    try:
        assert again.ready["gguf"] == srv.ready["gguf"]
        assert "merging" not in "".join(again.stderr)
    finally:
        again.stop()


@needs_model
def test_an_adapter_unloaded_mid_request_serves_that_request_to_the_end(server: Server, adapters):
    srv = server
    long = {"messages": [{"role": "user", "content": "Tell me about the sea."}], "max_tokens": 40, "ignore_eos": True}
    try:
        assert lora(srv, "load_lora_adapter", lora_name="beta", lora_path=str(adapters["beta"]))[0] == 200
        alone = srv.chat(model="beta", return_token_ids=True, **long)
        assert lora(srv, "set_default_adapter", lora_name="beta")[0] == 200
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(srv.chat, return_token_ids=True, **long)
            deadline = time.monotonic() + 30
            while not any(a["in_flight"] for a in srv.get("/stats")[1]["adapters"]):
                assert time.monotonic() < deadline and not running.done(), "the request never started"
                time.sleep(0.02)
            assert lora(srv, "set_default_adapter", lora_name=None)[1]["previous"] == "beta"
            status, body = lora(srv, "unload_lora_adapter", lora_name="beta")
            assert status == 200 and body["in_flight"] == 1, body
            assert srv.get("/stats")[1]["adapters"] == [
                {
                    "name": "beta",
                    "path": str(adapters["beta"]),
                    "state": "unloading",
                    "in_flight": 1,
                    "requests": 2,  # by its name, then by the served name while it was the default
                    "default": False,
                }
            ]
            assert srv.post({"model": "beta", "messages": QUESTION})[0] == 404  # new requests no longer get it
            # the name is free at once; this load lands between two tokens of the running request
            assert lora(srv, "load_lora_adapter", lora_name="beta", lora_path=str(adapters["alpha"]))[0] == 200
            assert not running.done(), "the request finished before the swap: make it longer"
            result = running.result(timeout=120)
        assert result["model"] == NAME and ids_of(result) == ids_of(alone)  # beta's weights to the end
        assert [a["state"] for a in srv.get("/stats")[1]["adapters"]] == ["loaded"]  # the old beta was dropped
    finally:
        reset(srv)


@needs_model
def test_concurrent_requests_on_two_adapters_batch_apart_and_get_their_own_output(server: Server, adapters):
    srv = server
    try:
        for name in ("alpha", "beta"):
            assert lora(srv, "load_lora_adapter", lora_name=name, lora_path=str(adapters[name]))[0] == 200
        bodies = [
            {"model": m, "messages": [{"role": "user", "content": q}], "max_tokens": 10}
            for m, q in (
                ("alpha", "What is 1 + 1?"),
                ("beta", "What is 1 + 1?"),
                ("alpha", "Name a fruit."),
                (NAME, "What is 1 + 1?"),
                ("beta", "Name a fruit."),
            )
        ]
        alone = [srv.chat(**b)["choices"][0]["message"]["content"] for b in bodies]
        assert len({alone[0], alone[1], alone[3]}) == 3, alone  # the same question, three different answers
        with ThreadPoolExecutor(len(bodies) + 1) as pool:
            blocker = pool.submit(srv.chat, max_tokens=24)  # so that the requests below queue up together
            time.sleep(0.3)
            results = list(pool.map(lambda b: srv.chat(**b), bodies))
            blocker.result()
        assert [r["choices"][0]["message"]["content"] for r in results] == alone
        if srv.engine == "llama.cpp":  # each adapter in use decodes on its own lane (context), beside the others
            assert srv.get("/stats")[1]["lanes"] >= 3
            return
        batch = [r["massgen_rl"]["batch_id"] for r in results]
        assert batch[0] == batch[2] and batch[1] == batch[4] and len({batch[0], batch[1], batch[3]}) == 3, batch
        assert results[0]["massgen_rl"]["batch_requests"] == 2 and results[1]["massgen_rl"]["batch_requests"] == 2
    finally:
        reset(srv)


def test_adapters_are_held_by_their_requests():
    from massgen_rl_serving.adapters import Adapters

    table = Adapters(NAME)
    assert table.acquire(NAME) is None  # the base model
    a = table.reserve("a", "/a")
    with pytest.raises(ApiError) as info:
        table.acquire("a")  # still loading
    assert info.value.status == 404
    table.commit(a)
    with pytest.raises(ApiError, match="has already been loaded"):
        table.reserve("a", "/other")
    table.set_default("a")
    held = table.acquire(NAME)
    assert held is a and a.in_flight == 1 and a.requests == 1
    with pytest.raises(ApiError, match="route it elsewhere first"):
        table.unload("a")
    assert table.set_default(None) == (None, a)
    assert table.acquire(NAME) is None
    assert table.unload("a") == (a, False)  # one request still runs on it
    assert a.state == "unloading" and [x["state"] for x in table.stats()] == ["unloading"]
    second = table.reserve("a", "/a2")  # the name is free again
    assert second.slot != a.slot
    assert table.release(held) is a and a.state == "dropped"  # its last request: the caller drops it
    table.cancel(second)
    assert table.stats() == [] and table.release(None) is None


# -- llama.cpp: the build flags and the GGUF cache ------------------------------------------------------


def test_llama_cpp_build_flags_follow_the_cpu():
    from massgen_rl_serving.llama_setup import cmake_args

    avx512 = cmake_args({"avx", "avx2", "fma", "f16c", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
    assert avx512[0] == "-DGGML_NATIVE=OFF"  # a native build enables AMX, which crashed in decode
    assert "-DGGML_AVX512=ON" in avx512 and "-DGGML_AVX512_BF16=ON" in avx512
    assert not any("AMX" in flag for flag in avx512) and "-DGGML_AVX512_VNNI=ON" not in avx512
    assert "-DGGML_AVX512=ON" not in cmake_args({"avx", "avx2", "fma", "f16c"})
    assert cmake_args(set()) == ["-DGGML_NATIVE=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF"]


def test_gguf_copies_are_keyed_by_content(tmp_path: Path, monkeypatch):
    from massgen_rl_serving import gguf_files

    monkeypatch.setenv("MASSGEN_RL_GGUF_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights v1")
    first = gguf_files.folder_digest(folder, "bf16")
    assert gguf_files.folder_digest(folder, "bf16") == first != gguf_files.folder_digest(folder, "q8_0")
    (folder / "model.safetensors").write_bytes(b"weights v2")  # a new checkpoint in the same folder
    assert gguf_files.folder_digest(folder, "bf16") != first
    # a failed conversion leaves no GGUF in the cache, and says why
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "convert_hf_to_gguf.py").write_text(
        "import sys\nprint('cannot convert this', file=sys.stderr)\nsys.exit(3)\n"
    )
    monkeypatch.setenv("MASSGEN_RL_LLAMA_CPP_TOOLS", str(tools))
    with pytest.raises(ScriptError, match="exit 3.*cannot convert this"):
        gguf_files.model_gguf(folder, "bf16")
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name != gguf_files.DIGESTS_FILE] == []
    monkeypatch.setenv("MASSGEN_RL_LLAMA_CPP_TOOLS", str(tmp_path / "none"))
    with pytest.raises(ScriptError, match="doctor --fix"):
        gguf_files.model_gguf(folder, "bf16")
    # the same weights in another folder share the one conversion
    (tools / "convert_hf_to_gguf.py").write_text(
        "import sys\nout = sys.argv[sys.argv.index('--outfile') + 1]\nopen(out, 'w').write('gguf')\n"
    )
    monkeypatch.setenv("MASSGEN_RL_LLAMA_CPP_TOOLS", str(tools))
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in folder.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    before = gguf_files.CONVERSIONS["count"]
    assert gguf_files.model_gguf(folder, "bf16") == gguf_files.model_gguf(copy, "bf16")
    assert gguf_files.CONVERSIONS["count"] == before + 1
