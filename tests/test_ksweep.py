"""The K-sweep's lockstep (every K's update of one step in one round trip)
scores and fails exactly as the sweep run one K after the other."""
from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

from autograder.grading.judging import Context, Scorecard
from autograder.harness.probe import InProcessCaller
from autograder.judges import d_grpo, ksweep

KS = [1, 2, 4, 8]
CASES = [SimpleNamespace(label=f"seed {s}", seed=s, hidden=False, per_student=False)
         for s in (1, 2)]

# Each fails at its own K and step (calls counted per K: the worker keeps no other state).
WEIGHTS = {
    "reference": "",
    "raises_at_k4": "if K == 4 and n == 3: raise ValueError('no K = 4')",
    "nan_k8_early_wrong_shape_k2_late": ("if K == 8 and n == 1: return w * np.nan\n"
                                         "    if K == 2 and n == 9: return w[:, :1]"),
    "k1_too_large_late_k4_raises_early": ("if K == 1 and n == 30: return w + 1e7\n"
                                          "    if K == 4: raise KeyError('early')"),
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


def _sweep(module, ks, lockstep: bool):
    caller = InProcessCaller(module)
    ctx = Context(caller.call, {"lr": 2.0}, public_only=True, call_many=caller.call_many)
    card = Scorecard()
    if lockstep:
        runs = ksweep.run(ctx, card, d_grpo.WEIGHT, CASES, ks, lambda K: 48 // K)
        notes = card.notes
    else:                                    # one K after the other, as before the lockstep
        runs, notes = {}, []
        for K in ks:
            card = Scorecard()
            runs.update(ksweep.run(ctx, card, d_grpo.WEIGHT, CASES, [K], lambda K: 48 // K))
            notes += card.notes
            if not card.passed(ksweep.DONE):
                runs = {}
                break
    return runs, notes, [p.record() for p in card.parts if p.label == ksweep.DONE], module.COUNT


@pytest.mark.parametrize("name", sorted(WEIGHTS))
def test_lockstep_sweep_fails_and_scores_as_one_k_after_the_other(tmp_path, name):
    runs, notes, done, count = _sweep(_module(tmp_path / "a", WEIGHTS[name]), KS, True)
    want_runs, want_notes, want_done, want_count = _sweep(
        _module(tmp_path / "b", WEIGHTS[name]), KS, False)
    assert done == want_done and notes == want_notes
    assert runs.keys() == want_runs.keys()
    for key, (theta, success) in runs.items():
        assert theta.tobytes() == want_runs[key][0].tobytes() and success == want_runs[key][1]
    # every K before the failing one ran to its end, as it did alone
    for K in KS:
        assert count.get(K) == want_count.get(K) or K > max(want_count)
    if name == "reference":
        assert done[0]["passed"] and len(runs) == len(KS) * len(CASES)
    else:
        assert not done[0]["passed"], done
