"""Group relative policy optimization on the `grpo` dataset (TRL GRPOTrainer).

    python -m massgen_rl_training.grpo --config FILE

Rows: `{"group_id", "prompt": [messages], "completions": [{"content", "reward", "advantage", "token_ids"|null,
"logprobs"|null, "temperature"|null, "meta"}, ...]}` (>= 2 completions per group).

`mode: offline` replays the recorded completions through TRL's `rollout_func` hook instead of generating: each group
is cut into dataset rows of exactly `num_generations` completions (dealt round-robin in reward order so each row
spans the group's rewards; a short row is filled up with the group's other completions, so a group smaller than
`num_generations` repeats some),
the hook returns the recorded `token_ids` (or the content tokenized + the end-of-turn token when they are null), and
a reward function hands back the recorded `reward`. TRL then normalizes rewards per row into advantages (the
recorded `advantage` is not used) and takes the usual clipped GRPO step. The importance ratio starts at 1, i.e. the
completions are assumed to come from the current policy: only replay traces sampled from the model being trained
(massgen-rl's dataset keeps only those, train.grpo.on_policy). The policy scores them at the temperature they were
sampled at (each completion's `temperature`; greedy ones and other temperatures than the most common are left out,
grpo_offline.py), and the steps are capped so no completion enters the loss more than `max_reuse` times.
Completions whose recorded `logprobs` match their `token_ids` one for one also correct the serving/training mismatch
(`is_correction`, tis.py): each token's loss is weighted by min(exp(logp_trainer - logp_recorded), `is_cap`),
always (`on`) or when the batch's mean |difference| exceeds `is_threshold` (`auto`); step events report
`tis/mean_abs_delta`, `tis/p99_abs_delta`, `tis/mean_weight` and `tis/applied` (the share of batches corrected).

`mode: online` samples `num_generations` completions per prompt (temperature `temperature`) and scores them
through the reward bridge: POST `reward_url` `{"prompts": [[messages]], "completions": [str], "meta": [{...}]}` ->
`{"rewards": [float|null]}` (one call per process and generation batch; `meta` is the row's `meta`, else its first
completion's, plus `group_id`; a null reward leaves that completion out of its group's baseline). `generation`
picks the sampler: `server` massgen-rl's llama.cpp server at `server_url`, with the trainer's adapter hot-loaded
into it every `sync_steps` steps and its sampling logprobs corrected for like offline mode's (grpo_server.py),
`vllm` (the `vllm` mapping, vllm.py), `policy` the policy's own `generate`; `auto` the first that is set up
(vllm, then server_url). Step events report `reward` = the mean reward, `kl` (only
when `beta` > 0) and `completions/mean_length` (tokens per answer; the summary's `completion_tokens`).
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.protocol import ScriptError, progress

from .args import MismatchArgs
from .callbacks import make_callback
from .data import messages, number, read_jsonl
from .finish import train_and_finish
from .grpo_offline import reuse_plan, select_temperature
from .grpo_replay import Replay, recorded_reward, replay_chunks, replay_trainer_class
from .grpo_report import offline_summary, report_offline
from .grpo_server import ServerRollout, check_generation, resolve_generation
from .policy import load_policy
from .ranks import world_size
from .reward_bridge import make_bridge_reward
from .runner import run_trainer
from .settings import training_kwargs
from .tis import usable_logprobs
from .vllm import check_vllm_run, grpo_vllm_kwargs, normalize_vllm

LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")  # TRL 1.16's


@dataclass
class GRPOArgs(MismatchArgs):
    """GRPO on recorded groups (offline replay) or on fresh samples scored by the reward bridge (online)."""

    beta: float = field(
        default=0.0, metadata={"help": "KL penalty towards the starting policy (0: no reference model)."}
    )
    num_generations: int = field(default=4, metadata={"help": "Completions per prompt (group size)."})
    mode: str = field(default="offline", metadata={"help": "offline: replay recorded completions; online: sample."})
    reward_url: str | None = field(default=None, metadata={"help": "Reward bridge URL (online mode)."})
    max_completion_length: int = field(default=256, metadata={"help": "Maximum completion tokens."})
    temperature: float = field(
        default=1.0,
        metadata={"help": "Sampling temperature (online mode; offline: the completions' recorded one, else this)."},
    )
    loss_type: str = field(
        default="dr_grpo",
        metadata={"help": "TRL's loss aggregation; dr_grpo: Dr. GRPO's, without the length bias of per-answer means."},
    )
    num_iterations: int = field(default=1, metadata={"help": "Optimizer passes over each generation batch (mu)."})
    mask_truncated_completions: bool = field(
        default=False,
        metadata={
            "help": "Leave completions without an end-of-turn token (cut at max_completion_length) out of the loss."
        },
    )
    max_reuse: int = field(
        default=2,
        metadata={"help": "Offline mode: times a recorded completion may enter the loss at most (caps max_steps)."},
    )
    reward_timeout: float = field(default=300.0, metadata={"help": "Seconds to wait for one reward bridge call."})
    vllm: dict | None = field(
        default=None,
        metadata={
            "help": "Online mode: sample with vLLM {mode: server|colocate, server_host, server_port, ...} (vllm.py; "
            "JSON on the command line); null: the policy's own generate."
        },
    )
    generation: str = field(
        default="auto",
        metadata={
            "help": "Online mode's sampler: server (massgen-rl's llama.cpp server, the adapter synced into it), vllm, "
            "policy (its own generate); auto: vllm when set, else the server when massgen-rl started one."
        },
    )
    server_url: str | None = field(
        default=None, metadata={"help": "The generation server's /v1 URL (set by massgen-rl for generation server)."}
    )
    sync_steps: int = field(
        default=1, metadata={"help": "Generation server: optimizer steps between hot-loads of the trained adapter."}
    )
    server_timeout: float = field(default=600.0, metadata={"help": "Seconds to wait for one generation server call."})

    def validate(self, processes: int | None = None) -> None:
        super().validate(processes)
        if self.mode == "online":
            parsed = urllib.parse.urlparse(self.reward_url or "")
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise UsageError(f"online mode needs reward_url, an http(s) URL; got {self.reward_url!r}")
            resolve_generation(self)

    def validate_settings(self, processes: int | None = None, cpu_only: bool = False) -> None:
        super().validate_settings(processes, cpu_only)
        processes = world_size() if processes is None else processes
        if self.mode not in ("offline", "online"):
            raise UsageError(f"mode must be 'offline' or 'online', got {self.mode!r}")
        check_generation(self)
        self.vllm = normalize_vllm(self.vllm)
        check_vllm_run(self.vllm, self.mode, cpu_only, processes)
        if not 2 <= self.num_generations <= 1024:
            raise UsageError(f"num_generations must be 2 (a group) to 1024, got {self.num_generations}")
        if not 0 <= self.beta <= 1e6:
            raise UsageError(f"beta must be 0 to 1e6, got {self.beta}")
        if not 1 <= self.max_completion_length <= 1 << 20:
            raise UsageError(f"max_completion_length must be 1 to {1 << 20}, got {self.max_completion_length}")
        if self.loss_type not in LOSS_TYPES:
            raise UsageError(f"loss_type must be one of {', '.join(LOSS_TYPES)}, got {self.loss_type!r}")
        for name, ceiling in (("num_iterations", 1000), ("max_reuse", 10_000)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ceiling:
                raise UsageError(f"{name} must be a whole number from 1 to {ceiling}, got {value!r}")
        if self.mode == "offline" and self.num_iterations > self.max_reuse:
            raise UsageError(
                f"num_iterations ({self.num_iterations}) reuses each batch more than max_reuse allows "
                f"({self.max_reuse})"
            )
        if not 0 < self.temperature <= 100 or not 0 < self.reward_timeout <= 7 * 24 * 3600:
            raise UsageError("temperature (at most 100) and reward_timeout (at most a week) must be positive")
        batch = self.per_device_train_batch_size * processes * self.gradient_accumulation_steps
        if batch % self.num_generations:
            raise UsageError(
                f"num_generations ({self.num_generations}): per_device_train_batch_size x processes x "
                f"gradient_accumulation_steps ({batch}) counts completions and must be a multiple of num_generations"
            )


def load_groups(args: GRPOArgs) -> list[dict[str, Any]]:
    groups = []
    for line, row in enumerate(read_jsonl(args.dataset_path), 1):
        where = f"{args.dataset_path}:{line}"
        prompt = messages(row.get("prompt"), where, "prompt")
        completions = row.get("completions")
        if not isinstance(completions, list) or len(completions) < 2:
            raise ScriptError(f"{where}: completions must list at least 2 completions")
        parsed = []
        for index, completion in enumerate(completions):
            at = f"{where}: completions[{index}]"
            if not isinstance(completion, dict) or not isinstance(completion.get("content"), str):
                raise ScriptError(f"{at} needs a string content")
            token_ids = completion.get("token_ids")
            if token_ids is not None and not (
                isinstance(token_ids, list) and token_ids and all(isinstance(t, int) and t >= 0 for t in token_ids)
            ):
                raise ScriptError(f"{at}: token_ids must be a non-empty list of token ids or null")
            logprobs = usable_logprobs(completion.get("logprobs"), len(token_ids)) if token_ids else None
            temperature = number(completion.get("temperature"), at, "temperature", required=False)
            if temperature is not None and not 0 <= temperature <= 100:
                raise ScriptError(f"{at}: temperature must be 0 to 100, got {temperature}")
            parsed.append(
                {
                    "content": completion["content"],
                    "token_ids": token_ids,
                    "logprobs": logprobs,
                    "reward": number(completion.get("reward"), at, "reward", required=args.mode == "offline"),
                    "temperature": temperature,
                    "meta": completion.get("meta") if isinstance(completion.get("meta"), dict) else {},
                }
            )
        meta = row.get("meta") if isinstance(row.get("meta"), dict) else parsed[0]["meta"]
        groups.append(
            {
                "group_id": str(row.get("group_id", line)),
                "prompt": prompt,
                "completions": parsed,
                "meta": {**meta, "group_id": str(row.get("group_id", line))},
            }
        )
    return groups


def grpo_config(args: GRPOArgs, temperature: float | None = None, max_steps: int | None = None) -> Any:
    """TRL's GRPOConfig for the trainer config (vLLM generation included); offline mode passes the completions'
    temperature and the steps the reuse bound allows."""
    from trl import GRPOConfig

    kwargs = training_kwargs(args)
    if max_steps is not None:
        kwargs["max_steps"] = max_steps
    return GRPOConfig(
        **kwargs,
        beta=args.beta,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        temperature=args.temperature if temperature is None else temperature,
        loss_type=args.loss_type,
        num_iterations=args.num_iterations,
        mask_truncated_completions=args.mask_truncated_completions,
        **grpo_vllm_kwargs(args.vllm),
    )


def main(args: GRPOArgs) -> dict[str, Any]:
    progress("load", f"loading {args.model_path} and {args.dataset_path}")
    from datasets import Dataset
    from trl import GRPOTrainer

    groups = load_groups(args)
    callback = make_callback(
        reward_key="reward", kl_key="kl" if args.beta > 0 else None, mean_keys=("completions/mean_length",)
    )
    rollout: ServerRollout | None = None
    if args.mode == "offline":
        selection = select_temperature(groups, args.temperature)
        groups = selection.groups
        policy = load_policy(args, padding_side="left")
        chunks = replay_chunks(groups, args.num_generations, args.seed)
        replay = Replay(
            policy.tokenizer, groups, chunks, args.num_generations, args.max_completion_length, args.max_length
        )
        plan = reuse_plan(
            chunks,
            completions_per_step=args.per_device_train_batch_size * world_size() * args.gradient_accumulation_steps,
            num_generations=args.num_generations,
            num_iterations=args.num_iterations,
            max_reuse=args.max_reuse,
            max_steps=args.max_steps,
            num_train_epochs=args.num_train_epochs,
        )
        config = grpo_config(args, temperature=selection.temperature, max_steps=plan.max_steps)
        summary = offline_summary(args.max_reuse, selection, plan, replay)
        report_offline(groups, chunks, summary, args)
        ReplayGRPOTrainer = replay_trainer_class(GRPOTrainer, args.is_correction, args.is_threshold, args.is_cap)
        trainer = ReplayGRPOTrainer(
            reward_funcs=[recorded_reward],
            rollout_func=replay,
            train_dataset=Dataset.from_list(replay.dataset_rows(chunks, groups)),
            **common_kwargs(policy, config, callback),
        )
    else:
        generation = resolve_generation(args)
        summary = {"grpo/generation": generation}
        policy = load_policy(args, padding_side="left")
        rows = [{"prompt": group["prompt"], "meta_json": json.dumps(group["meta"], default=str)} for group in groups]
        progress(
            "dataset",
            f"{len(rows)} prompts, {args.num_generations} samples each ({generation}), rewards from {args.reward_url}",
            rows=len(rows),
        )
        online = dict(
            reward_funcs=[make_bridge_reward(args.reward_url, args.reward_timeout)],
            train_dataset=Dataset.from_list(rows),
            **common_kwargs(policy, grpo_config(args), callback),
        )
        if generation == "server":
            assert args.server_url is not None
            rollout = ServerRollout(
                args.server_url, args.temperature, args.max_completion_length, args.sync_steps, args.server_timeout
            )
            ServerGRPOTrainer = replay_trainer_class(GRPOTrainer, args.is_correction, args.is_threshold, args.is_cap)
            trainer = ServerGRPOTrainer(rollout_func=rollout, **online)
        else:
            trainer = GRPOTrainer(**online)

    def extra_metrics() -> dict[str, Any]:
        tokens = callback.means().get("completions/mean_length")
        syncs = {"grpo/adapter_syncs": rollout.syncs} if rollout is not None else {}
        return {**summary, **syncs, "completion_tokens": round(tokens, 2) if tokens is not None else None}

    try:
        return train_and_finish(trainer, policy, args, f"grpo-{args.mode}", callback, extra_metrics)
    finally:
        if rollout is not None:
            rollout.close()


def common_kwargs(policy: Any, config: Any, callback: Any) -> dict[str, Any]:
    return dict(
        model=policy.model,
        args=config,
        processing_class=policy.tokenizer,
        peft_config=policy.peft_config,
        callbacks=[callback],
    )


if __name__ == "__main__":
    raise SystemExit(run_trainer(main, GRPOArgs, prog="massgen_rl_training.grpo"))
