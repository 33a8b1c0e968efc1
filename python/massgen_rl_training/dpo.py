"""Direct preference optimization on the `dpo` dataset (TRL DPOTrainer; sigmoid loss unless `loss_type` says otherwise).

    python -m massgen_rl_training.dpo --config FILE

Rows: `{"prompt": [messages], "chosen": [{"role": "assistant", ...}], "rejected": [{"role": "assistant", ...}],
"margin", "meta"}` (conversational preference rows, as TRL expects them). `beta` is the DPO temperature. The
reference policy is the starting model: with a fresh LoRA adapter, the base with the adapter disabled; when
continuing a parent adapter, a frozen copy of it; for full fine-tuning, a second copy of the model. `margin` is not
used (TRL's sigmoid loss has no per-pair margin). `loss_type` and `loss_weights` are TRL's: a list of losses summed with
their weights, e.g. `[sigmoid, sft]` adds the negative log-likelihood of the chosen answers, which keeps DPO from
lowering their likelihood while it widens the margin. Step events report `reward` = the mean implicit reward margin
(rewards/margins) and `kl` = null.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.protocol import ScriptError, progress

from .args import TrainArgs
from .callbacks import make_callback
from .data import messages, read_jsonl
from .finish import train_and_finish
from .policy import load_policy
from .runner import run_trainer
from .settings import training_kwargs

# TRL 1.16's DPOConfig.loss_type values.
LOSS_TYPES = (
    "sigmoid",
    "hinge",
    "ipo",
    "exo_pair",
    "nca_pair",
    "robust",
    "bco_pair",
    "sppo_hard",
    "aot",
    "aot_unpaired",
    "apo_zero",
    "apo_down",
    "discopop",
    "sft",
    "sigmoid_norm",
)


@dataclass
class DPOArgs(TrainArgs):
    """Direct preference optimization on recorded chosen/rejected completions; JSON-lines events on stdout."""

    beta: float = field(
        default=0.1, metadata={"help": "DPO temperature: how far the policy may move from the reference."}
    )

    loss_type: Any = field(
        default="sigmoid",
        metadata={"help": "TRL's DPO loss, or a list of them summed with loss_weights, e.g. [sigmoid, sft]."},
    )
    loss_weights: Any = field(
        default=None, metadata={"help": "One weight per loss_type entry; null: 1 each (TRL's default)."}
    )

    def validate_settings(self, processes: int | None = None, cpu_only: bool = False) -> None:
        super().validate_settings(processes, cpu_only)
        if not 0 < self.beta <= 1e6:
            raise UsageError(f"beta must be positive (at most 1e6) for DPO, got {self.beta}")
        self.loss_type = loss_types(self.loss_type)
        self.loss_weights = loss_weights(self.loss_weights, len(self.loss_type))


def loss_types(value: Any) -> list[str]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise UsageError(f"loss_type must be a loss name or a non-empty list of them, got {value!r}")
    unknown = [n for n in names if n not in LOSS_TYPES]
    if unknown:
        raise UsageError(f"loss_type has unknown {', '.join(map(repr, unknown))} (TRL's: {', '.join(LOSS_TYPES)})")
    return names


def loss_weights(value: Any, count: int) -> list[float] | None:
    if value is None:
        return None
    numeric = isinstance(value, list) and all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in value)
    if not numeric or len(value) != count or any(not 0 <= w <= 1e6 for w in value):
        raise UsageError(f"loss_weights must be {count} number(s) from 0 to 1e6, one per loss_type, got {value!r}")
    return [float(w) for w in value]


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
    config = DPOConfig(
        **training_kwargs(args),
        beta=args.beta,
        loss_type=args.loss_type,
        loss_weights=args.loss_weights,
        max_length=args.max_length,
    )
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
    raise SystemExit(run_trainer(main, DPOArgs, prog="massgen_rl_training.dpo"))
