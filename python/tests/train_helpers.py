"""Helpers for the test_train_* modules: small trainer configs for the tiny model, running a trainer the way the
CLI does, checking a finished run, a stand-in reward bridge, and the one SFT run that several modules share."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import ScriptRun, run_module

MODEL_DIR = Path(
    os.environ.get("MASSGEN_RL_DEFAULT_MODEL_DIR")
    or Path.home() / ".cache" / "massgen-rl" / "models" / "smollm2-135m-instruct"
)
needs_model = pytest.mark.skipif(
    not (MODEL_DIR / "config.json").is_file(),
    reason=f"no converted default model at {MODEL_DIR} (run `massgen-rl doctor --fix`)",
)
LORA = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": None}
STEP_KEYS = {"event", "step", "total_steps", "epoch", "loss", "reward", "kl", "learning_rate", "tokens_per_s"}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def train_config(tmp: Path, name: str, dataset: Path, **overrides: Any) -> Path:
    """A small, fast trainer config (YAML) for the tiny model on CPU."""
    config = {
        "model_path": str(MODEL_DIR),
        "output_dir": str(tmp / f"out-{name}"),
        "dataset_path": str(dataset),
        "lora": LORA,
        "learning_rate": 1e-4,
        "max_steps": 2,
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 1,
        "seed": 7,
        "use_cpu": True,
        "bf16": False,
        "save_steps": 0,
        "logging_steps": 1,
        "max_length": 96,
        **overrides,
    }
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")  # JSON is YAML
    return path


def run_trainer_module(algo: str, config: Path, *extra: str) -> ScriptRun:
    """`python -m massgen_rl_training.<algo> --config FILE`."""
    run = run_module(f"massgen_rl_training.{algo}", "--config", str(config), *extra, timeout=900)
    print(f"\n{algo}: {run.seconds:.1f}s, rc={run.returncode}", file=sys.stderr)
    return run


def assert_trained(run: ScriptRun, steps: int, adapter: bool = True) -> dict[str, Any]:
    """Exit 0, `step` events 1..steps with the contract's keys, `done` last with a final folder."""
    assert run.returncode == 0, run.stderr[-5000:]
    step_events = run.of("step")
    assert [e["step"] for e in step_events] == list(range(1, steps + 1)), run.events
    for event in step_events:
        assert STEP_KEYS <= set(event), event
        assert event["total_steps"] == steps and isinstance(event["loss"], float)
        assert event["learning_rate"] is not None and event["epoch"] > 0
    done = run.last
    assert done["event"] == "done", run.events
    assert done["adapter"] is adapter and Path(done["path"]).name == "final"
    assert done["metrics"]["global_step"] == steps
    final = Path(done["path"])
    assert (final / "massgen-rl-train.json").is_file() and (final / "tokenizer_config.json").is_file()
    if adapter:
        adapter_config = json.loads((final / "adapter_config.json").read_text())
        assert Path(adapter_config["base_model_name_or_path"]).is_absolute()
        assert (Path(adapter_config["base_model_name_or_path"]) / "config.json").is_file()
        assert done["base_model"] == adapter_config["base_model_name_or_path"]
    else:
        assert (final / "config.json").is_file() and any(final.glob("*.safetensors"))
    return done


def generate_with(folder: str | Path, prompt: str = "What is 2 + 3?", max_new_tokens: int = 6) -> str:
    """Load a final folder the way a user would (transformers, + peft for an adapter) and decode greedily."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if (folder / "adapter_config.json").is_file():
        from peft import PeftModel

        base = json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"]
        model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32), folder)
    else:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.eval()
    inputs = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.inference_mode():
        output = model.generate(
            **inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
        )
    new = output[0, inputs["input_ids"].shape[1] :]
    assert len(new) >= 1
    return tokenizer.decode(new, skip_special_tokens=True)


_TEACHER: dict[str, Any] = {}


def teacher_forced_logps(
    prompt: list[dict[str, str]], completion_ids: list[int], temperature: float = 1.0
) -> list[float]:
    """The default model's float32 log-probabilities of `completion_ids` after the chat-templated `prompt` at
    `temperature`: what a serving engine with the trainer's exact numerics would record."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not _TEACHER:
        _TEACHER["tokenizer"] = AutoTokenizer.from_pretrained(MODEL_DIR)
        _TEACHER["model"] = AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=torch.float32).eval()
    prompt_ids = _TEACHER["tokenizer"].apply_chat_template(
        prompt, add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"]
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)])
    with torch.no_grad():
        logps = torch.log_softmax(_TEACHER["model"](input_ids=ids).logits[0, :-1].float() / temperature, -1)
    return logps.gather(-1, ids[0, 1:, None]).squeeze(-1)[-len(completion_ids) :].tolist()


def completion_token_ids(text: str) -> list[int]:
    """A completion's token ids as a serving engine records them: the content tokens + the end-of-turn token."""
    from transformers import AutoTokenizer

    tokenizer = _TEACHER.get("tokenizer") or AutoTokenizer.from_pretrained(MODEL_DIR)
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]


def served_groups(shift: float = 0.0, temperature: float | None = None) -> list[dict[str, Any]]:
    """Two groups whose completions carry token ids and the logprobs a serving engine recorded for them: the
    model's own float32 logprobs at `temperature` (recorded with each completion; None: 1, not recorded) minus
    `shift` (0: no mismatch)."""
    groups = []
    for gid, question, answers in [
        ("g0", "What is 2 + 3?", [("5", 1.0), ("The answer is 7.", 0.0)]),
        ("g1", "Name a primary color.", [("Red", 1.0), ("Purple, I think.", 0.0)]),
    ]:
        prompt = [{"role": "user", "content": question}]
        completions = []
        for text, reward in answers:
            ids = completion_token_ids(text)
            logprobs = teacher_forced_logps(prompt, ids, 1.0 if temperature is None else temperature)
            completion = {
                "content": text,
                "reward": reward,
                "advantage": 0.0,
                "token_ids": ids,
                "logprobs": [x - shift for x in logprobs],
                "meta": {"task_id": gid},
            }
            completions.append(completion if temperature is None else {**completion, "temperature": temperature})
        groups.append({"group_id": gid, "prompt": prompt, "completions": completions})
    return groups


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RewardServer:
    """A tiny reward bridge: scores each completion with `score(text)` and records the requests."""

    def __init__(self, score: Callable[[str], float | None], status: int = 200) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                payload = json.dumps({"rewards": [score(c) for c in body["completions"]]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/rewards"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


SFT_ROWS = [
    {
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": q},
            {"role": "assistant", "content": a},
        ],
        "reward": 1.0,
        "meta": {"rollout_id": f"r{i}", "task_id": "t", "agent": "solver", "seq": i},
    }
    for i, (q, a) in enumerate(
        [
            ("What is 2 + 3?", "5"),
            ("Name a primary color.", "Red"),
            ("What is the capital of France?", "Paris"),
            ("Say hi.", "Hi!"),
        ]
    )
]


_SHARED: dict[str, Any] = {}


@pytest.fixture(scope="session")
def sft_adapter(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One LoRA SFT run shared by the SFT checks and by DPO (which continues it as a parent adapter). Modules import
    this fixture, which gives each its own fixture definition: the module-level cache makes it run once."""
    if not (MODEL_DIR / "config.json").is_file():
        pytest.skip(f"no converted default model at {MODEL_DIR}")
    if "sft" not in _SHARED:
        tmp = tmp_path_factory.mktemp("sft")
        dataset = write_jsonl(tmp / "data.jsonl", SFT_ROWS)
        run = run_trainer_module("sft", train_config(tmp, "sft", dataset))
        _SHARED["sft"] = {"run": run, "done": assert_trained(run, 2), "tmp": tmp, "dataset": dataset}
    return _SHARED["sft"]
