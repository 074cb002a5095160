"""Naming the slip a wrong answer matches: the judges' failure path only.

Where a case fails (``diagnose=`` of ``Context.expect`` and ``check``), a
judge re-runs its oracle with each slip of a formula (``{slip: answer}``)
and names those whose answer the submission's matches (within float
reordering) where the right answer differs. The words name a slip, never an
input, so a diagnosis is shown for hidden cases too."""
from __future__ import annotations

import itertools

import numpy as np

SLIP_RTOL = 1e-9          # a submission matches a slip within float reordering
SLIP_ATOL = 1e-12

# The clipped surrogate's slips (``oracles.clip_slips``), as capstones A and D name them.
CLIP_SLIPS = {
    "min_max_swapped": "max instead of min between the unclipped and the clipped term (the "
                       "gradient then flows on the wrong side of the band)",
    "dual_clip": "the dual-clip objective (for A < 0 also bounded below by 3 A: verl's "
                 "clip_ratio_c, a bound the section's objective does not have)",
    "no_clip": "the clip ignored (the gradient of the unclipped rho A everywhere)",
    "symmetric_band": "a gradient held wherever |rho - 1| > eps, for both advantage signs "
                      "(clip(rho) A without the min: a sample outside the band whose unclipped "
                      "term is the minimum still counts)",
    "eps_fixed": "the clip width fixed at 0.2 instead of the eps given",
}


def close(got: np.ndarray, want: np.ndarray, rtol: float = SLIP_RTOL,
          atol: float = SLIP_ATOL) -> bool:
    """``got`` is ``want`` (same shape, within ``atol + rtol |want|``)."""
    return bool(np.shape(got) == np.shape(want)
                and np.all(np.abs(got - want) <= atol + rtol * np.abs(want)))


def matches(got, slipped: np.ndarray, right: np.ndarray, rtol: float = SLIP_RTOL,
            atol: float = SLIP_ATOL) -> bool:
    """``got`` is the slip's answer ``slipped`` where that is not the right one."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return close(got, slipped, rtol, atol) and not close(slipped, right, rtol, atol)


def name(got, right: np.ndarray, slipped: dict, words: dict, prefix: str, **tol) -> str:
    """``"<prefix> <words of each slip matched> (and is otherwise right)"``, or
    ``""`` when ``got`` matches none of ``slipped`` (``{slip: answer}``)."""
    named = [words[s] for s, out in slipped.items() if matches(got, out, right, **tol)]
    return f"{prefix} {' / '.join(named)} (and is otherwise right)" if named else ""


# ----------------------------------------------------------------------------- combined slips
# A port of a library's code often turns several knobs of a formula at once (TRL's GRPO
# advantages: torch's std, i.e. ddof=1, and 1e-4 added to it; with scale_rewards="batch" also
# the std of the whole batch). A formula's knobs are declared once: {knob: {slip: words}}, the
# slips of one knob excluding each other; :func:`combined` spells every combination of
# settings of two or more knobs, so that the diagnosis names each slip a combination holds.
JOIN = "+"                  # "ddof1+eps_1e-4": a combination of the knobs' slips


def combined(knobs: dict[str, dict[str, str]], most: int = 3) -> dict[str, str]:
    """``{"slip+slip[+slip]": words}``: every choice of one slip from each of two
    to ``most`` knobs, its words the slips' words joined by "and"."""
    out = {}
    for n in range(2, most + 1):
        for chosen in itertools.combinations(knobs.values(), n):
            for slips in itertools.product(*(k.items() for k in chosen)):
                out[JOIN.join(s for s, _ in slips)] = " and ".join(w for _, w in slips)
    return out


def name_fewest(got, right: np.ndarray, slipped: dict, words: dict, prefix: str,
                **tol) -> str:
    """:func:`name`, each slip or combination tried in the order of ``slipped``
    and the matches of the fewest slips kept: a single slip is named before
    any combination that holds it would be."""
    matched = [s for s, out in slipped.items() if matches(got, out, right, **tol)]
    if not matched:
        return ""
    fewest = min(s.count(JOIN) for s in matched)
    named = [words[s] for s in matched if s.count(JOIN) == fewest]
    return f"{prefix} {' / '.join(named)} (and is otherwise right)"
