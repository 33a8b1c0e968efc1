"""Online GRPO sampled by massgen-rl's own server (`python -m massgen_rl_serving`, llama.cpp): TRL's
`rollout_func` hook asks its chat completions route for `num_generations` samples of each prompt at `temperature`,
with `return_token_ids` and `logprobs`, and hands TRL the served prompt and completion token ids and the per-token
logprobs of the distribution each token was drawn from (softmax(logits / temperature),
massgen_rl_serving/sampling.py: the same scaling TRL applies to the trainer's logits), which the importance-sampling
correction compares against (tis.py).

Every `sync_steps` optimizer steps (and before the first generation, so a continued parent adapter is served too)
the trainer's current LoRA adapter is saved and hot-loaded into the server under a fresh name
(POST /v1/load_lora_adapter), the previous one unloaded: the server generates with the weights being trained, as
TRL's vLLM server mode does with its weight pushes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.protocol import ScriptError, log

from .ranks import barrier, local_rank

GENERATIONS = ("auto", "server", "policy", "vllm")
MAX_N = 64  # the server's most samples per request
MAX_TEMPERATURE = 2.0  # the server's highest temperature


def resolve_generation(args: Any) -> str:
    """What samples online mode: auto is `vllm` when that mapping is set, else the server when massgen-rl started
    one (`server_url`), else the policy's own generate. Checked with the run's keys (validate)."""
    chosen = args.generation
    if chosen == "auto":
        chosen = "vllm" if args.vllm is not None else "server" if args.server_url else "policy"
    if chosen == "server":
        if not str(args.server_url or "").startswith(("http://", "https://")):
            raise UsageError(
                f"generation 'server' needs server_url, the server's http(s) /v1 URL; got {args.server_url!r}"
            )
        if args.lora is None:
            raise UsageError("generation 'server' syncs a LoRA adapter into the server: train with train.lora enabled")
        if args.temperature > MAX_TEMPERATURE:
            raise UsageError(
                f"temperature must be at most {MAX_TEMPERATURE} with generation 'server', got {args.temperature}"
            )
    return chosen


def check_generation(args: Any) -> None:
    """The settings alone (train.check): the choice, and `vllm` only with it."""
    if args.generation not in GENERATIONS:
        raise UsageError(f"generation must be one of {', '.join(GENERATIONS)}, got {args.generation!r}")
    if args.generation in ("server", "policy") and args.vllm is not None:
        raise UsageError(f"generation is {args.generation!r} but vllm is set: drop vllm or use generation 'vllm'")
    if args.generation == "vllm" and args.vllm is None:
        args.vllm = {}
    if args.generation != "auto" and args.mode != "online":
        raise UsageError(f"generation {args.generation!r} samples, which only mode 'online' does")
    if isinstance(args.sync_steps, bool) or not isinstance(args.sync_steps, int) or not 1 <= args.sync_steps <= 1 << 20:
        raise UsageError(f"sync_steps must be a whole number from 1 to {1 << 20}, got {args.sync_steps!r}")
    if not 0 < args.server_timeout <= 7 * 24 * 3600:
        raise UsageError(f"server_timeout must be positive and at most a week, got {args.server_timeout}")


def post(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), method="POST", headers={"Content-Type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:500]
        raise ScriptError(f"generation server {url} answered HTTP {exc.code}: {detail}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        raise ScriptError(f"generation server {url} unreachable: {getattr(exc, 'reason', exc)}") from None
    except ValueError as exc:
        raise ScriptError(f"generation server {url} answered with invalid JSON: {exc}") from None


class ServerRollout:
    """The `rollout_func` of generation 'server'; `close()` unloads the last synced adapter."""

    def __init__(
        self, server_url: str, temperature: float, max_completion_length: int, sync_steps: int, timeout: float
    ) -> None:
        self.url = server_url.rstrip("/")
        self.temperature = temperature
        self.max_tokens = max_completion_length
        self.sync_steps = sync_steps
        self.timeout = timeout
        self.synced_step: int | None = None
        self.adapter: str | None = None  # the lora_name requests ask for
        self.syncs = 0
        # each machine trains beside a server of its own: the first process of each syncs it
        self.folder = Path(tempfile.mkdtemp(prefix="grpo-sync-")) if local_rank() == 0 else None

    def sync(self, trainer: Any) -> None:
        """Hot-loads the trainer's adapter into the server when `sync_steps` optimizer steps have passed."""
        step = trainer.state.global_step
        if self.synced_step is not None and step - self.synced_step < self.sync_steps:
            return
        name = f"grpo-policy-{self.syncs}"  # same on every process: each counts the same syncs
        if self.folder is not None:
            target = self.folder / name
            trainer.accelerator.unwrap_model(trainer.model).save_pretrained(str(target), selected_adapters=["default"])
            post(f"{self.url}/load_lora_adapter", {"lora_name": name, "lora_path": str(target)}, self.timeout)
            # the server holds the weights now; with the folder gone it also drops its GGUF copy on unload
            shutil.rmtree(target, ignore_errors=True)
            self.unload()
            log(f"generation server: step {step}: sampling with the adapter '{name}'")
        barrier()
        self.adapter, self.synced_step, self.syncs = name, step, self.syncs + 1

    def unload(self) -> None:
        if self.adapter is None or self.folder is None:
            return
        post(f"{self.url}/unload_lora_adapter", {"lora_name": self.adapter}, self.timeout)

    def close(self) -> None:
        try:
            self.unload()
        except ScriptError as exc:  # the run's outcome stands; the server may be gone with it
            log(f"generation server: could not unload the adapter '{self.adapter}': {exc}")
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        self.sync(trainer)
        # TRL repeats each prompt num_generations times in a row: one request with n samples per run of a prompt.
        runs: list[tuple[Any, int]] = []
        for prompt in prompts:
            if runs and runs[-1][0] == prompt and runs[-1][1] < MAX_N:
                runs[-1] = (prompt, runs[-1][1] + 1)
            else:
                runs.append((prompt, 1))
        with ThreadPoolExecutor(max_workers=min(16, len(runs))) as pool:  # the server batches them together
            answers = list(pool.map(lambda run: self.sample(*run), runs))
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
        for prompt_ids, samples in answers:
            for ids, logprobs in samples:
                out["prompt_ids"].append(prompt_ids)
                out["completion_ids"].append(ids)
                out["logprobs"].append(logprobs)
        return out

    def sample(self, messages: Any, n: int) -> tuple[list[int], list[tuple[list[int], list[float]]]]:
        if not isinstance(messages, list):
            raise ScriptError("generation 'server' needs chat prompts (lists of messages)")
        body = {
            "model": self.adapter,
            "messages": messages,
            "n": n,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "logprobs": True,
            "return_token_ids": True,
        }
        answer = post(f"{self.url}/chat/completions", body, self.timeout)
        prompt_ids, choices = answer.get("prompt_token_ids"), answer.get("choices")
        if not isinstance(prompt_ids, list) or not isinstance(choices, list) or len(choices) != n:
            raise ScriptError(f"generation server: expected prompt_token_ids and {n} choices, got {str(answer)[:300]}")
        samples = []
        for choice in choices:
            ids = choice.get("token_ids")
            entries = (choice.get("logprobs") or {}).get("content")
            if not isinstance(ids, list) or not ids or not isinstance(entries, list) or len(entries) != len(ids):
                raise ScriptError(
                    f"generation server: a choice without token_ids and one logprob each: {str(choice)[:300]}"
                )
            samples.append((ids, [float(entry["logprob"]) for entry in entries]))
        return prompt_ids, samples
