"""Truncated importance sampling (TIS) against the serving/training log-probability mismatch.

The serving engine samples with its own weights and kernels (bf16, GGUF, fused attention), so the log-probabilities
it reports for a sampled token differ from the trainer's float32 recomputation, and "on-policy" samples are
slightly off-policy. Each completion token's policy-gradient loss is multiplied by the detached weight

    w = min(exp(logp_trainer_old - logp_sampler), cap)

(Yao et al. 2025; TRL's `vllm_importance_sampling_mode="token_truncate"`). Tokens without a recorded sampler
log-probability (NaN) keep w = 1. `mode`: "on" always applies it, "auto" only when the batch's mean |delta| over
tokens with recorded log-probabilities exceeds `threshold` (nats), "off" never (callers skip this module then).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MODES = ("auto", "on", "off")
DEFAULT_THRESHOLD = 0.02
DEFAULT_CAP = 3.0  # TRL's default vllm_importance_sampling_clip_max


def validate_tis(mode: str, threshold: float, cap: float) -> None:
    from massgen_rl_common.config_args import UsageError

    if mode not in MODES:
        raise UsageError(f"is_correction must be 'auto', 'on' or 'off', got {mode!r}")
    if isinstance(threshold, bool) or not (
        isinstance(threshold, (int, float)) and math.isfinite(threshold) and 0 <= threshold <= 100
    ):
        raise UsageError(f"is_threshold must be a number from 0 to 100 (nats), got {threshold!r}")
    if isinstance(cap, bool) or not (isinstance(cap, (int, float)) and math.isfinite(cap) and 1 <= cap <= 1e6):
        raise UsageError(f"is_cap must be a number from 1 to 1e6, got {cap!r}")


@dataclass
class TISResult:
    weights: Any  # (B, T) float tensor, detached: the truncated weight where applied, else 1
    applied: bool
    tokens: int  # completion tokens with a recorded sampler log-probability (all processes)
    mean_abs_delta: float | None  # None when no token has one
    p99_abs_delta: float | None
    mean_weight: float | None  # the weight actually used, over those tokens

    def metrics(self) -> dict[str, float]:
        """The step-event figures (nothing when the batch had no recorded log-probabilities)."""
        if self.tokens == 0:
            return {}
        return {
            "tis/mean_abs_delta": self.mean_abs_delta,
            "tis/p99_abs_delta": self.p99_abs_delta,
            "tis/mean_weight": self.mean_weight,
            "tis/applied": float(self.applied),
        }


def usable_logprobs(value: Any, length: int) -> list[float] | None:
    """A completion's recorded log-probabilities when they are one finite number per token id, else None."""
    if not (isinstance(value, list) and len(value) == length):
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value):
        return None
    return [float(x) for x in value]


def recorded_tensor(rows: list[list[float] | None], width: int, left: bool = False) -> Any:
    """Rows of recorded log-probabilities (None: none for that completion) as a (B, width) tensor, NaN-padded
    (right-aligned with `left`, for left-padded completions)."""
    import torch

    out = torch.full((len(rows), width), float("nan"), dtype=torch.float32)
    for i, row in enumerate(rows):
        if row:
            values = torch.tensor([float("nan") if x is None else float(x) for x in row[:width]], dtype=torch.float32)
            if left:
                out[i, width - len(values) :] = values
            else:
                out[i, : len(values)] = values
    return out


def truncated_weights(
    trainer_logps: Any,
    sampler_logps: Any,
    mask: Any,
    *,
    mode: str,
    threshold: float,
    cap: float,
    gather: Callable[[list[float]], list[float]] | None = None,
) -> TISResult:
    """Per-token TIS weights for one batch. `sampler_logps` holds NaN where nothing was recorded; `mask` marks the
    completion tokens. `gather` collects the per-token deltas of every process (default: this one only), so all
    processes take the same decision and report the same figures."""
    import torch

    trainer_logps = trainer_logps.detach().float()
    sampler = sampler_logps.to(trainer_logps.device).float()
    valid = mask.to(trainer_logps.device).bool() & ~torch.isnan(sampler)
    delta = torch.where(valid, trainer_logps - torch.nan_to_num(sampler), torch.zeros_like(trainer_logps))
    local = delta[valid].cpu().tolist()
    deltas = torch.tensor(gather(local) if gather else local, dtype=torch.float64)
    if deltas.numel() == 0:
        return TISResult(torch.ones_like(trainer_logps), False, 0, None, None, None)
    magnitude = deltas.abs()
    mean_abs = float(magnitude.mean())
    applied = mode == "on" or (mode == "auto" and mean_abs > threshold)
    if applied:
        weights = torch.where(valid, torch.exp(delta).clamp(max=cap), torch.ones_like(delta))
        mean_weight = float(torch.exp(deltas).clamp(max=cap).mean())
    else:
        weights, mean_weight = torch.ones_like(delta), 1.0
    return TISResult(
        weights.detach(), applied, int(deltas.numel()), mean_abs, float(torch.quantile(magnitude, 0.99)), mean_weight
    )
