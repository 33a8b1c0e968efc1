"""Turn a GGUF checkpoint into a plain transformers folder (float32 safetensors + tokenizer).

Needs torch and transformers; import this module only inside a script's `main`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig, GgufConfig

from massgen_rl_common.protocol import ScriptError, exception_name

EOS_TOKEN = "<|im_end|>"  # ChatML end of turn: what the chat template closes every message with
PAD_PREFERENCE = ("<|endoftext|>",)  # existing special tokens that make a pad distinct from eos


class ConvertError(ScriptError):
    """The GGUF cannot be made into the folder the trainers expect."""


def load_gguf(gguf_path: Path) -> tuple[Any, Any]:
    """Tokenizer and float32 CPU model from a .gguf file, with every weight unpacked to dense tensors."""
    folder, name = str(gguf_path.parent), gguf_path.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        # transformers 5.x attaches a GGUF quantizer to the model unless told to dequantize, and a
        # model carrying it refuses save_pretrained ("quantized with gguf and is not serializable").
        model = AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=name, dtype=torch.float32, quantization_config=GgufConfig(dequantize=True)
        )
    except Exception as exc:  # a truncated or foreign file fails deep inside the reader
        raise ConvertError(f"cannot load {name} as a GGUF model: {exception_name(exc)}: {exc}") from exc
    packed = sorted({type(module).__name__ for module in model.modules() if type(module).__name__.startswith("Gguf")})
    if packed:
        raise ConvertError(f"weights were left packed in GGUF blocks ({', '.join(packed)}); cannot save them")
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:  # the weights are dense already; drop the leftover marker so saving works
        quantizer.remove_quantization_config(model)
    model.eval()
    return model, tokenizer


def fix_special_tokens(tokenizer: Any) -> list[str]:
    """Make eos `<|im_end|>` and pad an existing special token other than eos. Never grows the vocab."""
    vocab = tokenizer.get_vocab()
    size = len(tokenizer)
    fixes: list[str] = []
    if tokenizer.eos_token != EOS_TOKEN:
        if EOS_TOKEN not in vocab:
            raise ConvertError(f"the GGUF tokenizer's eos is {tokenizer.eos_token!r} and it has no {EOS_TOKEN!r} token")
        fixes.append(f"eos_token: {tokenizer.eos_token!r} -> {EOS_TOKEN!r}")
        tokenizer.eos_token = EOS_TOKEN
    if tokenizer.pad_token is None or tokenizer.pad_token == tokenizer.eos_token:
        taken = {tokenizer.eos_token, tokenizer.bos_token}
        candidates = [*PAD_PREFERENCE, tokenizer.unk_token, *tokenizer.all_special_tokens]
        choice = next((tok for tok in candidates if tok and tok in vocab and tok not in taken), tokenizer.eos_token)
        fixes.append(f"pad_token: {tokenizer.pad_token!r} -> {choice!r}")
        tokenizer.pad_token = choice
    if len(tokenizer) != size:
        raise ConvertError(f"fixing special tokens grew the vocabulary from {size} to {len(tokenizer)}")
    return fixes


def align_model(model: Any, tokenizer: Any) -> None:
    """Give model.config and generation_config the tokenizer's bos/eos/pad ids."""
    if len(tokenizer) > model.config.vocab_size:
        raise ConvertError(f"tokenizer has {len(tokenizer)} tokens but the model only {model.config.vocab_size}")
    ids = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    for config in (model.config, model.generation_config):
        for key, value in ids.items():
            if value is not None:
                setattr(config, key, value)
    limit = getattr(model.config, "max_position_embeddings", None)
    if limit and tokenizer.model_max_length > limit:  # GGUF tokenizers come back with "no limit" (1e30)
        tokenizer.model_max_length = limit


def save_folder(model: Any, tokenizer: Any, out_dir: Path) -> None:
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    # safetensors files come out 0600; a shared model cache should be readable like any other file
    umask = os.umask(0)
    os.umask(umask)
    for path in out_dir.iterdir():
        if path.is_file():
            path.chmod(0o666 & ~umask)


def verify_folder(folder: Path, eos_id: int, pad_id: int) -> None:
    """Reload what was written, without the GGUF, and check the special-token ids survived."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = AutoConfig.from_pretrained(folder)
    generation = GenerationConfig.from_pretrained(folder)
    found = {
        "tokenizer": (tokenizer.eos_token_id, tokenizer.pad_token_id),
        "config": (config.eos_token_id, config.pad_token_id),
        "generation_config": (generation.eos_token_id, generation.pad_token_id),
    }
    for where, ids in found.items():
        if ids != (eos_id, pad_id):
            raise ConvertError(f"saved {where} has eos/pad ids {ids}, expected {(eos_id, pad_id)}")
    if hasattr(config, "quantization_config"):
        raise ConvertError("saved config.json still declares a quantization_config")
