"""What offline GRPO reports: the `done` metrics of what it took, left out and how often it used each completion,
and the progress event and log lines saying so at the start."""

from __future__ import annotations

from typing import Any

from massgen_rl_common.protocol import log, progress

from .grpo_offline import ReusePlan, Selection, mean_tokens
from .grpo_replay import Replay


def offline_summary(max_reuse: int, selection: Selection, plan: ReusePlan, replay: Replay) -> dict[str, Any]:
    """The `done` metrics of what offline GRPO took, left out and how often it used each completion."""
    return {
        "grpo/temperature": selection.temperature,
        "grpo/left_out_greedy": selection.greedy,
        "grpo/left_out_other_temperature": selection.other_temperature,
        "grpo/left_out_flat_groups": selection.flat_groups,
        "grpo/max_reuse": max_reuse,
        "grpo/max_uses": plan.max_uses,
        "grpo/passes": round(plan.max_steps / plan.steps_per_pass, 3),
        "grpo/steps": plan.max_steps,
        "grpo/requested_steps": plan.requested_steps,
        "grpo/unrecorded_temperature": selection.unrecorded,
        "grpo/dataset_completion_tokens": mean_tokens([row[1] for row in replay.rows]),
        "grpo/truncated": replay.truncated,
        "grpo/replayed": sum(len(row[1]) for row in replay.rows),
    }


def report_offline(groups: list, chunks: list, summary: dict[str, Any], args: Any) -> None:
    """The dataset progress event and the log lines of what offline GRPO took and left out."""
    progress(
        "dataset",
        f"{len(groups)} groups at temperature {summary['grpo/temperature']} replayed as {len(chunks)} rows of "
        f"{args.num_generations}",
        groups=len(groups),
        rows=len(chunks),
    )
    left = [(summary[f"grpo/left_out_{k}"], what) for k, what in LEFT_OUT if summary[f"grpo/left_out_{k}"]]
    if left:
        log("left out: " + ", ".join(f"{n} {what}" for n, what in left))
    if summary["grpo/unrecorded_temperature"]:
        log(
            f"{summary['grpo/unrecorded_temperature']} completions record no temperature: taken as sampled at "
            f"temperature {args.temperature}"
        )
    steps, requested = summary["grpo/steps"], summary["grpo/requested_steps"]
    log(
        f"{steps} steps ({summary['grpo/passes']} passes over the rows"
        + (f"; {requested} asked, capped by max_reuse {args.max_reuse}" if steps < requested else "")
        + f"): each completion enters the loss at most {summary['grpo/max_uses']} times"
    )
    if summary["grpo/truncated"]:
        log(
            f"{summary['grpo/truncated']} of {summary['grpo/replayed']} replayed completions are longer than "
            f"max_completion_length ({args.max_completion_length}) and cut: their reward is the whole answer's "
            "(raise max_completion_length, or mask_truncated_completions: true leaves them out of the loss)"
        )
    completions = [c for group in groups for c in group["completions"]]
    with_logprobs = sum(c["logprobs"] is not None for c in completions)
    if args.is_correction != "off":
        log(
            f"recorded logprobs usable for {with_logprobs} of {len(completions)} completions "
            f"(is_correction: {args.is_correction}; the rest are not corrected)"
        )


LEFT_OUT = (
    ("greedy", "greedy completions (temperature 0: no sample of the policy)"),
    ("other_temperature", "completions at other temperatures than the one trained at"),
    ("flat_groups", "groups without 2 different rewards once those were left out"),
)
