"""Figures of the handouts, saved to disk together with the numbers behind them.

Each function takes plain data (your own runs' results in the notebooks, the
reference's in ``make demo``), writes a PNG to ``path`` and, beside it, a JSON
file with the same stem holding exactly the numbers that were drawn (lists of
floats; ``null`` where a value is missing, e.g. an update in which no episode
finished). Both paths are returned, ``(png, json)``; missing parent folders
are created.

The figures are drawn on a bare ``matplotlib.figure.Figure`` rendered by the
Agg backend: nothing is shown, no display is needed, and pyplot's state (and
the notebook's inline backend) is left alone. matplotlib is imported only
when a figure is made, so the rest of rlkit works without it.

* ``learning_curves`` -- capstone A: return per update, one curve per seed, the bar;
* ``ppo_diagnostics`` -- capstone A: entropy, KL, clip fraction, explained variance and
  value loss per update, one line per seed;
* ``success_vs_k``    -- capstone D: success after the K-sweep, the ceiling and the reference;
* ``beta_crossing``   -- exercise 4: the hedge against the KL coefficient beta, with
  the analytic threshold r_h / d as a vertical line.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

import numpy as np

PathLike = Union[str, Path]


# ----------------------------------------------------------------------------- helpers
def _plain(value):
    """Numbers, arrays and containers -> JSON-ready lists of float/int; NaN/inf -> None."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, (np.ndarray, list, tuple)):
        return [_plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    raise TypeError(f"cannot save {type(value).__name__} as a plain number")


def _paths(path: PathLike) -> tuple[Path, Path]:
    png = Path(path)
    if png.suffix.lower() != ".png":
        png = png.with_suffix(".png")
    png.parent.mkdir(parents=True, exist_ok=True)
    return png, png.with_suffix(".json")


def _figure(ncols: int = 1, width: float = 6.0, height: float = 3.6):
    from matplotlib.figure import Figure          # Agg renders savefig; no pyplot, no display
    fig = Figure(figsize=(width, height), dpi=120, layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _save(fig, png: Path, data_path: Path, data: dict) -> tuple[Path, Path]:
    fig.savefig(png, format="png", metadata={"Software": None})
    data_path.write_text(json.dumps(_plain(data), indent=1) + "\n")
    return png, data_path


def _finite(x) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _columns(values, n: int, name: str) -> np.ndarray:
    """``(n,)`` or ``(n, S)`` -> ``(n, S)`` float array (S runs per x value)."""
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) or ({n}, seeds), got {np.shape(values)}")
    return a


def _median(a: np.ndarray) -> np.ndarray:
    """Row medians of ``(n, S)``, NaN for a row without a finite value (no warning)."""
    out = np.full(a.shape[0], np.nan)
    for i, row in enumerate(a):
        row = row[np.isfinite(row)]
        if row.size:
            out[i] = np.median(row)
    return out


# ----------------------------------------------------------------------------- A
def learning_curves(returns_by_seed: Mapping[int, Sequence[np.ndarray]], path: PathLike,
                    bar: Optional[float] = 450, *,
                    evaluation: Optional[Mapping[int, float]] = None) -> tuple[Path, Path]:
    """Capstone A's learning curves.

    Args:
        returns_by_seed: ``{seed: episode_returns}`` where ``episode_returns``
            is the training log's list with one ``(k_u,)`` array per update:
            the returns of the episodes that finished during update u (k_u
            may be 0). E.g. ``{s: run["log"]["episode_returns"] for s, run
            in runs.items()}``.
        path: where to write the PNG (``.json`` beside it).
        bar: the sanity bar drawn as a dashed line (None: no line).
        evaluation: optional ``{seed: median return of the final policy}``
            (the number the bar is about), drawn as a marker after the last
            update.

    Draws, per seed, the mean return of the episodes finished in each update
    with a band from their min to max. The JSON holds, per seed, ``mean``,
    ``min``, ``max`` and ``count`` per update and every ``episode_returns``.
    """
    png, data_path = _paths(path)
    fig, (ax,) = _figure()
    data: dict = {"bar": bar, "seeds": {}}
    marked = False
    for i, (seed, per_update) in enumerate(returns_by_seed.items()):
        per_update = [np.asarray(r, dtype=np.float64).ravel() for r in per_update]
        stats = {name: np.array([f(r) if r.size else np.nan for r in per_update])
                 for name, f in (("mean", np.mean), ("min", np.min), ("max", np.max))}
        u = np.arange(1, len(per_update) + 1)
        color = f"C{i % 10}"
        ax.fill_between(u, stats["min"], stats["max"], color=color, alpha=0.15, lw=0)
        ax.plot(u, stats["mean"], color=color, lw=1.5, marker="." if len(u) < 20 else None,
                label=f"seed {seed}")
        entry = {**stats, "update": u, "count": [int(r.size) for r in per_update],
                 "episode_returns": per_update}
        if evaluation is not None and seed in evaluation:
            entry["evaluation"] = float(evaluation[seed])
            ax.plot([len(u) + 0.5], [evaluation[seed]], marker="D", color=color, ms=5, ls="",
                    label=None if marked else "final policy: median return")
            marked = True
        data["seeds"][str(seed)] = entry
    if _finite(bar):
        ax.axhline(float(bar), ls="--", c="gray", lw=1, label=f"bar {bar:g}")
    ax.set_xlabel("update")
    ax.set_ylabel("return of episodes finished in the update")
    ax.set_title("PPO on CartPole: mean (line) and min-max (band)", fontsize=10)
    ax.grid(alpha=0.3)
    if returns_by_seed or _finite(bar):
        ax.legend(fontsize=8, loc="lower right")
    return _save(fig, png, data_path, data)


DIAGNOSTICS = (("entropy", "policy entropy (nats)"), ("approx_kl", "approx. KL(old || new)"),
               ("clipfrac", "clip fraction"), ("explained_variance", "explained variance"),
               ("v_loss", "value loss"))


def ppo_diagnostics(logs_by_seed: Mapping[int, Mapping[str, Sequence[float]]],
                    path: PathLike) -> tuple[Path, Path]:
    """Capstone A's training diagnostics, one panel each, one line per seed.

    Args:
        logs_by_seed: ``{seed: log}`` with each ``log`` holding ``(updates,)``
            arrays under the names of :data:`DIAGNOSTICS` (``train``'s
            ``run["log"]``); a missing or non-finite entry is left out.
        path: where to write the PNG (``.json`` beside it).

    The JSON holds, per seed, each diagnostic per update (``null`` where missing).
    """
    png, data_path = _paths(path)
    fig, axes = _figure(ncols=len(DIAGNOSTICS), width=3.0 * len(DIAGNOSTICS), height=2.8)
    data: dict = {"seeds": {}}
    for i, (seed, log) in enumerate(logs_by_seed.items()):
        entry = {}
        for ax, (key, _) in zip(axes, DIAGNOSTICS):
            values = np.asarray(log.get(key, []), dtype=np.float64).ravel()
            entry[key] = values
            if values.size:
                ax.plot(np.arange(1, values.size + 1), values, color=f"C{i % 10}", lw=1.2,
                        label=f"seed {seed}")
        data["seeds"][str(seed)] = entry
    for ax, (key, title) in zip(axes, DIAGNOSTICS):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("update", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if key == "v_loss":
            ax.set_yscale("symlog", linthresh=1.0)
    if logs_by_seed:
        axes[0].legend(fontsize=7)
    return _save(fig, png, data_path, data)


# ----------------------------------------------------------------------------- D
def success_vs_k(ks: Sequence[int], success, path: PathLike, ceiling: Optional[float] = 0.5,
                 reference: Optional[float] = 0.0624) -> tuple[Path, Path]:
    """Capstone D's K-sweep: success of a sampled response after training, against K.

    Args:
        ks: group sizes, e.g. ``(1, 2, 4, 8, 32)``.
        success: one value per K, as a sequence, a ``(len(ks),)`` or
            ``(len(ks), seeds)`` array, or a mapping ``{K: value}`` (the
            notebook's ``success`` dict); with several seeds the median is
            the line and every seed a dot.
        path: where to write the PNG (``.json`` beside it).
        ceiling: the verifier's ceiling (dashed line; None: none).
        reference: the success of the reference policy (dotted line; None: none).

    The JSON holds ``K``, ``success`` (one list per K, one value per seed),
    ``median``, ``ceiling`` and ``reference``.
    """
    ks = [int(k) for k in ks]
    if isinstance(success, Mapping):
        success = [success[k] for k in ks]
    s = _columns(success, len(ks), "success")
    med = _median(s)
    png, data_path = _paths(path)
    fig, (ax,) = _figure(width=5.2, height=3.4)
    if s.shape[1] > 1:
        for j in range(s.shape[1]):
            ax.plot(ks, s[:, j], "o", c="C0", ms=3, alpha=0.5)
    ax.plot(ks, med, "o-", c="C0", label="after training" + (" (median)" if s.shape[1] > 1 else ""))
    for k, v in zip(ks, med):
        if np.isfinite(v):
            ax.annotate(f"{v:.3f}", (k, v), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=8)
    if _finite(ceiling):
        ax.axhline(float(ceiling), ls="--", c="gray", lw=1, label=f"verifier ceiling {ceiling:g}")
    if _finite(reference):
        ax.axhline(float(reference), ls=":", c="gray", lw=1, label=f"reference {reference:.3f}")
    if all(k > 0 for k in ks):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_ylim(0, max(0.6, float(np.nanmax(s, initial=0.0)) + 0.08))
    ax.set_xlabel("group size K (same budget of scored responses)")
    ax.set_ylabel("success of a sampled response")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center right")
    data = {"K": ks, "success": s, "median": med, "ceiling": ceiling, "reference": reference}
    return _save(fig, png, data_path, data)


# ----------------------------------------------------------------------------- exercise 4
def beta_crossing(betas: Sequence[float], values, path: PathLike,
                  threshold: Optional[float] = 0.25, *, sloppy=None, exact=None,
                  optimum: Optional[tuple[Sequence[float], Sequence[float]]] = None,
                  quantity: str = "hedge probability", level: Optional[float] = None,
                  crossings: Optional[Sequence[float]] = None,
                  seeds: Optional[Sequence[int]] = None) -> tuple[Path, Path]:
    """Exercise 4: what the loophole is worth as the KL coefficient beta grows.

    Args:
        betas: ``(B,)`` the KL coefficients trained with.
        values: ``(B,)`` or ``(B, seeds)``: the quantity on the y axis after
            training at each beta, by default the hedge's probability
            (mean over prompts of pi(hedge | x)); any other per-beta measure
            works when ``quantity`` names it (e.g. the notebook's hedge
            log-odds against an ordinary candidate, with ``level=0``).
        path: where to write the PNG (``.json`` beside it).
        threshold: the analytic threshold r_h / d, drawn as a vertical line
            (None: no line).
        sloppy, exact: optional, both ``(B,)`` or ``(B, seeds)``: success
            under the loophole verifier and under exact match after training.
            Given both, a second panel draws them with the gap between them
            shaded: the score the loophole pays beyond the true one.
        optimum: optional ``(beta_grid, value_grid)``: the same quantity under
            the tilted optimum, drawn as a gray line.
        quantity: the y label of the first panel.
        level: optional horizontal line on the first panel (0 for log-odds).
        crossings: optional per-seed betas at which the sampled curve crosses
            ``level``, marked on that line.
        seeds: optional seed of each column, saved with the numbers.

    Per-seed values are dots, their median the line. The JSON holds
    ``beta``, ``values`` (one list per beta, one value per seed),
    ``median``, ``quantity``, ``threshold`` and whichever of ``sloppy``,
    ``exact``, ``gap`` (sloppy - exact), ``optimum``, ``level``,
    ``crossings``, ``seeds`` were given.
    """
    betas = np.asarray(betas, dtype=np.float64).ravel()
    v = _columns(values, len(betas), "values")
    two = sloppy is not None and exact is not None
    png, data_path = _paths(path)
    fig, axes = _figure(ncols=2 if two else 1, width=9.0 if two else 5.4, height=3.5)
    ax0 = axes[0]
    data: dict = {"beta": betas, "values": v, "median": _median(v), "quantity": quantity,
                  "threshold": threshold}
    if seeds is not None:
        data["seeds"] = [int(s) for s in seeds]
    for j in range(v.shape[1]):
        ax0.plot(betas, v[:, j], "o", c="C0", ms=3, alpha=0.45,
                 label="one seed" if j == 0 and v.shape[1] > 1 else None)
    ax0.plot(betas, data["median"], "-", c="C0", lw=1.5,
             label="median over seeds" if v.shape[1] > 1 else "after training")
    ax0.set_ylabel(quantity)
    ax0.set_title("the exploit against the KL penalty", fontsize=10)
    if optimum is not None:
        grid, curve = (np.asarray(a, dtype=np.float64).ravel() for a in optimum)
        ax0.plot(grid, curve, c="gray", lw=1, label="tilted optimum")
        data["optimum"] = {"beta": grid, "value": curve}
    if _finite(level):
        ax0.axhline(float(level), c="k", lw=0.6)
        data["level"] = float(level)
    if crossings is not None:
        cross = np.asarray(crossings, dtype=np.float64).ravel()
        at = float(level) if _finite(level) else 0.0
        ok = np.isfinite(cross)
        if ok.any():
            ax0.plot(cross[ok], np.full(int(ok.sum()), at), "|", c="C1", ms=14, mew=1.5,
                     label="sampled crossing, per seed")
        data["crossings"] = cross
    if two:
        ax1 = axes[1]
        s = _columns(sloppy, len(betas), "sloppy")
        e = _columns(exact, len(betas), "exact")
        data.update(sloppy=s, exact=e, gap=s - e)
        for y, c, name in ((s, "C1", "loophole verifier"), (e, "C2", "exact match")):
            for j in range(y.shape[1]):
                ax1.plot(betas, y[:, j], "o", c=c, ms=3, alpha=0.45)
            ax1.plot(betas, _median(y), "-", c=c, lw=1.5, label=f"success, {name}")
        ax1.fill_between(betas, _median(e), _median(s), color="C1", alpha=0.15, lw=0,
                         label="gap: paid for the loophole")
        ax1.set_ylabel("success of a sampled response")
        ax1.set_ylim(0, 1.05)
        ax1.set_title("what the loophole pays beyond the true score", fontsize=10)
    for ax in axes:
        if _finite(threshold):
            ax.axvline(float(threshold), c="C3", ls="--", lw=1,
                       label=f"threshold r_h / d = {float(threshold):.3g}")
        ax.set_xlabel("KL coefficient beta")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, png, data_path, data)


# ----------------------------------------------------------------------------- B
def ablation_curves(returns_by_config: Mapping[str, Mapping[int, Sequence[np.ndarray]]],
                    path: PathLike, ncols: int = 3) -> tuple[Path, Path]:
    """Capstone B's learning curves: one panel per configuration, its seeds
    overlaid, each the learning curve of ``rlkit.study.learning_curve`` (per
    update, the mean return of the training episodes that finished in it),
    with the curve's mean (the per-seed number ``mean_training_return``) as a
    dotted line: a factor that slows learning lowers the area under the
    curve even where every run ends at 500.

    Args:
        returns_by_config: ``{config: {seed: episode_returns}}``, each the
            training log's list of ``(k_u,)`` arrays, one per update.
        path: where to write the PNG (``.json`` beside it).
        ncols: panels per row.

    The JSON holds, per configuration and seed, ``curve`` (per update, NaN
    where no episode finished) and ``mean_training_return``.
    """
    from .study import learning_curve, mean_training_return
    png, data_path = _paths(path)
    names = list(returns_by_config)
    ncols = max(1, min(ncols, len(names)))
    nrows = max(1, -(-len(names) // ncols))
    from matplotlib.figure import Figure
    fig = Figure(figsize=(3.3 * ncols, 2.5 * nrows), dpi=120, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    data: dict = {"configs": {}}
    for k, name in enumerate(names):
        ax = axes[k // ncols][k % ncols]
        entry = {}
        for i, (seed, per_update) in enumerate(returns_by_config[name].items()):
            curve = learning_curve(per_update)
            mean = mean_training_return(per_update)
            color = f"C{i % 10}"
            ax.plot(np.arange(1, curve.size + 1), curve, color=color, lw=1.2, label=f"seed {seed}")
            ax.axhline(mean, color=color, ls=":", lw=1)
            entry[str(seed)] = {"curve": curve, "mean_training_return": mean}
        ax.set_title(name, fontsize=8)
        ax.set_ylim(0, 520)
        ax.grid(alpha=0.3)
        data["configs"][name] = entry
    for k in range(len(names), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    axes[0][0].legend(fontsize=7, loc="lower right")
    for ax in axes[-1]:
        ax.set_xlabel("update", fontsize=8)
    for row in axes:
        row[0].set_ylabel("training return", fontsize=8)
    fig.suptitle("Learning curves per configuration (dotted: mean over the run)", fontsize=9)
    return _save(fig, png, data_path, data)


def ablation_medians(medians_by_config: Mapping[str, Mapping[int, float]], path: PathLike,
                     baseline: str = "baseline",
                     quantity: str = "final median return") -> tuple[Path, Path]:
    """Capstone B's chart: one row per configuration, its seeds' final median
    returns as dots, their median as a bar tick and their spread (min to max)
    as a line; the baseline's median and spread as a vertical line and band,
    so a factor whose range leaves the band at a distance shows at a glance.

    Args:
        medians_by_config: ``{config: {seed: per-seed number}}``, the
            baseline first or anywhere (it is drawn on top).
        path: where to write the PNG (``.json`` beside it).
        baseline: the key of the baseline configuration.
        quantity: what the per-seed number is (the axis label).

    The JSON holds, per configuration, ``seeds``, ``values``, ``median`` and
    ``spread`` (max - min).
    """
    png, data_path = _paths(path)
    names = ([baseline] if baseline in medians_by_config else []) + \
        [n for n in medians_by_config if n != baseline]
    fig, (ax,) = _figure(width=7.0, height=0.5 * len(names) + 1.4)
    data: dict = {"baseline": baseline, "configs": {}}
    for row, name in enumerate(names):
        seeds = sorted(medians_by_config[name])
        values = np.array([float(medians_by_config[name][s]) for s in seeds])
        y = len(names) - 1 - row
        entry = {"seeds": seeds, "values": values}
        if values.size:
            med, lo, hi = float(np.median(values)), float(values.min()), float(values.max())
            entry.update(median=med, spread=hi - lo)
            color = "black" if name == baseline else f"C{row % 10}"
            ax.plot([lo, hi], [y, y], color=color, lw=2, alpha=0.6)
            ax.plot(values, np.full(values.size, y), "o", color=color, ms=4, alpha=0.8)
            ax.plot([med], [y], "|", color=color, ms=18, mew=3)
            if name == baseline:
                ax.axvspan(lo, hi, color="gray", alpha=0.15, lw=0,
                           label="baseline spread (min to max)")
                ax.axvline(med, color="gray", ls="--", lw=1, label="baseline median")
        data["configs"][name] = entry
    ax.set_yticks(range(len(names)), list(reversed(names)), fontsize=8)
    ax.set_xlim(-10, 510)
    ax.set_xlabel(f"{quantity} per seed (dots), median (tick), spread (line)")
    ax.set_title("Ablations: a factor matters when |median - baseline median| > the larger "
                 "spread", fontsize=9)
    ax.grid(alpha=0.3, axis="x")
    if baseline in medians_by_config:
        ax.legend(fontsize=7, loc="lower left")
    return _save(fig, png, data_path, data)
