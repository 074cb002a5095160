"""The clipped surrogate ``min(rho A, clip(rho, 1 - eps, 1 + eps) A)`` per
sample, right or with one slip: shared by capstone A's clipped policy loss and
D's clipped GRPO gradient (their oracles), so that both judges name the same
half-right objectives the same way. Gradescope side only."""
from __future__ import annotations

import numpy as np

DUAL_CLIP_C = 3.0         # the dual-clip bound of verl's default (clip_ratio_c)
FIXED_EPS = 0.2           # the "clip width hard-coded" slip's width
SLIPS = ("min_max_swapped", "dual_clip", "no_clip", "symmetric_band", "eps_fixed")


def surrogate(rho: np.ndarray, adv: np.ndarray, eps: float,
              slip: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Per sample (any shape, ``rho`` and ``adv`` alike): the surrogate's value
    and its derivative w.r.t. log pi(a), ``rho A`` where the unclipped term is
    the one that counts and 0 where clipping holds it (A >= 0 and rho > 1 + eps,
    or A < 0 and rho < 1 - eps). ``slip`` (one of :data:`SLIPS`): a half-right
    objective instead, value and derivative both."""
    if slip == "eps_fixed":
        eps, slip = FIXED_EPS, ""
    clipped = np.clip(rho, 1 - eps, 1 + eps) * adv
    value = np.minimum(rho * adv, clipped)
    held = np.where(adv >= 0, rho > 1 + eps, rho < 1 - eps)
    if slip == "min_max_swapped":          # max(rho A, clip(rho) A)
        value = np.maximum(rho * adv, clipped)
        held = np.where(adv >= 0, rho < 1 - eps, rho > 1 + eps)
    elif slip == "dual_clip":              # max(min(...), DUAL_CLIP_C A) for A < 0 (verl, Ye 2020)
        value = np.where(adv < 0, np.maximum(value, DUAL_CLIP_C * adv), value)
        held = held | ((adv < 0) & (rho > DUAL_CLIP_C))
    elif slip == "no_clip":                # rho A everywhere
        value, held = rho * adv, np.zeros_like(held)
    elif slip == "symmetric_band":         # clip(rho) A without the min: held outside the band
        value, held = clipped, np.abs(rho - 1) > eps
    elif slip:
        raise ValueError(f"unknown slip {slip!r}")
    return value, np.where(held, 0.0, rho * adv)
