"""Direct preference optimization on the `dpo` dataset (TRL DPOTrainer, sigmoid loss).

    python -m massgen_rl_trainers.train.dpo --config FILE

Rows: `{"prompt": [messages], "chosen": [{"role": "assistant", ...}], "rejected": [{"role": "assistant", ...}],
"margin", "meta"}` (conversational preference rows, as TRL expects them). `beta` is the DPO temperature. The
reference policy is the starting model: with a fresh LoRA adapter, the base with the adapter disabled; when
continuing a parent adapter, a frozen copy of it; for full fine-tuning, a second copy of the model. `margin` is not
used (TRL's sigmoid loss has no per-pair margin). Step events report `reward` = the mean implicit reward margin
(rewards/margins) and `kl` = null.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config_args import UsageError
from ..protocol import ScriptError, progress
from .args import TrainArgs
from .callbacks import make_callback
from .data import messages, read_jsonl
from .finish import train_and_finish
from .policy import load_policy
from .runner import run_trainer
from .settings import training_kwargs


@dataclass
class DPOArgs(TrainArgs):
    """Direct preference optimization on recorded chosen/rejected completions; JSON-lines events on stdout."""

    beta: float = field(
        default=0.1, metadata={"help": "DPO temperature: how far the policy may move from the reference."}
    )

    def validate_settings(self, processes: int | None = None, cpu_only: bool = False) -> None:
        super().validate_settings(processes, cpu_only)
        if not 0 < self.beta <= 1e6:
            raise UsageError(f"beta must be positive (at most 1e6) for DPO, got {self.beta}")


def load_rows(args: DPOArgs) -> list[dict[str, Any]]:
    rows = []
    for number, row in enumerate(read_jsonl(args.dataset_path), 1):
        where = f"{args.dataset_path}:{number}"
        prompt = messages(row.get("prompt"), where, "prompt")
        chosen = messages(row.get("chosen"), where, "chosen")
        rejected = messages(row.get("rejected"), where, "rejected")
        for name, answer in (("chosen", chosen), ("rejected", rejected)):
            if answer[-1]["role"] != "assistant":
                raise ScriptError(f"{where}: {name} must end with an assistant message")
        rows.append({"prompt": prompt, "chosen": chosen, "rejected": rejected})
    return rows


def main(args: DPOArgs) -> dict[str, Any]:
    progress("load", f"loading {args.model_path} and {args.dataset_path}")
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    rows = load_rows(args)
    policy = load_policy(args)
    config = DPOConfig(**training_kwargs(args), beta=args.beta, max_length=args.max_length)
    callback = make_callback(reward_key="rewards/margins", kl_key=None)
    progress("dataset", f"{len(rows)} preference pairs", rows=len(rows))
    trainer = DPOTrainer(
        model=policy.model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=policy.tokenizer,
        peft_config=policy.peft_config,
        callbacks=[callback],
    )
    return train_and_finish(trainer, policy, args, "dpo", callback)


if __name__ == "__main__":
    raise SystemExit(run_trainer(main, DPOArgs, prog="massgen_rl_trainers.train.dpo"))
