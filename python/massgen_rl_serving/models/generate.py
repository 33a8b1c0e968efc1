"""Smoke test a model folder: apply its chat template to one prompt and decode greedily.

    python -m massgen_rl_serving.models.generate --model DIR --prompt TEXT [--max-new-tokens N] [--system TEXT]

Used by the CLI doctor to prove the provisioned model loads and answers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from massgen_rl_common.protocol import ScriptError, progress, run_script


@dataclass
class GenerateArgs:
    """Greedy-generate a reply to one chat prompt and report it as a `done` event."""

    model: str = field(metadata={"help": "A transformers model folder (e.g. one written by models.provision)."})
    prompt: str = field(metadata={"help": "The user message."})
    max_new_tokens: int = field(default=48, metadata={"help": "Upper bound on generated tokens."})
    system: str | None = field(default=None, metadata={"help": "Optional system message (else the template's own)."})


def main(args: GenerateArgs) -> dict[str, Any]:
    if args.max_new_tokens < 1:
        raise ScriptError("--max-new-tokens must be at least 1")
    folder = Path(args.model).expanduser()
    if not (folder / "config.json").is_file():
        raise ScriptError(f"{folder} is not a model folder (no config.json); run models.provision first")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    progress("load", f"loading {folder}")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.eval()
    if not tokenizer.chat_template:
        raise ScriptError(f"the tokenizer in {folder} has no chat template")

    messages = [{"role": "system", "content": args.system}] if args.system else []
    messages.append({"role": "user", "content": args.prompt})
    # transformers 5.x returns a BatchEncoding here; ask for it explicitly so the shape is certain
    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    prompt_tokens = int(inputs["input_ids"].shape[1])
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    progress("generate", f"greedy decoding of up to {args.max_new_tokens} tokens", prompt_tokens=prompt_tokens)
    generating = time.monotonic()
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=args.max_new_tokens, do_sample=False, pad_token_id=pad_id)
    new_ids = output[0, prompt_tokens:].tolist()

    eos = model.generation_config.eos_token_id
    eos_ids = set(eos) if isinstance(eos, list) else {eos, tokenizer.eos_token_id}
    return {
        "text": tokenizer.decode(new_ids, skip_special_tokens=True).strip(),
        "num_tokens": len(new_ids),
        "prompt_tokens": prompt_tokens,
        "finish_reason": "eos" if new_ids and new_ids[-1] in eos_ids else "length",
        "generate_seconds": round(time.monotonic() - generating, 3),
        "total_seconds": round(time.monotonic() - started, 3),
    }


if __name__ == "__main__":
    raise SystemExit(run_script(main, GenerateArgs, prog="massgen_rl_serving.models.generate"))
