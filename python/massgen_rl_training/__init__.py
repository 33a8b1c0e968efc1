"""The bundled trainers (`sft`, `dpo`, `grpo`, `ppo`) and what they share: the config keys of
docs/trainer-protocol.md (`args`), model/tokenizer loading (`policy`: LoRA or full fine-tuning, from a base
folder or a parent adapter), the `step`/`checkpoint` events (`callbacks`), SIGINT/SIGTERM as "save a resumable
checkpoint, then exit 130" (`stop`, `runner`), and the final `output_dir/final` folder (`finish`).

    python -m massgen_rl_training.<algo> --config FILE            (or flags; FILE keys as in the contract)
    accelerate launch [--config_file python/accelerate/cpu-2proc.yaml] -m massgen_rl_training.<algo> --config FILE

Layout of `output_dir`: `checkpoint-<step>/` (resumable: weights or adapter, optimizer, scheduler, RNG, trainer
state), `final/` (the servable result: a LoRA adapter whose adapter_config.json names the absolute base folder, or a
full model folder; plus the tokenizer and `massgen-rl-train.json`), and `merged-parent/` only when a parent adapter is
merged for full fine-tuning. Heavy imports (torch, transformers, trl, peft) happen inside functions.
"""

import os

# Nothing may come from the Hugging Face Hub (as in massgen_rl_common): set before any module of this package
# imports huggingface_hub, which reads it once at import time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
