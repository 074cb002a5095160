"""The probe/judge harness on misbehaving submissions: each question is scored
on its own, with a message, and grading always completes."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from autograder.harness import wire
from autograder.grading.grade import grade
from conftest import ROOT

REFERENCE = (ROOT / "solutions" / "d_grpo" / "grpo.py").read_text()


def _sub(tmp_path: Path, prepend: str = "", append: str = "", text: str | None = None) -> Path:
    d = tmp_path / "sub"
    d.mkdir(exist_ok=True)
    (d / "grpo.py").write_text(text if text is not None else prepend + REFERENCE + append)
    return d


def _grade(sub: Path, questions: str, results: Path | None = None):
    return grade("d_grpo", sub, questions=questions.split(","), results=results, echo=False)


def test_wire_round_trip_and_refusals():
    msg = {"a": np.arange(6.0).reshape(2, 3), "b": [np.int64(3), True, None, "x"], "c": 1.5}
    back = wire.decode(wire.encode(msg))
    assert np.array_equal(back["a"], msg["a"]) and back["a"].dtype == np.float64
    assert back["b"][0] == 3 and back["c"] == 1.5
    with pytest.raises(TypeError):
        wire.encode({"x": np.array(["s"], dtype=object)})
    with pytest.raises(wire.WireError):
        wire.decode(b"\x00garbage")
    bad = wire.encode({"x": np.zeros(2)}).replace(b'"<f8"', b'"|O8"')
    with pytest.raises(wire.WireError):
        wire.decode(bad)


def test_infinite_loop_in_one_function_zeroes_only_that_question(tmp_path):
    sub = _sub(tmp_path, append="\n\ndef centred_weight(r):\n    while True:\n        pass\n")
    t0 = time.monotonic()
    report = _grade(sub, "q1_centred,q2_standardised")
    q1, q2 = report.questions
    assert q1.score == 0 and "CPU budget" in q1.output
    assert q2.score == q2.max_score
    assert time.monotonic() - t0 < 40


def test_sys_exit_nan_and_wrong_shape_give_messages(tmp_path):
    sub = _sub(tmp_path, append=(
        "\n\ndef centred_weight(r):\n    import sys; sys.exit(3)\n"
        "\n\ndef group_standardised_weight(r):\n    return np.full_like(np.asarray(r), np.nan)\n"
        "\n\ndef leave_one_out_weight(r):\n    return np.zeros(3)\n"
        "\n\ndef policy_ratio(a, b):\n    import os; os._exit(3)\n"))
    q1, q2, q3, q5, q4 = _grade(sub, "q1_centred,q2_standardised,q3_leave_one_out,"
                                     "q5_ratio_clip,q4_enumeration").questions
    assert q1.score == 0 and "raised SystemExit: 3" in q1.output
    assert q5.score == 0 and "exit code 3" in q5.output
    assert q2.score == 0 and "nan" in q2.output.lower() and "finite" in q2.output
    assert q3.score == 0 and "expected shape" in q3.output and "got shape (3,)" in q3.output
    assert q4.score == 0 and "expected shape (324, 2)" in q4.output


def test_import_error_and_missing_file_are_reported(tmp_path):
    sub = _sub(tmp_path, text="import numpy as np\nraise RuntimeError('boom at import')\n")
    report = _grade(sub, "q1_centred")
    assert report.score == 0 and "boom at import" in report.questions[0].output
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hi")
    report = _grade(empty, "q1_centred")
    assert report.score == 0 and any("grpo.py was not found" in m for m in report.messages)
    assert any("notes.txt" in m for m in report.messages)


def test_printing_and_returning_lists_is_fine(tmp_path):
    sub = _sub(tmp_path, append=(
        "\n\n_c = centred_weight\n"
        "def centred_weight(r):\n    print('debug', r)\n    return _c(r).tolist()\n"))
    assert _grade(sub, "q1_centred").score == 1


def test_zip_with_nested_folder_is_flattened_and_placeholder_replaced(tmp_path):
    import zipfile
    z = tmp_path / "sub.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("my_work/grpo.py", REFERENCE)
        zf.writestr("../evil.py", "x = 1")
        zf.writestr("my_work/numpy.py", "x = 1")
    results = tmp_path / "results.json"
    report = _grade(z, "q1_centred", results=results)
    assert report.score == 1
    assert any("unsafe" in m and "evil" in m for m in report.messages)
    assert any("shadow" in m and "numpy.py" in m for m in report.messages)
    data = json.loads(results.read_text())
    assert data["score"] == 1 and "placeholder" not in data["extra_data"]


def test_wire_caps_refuse_oversized_and_deep_frames():
    import struct
    def frame(header: bytes, blobs=()) -> bytes:
        body = struct.pack("<Q", len(header)) + header + struct.pack("<Q", len(blobs))
        for b in blobs:
            body += struct.pack("<Q", len(b)) + b
        return body
    for bad in (frame(b"[" * 100 + b"]" * 100),                          # too deep
                frame(b"[" + b"1," * (wire.MAX_VALUES + 1) + b"1]"),      # too many values
                frame(b"1" * (wire.MAX_HEADER + 1)),                     # header too large
                frame(b'{"__nd__": 0, "dtype": "<f8", "shape": [-2, -1]}', [b"\0" * 16]),
                frame(b'{"__nd__": 0, "dtype": "<f8", "shape": [2]}', [b"\0" * 8])):
        with pytest.raises(wire.WireProtocol):
            wire.decode(bad)
    import os
    r, w = os.pipe()
    try:
        os.write(w, struct.pack("<Q", wire.MAX_FRAME + 1))
        with pytest.raises(wire.WireProtocol, match="exceeds"):
            wire.receive(r, time.monotonic() + 5)
    finally:
        os.close(r)
        os.close(w)


def test_send_to_a_reader_that_stopped_reading_times_out():
    import os
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        t0 = time.monotonic()
        with pytest.raises(wire.WireTimeout):
            wire.send(w, {"x": np.zeros(1_000_000)}, time.monotonic() + 1.0)
        assert time.monotonic() - t0 < 3
    finally:
        os.close(r)
        os.close(w)


def test_largest_real_answers_fit_the_caps():
    """Capstone A's parameter lists and a long written answer, with headroom."""
    params = [np.zeros((4, 64)), np.zeros(64), np.zeros((64, 64)), np.zeros(64),
              np.zeros((64, 2)), np.zeros(2)] * 2
    frame = wire.encode({"ok": [params, params]})
    assert len(frame) * 50 < wire.MAX_FRAME
    text = wire.encode({"ok": "x" * 20_000})
    assert len(text) * 20 < wire.MAX_HEADER
    assert wire.decode(frame)["ok"][0][2].shape == (64, 64)


BATCHED = '''
import numpy as np
KEPT = np.zeros(3)
def double(x):
    return 2 * np.asarray(x)
def kept():
    return KEPT                      # an answer the next call of the batch modifies
def bump(x):
    KEPT[:] += 1.0
    return np.asarray(x).sum()
def scribble(x):
    x[0] = -1.0                      # modifies its input
    return x.sum()
def fails(x):
    raise ValueError("no")
'''


def test_a_batch_answers_as_single_calls_do_in_the_worker_and_in_process(tmp_path):
    """call_many: answers in order, a call fed an earlier answer (a float64
    copy), each answer kept as it was when its call returned; the first call
    that raises stops the batch and is raised when its answer is read, after
    the earlier answers; a modified input is raised when its answer is read."""
    from autograder.harness.probe import (MODIFIED, Call, InProcessCaller, ProbeRaised,
                                          ProbeSession, Result)
    from autograder.harness.sandbox import Limits, open_sandbox
    import importlib.util
    (tmp_path / "batched.py").write_text(BATCHED)
    spec = importlib.util.spec_from_file_location("batched_module", tmp_path / "batched.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.arange(3, dtype=np.int64)
    ok = [Call("double", (x,)), Call("double", (Result(0),)), Call("kept", ()),
          Call("bump", (Result(1),))]
    bad = [Call("double", (x,)), Call("fails", (Result(0),)), Call("double", (x,))]
    with open_sandbox() as sb:
        directory = sb.new_dir()
        (directory / "batched.py").write_text(BATCHED)
        with ProbeSession(directory, "batched", Limits(20), 60, sb) as session:
            session.import_module()
            for caller in (InProcessCaller(module), session):
                got = caller.call_many(ok)
                assert np.array_equal(got[0], 2 * x) and got[0].dtype == np.int64
                assert np.array_equal(got[1], 4.0 * x) and got[1].dtype == np.float64
                assert np.array_equal(got[2], np.zeros(3)) and got[3] == 12.0
                failed = caller.call_many(bad)
                assert np.array_equal(failed[0], 2 * x)
                for i in (1, 2):
                    with pytest.raises(ProbeRaised, match="fails\\(\\) raised ValueError: no"):
                        failed[i]
                modified = caller.call_many([Call("scribble", (np.ones(2),))])
                with pytest.raises(ProbeRaised) as e:
                    modified[0]
                assert e.value.type == MODIFIED
                assert caller.call_many([Call("scribble", (np.ones(2),),
                                              may_modify=(0,))])[0] == -1.0 + 1.0
    with pytest.raises(ValueError, match="judge bug"):
        InProcessCaller(module).call_many([Call("double", (Result(0),))])
