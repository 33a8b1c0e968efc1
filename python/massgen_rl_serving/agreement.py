"""Training/serving agreement: how far the logprobs an engine reports for its sampled tokens are from the
trainer's (transformers, float32, teacher-forced on the same prompt and tokens).

    python -m massgen_rl_serving.agreement --model DIR [--engines transformers,llama.cpp:bf16,...]
        [--prompts 8] [--max-tokens 64]

Each engine samples (temperature 1, seeded) --max-tokens tokens for --prompts questions through its own batcher,
exactly as `serve` would; the figures are over every sampled token: mean, p50, p99 and max |Δ| in nats, and
the mean of Δ (served − trainer). Ends with `done {model, tokens, engines: {name: {...}}}`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from massgen_rl_common.model_folder import inspect_model_folder
from massgen_rl_common.protocol import progress, run_script

from .engines import open_local_engine

QUESTIONS = [
    "Tell me about the sea.",
    "What is 12 * 3?",
    "Write a haiku about rain.",
    "Name three fruits.",
    "How do bees make honey?",
    "Explain what a prime number is.",
    "Give me a tip for sleeping well.",
    "What is the capital of France?",
    "Describe a cat in one sentence.",
    "Why is the sky blue?",
]


@dataclass
class AgreementArgs:
    """Mean and p99 |logprob(served) − logprob(trainer)| per engine, on the same prompts and sampled tokens."""

    model: str = field(metadata={"help": "An HF model folder."})
    engines: str = field(
        default="transformers,llama.cpp:bf16,llama.cpp:q8_0,llama.cpp:f32",
        metadata={"help": "Comma-separated: transformers, or llama.cpp:<weights type>."},
    )
    prompts: int = field(default=8, metadata={"help": "How many questions (at most 10)."})
    max_tokens: int = field(default=64, metadata={"help": "Tokens sampled per question."})


def main(args: AgreementArgs) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from .adapters import BatchKey
    from .openai_api import SamplingKey
    from .sampling import Row

    folder = inspect_model_folder(args.model, None)
    trainer = AutoModelForCausalLM.from_pretrained(str(folder.path), dtype=torch.float32).eval()
    questions = QUESTIONS[: max(1, min(args.prompts, len(QUESTIONS)))]
    results: dict[str, Any] = {}
    for spec in [s.strip() for s in args.engines.split(",") if s.strip()]:
        progress("engine", f"sampling with {spec}")
        kind, _, weights = spec.partition(":")
        engine, batcher = open_local_engine(
            kind, folder, max_seqs=16, weights_type=weights or "bf16", kv_tokens=8192, on_progress=progress
        )
        batcher.start()
        diffs: list[float] = []
        for k, question in enumerate(questions):
            prompt = engine.prompt_ids([{"role": "user", "content": question}])
            row = Row(prompt, args.max_tokens, seed=1000 + k, want_logprobs=True, ignore_eos=True)
            [completion], _ = batcher.submit(BatchKey(SamplingKey(False, 1.0, 1.0), None), 1, [row])
            with torch.inference_mode():
                logits = trainer(input_ids=torch.tensor([prompt + completion.token_ids])).logits[0].float()
            scores = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
            want = scores.gather(-1, torch.tensor(completion.token_ids)[:, None]).squeeze(-1)
            diffs += (torch.tensor(completion.logprobs) - want).tolist()
        batcher.stop()
        absolute = torch.tensor(diffs).abs()
        results[spec] = {
            "tokens": len(diffs),
            "mean_abs": round(absolute.mean().item(), 5),
            "p50_abs": round(absolute.quantile(0.5).item(), 5),
            "p99_abs": round(absolute.quantile(0.99).item(), 5),
            "max_abs": round(absolute.max().item(), 5),
            "mean_signed": round(sum(diffs) / len(diffs), 5),
        }
        progress("engine", f"{spec}: {results[spec]}")
        if hasattr(engine, "llama"):
            engine.llama.close()
    return {"model": str(folder.path), "questions": len(questions), "max_tokens": args.max_tokens, "engines": results}


if __name__ == "__main__":
    sys.exit(run_script(main, AgreementArgs))
