"""The handout's recorded oracle answers (``grading.recorded``): what a
diagnosis of a public case asks of an oracle, and nothing of a hidden case."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest

from autograder.grading import config, expected, recorded
from autograder.grading.judging import ReferenceFailed
from conftest import built


def test_a_last_bit_difference_finds_the_same_entry():
    """Inputs a handout recomputes on another machine may differ in the last
    bit (a vector instruction's sin, a sum's order): the digest ignores that."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 7))
    ro = {"rewards": x, "terminated": x > 1.0, "steps": np.arange(7)}
    nudged = dict(ro, rewards=np.nextafter(x, np.inf))
    assert recorded.digest("m.f", (ro, 0.99, "slip")) == recorded.digest("m.f", (nudged, 0.99,
                                                                                  "slip"))
    assert recorded.digest("m.f", (ro, 0.99)) != recorded.digest("m.f", (ro, 0.98))
    assert recorded.digest("m.f", (x,)) != recorded.digest("m.f", (x * (1 + 1e-6),))
    assert recorded.digest("m.f", (x,)) != recorded.digest("m.g", (x,))
    with pytest.raises(recorded.Unrecordable):
        recorded.digest("m.f", (object(),))


def test_lookup_answers_what_was_recorded_and_nothing_else():
    x = np.linspace(0.0, 1.0, 5)
    table = {**recorded.entries("m.pair", (x, 0.5), {}, (x * 2, 3.0)),
             **recorded.entries("m.one", (x,), {"slip": "a"}, x + 1)}
    assert recorded.has(table, "m.pair") and not recorded.has(table, "m.other")
    pair = recorded.lookup(table, "m.pair", ReferenceFailed)
    twice, three = pair(x, 0.5)
    assert np.array_equal(twice, x * 2) and three == 3.0 and isinstance(three, float)
    assert np.array_equal(recorded.lookup(table, "m.one", ReferenceFailed)(x, slip="a"), x + 1)
    with pytest.raises(ReferenceFailed):
        pair(x, 0.4)                        # other inputs: a miss, as where no oracle ships
    with pytest.raises(ReferenceFailed):
        pair(object(), 0.5)
    with pytest.raises(recorded.Unrecordable):
        recorded.entries("m.f", (x,), {}, {"not": "numbers"})


@pytest.mark.parametrize("assignment", ["d_grpo", "exercises", "a_ppo"])
def test_the_handouts_table_holds_no_hidden_value(assignment):
    """Recorded on the public cases only: no array of it is a hidden case's
    expected value, and every key is a recorded oracle answer."""
    a = config.load(assignment)
    full, _, public_keys = expected.load(a)
    hidden = [v for k, v in full.items() if k.partition("#")[0] not in public_keys and v.size > 1]
    assert hidden
    with zipfile.ZipFile(built(assignment)[0]) as zf:
        with zf.open(f"{assignment}/autograder/expected/{assignment}.diagnoses.npz") as f:
            table = dict(np.load(f, allow_pickle=False))
    assert table and all(k.startswith(recorded.PREFIX + "/") for k in table)
    for key, value in table.items():
        for h in hidden:
            assert not (h.shape == value.shape and np.allclose(h, value)), key
