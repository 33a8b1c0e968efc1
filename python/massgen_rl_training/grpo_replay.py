"""Offline GRPO: the recorded completions of each group replayed through TRL's `rollout_func` hook in place of
generation, in rows of exactly `num_generations` completions, with the recorded rewards as the reward function and
the recorded sampling log-probabilities (where a completion has them for its token ids) as the rollout's `logprobs`."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from massgen_rl_common.protocol import ScriptError

from .tis import truncated_weights


def replay_chunks(groups: list[dict[str, Any]], size: int, seed: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """Each group cut into rows of exactly `size` completions: (group index, completions). Completions are dealt
    round-robin in reward order, so every row spans the group's reward range as far as possible (a row whose
    rewards are all equal teaches nothing); a short row is filled up with the group's other completions: those
    in fewer than two rows first (the reuse bound counts each row a completion is in, and the default allows
    two), then other rewards than the row's, then the fewest rows."""
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
        in_rows = Counter(id(c) for c in order)
        for row in rows:
            for i in range(size - len(row)):
                others = [c for c in order if all(c is not r for r in row)]
                if not others:  # a group smaller than a row: its completions again, in turn
                    row.append(order[i % len(order)])
                    continue
                seen = {c["reward"] for c in row}
                pick = min(others, key=lambda c: (in_rows[id(c)] >= 2, c["reward"] in seen, in_rows[id(c)]))
                in_rows[id(pick)] += 1
                row.append(pick)
            chunks.append((index, row))
    return chunks


class Replay:
    """The offline `rollout_func`: recorded token ids in place of generation, recorded rewards as extra field."""

    def __init__(
        self,
        tokenizer: Any,
        groups: list[dict[str, Any]],
        chunks: list[tuple[int, list[dict[str, Any]]]],
        size: int,
        max_completion_length: int,
        max_length: int | None,
    ) -> None:
        self.size = size
        self.truncated = 0  # completions (as replayed, one per row they are in) cut at max_completion_length
        self.rows: list[tuple[list[int], list[list[int]], list[float], list[list[float] | None]]] = []
        eos = tokenizer.eos_token_id
        prompt_ids = [
            tokenizer.apply_chat_template(group["prompt"], add_generation_prompt=True, tokenize=True, return_dict=True)[
                "input_ids"
            ]
            for group in groups
        ]
        for group_index, chunk in chunks:
            completion_ids, logprobs = [], []
            for completion in chunk:
                ids = completion["token_ids"]
                recorded = completion.get("logprobs") if ids is not None else None
                if ids is None:
                    ids = tokenizer(completion["content"], add_special_tokens=False)["input_ids"] + [eos]
                self.truncated += len(ids) > max_completion_length
                completion_ids.append(list(ids[:max_completion_length]))
                logprobs.append(list(recorded[:max_completion_length]) if recorded is not None else None)
            prompt = list(prompt_ids[group_index])
            if max_length is not None:  # keep the end of an over-long prompt
                budget = max(1, max_length - max(len(ids) for ids in completion_ids))
                prompt = prompt[-budget:]
            self.rows.append((prompt, completion_ids, [c["reward"] for c in chunk], logprobs))

    def dataset_rows(self, chunks: list[tuple[int, list[dict[str, Any]]]], groups: list[dict[str, Any]]) -> list[dict]:
        return [{"prompt": groups[g]["prompt"], "replay_row": i} for i, (g, _) in enumerate(chunks)]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        inputs = trainer._massgen_inputs  # the rows behind `prompts`, stashed by ReplayGRPOTrainer
        if len(inputs) != len(prompts):
            raise ScriptError("offline replay: the generation batch does not match the stashed rows")
        # Each row is repeated num_generations times in a row across the global generation batch, which processes
        # slice in order: the global position modulo the group size picks which recorded completion to return.
        offset = trainer.accelerator.process_index * len(prompts)
        prompt_ids, completion_ids, rewards, logprobs = [], [], [], []
        for i, row in enumerate(inputs):
            prompt, completions, recorded, sampled = self.rows[row["replay_row"]]
            k = (offset + i) % self.size
            prompt_ids.append(prompt)
            completion_ids.append(completions[k])
            rewards.append(recorded[k])
            logprobs.append(sampled[k])
        # TRL takes one value per token; a completion without recorded log-probabilities gets None per token (NaN
        # to TRL: weight 1, no correction). None for the whole batch when no completion has any.
        if all(row is None for row in logprobs):
            batch_logprobs = None
        else:
            batch_logprobs = [
                row if row is not None else [None] * len(ids) for row, ids in zip(logprobs, completion_ids)
            ]
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": batch_logprobs,
            "recorded_reward": rewards,
        }


def recorded_reward(prompts: list[Any], completions: list[Any], recorded_reward: list[float], **kwargs: Any) -> list:
    return list(recorded_reward)


def replay_trainer_class(base: type, is_correction: str, is_threshold: float, is_cap: float) -> type:
    """`base` (TRL's GRPOTrainer) serving the replay, with truncated importance sampling against the mismatch between
    the recorded (serving) log-probabilities and the trainer's (tis.py)."""
    import torch
    from accelerate.utils import gather_object
    from trl.models.utils import disable_gradient_checkpointing

    class ReplayGRPOTrainer(base):
        def _generate_and_score_completions(self, inputs):  # let the rollout_func see which rows it serves
            self._massgen_inputs = inputs
            try:
                output = super()._generate_and_score_completions(inputs)
            finally:
                self._massgen_inputs = None
            if is_correction != "off":
                self._massgen_correct(output)
            return output

        def _massgen_correct(self, output: dict[str, Any]) -> None:
            sampler = output.get("sampling_per_token_logps")  # NaN where a completion recorded none
            device = output["completion_ids"].device
            present = torch.tensor([0.0 if sampler is None else 1.0], device=device)
            if self.accelerator.gather(present).sum().item() == 0:  # no process has recorded log-probabilities
                return
            old = output.get("old_per_token_logps")
            if old is None:  # TRL skips it when the samples count as on-policy; the mismatch needs it
                prompt_completion = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
                attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
                with (
                    torch.no_grad(),
                    disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs),
                ):
                    old, _, _ = self._get_per_token_logps_and_entropies(
                        self.model,
                        prompt_completion,
                        attention,
                        output["completion_ids"].size(1),
                        batch_size=self.args.per_device_train_batch_size,
                    )
                output["old_per_token_logps"] = old
            if sampler is None:
                sampler = torch.full_like(old, float("nan"))
            mask = output["completion_mask"]
            if "tool_mask" in output:
                mask = mask * output["tool_mask"]
            result = truncated_weights(
                old, sampler, mask, mode=is_correction, threshold=is_threshold, cap=is_cap, gather=gather_object
            )
            metrics = self._metrics["train" if self.model.training else "eval"]
            for key, value in result.metrics().items():
                metrics[key].append(value)
            if result.applied:
                output["importance_sampling_ratio"] = result.weights.to(old.dtype)

        def _compute_loss(self, model, inputs):
            if "importance_sampling_ratio" not in inputs or self.use_vllm:
                return super()._compute_loss(model, inputs)
            # TRL multiplies the per-token loss by `importance_sampling_ratio` only when it generated with vLLM
            # (use_vllm and vllm_importance_sampling_correction): open that gate for this loss only.
            saved = self.vllm_importance_sampling_correction
            self.use_vllm, self.vllm_importance_sampling_correction = True, True
            try:
                return super()._compute_loss(model, inputs)
            finally:
                self.use_vllm, self.vllm_importance_sampling_correction = False, saved

    return ReplayGRPOTrainer
