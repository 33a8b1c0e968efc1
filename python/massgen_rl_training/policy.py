"""The model a trainer trains and its tokenizer: a fresh LoRA adapter or full fine-tuning of a base folder, or
continuing a parent adapter (as an adapter, or merged into its base for full fine-tuning)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.model_folder import inspect_model_folder
from massgen_rl_common.protocol import ScriptError, log, progress

from .args import TrainArgs
from .ranks import barrier, is_main_process

MERGED_PARENT_DIR = "merged-parent"


@dataclass
class Policy:
    model: Any  # a PreTrainedModel, or a trainable PeftModel when continuing a parent adapter
    tokenizer: Any
    peft_config: Any  # a fresh LoraConfig for the TRL trainer to apply, or None
    adapter: bool  # the result is a LoRA adapter
    base_model: str  # absolute path of the base model folder (the adapter applies to it; lineage for full models)
    parent_adapter: str | None = None


def lora_config(lora: dict[str, Any], base_model: str) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=lora["r"],
        lora_alpha=lora["alpha"],
        lora_dropout=lora["dropout"],
        target_modules=lora["target_modules"],
        bias="none",
        task_type="CAUSAL_LM",
        base_model_name_or_path=base_model,
    )


def load_tokenizer(folder: Path, fallback: str | None = None, padding_side: str = "right") -> Any:
    from transformers import AutoTokenizer

    source = folder if (folder / "tokenizer_config.json").is_file() else Path(fallback or folder)
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
        log(f"the tokenizer has no pad token: padding with eos {tokenizer.eos_token!r}")
    if not tokenizer.chat_template:
        raise ScriptError(f"the tokenizer in {source} has no chat template (chat datasets need one)")
    tokenizer.padding_side = padding_side
    return tokenizer


def load_policy(args: TrainArgs, padding_side: str = "right", wrap_lora: bool = False) -> Policy:
    """The model to train. From a full folder: LoRA (a `peft_config` for TRL, or wrapped here with `wrap_lora`) or
    full fine-tuning. From a parent adapter: keep training that adapter (with `lora`), or merge it into its base,
    save the merge to output_dir/merged-parent and fully fine-tune that (without `lora`)."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        folder = inspect_model_folder(args.model_path)
    except ScriptError as exc:
        raise UsageError(str(exc)) from None
    dtype = torch.float32  # master weights; bf16 is autocast (mixed precision)
    if not folder.adapter:
        base = str(folder.path)
        tokenizer = load_tokenizer(folder.path, padding_side=padding_side)
        model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
        peft_config = lora_config(args.lora, base) if args.lora else None
        if peft_config is not None and wrap_lora:
            from peft import get_peft_model

            model, peft_config = get_peft_model(model, peft_config), None
        return Policy(model, tokenizer, peft_config, args.lora is not None, base)

    from peft import PeftModel

    base = str(folder.base)
    if not Path(base).is_dir():
        raise UsageError(f"the parent adapter's base model {base} is not a local folder")
    tokenizer = load_tokenizer(folder.path, fallback=base, padding_side=padding_side)
    base_model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
    if args.lora:
        model = PeftModel.from_pretrained(base_model, str(folder.path), is_trainable=True)
        if folder.lora_rank is not None and folder.lora_rank != args.lora["r"]:
            log(
                f"continuing the parent adapter {folder.path} with its own rank r={folder.lora_rank} "
                f"(config lora.r={args.lora['r']} does not apply)"
            )
        return Policy(model, tokenizer, None, True, base, parent_adapter=str(folder.path))
    merged_dir = Path(args.output_dir).expanduser().resolve() / MERGED_PARENT_DIR
    if is_main_process():
        progress("load", f"merging the parent adapter {folder.path} into {base} for full fine-tuning")
        merged = PeftModel.from_pretrained(base_model, str(folder.path)).merge_and_unload()
        merged.save_pretrained(merged_dir)
        tokenizer.save_pretrained(merged_dir)
        del merged
    barrier()
    model = AutoModelForCausalLM.from_pretrained(str(merged_dir), dtype=dtype)
    return Policy(model, tokenizer, None, False, base, parent_adapter=str(folder.path))
