"""Offline GRPO: the recorded completions of each group replayed through TRL's `rollout_func` hook in place of
generation, in rows of exactly `num_generations` completions, with the recorded rewards as the reward function."""

from __future__ import annotations

import random
from typing import Any

from ..protocol import ScriptError


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
