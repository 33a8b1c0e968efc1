"""Start-up costs of the Python sides of a cycle, phase by phase (docs/benchmarks.md, "Start-up").

    ~/.cache/massgen-rl/venv/bin/python bench/startup.py [--model DIR] [--adapter DIR] [--rounds N] [--convert] [--only A,B]

Measures, in seconds: a bare interpreter; `train.check` (spawn to exit); torch / transformers / trl / peft imports
(cumulative, in one process, as a trainer imports them); `folder_digest` of the model and the adapter, hashed and
from the digest cache; the GGUF conversion of the adapter (and with --convert of the model) into an empty cache;
the model server from spawn to `ready` for the model and for the adapter, as median seconds per phase (`spawn`:
interpreter and imports; `load`: GGUF digest, found or converted, tokenizer and llama.cpp model loaded; `adapter`:
the adapter's GGUF and load; `warmup`: one short generation and the HTTP server up); and an SFT trainer of one LoRA
step, split the same way (`load`: datasets/trl/peft imports and the model; `train`: the first step). Prints
one JSON object.
--adapter defaults to a fresh adapter made by test/fixtures/trainers/make_lora_adapter.py.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
PY = sys.executable


def wall(cmd: list[str], **kw) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=kw.pop("env", ENV), **kw)
    return time.perf_counter() - start


def median_of(rounds: int, seconds, *args) -> float:
    return round(statistics.median(seconds(*args) for _ in range(rounds)), 3)


def events(cmd: list[str], until: str, env: dict[str, str] | None = None) -> dict[str, float]:
    """Seconds from spawn to the first event of each stage (progress stage, or event name), up to `until`."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env or ENV)
    seen: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        name = event.get("stage") if event.get("event") == "progress" else event.get("event")
        seen.setdefault(str(name), round(time.perf_counter() - start, 3))
        if name in (until, "error"):
            break
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    if until not in seen:
        raise SystemExit(f"{cmd[2:4]} never reached {until}: {seen}")
    return seen


def phases(runs: list[dict[str, float]]) -> dict[str, float]:
    """Median seconds of each phase over runs, named by the event it starts at (`spawn`: to the first event)."""
    out: dict[str, list[float]] = {}
    for seen in runs:
        stage, last = "spawn", 0.0
        for name, at in seen.items():
            out.setdefault(stage, []).append(at - last)
            stage, last = name, at
        out.setdefault("total", []).append(last)
    return {k: round(statistics.median(v), 3) for k, v in out.items()}


def imports() -> dict[str, float]:
    code = (
        "import time, json; t = time.perf_counter(); out = {}\n"
        "for m in ('torch', 'transformers', 'trl', 'peft'):\n"
        "    __import__(m); now = time.perf_counter(); out[m] = round(now - t, 3); t = now\n"
        "print(json.dumps(out))"
    )
    return json.loads(subprocess.run([PY, "-c", code], check=True, capture_output=True, env=ENV, text=True).stdout)


def digests(model: Path, adapter: Path, rounds: int) -> dict[str, float]:
    from massgen_rl_serving import gguf_files

    hashed = getattr(gguf_files, "hash_folder", gguf_files.folder_digest)  # the uncached hash, where there is one
    out = {}
    for what, folder, extra in (("model", model, "bf16"), ("adapter", adapter, str(model))):
        out[f"{what}_hashed"] = median_of(rounds, _timed, hashed, folder, extra)
        gguf_files.folder_digest(folder, extra)  # fills the cache, where there is one
        out[f"{what}_digest"] = median_of(rounds, _timed, gguf_files.folder_digest, folder, extra)
    return out


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def conversions(model: Path, adapter: Path, convert_model: bool) -> dict[str, float]:
    from massgen_rl_serving import gguf_files

    out = {}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["MASSGEN_RL_GGUF_CACHE"] = cache
        try:
            out["adapter_first"] = round(_timed(gguf_files.adapter_gguf, adapter, model), 3)
            out["adapter_cached"] = round(_timed(gguf_files.adapter_gguf, adapter, model), 3)
            if convert_model:
                out["model_first"] = round(_timed(gguf_files.model_gguf, model, "bf16"), 3)
                out["model_cached"] = round(_timed(gguf_files.model_gguf, model, "bf16"), 3)
        finally:
            del os.environ["MASSGEN_RL_GGUF_CACHE"]
    return out


def serve(folder: Path) -> dict[str, float]:
    cmd = [PY, "-m", "massgen_rl_serving", "--model", str(folder), "--engine", "llama.cpp"]
    return events(cmd + ["--max-batch-size", "4"], "ready")


def trainer(model: Path, work: Path) -> dict[str, float]:
    data = work / "data.jsonl"
    row = {"messages": [{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": "5"}]}
    data.write_text("\n".join(json.dumps(row) for _ in range(4)) + "\n")
    config = work / "trainer.json"
    config.write_text(
        json.dumps(
            {
                "model_path": str(model),
                "output_dir": str(work / f"out-{time.time_ns()}"),
                "dataset_path": str(data),
                "lora": {"r": 8, "alpha": 16},
                "max_steps": 1,
                "per_device_train_batch_size": 2,
                "save_steps": 0,
                "max_length": 128,
                "use_cpu": True,
            }
        )
    )
    return events([PY, "-m", "massgen_rl_training.sft", "--config", str(config)], "done")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default=str(Path.home() / ".cache/massgen-rl/models/smollm2-135m-instruct"))
    p.add_argument("--adapter")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--convert", action="store_true", help="also time the model's first GGUF conversion (slow)")
    p.add_argument("--only", help="comma-separated parts (python_bare, ..., trainer_sft_1_step); default: all")
    args = p.parse_args()
    model = Path(args.model).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        adapter = Path(args.adapter).resolve() if args.adapter else work / "adapter"
        if not args.adapter:
            maker = ROOT / "test/fixtures/trainers/make_lora_adapter.py"
            subprocess.run([PY, str(maker), str(model), str(adapter)], check=True, capture_output=True, env=ENV)
        check = [PY, "-m", "massgen_rl_training.check", "--request", '{"sections": {"sft": {}, "grpo": {}}}']
        parts = {
            "python_bare": lambda: median_of(args.rounds, wall, [PY, "-c", "pass"]),
            "train_check": lambda: median_of(args.rounds, wall, check),
            "imports": imports,
            "digests": lambda: digests(model, adapter, args.rounds),
            "conversions": lambda: conversions(model, adapter, args.convert),
            "serve_model": lambda: phases([serve(model) for _ in range(args.rounds)]),
            "serve_adapter": lambda: phases([serve(adapter) for _ in range(args.rounds)]),
            "trainer_sft_1_step": lambda: phases([trainer(model, work) for _ in range(args.rounds)]),
        }
        only = args.only.split(",") if args.only else list(parts)
        result = {name: fn() for name, fn in parts.items() if name in only}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
