"""Offline GRPO's data discipline: one sampling temperature (greedy completions out), a bound on how often each
recorded completion enters the loss, and Dr. GRPO's loss by default; plus a tiny-model run that checks the policy
scores the completions at the temperature they were sampled at."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from massgen_rl_common.config_args import UsageError
from massgen_rl_common.protocol import ScriptError
from massgen_rl_training.args import parse_train_args
from massgen_rl_training.grpo import GRPOArgs, grpo_config, load_groups
from massgen_rl_training.grpo_offline import mean_tokens, reuse_plan, select_temperature
from massgen_rl_training.grpo_replay import Replay, replay_chunks
from train_helpers import (
    assert_trained,
    needs_model,
    run_trainer_module,
    served_groups,
    train_config,
    write_jsonl,
)


def _group(*completions: tuple[float, float | None]) -> dict[str, Any]:
    """A group of (reward, temperature) completions."""
    return {
        "prompt": [{"role": "user", "content": "q"}],
        "completions": [
            {"content": f"c{i}", "token_ids": [10 + i], "reward": r, "temperature": t}
            for i, (r, t) in enumerate(completions)
        ],
    }


def test_keeps_one_temperature_and_leaves_greedy_completions_out():
    groups = [
        _group((1, 0.7), (0, 0.7), (1, 0.0)),  # the greedy one leaves
        _group((1, 0.7), (0, 1.0), (0, 0.7), (1, 1.0)),  # split: 0.7 and 1.0 halves
        _group((1, None), (0, None)),  # no recorded temperature: the setting's (1.0)
        _group((1, 0.7), (1, 0.7), (0, 0.0)),  # flat once the greedy one leaves
    ]
    picked = select_temperature(groups, default=1.0)
    assert picked.temperature == 0.7  # 6 completions at 0.7, 4 at 1.0
    assert [[c["reward"] for c in g["completions"]] for g in picked.groups] == [[1, 0], [1, 0]]
    assert all(c["temperature"] == 0.7 for g in picked.groups for c in g["completions"])
    assert (picked.greedy, picked.other_temperature, picked.flat_groups, picked.unrecorded) == (2, 4, 1, 2)
    assert select_temperature(groups[2:3], default=1.0).temperature == 1.0
    with pytest.raises(ScriptError, match="sampled greedily"):
        select_temperature([_group((1, 0.0), (0, 0.0))], default=1.0)


def _plan(groups: list[dict[str, Any]], size: int = 2, **overrides: Any):
    settings = dict(
        completions_per_step=4, num_generations=size, num_iterations=1, max_reuse=2, max_steps=-1, num_train_epochs=1
    )
    return reuse_plan(replay_chunks(groups, size, seed=0), **{**settings, **overrides})


def test_reuse_bound_caps_the_steps():
    groups = [_group((1, 0.7), (0, 0.7)) for _ in range(5)]  # 5 rows, 2 per step: 2 steps per pass (TRL drops 1)
    plan = _plan(groups)
    assert (plan.steps_per_pass, plan.uses_per_pass, plan.passes, plan.max_steps, plan.max_uses) == (2, 1, 2, 2, 1)
    many = _plan(groups, max_steps=700)
    assert (many.requested_steps, many.max_steps, many.max_uses) == (700, 4, 2)  # 2 passes at most
    assert _plan(groups, num_train_epochs=5).max_steps == 4
    assert _plan(groups, max_steps=3, max_reuse=10).max_steps == 3  # under the bound: as asked
    # num_iterations reuses each batch: 2 uses per pass
    twice = _plan(groups, num_iterations=2, max_steps=700)
    assert (twice.steps_per_pass, twice.uses_per_pass, twice.max_steps, twice.max_uses) == (4, 2, 4, 2)
    # a group of 3 cut into rows of 2: one completion fills up the second row too, 2 uses per pass
    odd = _plan([_group((1, 0.7), (0, 0.7), (0.5, 0.7)) for _ in range(2)], max_steps=700, completions_per_step=2)
    assert (odd.uses_per_pass, odd.passes, odd.max_steps, odd.max_uses) == (2, 1, 4, 2)
    with pytest.raises(ScriptError, match=r"max_reuse \(1\) is below one pass"):
        _plan([_group((1, 0.7), (0, 0.7), (0.5, 0.7))], max_reuse=1, completions_per_step=2)
    with pytest.raises(ScriptError, match="fill no optimizer step"):
        _plan(groups[:1], completions_per_step=4)


def test_a_large_group_fits_the_default_reuse_bound():
    # 13 samples of a decision cut into rows of 4: the 3 short rows are filled with different completions, so none
    # is in more than 2 rows and one pass fits max_reuse 2 (it used to fill every short row from the same ones: 4)
    groups = [_group(*[(i % 3 / 2, 0.7) for i in range(13)]) for _ in range(2)]
    chunks = replay_chunks(groups[:1], 4, seed=0)
    assert len(chunks) == 4 and all(len(row) == 4 and len({id(c) for c in row}) == 4 for _, row in chunks)
    held = Counter(id(c) for _, row in chunks for c in row)
    assert max(held.values()) == 2 and sum(held.values()) == 16
    plan = _plan(groups, size=4, completions_per_step=8)
    assert (plan.uses_per_pass, plan.passes) == (2, 1)
    # 9 samples with one right and one half-right: those two do not fill all three rows
    rare = [_group(*[(r, 0.7) for r in (0, 2, 0, 0, 0, 1, 0, 0, 0)]) for _ in range(2)]
    assert _plan(rare, size=4, completions_per_step=8).uses_per_pass == 2


class _Tokenizer:
    eos_token_id = 2

    def apply_chat_template(self, messages, **kwargs):
        return {"input_ids": [1, 5, 6]}


def test_replay_counts_the_completions_it_cuts():
    group = _group((1, 0.7), (0, 0.7))
    group["completions"][0]["token_ids"] = [10, 11, 12, 13]
    chunks = replay_chunks([group], 2, seed=0)
    replay = Replay(_Tokenizer(), [group], chunks, 2, max_completion_length=3, max_length=None)
    assert replay.truncated == 1 and sorted(len(ids) for ids in replay.rows[0][1]) == [1, 3]
    assert mean_tokens([row[1] for row in replay.rows]) == 2.0


def _config(tmp_path, **overrides: Any) -> GRPOArgs:
    dataset = write_jsonl(tmp_path / "data.jsonl", [_group((1, 0.7), (0, 0.7))])
    config = train_config(tmp_path, "args", dataset, num_generations=2, **overrides)
    return parse_train_args(GRPOArgs, ["--config", str(config)])


def test_dr_grpo_loss_by_default_and_settings_checked(tmp_path):
    args = _config(tmp_path)
    assert (args.loss_type, args.max_reuse, args.num_iterations) == ("dr_grpo", 2, 1)
    trl = grpo_config(args, temperature=0.7, max_steps=3)
    assert (trl.loss_type, trl.temperature, trl.max_steps, trl.num_iterations) == ("dr_grpo", 0.7, 3, 1)
    assert trl.mask_truncated_completions is False
    assert grpo_config(_config(tmp_path, mask_truncated_completions=True)).mask_truncated_completions is True
    assert grpo_config(_config(tmp_path, loss_type="dapo")).loss_type == "dapo"
    for bad, needle in [
        ({"loss_type": "mean"}, "loss_type must be one of grpo, dr_grpo"),
        ({"max_reuse": 0}, "max_reuse must be a whole number from 1"),
        ({"num_iterations": 3}, r"num_iterations \(3\) reuses each batch more than max_reuse allows \(2\)"),
    ]:
        with pytest.raises(UsageError, match=needle):
            _config(tmp_path, **bad)


def test_recorded_temperatures_are_checked(tmp_path):
    args = _config(tmp_path)
    for value, needle in [("hot", "temperature must be a finite number"), (-1, "temperature must be 0 to 100")]:
        group = _group((1, 0.7), (0, 0.7))
        group["completions"][1]["temperature"] = value
        args.dataset_path = str(write_jsonl(tmp_path / "bad.jsonl", [group]))
        with pytest.raises(ScriptError, match=rf"bad.jsonl:1: completions\[1\]: {needle}"):
            load_groups(args)


@needs_model
def test_offline_grpo_scores_at_the_sampling_temperature_and_bounds_reuse(tmp_path):
    groups = served_groups(temperature=0.7)
    greedy = dict(groups[0]["completions"][0], content="5.", temperature=0.0)
    groups[0]["completions"].append(greedy)
    dataset = write_jsonl(tmp_path / "data.jsonl", groups + served_groups(temperature=1.0)[:1])
    config = train_config(
        tmp_path, "offline", dataset, mode="offline", num_generations=2, max_steps=50, max_completion_length=16
    )
    run = run_trainer_module("grpo", config)
    done = assert_trained(run, 4)  # 2 rows, 1 per step, each used at most twice: 2 passes of 2 steps
    # recorded at 0.7 and scored at 0.7: before the first update no mismatch is left
    deltas = [e["metrics"]["tis/mean_abs_delta"] for e in run.of("step")]
    print("tis/mean_abs_delta per step", deltas)
    assert deltas[0] < 1e-3
    assert all(e["metrics"]["completions/mean_length"] > 0 for e in run.of("step"))
    metrics = done["metrics"]
    assert metrics["grpo/temperature"] == 0.7
    assert (metrics["grpo/left_out_greedy"], metrics["grpo/left_out_other_temperature"]) == (1, 2)
    assert (metrics["grpo/max_uses"], metrics["grpo/requested_steps"], metrics["grpo/steps"]) == (2, 50, 4)
    assert metrics["completion_tokens"] == pytest.approx(metrics["grpo/dataset_completion_tokens"])
    assert (metrics["grpo/truncated"], metrics["grpo/replayed"]) == (0, 4)
    assert "capped by max_reuse 2" in run.stderr
