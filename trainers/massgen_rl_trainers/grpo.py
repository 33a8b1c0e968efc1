"""Group relative policy optimization on the `grpo` dataset (TRL GRPOTrainer).

    python -m massgen_rl_trainers.grpo --config FILE

Rows: `{"group_id", "prompt": [messages], "completions": [{"content", "reward", "advantage", "token_ids"|null,
"logprobs"|null, "meta"}, ...]}` (>= 2 completions per group).

`mode: offline` replays the recorded completions through TRL's `rollout_func` hook instead of generating: each group
is cut into dataset rows of exactly `num_generations` completions (dealt round-robin in reward order so each row
spans the group's rewards; a short row is filled up with the group's other completions, so a group smaller than
`num_generations` repeats some),
the hook returns the recorded `token_ids` (or the content tokenized + the end-of-turn token when they are null), and
a reward function hands back the recorded `reward`. TRL then normalizes rewards per row into advantages (the
recorded `advantage` is not used) and takes the usual clipped GRPO step. The importance ratio starts at 1, i.e. the
completions are assumed to come from the current policy: only replay traces sampled from the model being trained.

`mode: online` samples `num_generations` completions per prompt from the policy (temperature `temperature`) and
scores them through the reward bridge: POST `reward_url` `{"prompts": [[messages]], "completions": [str],
"meta": [{...}]}` -> `{"rewards": [float|null]}` (one call per process and generation batch; `meta` is the row's
`meta`, else its first completion's, plus `group_id`; a null reward leaves that completion out of its group's
baseline). Step events report `reward` = the mean reward and `kl` (only when `beta` > 0).
"""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from .config_args import UsageError
from .protocol import ScriptError, log
from .train_common import (TrainArgs, load_policy, make_callback, messages, number, progress, read_jsonl,
                           run_trainer, train_and_finish, training_kwargs, world_size)


@dataclass
class GRPOArgs(TrainArgs):
    """GRPO on recorded groups (offline replay) or on fresh samples scored by the reward bridge (online)."""

    beta: float = field(default=0.0, metadata={"help": "KL penalty towards the starting policy (0: no reference model)."})
    num_generations: int = field(default=4, metadata={"help": "Completions per prompt (group size)."})
    mode: str = field(default="offline", metadata={"help": "offline: replay recorded completions; online: sample."})
    reward_url: str | None = field(default=None, metadata={"help": "Reward bridge URL (online mode)."})
    max_completion_length: int = field(default=256, metadata={"help": "Maximum completion tokens."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (online mode)."})
    reward_timeout: float = field(default=300.0, metadata={"help": "Seconds to wait for one reward bridge call."})

    def validate(self) -> None:
        super().validate()
        if self.mode not in ("offline", "online"):
            raise UsageError(f"mode must be 'offline' or 'online', got {self.mode!r}")
        if self.mode == "online":
            parsed = urllib.parse.urlparse(self.reward_url or "")
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise UsageError(f"online mode needs reward_url, an http(s) URL; got {self.reward_url!r}")
        if self.num_generations < 2:
            raise UsageError(f"num_generations must be at least 2 (a group), got {self.num_generations}")
        if self.beta < 0:
            raise UsageError(f"beta must not be negative, got {self.beta}")
        if self.max_completion_length < 1 or not self.temperature > 0 or not self.reward_timeout > 0:
            raise UsageError("max_completion_length, temperature and reward_timeout must be positive")
        batch = self.per_device_train_batch_size * world_size() * self.gradient_accumulation_steps
        if batch % self.num_generations:
            raise UsageError(
                f"per_device_train_batch_size x processes x gradient_accumulation_steps ({batch}) counts completions "
                f"and must be a multiple of num_generations ({self.num_generations})")


# -- dataset ------------------------------------------------------------------------------------------------------


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
            if token_ids is not None and not (isinstance(token_ids, list) and token_ids
                                              and all(isinstance(t, int) and t >= 0 for t in token_ids)):
                raise ScriptError(f"{at}: token_ids must be a non-empty list of token ids or null")
            parsed.append({"content": completion["content"], "token_ids": token_ids,
                           "reward": number(completion.get("reward"), at, "reward", required=args.mode == "offline"),
                           "meta": completion.get("meta") if isinstance(completion.get("meta"), dict) else {}})
        meta = row.get("meta") if isinstance(row.get("meta"), dict) else parsed[0]["meta"]
        groups.append({"group_id": str(row.get("group_id", line)), "prompt": prompt, "completions": parsed,
                       "meta": {**meta, "group_id": str(row.get("group_id", line))}})
    return groups


def replay_chunks(groups: list[dict[str, Any]], size: int, seed: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """Each group cut into rows of exactly `size` completions: (group index, completions). Completions are dealt
    round-robin in reward order, so every row spans the group's reward range as far as possible (a row whose
    rewards are all equal teaches nothing); a short row is filled up with the group's other completions."""
    rng = random.Random(seed)
    chunks = []
    for index, group in enumerate(groups):
        order = list(group["completions"])
        rng.shuffle(order)
        order.sort(key=lambda c: c["reward"] if c["reward"] is not None else 0.0)
        count = -(-len(order) // size)
        rows: list[list[dict[str, Any]]] = [[] for _ in range(count)]
        for position, completion in enumerate(order):
            rows[position % count].append(completion)
        for row in rows:
            seen = {c["reward"] for c in row}
            others = [c for c in order if all(c is not r for r in row)] or order
            others.sort(key=lambda c: c["reward"] in seen)  # other rewards first (stable: keeps the order)
            row += [others[i % len(others)] for i in range(size - len(row))]
            chunks.append((index, row))
    return chunks


class Replay:
    """The offline `rollout_func`: recorded token ids in place of generation, recorded rewards as extra field."""

    def __init__(self, tokenizer: Any, groups: list[dict[str, Any]], chunks: list[tuple[int, list[dict[str, Any]]]],
                 size: int, max_completion_length: int, max_length: int | None) -> None:
        self.size = size
        self.rows: list[tuple[list[int], list[list[int]], list[float]]] = []
        eos = tokenizer.eos_token_id
        prompt_ids = [tokenizer.apply_chat_template(group["prompt"], add_generation_prompt=True, tokenize=True,
                                                    return_dict=True)["input_ids"] for group in groups]
        for group_index, chunk in chunks:
            completion_ids = []
            for completion in chunk:
                ids = completion["token_ids"]
                if ids is None:
                    ids = tokenizer(completion["content"], add_special_tokens=False)["input_ids"] + [eos]
                completion_ids.append(list(ids[:max_completion_length]))
            prompt = list(prompt_ids[group_index])
            if max_length is not None:  # keep the end of an over-long prompt
                budget = max(1, max_length - max(len(ids) for ids in completion_ids))
                prompt = prompt[-budget:]
            self.rows.append((prompt, completion_ids, [c["reward"] for c in chunk]))

    def dataset_rows(self, chunks: list[tuple[int, list[dict[str, Any]]]], groups: list[dict[str, Any]]) -> list[dict]:
        return [{"prompt": groups[g]["prompt"], "replay_row": i} for i, (g, _) in enumerate(chunks)]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        inputs = trainer._massgen_inputs  # the rows behind `prompts`, stashed by ReplayGRPOTrainer
        if len(inputs) != len(prompts):
            raise ScriptError("offline replay: the generation batch does not match the stashed rows")
        # Each row is repeated num_generations times in a row across the global generation batch, which processes
        # slice in order: the global position modulo the group size picks which recorded completion to return.
        offset = trainer.accelerator.process_index * len(prompts)
        prompt_ids, completion_ids, rewards = [], [], []
        for i, row in enumerate(inputs):
            prompt, completions, recorded = self.rows[row["replay_row"]]
            k = (offset + i) % self.size
            prompt_ids.append(prompt)
            completion_ids.append(completions[k])
            rewards.append(recorded[k])
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None,
                "recorded_reward": rewards}


def recorded_reward(prompts: list[Any], completions: list[Any], recorded_reward: list[float], **kwargs: Any) -> list:
    return list(recorded_reward)


# -- the reward bridge --------------------------------------------------------------------------------------------


def _opener(url: str) -> Any:
    host = urllib.parse.urlparse(url).hostname or ""
    if host in ("localhost", "127.0.0.1", "::1"):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    return urllib.request.build_opener()


def post_rewards(url: str, body: dict[str, Any], timeout: float, attempts: int = 3) -> list[float | None]:
    """POST the contract's reward request; returns one reward (or None) per completion."""
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    opener = _opener(url)
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(url, data=data, method="POST",
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with opener.open(request, timeout=timeout) as response:
                payload = json.loads(response.read().decode("utf-8"))
            break
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            if exc.code < 500 or attempt == attempts:
                raise ScriptError(f"reward bridge {url} answered HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if attempt == attempts:
                raise ScriptError(f"reward bridge {url} unreachable: {getattr(exc, 'reason', exc)}") from None
        except ValueError as exc:
            raise ScriptError(f"reward bridge {url} answered with invalid JSON: {exc}") from None
        log(f"reward bridge attempt {attempt} failed; retrying")
        time.sleep(attempt)
    rewards = payload.get("rewards") if isinstance(payload, dict) else None
    if not isinstance(rewards, list) or len(rewards) != len(body["completions"]):
        raise ScriptError(f"reward bridge {url} must answer {{\"rewards\": [...]}} with {len(body['completions'])} "
                          f"values, got {str(payload)[:300]}")
    out = []
    for value in rewards:
        if value is None:
            out.append(None)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append(float(value))
        else:
            raise ScriptError(f"reward bridge {url} returned a non-numeric reward {value!r}")
    return out


def make_bridge_reward(url: str, timeout: float) -> Any:
    def reward_bridge(prompts: list[Any], completions: list[Any], meta_json: list[str] | None = None,
                      **kwargs: Any) -> list[float | None]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        metas = [json.loads(m) for m in meta_json] if meta_json else [{} for _ in texts]
        return post_rewards(url, {"prompts": prompts, "completions": texts, "meta": metas}, timeout)

    return reward_bridge


# -- main ---------------------------------------------------------------------------------------------------------


def main(args: GRPOArgs) -> dict[str, Any]:
    progress("load", f"loading {args.model_path} and {args.dataset_path}")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    groups = load_groups(args)
    policy = load_policy(args, padding_side="left")
    config = GRPOConfig(**training_kwargs(args), beta=args.beta, num_generations=args.num_generations,
                        max_completion_length=args.max_completion_length, temperature=args.temperature)
    callback = make_callback(reward_key="reward", kl_key="kl" if args.beta > 0 else None)
    common = dict(model=policy.model, args=config, processing_class=policy.tokenizer,
                  peft_config=policy.peft_config, callbacks=[callback])

    if args.mode == "offline":
        chunks = replay_chunks(groups, args.num_generations, args.seed)
        replay = Replay(policy.tokenizer, groups, chunks, args.num_generations, args.max_completion_length,
                        args.max_length)

        class ReplayGRPOTrainer(GRPOTrainer):
            def _generate_and_score_completions(self, inputs):  # let the rollout_func see which rows it serves
                self._massgen_inputs = inputs
                try:
                    return super()._generate_and_score_completions(inputs)
                finally:
                    self._massgen_inputs = None

        progress("dataset", f"{len(groups)} groups replayed as {len(chunks)} rows of {args.num_generations}",
                 groups=len(groups), rows=len(chunks))
        trainer = ReplayGRPOTrainer(reward_funcs=[recorded_reward], rollout_func=replay,
                                    train_dataset=Dataset.from_list(replay.dataset_rows(chunks, groups)), **common)
    else:
        rows = [{"prompt": group["prompt"], "meta_json": json.dumps(group["meta"], default=str)} for group in groups]
        progress("dataset", f"{len(rows)} prompts, {args.num_generations} samples each, rewards from "
                 f"{args.reward_url}", rows=len(rows))
        trainer = GRPOTrainer(reward_funcs=[make_bridge_reward(args.reward_url, args.reward_timeout)],
                              train_dataset=Dataset.from_list(rows), **common)
    return train_and_finish(trainer, policy, args, f"grpo-{args.mode}", callback)


if __name__ == "__main__":
    raise SystemExit(run_trainer(main, GRPOArgs, prog="massgen_rl_trainers.grpo"))
