"""Trainer plumbing without training (config parsing, exit code 2, the offline replay's bookkeeping, the reward
bridge client), plus the helpers and the shared SFT run the other test_train_* modules use."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import ScriptRun, run_module
from massgen_rl_trainers.config_args import UsageError
from massgen_rl_trainers.grpo import GRPOArgs, Replay, post_rewards, replay_chunks
from massgen_rl_trainers.protocol import ScriptError
from massgen_rl_trainers.sft import SFTArgs
from massgen_rl_trainers.train_common import parse_train_args

MODEL_DIR = Path(os.environ.get("MASSGEN_RL_DEFAULT_MODEL_DIR")
                 or Path.home() / ".cache" / "massgen-rl" / "models" / "smollm2-135m-instruct")
needs_model = pytest.mark.skipif(not (MODEL_DIR / "config.json").is_file(),
                                 reason=f"no converted default model at {MODEL_DIR} (run `massgen-rl doctor --fix`)")
LORA = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": None}
STEP_KEYS = {"event", "step", "total_steps", "epoch", "loss", "reward", "kl", "learning_rate", "tokens_per_s"}


# -- helpers (imported by the other test_train_* modules) ----------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def train_config(tmp: Path, name: str, dataset: Path, **overrides: Any) -> Path:
    """A small, fast trainer config (YAML) for the tiny model on CPU."""
    config = {"model_path": str(MODEL_DIR), "output_dir": str(tmp / f"out-{name}"), "dataset_path": str(dataset),
              "lora": LORA, "learning_rate": 1e-4, "max_steps": 2, "per_device_train_batch_size": 2,
              "gradient_accumulation_steps": 1, "seed": 7, "use_cpu": True, "bf16": False, "save_steps": 0,
              "logging_steps": 1, "max_length": 96, **overrides}
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")  # JSON is YAML
    return path


def run_trainer_module(algo: str, config: Path, *extra: str) -> ScriptRun:
    run = run_module(algo, "--config", str(config), *extra, timeout=900)
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
    inputs = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                pad_token_id=tokenizer.pad_token_id)
    new = output[0, inputs["input_ids"].shape[1]:]
    assert len(new) >= 1
    return tokenizer.decode(new, skip_special_tokens=True)


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
    {"messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": q},
                  {"role": "assistant", "content": a}], "reward": 1.0,
     "meta": {"rollout_id": f"r{i}", "task_id": "t", "agent": "solver", "seq": i}}
    for i, (q, a) in enumerate([("What is 2 + 3?", "5"), ("Name a primary color.", "Red"),
                                ("What is the capital of France?", "Paris"), ("Say hi.", "Hi!")])
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


# -- config parsing -----------------------------------------------------------------------------------------------


def _base_config(tmp_path: Path, **values: Any) -> Path:
    dataset = write_jsonl(tmp_path / "data.jsonl", SFT_ROWS)
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    config = {"model_path": str(model), "output_dir": str(tmp_path / "out"), "dataset_path": str(dataset), **values}
    path = tmp_path / "train.yaml"
    path.write_text(json.dumps(config))
    return path


def test_lora_mapping_from_config_and_cli(tmp_path):
    config = _base_config(tmp_path, lora={"r": 4, "alpha": 16, "target_modules": ["q_proj", "v_proj"]})
    args = parse_train_args(SFTArgs, ["--config", str(config)])
    assert args.lora == {"r": 4, "alpha": 16, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    args = parse_train_args(SFTArgs, ["--config", str(config), "--lora", '{"r": 2}'])
    assert args.lora == {"r": 2, "alpha": 4, "dropout": 0.0, "target_modules": None}
    assert parse_train_args(SFTArgs, ["--config", str(config), "--lora", "null"]).lora is None


@pytest.mark.parametrize("values, needle", [
    ({"lora_rank": 4}, "'lora_rank'"),
    ({"lora": {"rank": 4}}, "unknown lora key"),
    ({"lora": {"r": 0}}, "lora.r"),
    ({"max_steps": 0}, "max_steps"),
    ({"learning_rate": "fast"}, "learning_rate"),
    ({"resume_from_checkpoint": "/nonexistent/checkpoint-3"}, "not a checkpoint"),
])
def test_bad_config_is_a_usage_error(tmp_path, values, needle):
    with pytest.raises(UsageError, match=needle):
        parse_train_args(SFTArgs, ["--config", str(_base_config(tmp_path, **values))])


def test_grpo_config_checks(tmp_path):
    with pytest.raises(UsageError, match="reward_url"):
        parse_train_args(GRPOArgs, ["--config", str(_base_config(tmp_path, mode="online"))])
    with pytest.raises(UsageError, match="multiple of num_generations"):
        parse_train_args(GRPOArgs, ["--config", str(_base_config(tmp_path, num_generations=4,
                                                                  per_device_train_batch_size=2))])


@pytest.mark.parametrize("algo", ["sft", "dpo", "grpo", "ppo"])
def test_unknown_config_key_exits_2(tmp_path, algo):
    run = run_module(algo, "--config", str(_base_config(tmp_path, not_a_key=1)))
    assert run.returncode == 2, run.stderr
    assert [e["event"] for e in run.events] == ["error"] and run.last["kind"] == "usage"
    assert "'not_a_key'" in run.last["message"]


def test_missing_model_folder_exits_2(tmp_path):
    config = _base_config(tmp_path)
    values = json.loads(config.read_text())
    values["model_path"] = str(tmp_path / "nowhere")
    config.write_text(json.dumps(values))
    run = run_module("sft", "--config", str(config))
    assert run.returncode == 2 and run.last["kind"] == "usage" and "model_path" in run.last["message"]


# -- offline GRPO replay ------------------------------------------------------------------------------------------


def _group(rewards: list[float]) -> dict[str, Any]:
    return {"prompt": [{"role": "user", "content": "q"}],
            "completions": [{"content": f"c{i}", "token_ids": [10 + i], "reward": r} for i, r in enumerate(rewards)]}


def test_replay_chunks_have_full_size_and_spread_rewards():
    groups = [_group([0, 1]), _group([0, 0, 1]), _group([0, 1, 0, 1]), _group([1, 0, 0, 0, 1])]
    chunks = replay_chunks(groups, 2, seed=3)
    assert [g for g, _ in chunks] == [0, 1, 1, 2, 2, 3, 3, 3]
    for _, chunk in chunks:
        assert len(chunk) == 2 and len({c["reward"] for c in chunk}) == 2  # every row can teach something
    for index, group in enumerate(groups):  # no completion is dropped
        used = {c["content"] for g, chunk in chunks if g == index for c in chunk}
        assert used == {c["content"] for c in group["completions"]}
    assert all(len(chunk) == 4 for _, chunk in replay_chunks([_group([0, 1])], 4, seed=0))


class _FakeTokenizer:
    eos_token_id = 2

    def apply_chat_template(self, messages, **kwargs):
        return {"input_ids": [1, 5, 6]}

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(ch) for ch in text]}


def test_replay_rollout_serves_each_copy_a_different_completion():
    groups = [_group([0, 1]), _group([1, 0])]
    groups[1]["completions"][1]["token_ids"] = None  # tokenized from content + eos
    chunks = replay_chunks(groups, 2, seed=0)
    replay = Replay(_FakeTokenizer(), groups, chunks, 2, max_completion_length=8, max_length=None)
    rows = replay.dataset_rows(chunks, groups)
    # one process: the batch holds each row num_generations times in a row
    inputs = [dict(rows[0]), dict(rows[0]), dict(rows[1]), dict(rows[1])]
    trainer = type("T", (), {"_massgen_inputs": inputs, "accelerator": type("A", (), {"process_index": 0})()})()
    out = replay([r["prompt"] for r in inputs], trainer)
    assert out["prompt_ids"] == [[1, 5, 6]] * 4 and out["logprobs"] is None
    assert sorted(out["recorded_reward"][:2]) == [0, 1] and sorted(out["recorded_reward"][2:]) == [0, 1]
    assert [ord("c"), ord("1"), 2] in out["completion_ids"]
    # two processes: the copies of one row are split across them and must still differ
    halves = []
    for rank in (0, 1):
        trainer._massgen_inputs = [dict(rows[0])]
        trainer.accelerator.process_index = rank
        halves.append(replay([rows[0]["prompt"]], trainer)["completion_ids"][0])
    assert halves[0] != halves[1]


# -- the reward bridge client -------------------------------------------------------------------------------------


def test_post_rewards_round_trip_and_errors():
    server = RewardServer(lambda text: None if text == "skip" else float(len(text)))
    try:
        body = {"prompts": [[{"role": "user", "content": "q"}]] * 2, "completions": ["abc", "skip"],
                "meta": [{"task_id": "t"}, {"task_id": "t"}]}
        assert post_rewards(server.url, body, timeout=10) == [3.0, None]
        assert server.requests == [body]
    finally:
        server.close()
    bad = RewardServer(lambda text: 1.0, status=400)
    try:
        with pytest.raises(ScriptError, match="HTTP 400"):
            post_rewards(bad.url, {"prompts": [], "completions": ["x"], "meta": [{}]}, timeout=10)
    finally:
        bad.close()
    with pytest.raises(ScriptError, match="unreachable"):
        post_rewards(f"http://127.0.0.1:{free_port()}/", {"completions": ["x"]}, timeout=2, attempts=1)
