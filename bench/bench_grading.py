"""Wall and CPU time of one hidden grading run of an assignment (the
reference, through the Gradescope zip's run_autograder, pinned to one core
when possible), and optionally of the whole test suite.

    .venv/bin/python bench/bench_grading.py d_grpo [--with-tests]

Prints seconds measured in this run and the ratio to the issue's goals.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOALS_S = {"d_grpo": 60.0, "a_ppo": 90.0, "exercises": 30.0, "c_diagnose": 90.0}


def _timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("assignment", nargs="?", default="d_grpo")
    parser.add_argument("--with-tests", action="store_true", help="also time `make test`")
    args = parser.parse_args()
    one_core = ["taskset", "-c", "0"] if sys.platform.startswith("linux") else []
    build_wall, _ = _timed([sys.executable, "-c", "from autograder.commands.dist import build; "
                            f"build('{args.assignment}')"])
    code = ("from pathlib import Path; from autograder.commands.demo import run_gradescope_zip; "
            "from autograder.grading import config; from autograder.paths import DIST_DIR; "
            f"a = config.load('{args.assignment}'); "
            "r = run_gradescope_zip(DIST_DIR / 'gradescope' / f'{a.id}.zip', "
            "[Path('solutions') / a.id / f for f in a.submission_files]); "
            "assert r['score'] == sum(t['max_score'] for t in r['tests']), r['score']")
    wall, cpu = _timed(one_core + [sys.executable, "-c", code])
    goal = GOALS_S.get(args.assignment)
    print(f"{args.assignment}: build {build_wall:.1f} s; hidden grading of the reference (full "
          f"marks) through the Gradescope zip on one core: wall {wall:.1f} s, CPU {cpu:.1f} s"
          + (f"; wall / goal {goal:.0f} s = {wall / goal:.2f}" if goal else ""))
    if args.with_tests:
        wall, cpu = _timed(["make", "test"])
        print(f"make test: wall {wall:.1f} s, CPU {cpu:.1f} s; wall / 900 s CI budget = "
              f"{wall / 900:.2f}")


if __name__ == "__main__":
    main()
