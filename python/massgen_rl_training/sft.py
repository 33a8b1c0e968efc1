"""Supervised fine-tuning on the `sft` dataset (TRL SFTTrainer).

    python -m massgen_rl_training.sft --config FILE

Rows: `{"messages": [...request messages, {"role": "assistant", "content": completion}], "reward", "meta"}`.
With `completion_only_loss` (the default) each row becomes a conversational prompt/completion pair (the request
messages / the final assistant message), so the loss covers only the recorded completion and its end-of-turn token:
TRL's `assistant_only_loss` needs `{% generation %}` markers that the default model's ChatML template lacks (and TRL
1.16 cannot patch it), while prompt/completion masking works with any template. `completion_only_loss: false` trains
on the whole rendered conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.protocol import ScriptError, progress

from .args import TrainArgs
from .callbacks import make_callback
from .data import messages, read_jsonl
from .finish import train_and_finish
from .policy import load_policy
from .runner import run_trainer
from .settings import training_kwargs


@dataclass
class SFTArgs(TrainArgs):
    """Supervised fine-tuning on recorded chat completions; JSON-lines events on stdout."""

    completion_only_loss: bool = field(
        default=True,
        metadata={"help": "Loss on the final assistant message only (else on every token of the conversation)."},
    )


def load_rows(args: SFTArgs) -> list[dict[str, Any]]:
    rows = []
    for number, row in enumerate(read_jsonl(args.dataset_path), 1):
        where = f"{args.dataset_path}:{number}"
        chat = messages(row.get("messages"), where)
        if chat[-1]["role"] != "assistant":
            raise ScriptError(f"{where}: the last message must be the assistant completion, not {chat[-1]['role']!r}")
        if not args.completion_only_loss:
            rows.append({"messages": chat})
        elif len(chat) < 2:
            raise ScriptError(f"{where}: completion_only_loss needs request messages before the completion")
        else:
            rows.append({"prompt": chat[:-1], "completion": chat[-1:]})
    return rows


def main(args: SFTArgs) -> dict[str, Any]:
    progress("load", f"loading {args.model_path} and {args.dataset_path}")
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = load_rows(args)
    policy = load_policy(args)
    # padding-free: a batch is its examples end to end, told apart by their position ids, so no step computes pad
    # tokens (the same loss; 1.3x faster on the bundled model's rows). TRL then leaves max_length to us: truncate.
    config = SFTConfig(
        **training_kwargs(args),
        max_length=None,
        padding_free=True,
        packing=False,
        completion_only_loss=args.completion_only_loss,
    )
    callback = make_callback(reward_key=None, kl_key=None)
    progress("dataset", f"{len(rows)} rows", rows=len(rows))
    trainer = SFTTrainer(
        model=policy.model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=policy.tokenizer,
        peft_config=policy.peft_config,
        callbacks=[callback],
    )
    if args.max_length is not None:
        trainer.train_dataset = truncated(trainer.train_dataset, args.max_length)
    return train_and_finish(trainer, policy, args, "sft", callback)


def truncated(dataset: Any, max_length: int) -> Any:
    """The tokenized rows cut to max_length tokens (as TRL's own truncation, keep_start), less any row the cut left
    with no token to learn from."""
    columns = [c for c in ("input_ids", "labels", "completion_mask") if c in dataset.column_names]
    dataset = dataset.map(lambda row: {c: row[c][:max_length] for c in columns})
    if "labels" in columns:
        dataset = dataset.filter(lambda row: any(label != -100 for label in row["labels"]))
    return dataset


if __name__ == "__main__":
    raise SystemExit(run_trainer(main, SFTArgs, prog="massgen_rl_training.sft"))
