"""Capstone A's bar under other float orders: the judge's loop trains with the
pieces of float-order variants of the reference (the correct styles of
``autograder/catalogue/a_ppo.py`` alone and all together) on every grading
seed, evaluates as q7 does, and prints each median and the minimum margin.

    .venv/bin/python bench/bar_margin_float_order.py [--updates 60]

Measured in one run; a float-level difference between machines must never
flip the verdict, so the minimum median must stay above the bar.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.catalogue.a_ppo import RIGHT  # noqa: E402
from autograder.grading import config  # noqa: E402
from autograder.judges.ppo_pieces import Pieces  # noqa: E402
from autograder.oracles import ppo_loop  # noqa: E402
from rlkit.agent import evaluate  # noqa: E402


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variants(work: Path) -> dict[str, Path]:
    """The reference, each correct style, and all styles applied together."""
    out = {"reference": ROOT / "solutions" / "a_ppo" / "ppo.py"}
    for r in RIGHT:
        out[r.name] = r.write("a_ppo", work / r.name, ("ppo.py",)) / "ppo.py"
    text = out["reference"].read_text()
    for r in RIGHT:
        text = text.replace(r.old, r.new)
    (work / "all").mkdir()
    (work / "all" / "ppo.py").write_text(text)
    out["all styles together"] = work / "all" / "ppo.py"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--updates", type=int)
    args = parser.parse_args()
    a = config.load("a_ppo")
    p = a.params
    hp = dict(p["hp"], hidden=tuple(p["hp"]["hidden"]))
    seeds = [c.seed for c in a.question("q7_bar").cases]
    updates = args.updates or p["updates"]
    rows, t0 = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, path) in enumerate(variants(Path(tmp)).items()):
            pieces = Pieces.in_process(_module(path, f"_variant_{i}"))
            medians = []
            for seed in seeds:
                run = ppo_loop.train(pieces, seed, hp, updates)
                returns = evaluate(run.policy_params, episodes=p["eval_episodes"],
                                   seed=seed + p["eval_seed_offset"])
                medians.append(float(np.median(returns)))
            rows.append((name, medians))
            print(f"{name:<40} medians {medians}", flush=True)
    low = min(min(m) for _, m in rows)
    print(f"\n{len(rows)} variants x seeds {seeds}, {updates} updates, "
          f"{time.perf_counter() - t0:.0f} s: minimum median {low:g} vs bar > {p['bar']} "
          f"(margin {low - p['bar']:+g})")


if __name__ == "__main__":
    main()
