"""The K-sweep's lockstep (every K's update of one step in one round trip):
each K runs on its own, and gives in lockstep exactly what it gives alone:
the same preference table bit for bit, or the same failure; a K that fails
stops no other K (K >= 4 is graded even when K = 1 gives NaN)."""
from __future__ import annotations

import importlib.util
import pytest

from autograder.grading import config
from autograder.grading.judging import Context, Fail
from autograder.harness.probe import InProcessCaller
from autograder.judges import d_grpo, ksweep

KS = [1, 2, 4, 8]
CASES = [config.Case("q6_k_sweep", f"seed {s}", False, "", "", f"seed {s}", {"seed": s})
         for s in (1, 2)]

# Each fails at its own K and step (calls counted per K: the worker keeps no other state).
WEIGHTS = {
    "reference": "",
    "raises_at_k4": "if K == 4 and n == 3: raise ValueError('no K = 4')",
    "nan_k8_early_wrong_shape_k2_late": ("if K == 8 and n == 1: return w * np.nan\n"
                                         "    if K == 2 and n == 9: return w[:, :1]"),
    "k1_too_large_late_k4_raises_early": ("if K == 1 and n == 30: return w + 1e7\n"
                                          "    if K == 4: raise KeyError('early')"),
    "ddof1_nan_at_k1": "if K == 1: return w * np.nan",
}


def _module(directory, body: str):
    directory.mkdir()
    path = directory / "grpo.py"
    path.write_text(
        "import numpy as np\nCOUNT = {}\n"
        "def group_standardised_weight(r):\n"
        "    K = r.shape[1]\n    n = COUNT[K] = COUNT.get(K, -1) + 1\n"
        "    w = (r - r.mean(axis=1, keepdims=True)) / (r.std(axis=1, keepdims=True) + 1e-8)\n"
        f"    {body or 'pass'}\n    return w\n")
    spec = importlib.util.spec_from_file_location("grpo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sweep(module, ks):
    caller = InProcessCaller(module)
    q = config.load("d_grpo").question("q6_k_sweep")
    ctx = Context(caller.call, {"lr": 2.0}, public_only=True, call_many=caller.call_many,
                  question=q)
    return ksweep.run(ctx, d_grpo.WEIGHT, CASES, ks, lambda K: 48 // K)


@pytest.mark.parametrize("name", sorted(WEIGHTS))
def test_each_k_in_lockstep_is_the_k_alone(tmp_path, name):
    together = _sweep(_module(tmp_path / "all", WEIGHTS[name]), KS)
    for K in KS:
        alone = _sweep(_module(tmp_path / f"k{K}", WEIGHTS[name]), [K])
        assert (K in together.failed) == (K in alone.failed), K
        if K in alone.failed:
            assert str(together.failed[K]) == str(alone.failed[K])
            assert isinstance(together.failed[K], Fail)
            continue
        for case in CASES:
            theta, success = together.runs[case.label, K]
            assert theta.tobytes() == alone.runs[case.label, K][0].tobytes()
            assert success == alone.runs[case.label, K][1]
    if name == "reference":
        assert not together.failed and len(together.runs) == len(KS) * len(CASES)
    else:
        assert together.failed and set(together.failed) < set(KS)   # the others ran on


def test_a_nan_at_k1_fails_only_the_k1_parts_and_names_its_function(tmp_path):
    q = config.load("d_grpo").question("q6_k_sweep")
    module = _module(tmp_path / "m", WEIGHTS["ddof1_nan_at_k1"])
    caller = InProcessCaller(module)
    ctx = Context(caller.call, {"lr": 2.0}, public_only=True, call_many=caller.call_many,
                  question=q)
    sweep = ksweep.run(ctx, d_grpo.WEIGHT, CASES, [1, 4, 8], lambda K: 64 // K)
    ksweep.judge(ctx, sweep, CASES, [4, 8], 0.3, why_zero="")
    by_id = {r.id: r for r in ctx.outcome().parts}
    assert by_id["learns"].passed
    assert not by_id["k1"].passed and by_id["k1"].kind == "nonfinite"
    assert by_id["k1"].fn == "group_standardised_weight"
    assert "K = 1" in by_id["k1"].message and not by_id["runs"].passed
