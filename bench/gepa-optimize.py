"""Optimizes one system prompt with GEPA (PyPI `gepa`, its default adapter) against a local OpenAI-compatible server.

    python bench/gepa-optimize.py --input in.json --output out.json

Input JSON: {seed_prompt, trainset: [{input, answer, additional_context?}], valset: [...], base_url, model,
max_metric_calls, seed, reflection_minibatch_size, max_tokens, reflection_max_tokens?, temperature?, max_workers?}.
Output JSON: {best_prompt, best_val_score, seed_val_score, val_scores, metric_calls_used, reflection_calls,
reflection_tokens, task_lm_tokens, reflections, egress_refused, wall_s, versions}.

The task model and the reflection model are both `openai/<model>` through LiteLLM with api_base=base_url: GEPA's
DefaultAdapter (system prompt = the candidate, user message = the example's input, one completion per example,
scored by ContainsAnswerEvaluator: 1 if `answer in response`, else 0) and a gepa.lm.LM for reflection. Every
metric call is one task-model call on one example. GEPA checks max_metric_calls between iterations only, so a
run can end above it (see metric_calls_used). A task call that still fails after LiteLLM's retries ends the run:
batch_completion returns the exception in place of a response and gepa 0.1.4's LM.batch_complete then raises
AttributeError ('Exception' object has no attribute 'choices'). wall_s times gepa.optimize alone (not start-up).
A reflection reply without a ``` block is taken whole as the new prompt (GEPA's output_extractor); `reflections`
says, per reflection call, whether it had one.

Offline: LiteLLM's bundled pricing table (LITELLM_LOCAL_MODEL_COST_MAP) and a guard installed before any import
that refuses every connection or name lookup off the loopback interface; what it refused is in egress_refused.
"""

import argparse
import json
import os
import socket
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

EGRESS_REFUSED: list[str] = []
_LOCAL = {None, "", "localhost", "::1", "ip6-localhost"}


def _is_local(host) -> bool:
    name = host.decode() if isinstance(host, bytes) else host
    return name in _LOCAL or str(name).startswith("127.") or name == "::ffff:127.0.0.1"


def _guard(original, describe):
    def guarded(*args, **kwargs):
        target = describe(*args)
        if target is not None and not _is_local(target[0]):
            EGRESS_REFUSED.append(f"{target[0]}:{target[1]}")
            raise OSError(f"gepa bench: egress to {target[0]} refused (only the local server is allowed)")
        return original(*args, **kwargs)

    return guarded


def _address(_sock, address, *_):
    return address if isinstance(address, tuple) else None  # AF_UNIX paths stay on the machine


socket.socket.connect = _guard(socket.socket.connect, _address)
socket.socket.connect_ex = _guard(socket.socket.connect_ex, _address)
socket.getaddrinfo = _guard(socket.getaddrinfo, lambda host, port=None, *_: (host, port))

import importlib.metadata as metadata  # noqa: E402

import gepa  # noqa: E402
from gepa.adapters.default_adapter.default_adapter import DefaultAdapter  # noqa: E402
from gepa.lm import LM  # noqa: E402
from gepa.strategies.instruction_proposal import InstructionProposalSignature  # noqa: E402

COMPONENT = "system_prompt"


class ReflectionLM(LM):
    """gepa.lm.LM (which sums the server's usage per call) that also counts calls and keeps each raw reply."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outputs: list[str] = []

    def __call__(self, prompt):
        out = super().__call__(prompt)
        self.outputs.append(out or "")
        return out

    def batch_complete(self, messages_list, max_workers=10, **kwargs):
        outs = super().batch_complete(messages_list, max_workers=max_workers, **kwargs)
        self.outputs.extend(o or "" for o in outs)
        return outs


class StderrLogger:
    def log(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)


def examples(rows, field):
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or "input" not in row or "answer" not in row:
            raise SystemExit(f"{field}[{i}]: needs input and answer")
        context = row.get("additional_context") or {}
        out.append(
            {
                "input": str(row["input"]),
                "answer": str(row["answer"]),
                "additional_context": {str(k): str(v) for k, v in context.items()},
            }
        )
    return out


def tokens(prompt: int, completion: int) -> dict:
    return {"prompt": prompt, "completion": completion, "total": prompt + completion}


def optimize(cfg, trainset, valset, adapter, reflection_lm):
    return gepa.optimize(
        seed_candidate={COMPONENT: cfg["seed_prompt"]},
        trainset=trainset,
        valset=valset,
        adapter=adapter,
        reflection_lm=reflection_lm,
        reflection_minibatch_size=int(cfg.get("reflection_minibatch_size") or 3),
        max_metric_calls=int(cfg["max_metric_calls"]),
        seed=int(cfg.get("seed") or 0),
        logger=StderrLogger(),
        display_progress_bar=False,
        raise_on_exception=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Optimize a system prompt with GEPA's default adapter against a local OpenAI-compatible server."
    )
    parser.add_argument("--input", required=True, help="input JSON file (see the module docstring)")
    parser.add_argument("--output", required=True, help="where to write the result JSON")
    args = parser.parse_args()
    with open(args.input) as f:
        cfg = json.load(f)

    model = f"openai/{cfg['model']}"
    connection = {"api_base": cfg["base_url"], "api_key": cfg.get("api_key") or "sk-local"}
    sampling = {"temperature": cfg["temperature"]} if cfg.get("temperature") is not None else {}
    adapter = DefaultAdapter(
        model=model,
        max_litellm_workers=int(cfg.get("max_workers") or 10),
        litellm_batch_completion_kwargs={**connection, **sampling, "max_tokens": int(cfg["max_tokens"])},
    )
    reflection_lm = ReflectionLM(
        model, max_tokens=int(cfg.get("reflection_max_tokens") or 1024), **connection, **sampling
    )
    trainset = examples(cfg["trainset"], "trainset")
    valset = examples(cfg["valset"], "valset")

    t0 = time.perf_counter()
    try:
        result = optimize(cfg, trainset, valset, adapter, reflection_lm)
    except Exception as exc:
        # A refused connection surfaces from GEPA as some later error (LiteLLM's batch_completion returns the
        # exception in place of a response, which gepa.lm then reads as one): name what was refused, last.
        if EGRESS_REFUSED:
            raise RuntimeError(f"egress refused: {', '.join(sorted(set(EGRESS_REFUSED)))}") from exc
        raise
    wall_s = time.perf_counter() - t0

    task_lm = getattr(adapter, "_lm", None)  # the LM the adapter built from the model name; sums usage too
    out = {
        "best_prompt": result.best_candidate[COMPONENT],
        "best_val_score": result.val_aggregate_scores[result.best_idx],
        "seed_val_score": result.val_aggregate_scores[0],
        "val_scores": result.val_aggregate_scores,
        "candidates": [c[COMPONENT] for c in result.candidates],
        "metric_calls_used": result.total_metric_calls,
        "max_metric_calls": int(cfg["max_metric_calls"]),
        "num_full_val_evals": result.num_full_val_evals,
        "reflection_calls": len(reflection_lm.outputs),
        "reflection_tokens": tokens(reflection_lm.total_tokens_in, reflection_lm.total_tokens_out),
        "task_lm_tokens": tokens(task_lm.total_tokens_in, task_lm.total_tokens_out)
        if isinstance(task_lm, LM)
        else None,
        "reflections": [
            {
                "has_code_block": o.count("```") >= 2,
                "proposed": InstructionProposalSignature.output_extractor(o)["new_instruction"],
                "raw": o[:4000],
            }
            for o in reflection_lm.outputs
        ],
        "evaluator": "ContainsAnswerEvaluator: score 1 if the reference answer is a substring of the response",
        "egress_refused": EGRESS_REFUSED,
        "wall_s": wall_s,
        "versions": {"gepa": metadata.version("gepa"), "litellm": metadata.version("litellm")},
    }
    with open(args.output, "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
