"""The section's exercises through the real harness: reference (over many student
ids), template, catalogue, choice keys, written answers, zips, notebook."""
from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autograder.grading import config, expected
from autograder.grading.grade import grade
from autograder.judges import exercises as judge
from autograder.grading.judging import Context
from autograder.harness.probe import InProcessCaller
from autograder.grading.reference import load_reference
from autograder.grading.status import Kind, Status
from conftest import ROOT, built, graded, zip_graded

A = config.load("exercises")
REFERENCE = ROOT / "solutions" / "exercises" / "exercises.py"
STUB = ROOT / "student_template" / "exercises" / "exercises.py"
PER_STUDENT = ("ex1_token_scores", "ex1_response_score", "ex3_prediction", "ex3_k1_run",
               "ex4_tilted", "ex4_threshold")


def _sub(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "sub"
    d.mkdir(exist_ok=True)
    (d / "exercises.py").write_text(text)
    return d


def _ctx(call, student_id, question: str, constant=None, call_many=None) -> Context:
    """Every case of ``question`` (public and hidden) in one in-process pass."""
    exp, _, public_keys = expected.load(A)
    return Context(call, A.params, public_only=False, expected=exp,
                   public_keys=set(public_keys), student_id=student_id,
                   constant=constant, hidden=A.hidden, question=A.question(question),
                   call_many=call_many)


# ----------------------------------------------------------------------------- contracts
def test_assignment_contract():
    assert A.submission_files == ("exercises.py",)
    assert A.per_student
    assert set(judge.QUESTIONS) == {q.name for q in A.questions}
    assert set(PER_STUDENT) <= set(judge.QUESTIONS)
    for name in PER_STUDENT:              # hidden cases of each student's own (drawn)
        assert any(c.hidden and c.draw for c in A.question(name).cases), name
    for q in A.questions:                 # keys hidden until published, unit checks visible
        if q.points > 0 and not q.public:
            assert q.visibility == "after_published", q.name
        if q.public:
            assert q.visibility == "visible", q.name
    assert 15 <= A.total_points <= 25
    reference, stub = REFERENCE.read_text(), STUB.read_text()
    for q in A.questions:
        assert q.hand == (q.points == 0), q.name          # the two written answers
        for fn in q.functions:                            # what the cascade names
            assert f"def {fn}(" in reference and f"def {fn}(" in stub, (q.name, fn)
    # Choice keys: one caseless part per constant <prefix>_<ID>, in the reference and the stub.
    for name, prefix in (("ex2_terms", "EX2"), ("ex3_loo_key", "EX3"), ("ex5_symbols", "EX5")):
        q = A.question(name)
        assert q.parts and not q.cases and not q.functions
        for part in q.parts:
            const = f"{prefix}_{part.id.upper()}"
            assert part.cases == () and f"\n{const} = " in reference and \
                f"\n{const} = " in stub, const


def test_reference_gets_full_marks():
    report = graded("exercises", "solutions")
    assert [q.score for q in report.questions] == [q.points for q in A.questions], report.table()
    assert report.seconds < 30, report.table()


def test_blank_template_gets_zero_and_says_why():
    report = graded("exercises", "student_template")
    assert report.score == 0, report.table()
    assert report.status == Status.NOTHING_IMPLEMENTED
    for q in report.questions:
        want = Status.HAND_GRADED if A.question(q.name).hand else Status.NOT_IMPLEMENTED
        assert q.status == want, (q.name, q.status)
    keys = next(q for q in report.questions if q.name == "ex2_terms")
    assert [p["id"] for p in keys.parts] == [p.id for p in A.question("ex2_terms").parts]
    assert all(p["kind"] == Kind.NOT_IMPLEMENTED for p in keys.parts)
    assert "no answer yet" in keys.output


def test_stub_alone_in_an_empty_dir_grades_to_zero(tmp_path):
    report = grade("exercises", _sub(tmp_path, STUB.read_text()), echo=False,
                   questions=["ex1_token_scores", "ex3_k1_run", "ex5_symbols"])
    assert report.score == 0 and all(q.output for q in report.questions)


def test_reference_full_marks_over_many_student_ids():
    """Every per-student question over many ids, in-process (the same judge code):
    exercise 4's range and corners for 300 ids, exercise 1's instances and
    exercise 3's groups for 9,
    the training run for 1 (about 2 s; its bar was checked on 400 seeds)."""
    caller = InProcessCaller(load_reference("exercises", "exercises.py"))
    ids = [f"s{i:04d}" for i in range(298)] + ["student@example.edu", "12345678"]
    plan = [(ids, ("ex4_tilted", "ex4_threshold")),
            (ids[::40] + ids[-1:], ("ex1_token_scores", "ex1_response_score",
                                    "ex3_prediction")),
            (ids[-1:], ("ex3_k1_run",))]
    for group, questions in plan:
        for sid in group:
            for q in questions:
                out = judge.QUESTIONS[q](_ctx(caller.call, sid, q, caller.constant,
                                              caller.call_many))
                assert out.fraction == 1.0, (sid, q, out.lines)
                assert {r.id for r in out.parts} == {p.id for p in A.question(q).parts}


def test_instances_differ_between_students_and_repeat_for_one():
    calls = []

    def spy(fn, *args, **kwargs):
        calls.append((fn, [np.asarray(a).copy() for a in args]))
        return caller.call(fn, *args, **kwargs)

    caller = InProcessCaller(load_reference("exercises", "exercises.py"))
    seen = {}
    for sid in ("alice", "bob", "alice"):
        calls.clear()
        for q in ("ex4_threshold", "ex1_token_scores"):
            out = judge.QUESTIONS[q](_ctx(spy, sid, q))
            assert out.fraction == 1.0, (sid, q, out.lines)
        seen.setdefault(sid, []).append([a for _, args in calls for a in args])
    (a1, a2), (b,) = seen["alice"], seen["bob"]
    assert len(a1) == len(a2) and all(np.array_equal(x, y) for x, y in zip(a1, a2))
    # the public pairs (the section's numbers first) are everyone's; the hidden ones are not
    assert a1[0][0] == 4.0 and np.array_equal(a1[0], b[0]) and np.array_equal(a1[1], b[1])
    assert any(not any(x.shape == y.shape and np.array_equal(x, y) for y in b[2:])
               for x in a1[2:])


def test_per_student_id_from_gradescope_metadata(tmp_path):
    meta = tmp_path / "submission_metadata.json"
    meta.write_text(json.dumps({"users": [{"sid": "12345678", "email": "x@y.z"}]}))
    shutil.copy(REFERENCE, tmp_path / "exercises.py")
    report = grade("exercises", tmp_path, metadata=meta, echo=False,
                   questions=["ex1_token_scores", "ex4_threshold"])
    assert report.student_id == "12345678"
    assert report.score == report.max_score, report.table()


# ----------------------------------------------------------------------------- diagnoses
@pytest.mark.parametrize("name,says", [
    ("factor_one_over_k", "your shrinkage_factor(K) is what differs"),
    ("k1_falls_back_to_reinforce", "at K = 1 is not 0"),
    ("zero_weight", "is 0 at K = 2")])
def test_the_enumeration_says_which_side_is_off(tmp_path, name, says):
    """The hidden enumeration (E[update] = factor x gradient) fails whether the
    factor or the weight is off; its diagnosis, shown for a hidden case too,
    says which (the fast tier: the catalogue's entries are trusted code)."""
    from autograder.catalogue.exercises import WRONG
    wrong = next(w for w in WRONG if w.name == name)
    sub = wrong.write("exercises", tmp_path / "sub", A.submission_files)
    report = grade("exercises", sub, questions=["ex3_prediction"], echo=False, in_process=True)
    (enum,) = [p for p in report.questions[0].parts if p["id"] == "enumeration"]
    assert not enum["passed"] and enum["hidden"] and enum["kind"] == Kind.VALUE
    assert says in enum["diagnosis"], enum


# ----------------------------------------------------------------------------- choice keys
def test_keys_are_case_insensitive_and_stripped(tmp_path):
    text = REFERENCE.read_text()
    for const in ("EX2_REPLAY_SETTING", "EX5_PI_REF", "EX3_LOO_K1"):
        line = next(l for l in text.splitlines() if l.startswith(const + " = "))
        letter = line.split('"')[1]
        text = text.replace(line, f'{const} = "  {letter.lower()} "')
    report = grade("exercises", _sub(tmp_path, text), echo=False,
                   questions=["ex2_terms", "ex3_loo_key", "ex5_symbols"])
    assert report.score == report.max_score, report.table()


def test_wrong_key_names_the_part_but_not_the_answer(tmp_path):
    text = REFERENCE.read_text().replace('EX2_BOOTSTRAPPING_SETTING = "A"',
                                         'EX2_BOOTSTRAPPING_SETTING = "C"')
    report = grade("exercises", _sub(tmp_path, text), echo=False, questions=["ex2_terms"])
    (q,) = report.questions
    assert q.score == pytest.approx(q.max_score * 7 / 8)
    assert [(p["id"], p["kind"]) for p in q.parts if not p["passed"]] == \
        [("bootstrapping_setting", Kind.VALUE)]
    fail = [l for l in q.output.splitlines() if l.startswith("FAIL")]
    assert len(fail) == 1 and "Exercise 2, bootstrapping" in fail[0] and "setting" in fail[0]
    # the right letter (its character code, too) is nowhere: only the student's own
    assert "'A'" not in q.output and '"A"' not in q.output and "expected" not in fail[0]
    assert "65" not in q.output and "'C'" in fail[0]
    assert q.visibility == "after_published"


# ----------------------------------------------------------------------------- written answers
def test_written_answers_reach_results_json_as_text(tmp_path):
    proof = "Chain rule: pi(y|x) = prod_t pi(y_t|x,y_<t); transitions add factors of one. \u2207"
    text = STUB.read_text().replace('EX1_PROOF = """\\\n"""', f'EX1_PROOF = """{proof}"""')
    text = text.replace('EX5_MISSING_COMPONENT = """\\\n"""',
                        'EX5_MISSING_COMPONENT = "the per-token KL estimator" * 2000')
    out = tmp_path / "results.json"
    grade("exercises", _sub(tmp_path, text), results=out, echo=False,
          questions=["ex1_proof", "ex5_missing_component", "ex2_terms"])
    tests = {t["name"].split(":")[0]: t for t in json.loads(out.read_text())["tests"]}
    assert tests["ex1_proof"]["extra_data"]["status"] == Status.HAND_GRADED
    assert proof in tests["ex1_proof"]["output"]
    assert tests["ex1_proof"]["max_score"] == 0 and tests["ex1_proof"]["visibility"] == "visible"
    long = tests["ex5_missing_component"]["output"]
    assert "the per-token KL estimator" in long and "cut at 20000" in long
    assert len(long) < 21000


# ----------------------------------------------------------------------------- zips
@pytest.mark.slow
def test_gradescope_zip_grades_reference_without_solutions():
    _, gs_zip = built("exercises")
    res = zip_graded("exercises", "solutions")
    assert res["extra_data"]["expected_source"] == "stored"
    assert res["score"] == A.total_points, json.dumps(res, indent=1)[:3000]
    names = zipfile.ZipFile(gs_zip).namelist()
    assert not any(n.startswith("solutions/") for n in names)
    assert "autograder/expected/exercises.npz" in names


def test_student_zip_has_no_solution_and_no_hidden_value():
    student_zip, _ = built("exercises")
    zf = zipfile.ZipFile(student_zip)
    names = zf.namelist()
    assert "exercises/exercises.py" in names and "exercises/exercises.ipynb" in names
    assert "exercises/rlkit/autoregressive.py" in names
    assert not any("solutions" in n or n.endswith("exercises.npz") or "rubric" in n
                   for n in names), names
    blob = b"".join(zf.read(n) for n in names).decode("utf-8", "replace")
    # every reference line that is not in the stub or the shipped code, keys included
    shipped = STUB.read_text() + "\n".join(
        p.read_text() for d in ("rlkit", "autograder/harness", "autograder/grading",
                                "autograder/judges") for p in (ROOT / d).rglob("*.py"))
    canaries = [l.strip() for l in REFERENCE.read_text().splitlines()
                if len(l.strip()) > 8 and l.strip() not in shipped
                and not l.strip().startswith("#")]
    assert sum(c.startswith(("EX2_", "EX3_", "EX5_")) for c in canaries) == 17
    leaked = [c for c in canaries if c in blob]
    assert not leaked, leaked
    full, _, _ = expected.load(A)
    with zf.open("exercises/autograder/expected/exercises.public.npz") as f:
        public = np.load(f, allow_pickle=False)
        stored = set(public.files) - {expected.PUBLIC_KEYS}
        assert not any("@" in k for k in stored)           # no student's instance
        for k in stored:                   # public questions' public cases only (no key)
            q, _, case = k.partition("#")[0].split("/")[:3]
            assert A.question(q).public, k
            assert any(c.name == case and not c.hidden for c in A.question(q).cases), k
        assert stored < set(full)
    tests = [n for n in names if n.startswith("exercises/tests/")]
    assert sorted(Path(n).stem for n in tests) == sorted(q.name for q in A.questions if q.public)
