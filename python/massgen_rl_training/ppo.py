"""PPO-style clipped policy gradient on the `ppo` dataset's recorded transitions (no value model, no reward model).

    python -m massgen_rl_training.ppo --config FILE

TRL 1.16 has no PPO trainer (it left `trl` for `trl.experimental` in 0.2x and is gone from 1.x; its old design
needed a value model and a reward model anyway), so this is a small `transformers.Trainer` of our own:

Rows: `{"prompt": [messages], "completion": str, "reward", "return", "token_ids"|null, "logprobs"|null, "meta"}`.
Each row is one sampled completion (the recorded `token_ids`, else the content tokenized + the end-of-turn token).
Its advantage is the recorded `return` (else `reward`) minus the dataset mean, divided by the dataset standard
deviation (`whiten_advantages`), the same for every token: a Monte-Carlo return with a constant baseline in place of
a learned value function / GAE. Before training, one no-grad pass of the starting policy gives per-token
log-probabilities `logp_0`. The loss per completion token is the PPO clipped surrogate

    -min(r * A, clip(r, 1 - clip_epsilon, 1 + clip_epsilon) * A),   r = exp(logp - logp_old)

plus `beta` * k3-KL(policy || starting policy), averaged over completion tokens. `logp_old` is `logp_0`
(`old_logprobs: recompute`, the default: the data is treated as sampled from the starting policy, so the first
update is the plain policy gradient and later epochs are clipped), or the recorded `logprobs` where present and as
long as the token ids (`old_logprobs: recorded`: true off-policy importance ratios, if the serving engine reported
log-probabilities of the same untempered distribution). Step events report `reward` = mean recorded reward of the
batch and `kl` = the mean KL estimate.

The serving engine's log-probabilities differ from the trainer's float32 ones (bf16 or GGUF weights, other kernels),
so recorded samples are slightly off-policy. `is_correction` (tis.py) corrects that with truncated importance
sampling: with `on`, or `auto` when a batch's mean |logp_0 - recorded| over its recorded tokens exceeds
`is_threshold`, each token's surrogate is multiplied by the detached min(exp(logp_0 - recorded), `is_cap`), and
`logp_old` is always `logp_0` (the ratio is clipped against the trainer's own log-probabilities; `old_logprobs:
recorded` only takes effect with `is_correction: off`). Step events then also report `tis/mean_abs_delta`,
`tis/p99_abs_delta`, `tis/mean_weight` and `tis/applied` (the share of batches corrected).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.protocol import ScriptError, log, progress

from .args import MismatchArgs
from .callbacks import make_callback
from .data import messages, number, read_jsonl
from .finish import train_and_finish
from .policy import load_policy
from .runner import run_trainer
from .settings import device_flags, training_kwargs
from .tis import recorded_tensor, truncated_weights


@dataclass
class PPOArgs(MismatchArgs):
    """PPO-style clipped policy gradient on recorded transitions; JSON-lines events on stdout."""

    beta: float = field(default=0.0, metadata={"help": "KL penalty towards the starting policy."})
    clip_epsilon: float = field(default=0.2, metadata={"help": "PPO ratio clipping range."})
    max_completion_length: int = field(default=256, metadata={"help": "Maximum completion tokens (longer are cut)."})
    old_logprobs: str = field(
        default="recompute",
        metadata={
            "help": "recompute: the starting policy's log-probs are the behaviour policy; recorded: the row's logprobs."
        },
    )
    whiten_advantages: bool = field(default=True, metadata={"help": "Divide advantages by the returns' std."})

    def validate_settings(self, processes: int | None = None, cpu_only: bool = False) -> None:
        super().validate_settings(processes, cpu_only)
        if self.old_logprobs not in ("recompute", "recorded"):
            raise UsageError(f"old_logprobs must be 'recompute' or 'recorded', got {self.old_logprobs!r}")
        if not 0 < self.clip_epsilon < 1:
            raise UsageError(f"clip_epsilon must be in (0, 1), got {self.clip_epsilon}")
        if not 0 <= self.beta <= 1e6:
            raise UsageError(f"beta must be 0 to 1e6, got {self.beta}")
        if not 1 <= self.max_completion_length <= 1 << 20:
            raise UsageError(f"max_completion_length must be 1 to {1 << 20}, got {self.max_completion_length}")


# -- dataset ------------------------------------------------------------------------------------------------------


def load_examples(args: PPOArgs, tokenizer: Any) -> list[dict[str, Any]]:
    eos = tokenizer.eos_token_id
    examples = []
    recorded_used = 0
    for line, row in enumerate(read_jsonl(args.dataset_path), 1):
        where = f"{args.dataset_path}:{line}"
        prompt = messages(row.get("prompt"), where, "prompt")
        if not isinstance(row.get("completion"), str):
            raise ScriptError(f"{where}: completion must be a string")
        reward = number(row.get("reward"), where, "reward")
        ret = number(row.get("return"), where, "return", required=False)
        token_ids = row.get("token_ids")
        if token_ids is None:
            completion_ids = tokenizer(row["completion"], add_special_tokens=False)["input_ids"] + [eos]
        elif isinstance(token_ids, list) and token_ids and all(isinstance(t, int) and t >= 0 for t in token_ids):
            completion_ids = list(token_ids)
        else:
            raise ScriptError(f"{where}: token_ids must be a non-empty list of token ids or null")
        completion_ids = completion_ids[: args.max_completion_length]
        recorded = row.get("logprobs")
        sampled = None
        if (
            token_ids is not None
            and isinstance(recorded, list)
            and len(recorded) >= len(completion_ids)
            and all(isinstance(x, (int, float)) and math.isfinite(x) for x in recorded[: len(completion_ids)])
        ):
            sampled = [float(x) for x in recorded[: len(completion_ids)]]
            recorded_used += 1
        old = sampled if args.old_logprobs == "recorded" and args.is_correction == "off" else None
        prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=True)[
            "input_ids"
        ]
        if args.max_length is not None:
            prompt_ids = prompt_ids[-max(1, args.max_length - len(completion_ids)) :]
        examples.append(
            {
                "prompt_ids": list(prompt_ids),
                "completion_ids": completion_ids,
                "reward": reward,
                "return": ret if ret is not None else reward,
                "old_logps": old,
                "recorded_logps": sampled,
            }
        )
    returns = [e["return"] for e in examples]
    mean = sum(returns) / len(returns)
    std = math.sqrt(sum((g - mean) ** 2 for g in returns) / len(returns))
    if std < 1e-8:
        raise ScriptError(
            f"every transition in {args.dataset_path} has the same return ({mean}): no advantage, nothing to learn"
        )
    for example in examples:
        example["advantage"] = (example["return"] - mean) / (std if args.whiten_advantages else 1.0)
    if args.is_correction != "off":
        log(
            f"recorded logprobs usable for {recorded_used} of {len(examples)} rows (is_correction: "
            f"{args.is_correction}; old log-probs recomputed, the rest are not corrected)"
        )
    elif args.old_logprobs == "recorded":
        log(f"recorded logprobs used for {recorded_used} of {len(examples)} rows (the rest: recomputed)")
    return examples


def collate(batch: list[dict[str, Any]], pad_id: int) -> dict[str, Any]:
    """Left-padded prompt+completion; per-token tensors cover the last K positions (K = longest completion)."""
    import torch

    seqs = [e["prompt_ids"] + e["completion_ids"] for e in batch]
    width = max(len(s) for s in seqs)
    k = max(len(e["completion_ids"]) for e in batch)
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), k), dtype=torch.float32)
    old = torch.zeros((len(batch), k), dtype=torch.float32)
    ref = torch.zeros((len(batch), k), dtype=torch.float32)
    for i, (example, seq) in enumerate(zip(batch, seqs)):
        c = len(example["completion_ids"])
        input_ids[i, width - len(seq) :] = torch.tensor(seq)
        attention[i, width - len(seq) :] = 1
        mask[i, k - c :] = 1
        if "ref_logps" in example:
            ref[i, k - c :] = torch.tensor(example["ref_logps"])
            old[i, k - c :] = torch.tensor(example["old_logps"] or example["ref_logps"])
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0)
    recorded = recorded_tensor([e.get("recorded_logps") for e in batch], k, left=True)  # NaN: none recorded
    return {
        "input_ids": input_ids,
        "attention_mask": attention,
        "position_ids": position_ids,
        "completion_mask": mask,
        "old_logps": old,
        "ref_logps": ref,
        "recorded_logps": recorded,
        "advantages": torch.tensor([e["advantage"] for e in batch], dtype=torch.float32),
        "rewards": torch.tensor([e["reward"] for e in batch], dtype=torch.float32),
    }


def completion_logps(model: Any, batch: dict[str, Any]) -> Any:
    """Per-token log-probabilities of the last K tokens (the completion region), shape (B, K)."""
    import torch

    k = batch["completion_mask"].shape[1]
    logits = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        logits_to_keep=k + 1,
        use_cache=False,
    ).logits
    logits = logits[:, :-1].float()
    targets = batch["input_ids"][:, -k:]
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def precompute_logps(model: Any, examples: list[dict[str, Any]], pad_id: int, device: Any, batch_size: int = 4) -> None:
    """The starting policy's per-token log-probabilities (`ref_logps`), one no-grad pass."""
    import torch

    was_training = model.training
    model.eval()
    model.to(device)
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            batch = {key: value.to(device) for key, value in collate(chunk, pad_id).items()}
            logps = completion_logps(model, batch).cpu()
            k = logps.shape[1]
            for i, example in enumerate(chunk):
                example["ref_logps"] = logps[i, k - len(example["completion_ids"]) :].tolist()
    model.train(was_training)


# -- the trainer --------------------------------------------------------------------------------------------------


def make_trainer_class() -> type:
    import torch
    from accelerate.utils import gather_object
    from transformers import Trainer

    class ClippedPGTrainer(Trainer):
        loss_is_scaled_for_ga = False  # a per-micro-batch token mean: Trainer divides by the accumulation steps

        def __init__(self, *args: Any, clip_epsilon: float, beta: float, tis: dict[str, Any], **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.clip_epsilon, self.beta, self.tis = clip_epsilon, beta, tis
            self._metrics: dict[str, list[float]] = defaultdict(list)
            self._num_tokens = 0.0

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            logps = completion_logps(model, inputs)
            mask = inputs["completion_mask"]
            ratio = torch.exp(logps - inputs["old_logps"])
            advantages = inputs["advantages"].unsqueeze(1)
            low, high = 1 - self.clip_epsilon, 1 + self.clip_epsilon
            surrogate = torch.min(ratio * advantages, torch.clamp(ratio, low, high) * advantages)
            if self.tis["mode"] != "off":  # the starting policy's log-probs against the recorded (serving) ones
                correction = truncated_weights(
                    inputs["ref_logps"], inputs["recorded_logps"], mask, gather=gather_object, **self.tis
                )
                surrogate = surrogate * correction.weights
                for key, value in correction.metrics().items():
                    self._metrics[key].append(value)
            delta = inputs["ref_logps"] - logps
            kl = torch.exp(delta) - delta - 1
            per_token = -surrogate + self.beta * kl
            tokens = mask.sum().clamp(min=1)
            loss = (per_token * mask).sum() / tokens
            with torch.no_grad():
                clipped = ((ratio < low) | (ratio > high)).float()
                gather = self.accelerator.gather
                stats = torch.stack(
                    [
                        (kl * mask).sum() / tokens,
                        (clipped * mask).sum() / tokens,
                        (ratio * mask).sum() / tokens,
                        inputs["rewards"].mean(),
                        inputs["advantages"].mean(),
                        inputs["attention_mask"].sum().float(),
                    ]
                )
                stats = gather(stats.unsqueeze(0))
                self._metrics["kl"].append(stats[:, 0].mean().item())
                self._metrics["clip_ratio"].append(stats[:, 1].mean().item())
                self._metrics["ratio"].append(stats[:, 2].mean().item())
                self._metrics["reward"].append(stats[:, 3].mean().item())
                self._metrics["advantage"].append(stats[:, 4].mean().item())
                self._num_tokens += stats[:, 5].sum().item()
            return (loss, {"logps": logps}) if return_outputs else loss

        def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
            if "loss" in logs and self._metrics:
                logs.update({key: sum(values) / len(values) for key, values in self._metrics.items()})
                logs["num_tokens"] = self._num_tokens
                self._metrics.clear()
            super().log(logs, start_time)

    return ClippedPGTrainer


def main(args: PPOArgs) -> dict[str, Any]:
    progress("load", f"loading {args.model_path} and {args.dataset_path}")
    import torch
    from transformers import TrainingArguments

    policy = load_policy(args, wrap_lora=True)
    examples = load_examples(args, policy.tokenizer)
    use_cpu, _ = device_flags(args)
    device = torch.device("cpu" if use_cpu or not torch.cuda.is_available() else "cuda")
    pad_id = policy.tokenizer.pad_token_id
    progress(
        "dataset", f"{len(examples)} transitions; computing the starting policy's log-probabilities", rows=len(examples)
    )
    precompute_logps(policy.model, examples, pad_id, device)
    if args.gradient_checkpointing and policy.adapter:
        policy.model.enable_input_require_grads()
    config = TrainingArguments(**training_kwargs(args), remove_unused_columns=False)
    callback = make_callback(reward_key="reward", kl_key="kl")
    trainer = make_trainer_class()(
        model=policy.model,
        args=config,
        train_dataset=examples,
        data_collator=lambda batch: collate(batch, pad_id),
        processing_class=policy.tokenizer,
        callbacks=[callback],
        clip_epsilon=args.clip_epsilon,
        beta=args.beta,
        tis={"mode": args.is_correction, "threshold": args.is_threshold, "cap": args.is_cap},
    )
    return train_and_finish(trainer, policy, args, "ppo", callback)


if __name__ == "__main__":
    raise SystemExit(run_trainer(main, PPOArgs, prog="massgen_rl_training.ppo"))
