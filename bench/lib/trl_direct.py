"""The "direct" side of bench/train-overhead.mjs: the same training run as `massgen-rl train`, with plain TRL.

    python bench/lib/trl_direct.py --algo sft|grpo --config TRAINER_YAML --output-dir DIR

TRAINER_YAML is the trainer config a `massgen-rl train` run wrote (<data_dir>/runs/<run>/trainer.yaml): this
script reads the same keys (model_path, dataset_path, lora, learning_rate, max_steps, batch size, seed, ...) and
hands the same values to the same TRL classes the bundled trainers use, written out here by hand:
AutoTokenizer/AutoModelForCausalLM (float32), a peft LoraConfig, SFTConfig/GRPOConfig, SFTTrainer/GRPOTrainer,
`trainer.train()`, then `trainer.save_model(DIR/final)`. What it leaves out is the massgen-rl layer: no Node
process, no JSON-lines protocol (no ProtocolCallback, no events on stdout, no stdout isolation), no signal
handling, no checkpoint lineage, no adapter-config fix-ups or training manifest.

SFT rows become conversational prompt/completion pairs (request messages / the final assistant message), as
TRL's docs describe for completion-only loss. GRPO offline replay has no plain-TRL equivalent: it imports the
bundled trainer's data preparation (load_groups from massgen_rl_training.grpo; replay_chunks, Replay and
recorded_reward from massgen_rl_training.grpo_replay) and the same three-line GRPOTrainer subclass that
lets the rollout_func see its rows, so both sides do the same work per step; everything else is plain TRL.

Prints one JSON line at the end: {"rows", "load_s", "train_s", "save_s", "metrics"}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def training_arguments(cfg: dict, output_dir: str) -> dict:
    save_steps = int(cfg["save_steps"])
    return dict(
        output_dir=output_dir,
        learning_rate=cfg["learning_rate"],
        num_train_epochs=cfg["num_train_epochs"],
        max_steps=cfg["max_steps"],
        per_device_train_batch_size=cfg["per_device_train_batch_size"],
        gradient_accumulation_steps=cfg["gradient_accumulation_steps"],
        seed=cfg["seed"],
        use_cpu=bool(cfg["use_cpu"]),
        bf16=bool(cfg["bf16"]),
        fp16=False,
        save_strategy="steps" if save_steps > 0 else "no",
        save_steps=save_steps if save_steps > 0 else 500,
        logging_strategy="steps",
        logging_steps=cfg["logging_steps"],
        report_to="none",
        gradient_checkpointing=bool(cfg["gradient_checkpointing"]),
        dataloader_pin_memory=not cfg["use_cpu"],
        disable_tqdm=True,
    )


def load_model(cfg: dict, padding_side: str):
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = str(Path(cfg["model_path"]).resolve())
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = padding_side
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    lora = cfg.get("lora")
    peft_config = (
        None
        if not lora
        else LoraConfig(
            r=lora["r"],
            lora_alpha=lora["alpha"],
            lora_dropout=lora["dropout"],
            target_modules=lora["target_modules"],
            bias="none",
            task_type="CAUSAL_LM",
            base_model_name_or_path=path,
        )
    )
    return model, tokenizer, peft_config


def sft_trainer(cfg: dict, output_dir: str):
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = []
    with open(cfg["dataset_path"], encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                chat = [{"role": m["role"], "content": m["content"]} for m in json.loads(line)["messages"]]
                rows.append({"prompt": chat[:-1], "completion": chat[-1:]})
    model, tokenizer, peft_config = load_model(cfg, "right")
    config = SFTConfig(
        **training_arguments(cfg, output_dir), max_length=cfg["max_length"], packing=False, completion_only_loss=True
    )
    return SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    ), len(rows)


def grpo_trainer(cfg: dict, output_dir: str):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from massgen_rl_training.grpo import load_groups
    from massgen_rl_training.grpo_replay import Replay, recorded_reward, replay_chunks

    if cfg.get("mode", "offline") != "offline":
        raise SystemExit("trl_direct.py: only grpo mode offline (replay) is benchmarked")
    groups = load_groups(SimpleNamespace(dataset_path=cfg["dataset_path"], mode="offline"))
    model, tokenizer, peft_config = load_model(cfg, "left")
    config = GRPOConfig(
        **training_arguments(cfg, output_dir),
        beta=cfg["beta"],
        num_generations=cfg["num_generations"],
        max_completion_length=cfg["max_completion_length"],
        temperature=cfg["temperature"],
    )
    chunks = replay_chunks(groups, cfg["num_generations"], cfg["seed"])
    replay = Replay(tokenizer, groups, chunks, cfg["num_generations"], cfg["max_completion_length"], cfg["max_length"])

    class ReplayGRPOTrainer(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            self._massgen_inputs = inputs
            try:
                return super()._generate_and_score_completions(inputs)
            finally:
                self._massgen_inputs = None

    trainer = ReplayGRPOTrainer(
        model=model,
        args=config,
        processing_class=tokenizer,
        peft_config=peft_config,
        reward_funcs=[recorded_reward],
        rollout_func=replay,
        train_dataset=Dataset.from_list(replay.dataset_rows(chunks, groups)),
    )
    return trainer, len(chunks)


def main() -> int:
    parser = argparse.ArgumentParser(prog="trl_direct.py")
    parser.add_argument("--algo", choices=("sft", "grpo"), required=True)
    parser.add_argument("--config", required=True, help="a trainer.yaml written by `massgen-rl train`")
    parser.add_argument("--output-dir", required=True)
    opts = parser.parse_args()
    import yaml

    cfg = yaml.safe_load(Path(opts.config).read_text(encoding="utf-8"))
    output_dir = str(Path(opts.output_dir).resolve())
    started = time.monotonic()
    trainer, rows = (sft_trainer if opts.algo == "sft" else grpo_trainer)(cfg, output_dir)
    loaded = time.monotonic()
    output = trainer.train()
    trained = time.monotonic()
    trainer.save_model(str(Path(output_dir) / "final"))
    saved = time.monotonic()
    metrics = {k: v for k, v in (output.metrics or {}).items() if isinstance(v, (int, float))}
    sys.stdout.write(
        json.dumps(
            {
                "rows": rows,
                "load_s": round(loaded - started, 3),
                "train_s": round(trained - loaded, 3),
                "save_s": round(saved - trained, 3),
                "global_step": output.global_step,
                "metrics": metrics,
            }
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
