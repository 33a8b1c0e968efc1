"""A real `serve` process for the tests that talk to it over HTTP (test_serve*.py)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import PYTHON_DIR
from massgen_rl_serving.engines import llama_cpp_available

MODEL_DIR = Path(
    os.environ.get("MASSGEN_RL_DEFAULT_MODEL_DIR")
    or Path.home() / ".cache" / "massgen-rl" / "models" / "smollm2-135m-instruct"
)
NAME = "test-model"
QUESTION = [{"role": "user", "content": "What is 2 + 3?"}]
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))

needs_model = pytest.mark.skipif(
    not (MODEL_DIR / "config.json").is_file(),
    reason=f"no converted default model at {MODEL_DIR} (run `massgen-rl doctor --fix`)",
)


# -- the model in-process ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference():
    """The tokenizer and model in-process, to check token ids and logprobs independently of the server."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=torch.float32).eval()
    return tokenizer, model


def prompt_ids(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)[
        "input_ids"
    ]
    return list(ids)


def teacher_forced_logprobs(model: Any, prompt: list[int], completion: list[int], temperature: float) -> list[float]:
    import torch

    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([prompt + completion])).logits[0].float()
    scores = torch.log_softmax(logits[len(prompt) - 1 : -1] / temperature, dim=-1)
    return scores.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1).tolist()


# -- a real server ------------------------------------------------------------------------------------


class Server:
    engine = "transformers"

    def __init__(self, *args: str, timeout: float = 180) -> None:
        env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "massgen_rl_serving", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        self.ready = self._read_until_ready(timeout)
        self.base = f"http://{self.ready['host']}:{self.ready['port']}"
        self.startup_seconds = time.monotonic() - self.started

    def _read_until_ready(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)  # nothing but events on stdout
            self.events.append(event)
            if event["event"] == "ready":
                return event
            assert event["event"] == "progress", (event, "".join(self.stderr)[-3000:])
            assert time.monotonic() < deadline, "the server did not become ready in time"
        raise AssertionError(f"the server exited ({self.proc.wait()}) before ready: {''.join(self.stderr)[-3000:]}")

    def stop(self) -> tuple[int, list[dict[str, Any]]]:
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        self.events += [json.loads(line) for line in out.splitlines()]
        return self.proc.returncode, self.events

    def get(self, path: str) -> tuple[int, Any]:
        return self.request("GET", path)

    def chat(self, **body: Any) -> dict[str, Any]:
        status, payload = self.post({"model": NAME, "messages": QUESTION, "temperature": 0, "max_tokens": 16, **body})
        assert status == 200, payload
        return payload

    def post(self, body: Any, path: str = "/v1/chat/completions") -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.request("POST", path, data)

    def stream(self, **body: Any) -> tuple[list[dict[str, Any]], float]:
        """A streamed chat request: its chunks (error events included) up to `data: [DONE]`, and the seconds to the
        first chunk with content or a tool call."""
        data = json.dumps(
            {"model": NAME, "messages": QUESTION, "temperature": 0, "max_tokens": 16, "stream": True, **body}
        ).encode()
        req = urllib.request.Request(
            self.base + "/v1/chat/completions", data=data, method="POST", headers={"Content-Type": "application/json"}
        )
        chunks, first, started = [], None, time.monotonic()
        with _direct.open(req, timeout=120) as response:
            assert response.headers["Content-Type"].startswith("text/event-stream")
            for raw in response:
                line = raw.decode("utf-8").rstrip("\n")
                if not line:
                    continue
                assert line.startswith("data: "), line
                if line == "data: [DONE]":
                    return chunks, first if first is not None else math.inf
                chunk = json.loads(line[6:])
                delta = (chunk.get("choices") or [{}])[0].get("delta", {})
                if first is None and (delta.get("content") or delta.get("tool_calls")):
                    first = time.monotonic() - started
                chunks.append(chunk)
        raise AssertionError(f"the stream ended without [DONE]: {chunks[-3:]}")

    def request(
        self, method: str, path: str, data: bytes | None = None, headers: dict | None = None
    ) -> tuple[int, Any]:
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
        )
        try:
            with _direct.open(req, timeout=120) as response:
                self.last_headers = dict(response.headers)
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            self.last_headers = dict(exc.headers)
            return exc.code, json.loads(exc.read())


# Every server test runs on both CPU engines. llama.cpp serves f32 GGUF weights here, so that its logprobs can be
# held to the same 2e-3 as the transformers engine's; its default bf16 weights are held to the agreement bound
# in test_bf16_logprobs_agree_with_the_trainer.
ENGINES = {"transformers": (), "llama.cpp": ("--weights-type", "f32")}


def engine_args(engine: str) -> tuple[str, ...]:
    if engine == "llama.cpp" and not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed in this venv (massgen-rl doctor --fix builds it)")
    return ("--engine", engine, *ENGINES[engine])
