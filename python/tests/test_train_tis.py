"""Truncated importance sampling against the serving/training logprob mismatch: the weights and the decision."""

from __future__ import annotations

import math

import pytest
import torch

from massgen_rl_common.config_args import UsageError
from massgen_rl_training.tis import recorded_tensor, truncated_weights, usable_logprobs, validate_tis

TRAINER = torch.tensor([[-1.0, -2.0, -0.5, 0.0], [-0.3, -0.7, 0.0, 0.0]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])


def test_weights_are_the_truncated_ratio_where_recorded_and_one_elsewhere():
    sampler = recorded_tensor([[-1.5, -0.5, -0.6], None], 4)  # second row: nothing recorded
    result = truncated_weights(TRAINER, sampler, MASK, mode="on", threshold=0.02, cap=2.0)
    assert result.applied and result.tokens == 3
    # deltas trainer - sampler: 0.5, -1.5, 0.1 -> weights exp(0.5), exp(-1.5), exp(0.1); none above the cap
    expected = torch.tensor([[math.exp(0.5), math.exp(-1.5), math.exp(0.1), 1.0], [1.0, 1.0, 1.0, 1.0]])
    assert torch.allclose(result.weights, expected, atol=1e-6)
    assert result.mean_abs_delta == pytest.approx((0.5 + 1.5 + 0.1) / 3)
    assert result.mean_weight == pytest.approx((math.exp(0.5) + math.exp(-1.5) + math.exp(0.1)) / 3)
    assert 1.4 < result.p99_abs_delta <= 1.5
    capped = truncated_weights(
        TRAINER, recorded_tensor([[-3.0, -2.0, -0.5], None], 4), MASK, mode="on", threshold=0.02, cap=2.0
    )
    assert capped.weights[0, 0].item() == 2.0 and capped.mean_weight == pytest.approx((2.0 + 1.0 + 1.0) / 3)
    assert capped.metrics() == {
        "tis/mean_abs_delta": pytest.approx(2 / 3),
        "tis/p99_abs_delta": pytest.approx(1.96),
        "tis/mean_weight": pytest.approx(4 / 3),
        "tis/applied": 1.0,
    }


def test_auto_applies_only_above_the_threshold():
    close = recorded_tensor([[-1.01, -2.01, -0.49], [-0.3, -0.71]], 4)
    below = truncated_weights(TRAINER, close, MASK, mode="auto", threshold=0.02, cap=3.0)
    assert not below.applied and torch.equal(below.weights, torch.ones_like(TRAINER))
    assert below.mean_abs_delta == pytest.approx(0.008, abs=1e-6) and below.mean_weight == 1.0
    assert below.metrics()["tis/applied"] == 0.0
    far = recorded_tensor([[-1.3, -2.3, -0.8], [-0.6, -1.0]], 4)  # recorded = trainer - 0.3
    above = truncated_weights(TRAINER, far, MASK, mode="auto", threshold=0.02, cap=3.0)
    assert above.applied and above.mean_abs_delta == pytest.approx(0.3, abs=1e-6)
    assert torch.allclose(above.weights[MASK.bool()], torch.full((5,), math.exp(0.3)), atol=1e-6)
    assert torch.equal(above.weights[~MASK.bool()], torch.ones(3))  # padding untouched
    # the decision follows every process's tokens: a gathered batch far from the trainer flips it
    gathered = truncated_weights(
        TRAINER, close, MASK, mode="auto", threshold=0.02, cap=3.0, gather=lambda local: local + [1.0] * 5
    )
    assert gathered.applied and gathered.tokens == 10


def test_nothing_recorded_is_no_correction_and_no_figures():
    result = truncated_weights(TRAINER, recorded_tensor([None, None], 4), MASK, mode="on", threshold=0.0, cap=3.0)
    assert not result.applied and result.tokens == 0 and result.metrics() == {}
    assert torch.equal(result.weights, torch.ones_like(TRAINER))


def test_recorded_rows_and_options():
    assert usable_logprobs([-0.5, -1], 2) == [-0.5, -1.0]
    assert usable_logprobs([-0.5], 2) is None and usable_logprobs(None, 1) is None
    assert usable_logprobs([-0.5, float("nan")], 2) is None and usable_logprobs([True, -1.0], 2) is None
    left = recorded_tensor([[-1.0], [-2.0, -3.0]], 3, left=True)
    assert torch.isnan(left[0, :2]).all() and left[0, 2] == -1.0 and left[1, 1:].tolist() == [-2.0, -3.0]
    validate_tis("auto", 0.02, 3.0)
    for bad, match in [
        (("sometimes", 0.02, 3.0), "is_correction"),
        (("on", -1.0, 3.0), "is_threshold"),
        (("on", 0.02, 0.5), "is_cap"),
        (("on", 0.02, float("inf")), "is_cap"),
    ]:
        with pytest.raises(UsageError, match=match):
            validate_tis(*bad)
