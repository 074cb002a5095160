"""The course figures: ``autograder.figures.make_figures`` (reference data, quick
mode) and the ``rlkit.plotting`` functions the notebooks call on students' data.
Each PNG must be a real image and the JSON beside it must hold the numbers."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from rlkit import plotting

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REFERENCE_SUCCESS = 0.0623572359     # the section's 0.062: pi_ref's exact-match success


def _strict_json(path):
    """Load JSON refusing NaN/Infinity: the data files hold plain numbers only."""
    def refuse(token):
        raise ValueError(f"{path.name}: non-standard JSON constant {token}")
    return json.loads(path.read_text(), parse_constant=refuse)


def _check_png(path, min_width=300, min_height=200):
    """A complete PNG of a plausible figure size, decodable and not blank."""
    blob = path.read_bytes()
    assert blob[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert blob[12:16] == b"IHDR"
    width, height = struct.unpack(">II", blob[16:24])
    assert min_width <= width <= 4000 and min_height <= height <= 3000, (width, height)
    assert 5_000 < len(blob) < 2_000_000, len(blob)
    assert blob.rstrip(b"\x00")[-12:][4:8] == b"IEND", "truncated PNG"
    from matplotlib.image import imread
    pixels = imread(path)
    assert pixels.shape[:2] == (height, width)
    assert pixels[..., :3].std() > 0.01, "blank image"


# ----------------------------------------------------------------------------- make_figures
@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    from instructor.figures import make_figures
    out = tmp_path_factory.mktemp("figures")
    written = make_figures(out, quick=True)
    return out, written


@pytest.mark.slow
def test_make_figures_writes_each_png_with_its_data(figures):
    out, written = figures
    stems = ("learning_curves", "success_vs_k", "beta_crossing")
    assert sorted(written) == sorted([out / f"{s}{ext}" for s in stems for ext in (".png", ".json")])
    for s in stems:
        _check_png(out / f"{s}.png")
        assert _strict_json(out / f"{s}.json")


@pytest.mark.slow
def test_k_sweep_figure_holds_the_sections_numbers(figures):
    d = _strict_json(figures[0] / "success_vs_k.json")
    assert d["K"] == [1, 2, 4, 8, 32]
    success = dict(zip(d["K"], (row[0] for row in d["success"])))
    assert success[1] == pytest.approx(REFERENCE_SUCCESS, abs=1e-9)      # K = 1 learns nothing
    assert all(success[k] >= 0.499 for k in (4, 8, 32))                  # the ceiling
    assert [f"{success[k]:.3f}" for k in d["K"]] == ["0.062", "0.500", "0.500", "0.500", "0.500"]
    assert d["reference"] == pytest.approx(REFERENCE_SUCCESS, abs=1e-9)
    assert d["ceiling"] == 0.5
    assert d["median"] == [row[0] for row in d["success"]]


@pytest.mark.slow
def test_learning_curves_figure_holds_returns_per_update_per_seed(figures):
    d = _strict_json(figures[0] / "learning_curves.json")
    assert d["bar"] == 450
    assert sorted(d["seeds"]) == ["1", "2", "3"]
    for seed, entry in d["seeds"].items():
        returns = entry["episode_returns"]
        assert len(returns) == 3 == len(entry["mean"]) == len(entry["count"])   # quick: 3 updates
        assert entry["update"] == [1, 2, 3]
        assert sum(entry["count"]) > 0
        for r, mean, count in zip(returns, entry["mean"], entry["count"]):
            assert len(r) == count and all(1 <= x <= 500 for x in r)
            assert (mean is None) if count == 0 else mean == pytest.approx(np.mean(r))
        assert 1 <= entry["evaluation"] <= 500


@pytest.mark.slow
def test_crossing_figure_hedge_falls_across_the_threshold(figures):
    d = _strict_json(figures[0] / "beta_crossing.json")
    beta, threshold = np.array(d["beta"]), d["threshold"]
    assert threshold == pytest.approx(0.25)
    assert d["quantity"] == "hedge probability"
    hedge = np.array(d["values"])                      # (betas, seeds)
    assert hedge.shape == (len(beta), len(d["seeds"])) and len(d["seeds"]) >= 3
    median = np.array(d["median"])
    assert np.all(np.diff(median) < 0), median           # decreasing in beta ...
    below, above = beta < threshold, beta > threshold
    assert below.any() and above.any() and (beta == threshold).any()
    # ... and across the threshold: every seed hedges more at 0.2 than at 0.3
    i2, i3 = list(beta).index(0.2), list(beta).index(0.3)
    assert np.all(hedge[i2] > hedge[i3])
    assert median[below].min() > median[beta == threshold][0] > median[above].max()
    # the section's table (seed 2): beta 0.2 -> hedge 0.12, 0.3 -> 0.04; beta 0 -> 0.50
    s2 = d["seeds"].index(2)
    table = {b: (d["sloppy"][i][s2], d["exact"][i][s2], hedge[i, s2]) for i, b in enumerate(beta)}
    assert [f"{x:.2f}" for x in table[0.2]] == ["0.60", "0.48", "0.12"]
    assert [f"{x:.2f}" for x in table[0.3]] == ["0.42", "0.39", "0.04"]
    assert [f"{x:.2f}" for x in table[0.0]] == ["1.00", "0.50", "0.50"]
    np.testing.assert_allclose(d["gap"], np.array(d["sloppy"]) - np.array(d["exact"]))
    # the tilted optimum is drawn beside the runs and agrees with them
    opt_beta, opt = np.array(d["optimum"]["beta"]), np.array(d["optimum"]["value"])
    assert np.all(np.diff(opt) < 0)
    assert np.interp(0.3, opt_beta, opt) == pytest.approx(median[i3], abs=0.01)


# ----------------------------------------------------------------------------- rlkit.plotting
def test_learning_curves_on_synthetic_runs(tmp_path):
    rng = np.random.default_rng(0)
    runs = {7: [rng.uniform(10, 100, 5), np.array([]), np.array([480.0, 500.0])],
            9: [np.array([20.0]), np.array([200.0, 300.0]), np.array([500.0])]}
    png, data = plotting.learning_curves(runs, tmp_path / "new" / "dir" / "curves.png", bar=450,
                                         evaluation={7: 490.0})
    assert (png, data) == (tmp_path / "new/dir/curves.png", tmp_path / "new/dir/curves.json")
    _check_png(png)
    d = _strict_json(data)
    assert d["bar"] == 450 and sorted(d["seeds"]) == ["7", "9"]
    assert d["seeds"]["7"]["mean"][1] is None and d["seeds"]["7"]["count"] == [5, 0, 2]
    assert d["seeds"]["7"]["episode_returns"][0] == pytest.approx(runs[7][0].tolist())
    assert d["seeds"]["9"]["mean"] == [20.0, 250.0, 500.0]
    assert d["seeds"]["9"]["min"] == [20.0, 200.0, 500.0]
    assert d["seeds"]["7"]["evaluation"] == 490.0 and "evaluation" not in d["seeds"]["9"]
    # no bar, a path without suffix
    png, data = plotting.learning_curves({1: [np.ones(3)] * 4}, tmp_path / "plain", bar=None)
    assert png.name == "plain.png" and data.name == "plain.json"
    assert _strict_json(data)["bar"] is None


def test_success_vs_k_from_a_dict_and_from_several_seeds(tmp_path):
    ks = (1, 2, 4)
    png, data = plotting.success_vs_k(ks, {1: 0.06, 2: 0.3, 4: 0.5}, tmp_path / "k.png")
    _check_png(png)
    d = _strict_json(data)
    assert d == {"K": [1, 2, 4], "success": [[0.06], [0.3], [0.5]], "median": [0.06, 0.3, 0.5],
                 "ceiling": 0.5, "reference": 0.0624}
    seeds = np.array([[0.06, 0.07, 0.05], [0.2, 0.4, 0.3], [0.5, 0.49, 0.5]])
    png, data = plotting.success_vs_k(ks, seeds, tmp_path / "k3.png", ceiling=None, reference=None)
    _check_png(png)
    d = _strict_json(data)
    assert d["success"] == seeds.tolist() and d["median"] == [0.06, 0.3, 0.5]
    assert d["ceiling"] is None and d["reference"] is None
    with pytest.raises(ValueError):
        plotting.success_vs_k(ks, [0.1, 0.2], tmp_path / "bad.png")


def test_beta_crossing_hedge_with_scores_and_log_odds_with_crossings(tmp_path):
    betas = np.array([0.1, 0.2, 0.25, 0.3, 0.4])
    hedge = np.array([[0.45, 0.5], [0.15, 0.1], [0.07, 0.06], [0.04, 0.035], [0.02, 0.02]])
    sloppy, exact = 0.5 + hedge, np.full_like(hedge, 0.45)
    png, data = plotting.beta_crossing(betas, hedge, tmp_path / "cross.png", threshold=0.25,
                                       sloppy=sloppy, exact=exact, seeds=[3, 4],
                                       optimum=(np.linspace(0.1, 0.4, 7), np.linspace(0.5, 0.02, 7)))
    _check_png(png, min_width=800)                      # two panels
    d = _strict_json(data)
    assert d["beta"] == betas.tolist() and d["values"] == hedge.tolist()
    assert d["median"] == pytest.approx(hedge.mean(axis=1).tolist())
    assert d["threshold"] == 0.25 and d["seeds"] == [3, 4]
    np.testing.assert_allclose(d["gap"], sloppy - exact)
    assert len(d["optimum"]["beta"]) == len(d["optimum"]["value"]) == 7
    # the notebook's variant: one value per beta and seed, log-odds, NaN crossings allowed
    fine = np.linspace(0.1, 0.4, 50)
    log_odds = (-4 + 1 / betas)[:, None] + np.array([[0.1, -0.1, 0.0]])
    png, data = plotting.beta_crossing(betas, log_odds, tmp_path / "odds.png", threshold=0.25,
                                       optimum=(fine, -4 + 1 / fine), level=0.0,
                                       crossings=[0.251, np.nan, 0.249],
                                       quantity="hedge log-odds vs a candidate")
    _check_png(png)
    d = _strict_json(data)
    assert d["level"] == 0.0 and d["crossings"] == [0.251, None, 0.249]
    assert d["quantity"] == "hedge log-odds vs a candidate"
    assert "gap" not in d and "seeds" not in d
    # no threshold line; a single run per beta
    png, data = plotting.beta_crossing(betas, hedge[:, 0], tmp_path / "one.png", threshold=None)
    assert _strict_json(data)["values"] == [[v] for v in hedge[:, 0]]
    with pytest.raises(ValueError):
        plotting.beta_crossing(betas, hedge[:3], tmp_path / "bad.png")


def test_plotting_needs_no_display_and_leaves_pyplot_alone(tmp_path):
    """Importing rlkit.plotting does not import matplotlib (the grading venv has
    none); drawing uses Agg through a bare Figure, never pyplot."""
    code = f"""
import sys
import rlkit.plotting as p
assert "matplotlib" not in sys.modules
p.success_vs_k([1, 2], [0.1, 0.5], {str(tmp_path / 'k.png')!r})
assert "matplotlib.pyplot" not in sys.modules
"""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
    _check_png(tmp_path / "k.png")
