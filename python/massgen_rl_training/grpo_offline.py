"""What offline GRPO may learn from, and how often: one sampling temperature, no greedy completions, and a bound
on how many times each recorded completion enters the loss.

The trainer scores a replayed completion under the policy at `temperature` (TRL divides the logits by it), so the
importance ratio and the TIS weights only compare like with like when that is the temperature the completion was
sampled at. Greedy completions (temperature below GREEDY_BELOW) were no samples of any temperature's distribution.
A group that mixes temperatures is split by temperature; the run keeps the temperature with the most completions
and leaves the other groups out, counted. Reusing recorded completions step after step makes them ever more
off-policy (issue 33: 706 steps over the same groups), so the steps are capped to `max_reuse` uses of each.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from massgen_rl_common.protocol import ScriptError

GREEDY_BELOW = 1e-5  # vLLM's and the bundled server's greedy threshold


@dataclass
class Selection:
    groups: list[dict[str, Any]]
    temperature: float
    greedy: int  # completions left out as greedy
    other_temperature: int  # completions left out at another temperature than the one kept
    flat_groups: int  # groups at that temperature left out: fewer than 2 different rewards once greedy ones left
    unrecorded: int  # completions without a recorded temperature (taken to be sampled at the setting)


def select_temperature(groups: list[dict[str, Any]], default: float) -> Selection:
    """The groups at one sampling temperature (completion["temperature"], None: `default`), greedy ones out."""
    greedy = unrecorded = 0
    split: list[tuple[float, dict[str, Any]]] = []
    for group in groups:
        by_temperature: dict[float, list[dict[str, Any]]] = {}
        for completion in group["completions"]:
            temperature = completion.get("temperature")
            if temperature is None:
                unrecorded += 1
                temperature = default
            if temperature < GREEDY_BELOW:
                greedy += 1
                continue
            by_temperature.setdefault(float(temperature), []).append(completion)
        for temperature, completions in by_temperature.items():
            split.append((temperature, {**group, "completions": completions}))
    counts = Counter()
    for temperature, group in split:
        counts[temperature] += len(group["completions"])
    if not counts:
        raise ScriptError(
            f"offline GRPO: all {greedy} completions were sampled greedily (temperature 0): none to learn"
        )
    kept = max(counts, key=lambda t: (counts[t], -abs(t - default)))
    # A group needs 2 completions of different rewards to teach anything.
    at_kept = [g for t, g in split if t == kept]
    keep = [g for g in at_kept if len({c["reward"] for c in g["completions"]}) >= 2]
    if not keep:
        raise ScriptError(f"offline GRPO: no group at temperature {kept} has 2 completions with different rewards")
    other = sum(counts.values()) - counts[kept]
    return Selection(keep, kept, greedy, other, len(at_kept) - len(keep), unrecorded)


@dataclass
class ReusePlan:
    rows_per_step: int  # dataset rows (groups of num_generations) one optimizer step takes
    steps_per_pass: int  # optimizer steps of one pass over the rows (TRL drops a last partial generation batch)
    uses_per_pass: int  # the most times one completion enters the loss in a pass (rows holding it x num_iterations)
    passes: int  # passes allowed by max_reuse
    max_steps: int  # the steps the run takes: the requested ones, capped to `passes` passes
    requested_steps: int

    @property
    def max_uses(self) -> int:
        return self.uses_per_pass * math.ceil(self.max_steps / self.steps_per_pass)


def reuse_plan(
    chunks: list[tuple[int, list[dict[str, Any]]]],
    *,
    completions_per_step: int,
    num_generations: int,
    num_iterations: int,
    max_reuse: int,
    max_steps: int,
    num_train_epochs: float,
) -> ReusePlan:
    """Steps for the replay rows `chunks` so that no completion enters the loss more than `max_reuse` times.
    `completions_per_step`: per_device_train_batch_size x processes x gradient_accumulation_steps."""
    rows_per_step = completions_per_step // num_generations
    steps_per_pass = (len(chunks) // rows_per_step) * num_iterations
    if steps_per_pass == 0:
        raise ScriptError(
            f"offline GRPO: {len(chunks)} rows of {num_generations} completions fill no optimizer step of "
            f"{rows_per_step} rows: lower per_device_train_batch_size or gradient_accumulation_steps, or collect more"
        )
    rows_of = Counter(key for _, row in chunks for key in {id(c) for c in row})
    uses_per_pass = max(rows_of.values()) * num_iterations
    passes = max_reuse // uses_per_pass
    if passes == 0:
        raise ScriptError(
            f"max_reuse ({max_reuse}) is below one pass over the data: a completion enters the loss {uses_per_pass} "
            f"times per pass (rows holding it x num_iterations {num_iterations}); raise max_reuse"
        )
    requested = max_steps if max_steps > 0 else math.ceil(num_train_epochs * steps_per_pass)
    steps = min(requested, passes * steps_per_pass)
    return ReusePlan(rows_per_step, steps_per_pass, uses_per_pass, passes, steps, requested)


def mean_tokens(chunks: list[list[list[int]]]) -> float:
    """Mean completion tokens over the replayed completions (each row's completions, as trained on)."""
    lengths = [len(ids) for row in chunks for ids in row]
    return round(sum(lengths) / len(lengths), 2) if lengths else 0.0
