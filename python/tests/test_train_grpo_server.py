"""Online GRPO sampled by the built-in server (massgen_rl_training/grpo_server.py): the rollout function and the adapter syncs
against a scripted OpenAI-compatible server, the `generation` settings, and a few steps on the tiny model through
the real llama.cpp server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.protocol import ScriptError
from massgen_rl_serving.gguf_files import model_gguf
from massgen_rl_training.grpo import GRPOArgs
from massgen_rl_training.grpo_server import ServerRollout, check_generation, resolve_generation
from serve_support import Server, engine_args
from train_helpers import (
    LORA,
    MODEL_DIR,
    RewardServer,
    assert_trained,
    needs_model,
    run_trainer_module,
    train_config,
    write_jsonl,
)

A = [{"role": "user", "content": "What is 2 + 3?"}]
B = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a primary color."}]


class ScriptedServer:
    """Answers chat completions with n made-up samples (token ids 100+i.., one logprob each) and records every
    request by path; `broken` drops the logprobs of the second choice."""

    def __init__(self, broken: bool = False) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((self.path, body))
                if self.path.endswith("/chat/completions"):
                    prompt = [len(m["content"]) for m in body["messages"]]
                    choices = []
                    for i in range(body["n"]):
                        ids = [100 + i] * (i + 1) + [2]
                        entries = [{"token": "t", "logprob": -0.5 * (i + 1)} for _ in ids]
                        if broken and i == 1:
                            entries = entries[:-1]
                        choices.append({"index": i, "token_ids": ids, "logprobs": {"content": entries}})
                    payload: dict[str, Any] = {"prompt_token_ids": prompt, "choices": choices}
                else:
                    payload = {"status": "ok"}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def paths(self) -> list[str]:
        return [path.removeprefix("/v1/") for path, _ in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeModel:
    def __init__(self) -> None:
        self.saved: list[tuple[str, list[str]]] = []

    def save_pretrained(self, folder: str, selected_adapters: list[str]) -> None:
        Path(folder).mkdir(parents=True)
        (Path(folder) / "adapter_config.json").write_text("{}")
        self.saved.append((folder, selected_adapters))


def fake_trainer(model: FakeModel) -> Any:
    return SimpleNamespace(
        state=SimpleNamespace(global_step=0), model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m)
    )


def test_rollout_asks_once_per_prompt_for_its_samples_and_keeps_the_served_logprobs():
    server = ScriptedServer()
    rollout = ServerRollout(server.url, 0.7, 12, 1, 30)
    try:
        out = rollout([A, A, A, B, B, B], fake_trainer(FakeModel()))
        chats = [body for path, body in server.requests if path.endswith("/chat/completions")]
        assert len(chats) == 2 and sorted(body["n"] for body in chats) == [3, 3]
        for body in chats:
            assert body["temperature"] == 0.7 and body["max_tokens"] == 12 and body["model"] == "grpo-policy-0"
            assert body["logprobs"] is True and body["return_token_ids"] is True
        assert out["prompt_ids"] == [[len(A[0]["content"])]] * 3 + [[9, len(B[1]["content"])]] * 3
        assert out["completion_ids"][:3] == [[100, 2], [101, 101, 2], [102, 102, 102, 2]]
        assert out["completion_ids"][3:] == out["completion_ids"][:3]
        assert out["logprobs"][1] == [-1.0, -1.0, -1.0] and len(out["logprobs"][2]) == 4
    finally:
        rollout.close()
        server.close()


def test_rollout_syncs_the_adapter_every_sync_steps_and_unloads_the_one_before():
    server = ScriptedServer()
    model = FakeModel()
    trainer = fake_trainer(model)
    rollout = ServerRollout(server.url, 1.0, 8, 2, 30)
    folder = rollout.folder
    assert folder is not None
    try:
        for step in (0, 1, 2, 3, 4):
            trainer.state.global_step = step
            rollout([A, A], trainer)
        assert rollout.syncs == 3  # steps 0, 2 and 4
        loads = [body for path, body in server.requests if path.endswith("/load_lora_adapter")]
        assert [body["lora_name"] for body in loads] == ["grpo-policy-0", "grpo-policy-1", "grpo-policy-2"]
        assert [body["lora_path"] for body in loads] == [folder for folder, _ in model.saved]
        assert all(adapters == ["default"] for _, adapters in model.saved)
        unloads = [body["lora_name"] for path, body in server.requests if path.endswith("/unload_lora_adapter")]
        assert unloads == ["grpo-policy-0", "grpo-policy-1"]
        models = [body["model"] for path, body in server.requests if path.endswith("/chat/completions")]
        assert models == ["grpo-policy-0", "grpo-policy-0", "grpo-policy-1", "grpo-policy-1", "grpo-policy-2"]
        assert server.paths()[:3] == ["load_lora_adapter", "chat/completions", "chat/completions"]
        assert list(folder.iterdir()) == []  # a copy goes once the server has loaded it
    finally:
        rollout.close()
        server.close()
    assert server.paths()[-1] == "unload_lora_adapter" and server.requests[-1][1]["lora_name"] == "grpo-policy-2"
    assert not folder.exists()


def test_rollout_refuses_a_choice_without_one_logprob_per_token():
    server = ScriptedServer(broken=True)
    rollout = ServerRollout(server.url, 1.0, 8, 1, 30)
    try:
        with pytest.raises(ScriptError, match="one logprob each"):
            rollout([A, A], fake_trainer(FakeModel()))
    finally:
        rollout.close()
        server.close()


def _args(**overrides: Any) -> GRPOArgs:
    base = dict(model_path="", output_dir="", dataset_path="", mode="online", lora=dict(LORA))
    return GRPOArgs(**{**base, **overrides})


def test_generation_settings_resolve_and_refuse_what_cannot_run():
    def checked(**overrides: Any) -> str:
        args = _args(**overrides)
        args.validate_settings(1, cpu_only=False)
        return resolve_generation(args)

    assert checked() == "policy"
    assert checked(server_url="http://127.0.0.1:9/v1") == "server"
    assert checked(vllm={"mode": "colocate"}, server_url="http://127.0.0.1:9/v1") == "vllm"
    assert checked(generation="vllm") == "vllm"
    assert checked(generation="policy", server_url="http://127.0.0.1:9/v1") == "policy"
    refused = [
        (dict(generation="llama"), "generation must be one of"),
        (dict(generation="server", vllm={}), "vllm is set"),
        (dict(generation="server"), "needs server_url"),
        (dict(generation="server", server_url="http://h/v1", lora=None), "train.lora"),
        (dict(generation="server", server_url="http://h/v1", temperature=3.0), "at most 2.0"),
        (dict(sync_steps=0), "sync_steps"),
        (dict(mode="offline", generation="server"), "only mode 'online'"),
    ]
    for overrides, message in refused:
        with pytest.raises(UsageError, match=message):
            checked(**overrides)
    with pytest.raises(UsageError, match="server_timeout"):
        check_generation(_args(server_timeout=0))


@needs_model
def test_grpo_online_samples_from_the_llama_cpp_server_with_the_synced_adapter(tmp_path, monkeypatch):
    # A GGUF cache of its own (the base's conversion linked in): other suites running beside this one sync
    # adapters of the same names into the shared cache.
    engine = engine_args("llama.cpp")
    own_cache = tmp_path / "gguf"
    own_cache.mkdir()
    base = model_gguf(MODEL_DIR.resolve(), "f32")
    (own_cache / base.name).symlink_to(base)
    monkeypatch.setenv("MASSGEN_RL_GGUF_CACHE", str(own_cache))
    server = Server("--model", str(MODEL_DIR), "--served-name", "policy", "--max-batch-size", "4", *engine)
    rewards = RewardServer(lambda text: float(len(text) % 5))
    try:
        dataset = write_jsonl(
            tmp_path / "data.jsonl", [{"prompt": p, "completions": [{"content": "x"}] * 2} for p in (A, B)]
        )
        run = run_trainer_module(
            "grpo",
            train_config(
                tmp_path,
                "grpo-server",
                dataset,
                mode="online",
                reward_url=rewards.url,
                server_url=server.base + "/v1",
                num_generations=2,
                max_completion_length=12,
                temperature=0.9,
                max_steps=3,
            ),
        )
        status, stats = server.get("/stats")
    finally:
        rewards.close()
        code, _ = server.stop()
    log = "".join(server.stderr)
    assert code == 0, log[-3000:]
    done = assert_trained(run, 3)
    assert done["metrics"]["grpo/generation"] == "server" and done["metrics"]["grpo/adapter_syncs"] == 3
    for name in ("grpo-policy-0", "grpo-policy-1", "grpo-policy-2"):
        assert f"loaded the LoRA adapter '{name}'" in log and f"dropped the LoRA adapter '{name}'" in log
    assert list(own_cache.glob("lora-*.gguf")) == []  # no GGUF copy of a synced adapter is kept
    assert status == 200 and stats["adapters"] == [] and stats["requests"] >= 3  # one chat request per step
    assert len(rewards.requests) == 3 and all(len(r["completions"]) == 2 for r in rewards.requests)
    for event in run.of("step"):
        assert event["reward"] is not None
        assert 1 <= event["metrics"]["completions/mean_length"] <= 12
        # f32 GGUF weights: the served logprobs are the trainer's at temperature 0.9 (at T=1 they would be ~0.1 off)
        assert event["metrics"]["tis/mean_abs_delta"] < 1e-3
    assert 1 <= done["metrics"]["completion_tokens"] <= 12
