"""The judging framework's rules, proven on small judges: the gate refuses
every malformed answer, keys and expected values come from the framework,
hidden failures say only their label and kind, blame lands where the rule
says, a slip is named where it bites, and every hidden instance is the
student's. Also: the README's example assignment, graded end to end."""
from __future__ import annotations

import re
import sys
import types
from dataclasses import replace

import numpy as np
import pytest

from autograder.grading import cascade, config, gate
from autograder.grading.judging import (ALL_PHASES, HIDDEN_PHASE, PUBLIC_PHASE, Context, Fail,
                                        Judge, JudgeBug, ReferenceFailed)
from autograder.grading.parts import PartResult, hidden_phase_outcome, merge_phases, score
from autograder.grading.status import Kind, Status, question_status, submission_status
from autograder.harness.probe import ProbeRaised
from conftest import ROOT


# ----------------------------------------------------------------------------- the gate
GOOD = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("value,kind", [
    (GOOD.astype(np.float32), Kind.SHAPE),               # single precision
    (GOOD[:, :2], Kind.SHAPE),                           # shape
    (GOOD.ravel(), Kind.SHAPE),
    ("1, 2, 3", Kind.SHAPE),                             # a string
    (None, Kind.SHAPE),
    ({"a": GOOD}, Kind.SHAPE),
    ([[1.0, 2.0], [3.0]], Kind.SHAPE),                   # ragged
    (np.where(GOOD > 3, np.nan, GOOD), Kind.NONFINITE),
    (np.where(GOOD > 3, np.inf, GOOD), Kind.NONFINITE),
    (np.full((2, 3), True), None),                       # bools are exact numbers
    (GOOD.astype(np.int64), None),
    (GOOD, None),
])
def test_floats_admits_only_finite_float64_of_its_shape(value, kind):
    spec = gate.Floats((2, 3))
    if kind is None:
        out = spec.admit(value)
        assert out.dtype == np.float64 and out.shape == (2, 3)
    else:
        with pytest.raises(gate.GateFail) as e:
            spec.admit(value)
        assert e.value.kind is kind


def test_every_spec_refuses_what_it_does_not_describe():
    cases = [
        (gate.Floats((3,), max_abs=10.0), np.array([1.0, 2.0, 11.0]), Kind.VALUE),
        (gate.Number(), np.zeros(2), Kind.SHAPE),
        (gate.Number(), np.asarray(np.nan), Kind.NONFINITE),
        (gate.Number(integer=True), np.asarray(1.5), Kind.SHAPE),
        (gate.Text(5), "too long", Kind.SHAPE),
        (gate.Text(5), np.asarray(1.0), Kind.SHAPE),
        (gate.Seq(gate.Number(), gate.Number()), [np.asarray(1.0)], Kind.SHAPE),
        (gate.Record(required={"a": gate.Number()}), {"b": np.asarray(1.0)}, Kind.SHAPE),
        (gate.Record(required={"a": gate.Number()}, closed=True),
         {"a": np.asarray(1.0), "b": 1}, Kind.SHAPE),
        (gate.Record(extra=gate.Number(), max_items=2), {str(i): np.asarray(1.0)
                                                         for i in range(3)}, Kind.SHAPE),
        (gate.Rows(3), np.zeros((2, 2)), Kind.SHAPE),
        (gate.Network(({"W": (2, 3), "b": (3,)},)), [{"W": np.zeros((2, 3))}], Kind.SHAPE),
        (gate.Network(({"W": (2, 3), "b": (3,)},)),
         [{"W": np.zeros((2, 3)), "b": np.full(3, np.nan)}], Kind.NONFINITE),
    ]
    for spec, value, kind in cases:
        with pytest.raises(gate.GateFail) as e:
            spec.admit(value)
        assert e.value.kind is kind, (spec, e.value.message)
    lenient = gate.Lenient(gate.Number()).admit("x")
    assert isinstance(lenient, gate.Invalid) and lenient.kind is Kind.SHAPE
    assert gate.Seq(gate.Number(), gate.Floats((2,))).admit([np.asarray(1), np.ones(2)])[0] == 1.0
    with pytest.raises(TypeError):
        gate.admit(None, 1.0)                  # a judge must state every answer's spec


# ----------------------------------------------------------------------------- statuses
def test_one_vocabulary_each_word_one_meaning():
    words = [s.words for s in Status]
    assert len(set(words)) == len(words)
    assert Status.IMPORT_ERROR.submission_fault and Status.IMPORT_ERROR.ends_question
    assert not Status.AUTOGRADER_FAULT.submission_fault and Status.AUTOGRADER_FAULT.ends_question
    assert not Status.DEADLINE.submission_fault and Status.DEADLINE.ends_question
    assert not Status.FAILED.ends_question and not Status.NOT_GRADED.graded
    assert question_status([]) is Status.PASSED
    assert question_status(["not_implemented", "not_implemented"]) is Status.NOT_IMPLEMENTED
    assert question_status(["not_implemented", "value"]) is Status.FAILED
    assert question_status(["raised", "value"]) is Status.RAISED
    assert submission_status(["not_implemented", "not_graded"]) is Status.NOTHING_IMPLEMENTED
    assert submission_status(["not_implemented", "failed"]) is None


# ----------------------------------------------------------------------------- parts
def _part(pid, passed, instance=None, points=1.0, requires="", kind="value", message="wrong",
          **kw):
    return PartResult(pid, instance or pid, pid, points, passed, "" if passed else kind,
                      "" if passed else message, requires=requires, **kw)


def test_a_part_counts_only_beside_the_part_it_requires():
    out = score([_part("nonzero", False), _part("zeros", True, requires="nonzero")], 2.0)
    assert out.fraction == 0.0 and out.status is Status.FAILED
    assert any("no credit for zeros" in line for line in out.lines)


def test_no_credit_names_the_required_part_by_its_title():
    required = replace(_part("nonzero", False), title="the weights on groups that differ")
    out = score([required, _part("zeros", True, requires="nonzero")], 2.0)
    assert "it counts only once 'the weights on groups that differ' passes" in out.lines[0]


def test_phases_merge_by_instance_and_the_hidden_phase_says_only_kind_and_label():
    public = score([_part("p", True), _part("each", True, "each[a]", 0.5)], 2.0)
    hidden = score([_part("p", False, case="hidden case 2 of 3", message="secret 0.1234"),
                    _part("each", True, "each[hidden case 1 of 1]", 0.5)], 2.0)
    hidden = hidden_phase_outcome(hidden, 2.0)
    merged = merge_phases(public, hidden, 2.0)
    assert [p.instance for p in merged.parts] == ["p", "each[a]", "each[hidden case 1 of 1]"]
    failed = merged.parts[0]
    assert not failed.passed and failed.hidden and "0.1234" not in failed.message
    assert failed.message.startswith("hidden case 2 of 3: wrong value")
    assert merged.fraction == pytest.approx(0.5)


# ----------------------------------------------------------------------------- the context
def _question(parts, cases, name="q1"):
    return config.Question(name, name, sum(p.points for p in parts), True, "visible", 5,
                           cases=tuple(cases), parts=tuple(parts))


def _case(name, hidden=False, group="", draw=None, **table):
    return config.Case("q1", name, hidden, group, "", name, dict(table), dict(draw or {}))


PART = config.PartSpec("p", "the part", 1.0)


class Module:
    """A submission in this process (plain Python callables)."""

    def __init__(self, **fns):
        self.fns = fns

    def call(self, fn, *args, may_modify=()):
        if fn not in self.fns:
            raise ProbeRaised(fn, {"type": "AttributeError", "message":
                                   f"m.py defines no function {fn}()", "where": ""})
        try:
            return self.fns[fn](*args)
        except Exception as e:  # noqa: BLE001
            raise ProbeRaised(fn, {"type": type(e).__name__, "message": str(e), "where": "",
                                   "types": [c.__name__ for c in type(e).__mro__]}) from None


def _ctx(module, q, **kw):
    kw.setdefault("public_only", False)
    return Context(module.call, {}, question=q, hidden={"instance_salt": "s"}, **kw)


def test_keys_are_derived_and_expected_values_recorded_or_from_the_oracle(monkeypatch):
    q = _question([PART], [_case("a", seed=1), _case("h", hidden=True, draw={"B": [2, 9]})])
    judge = Judge()
    seen = []

    @judge.part("q1", "p")
    def p(ctx, case):
        x = ctx.case_rng(case).normal(size=case.get("B", 3))
        seen.append(ctx.key())
        ctx.expect(ctx.ask("f", x, answer=gate.Floats(x.shape)), rtol=0, atol=0,
                   oracle=("oracle.twice", x))
    oracle = types.ModuleType("autograder.oracles.oracle")
    oracle.twice = lambda x: 2 * x
    monkeypatch.setitem(sys.modules, "autograder.oracles.oracle", oracle)
    ref = Module(f=lambda x: 2 * x)
    rec = _ctx(ref, q, recording=True, phase=ALL_PHASES)
    judge.run("q1", rec)
    assert "q1/p/a" in rec.expected                  # a fixed case: the reference's answer
    assert all(k == "q1/p/a" or "@" in k for k in rec.expected)   # a drawn one names its student
    assert seen[0] == "q1/p/a" and re.fullmatch(r"q1/p/h@[0-9a-f]{12}", seen[1])
    for sid in ("1001", "2002"):
        ctx = _ctx(ref, q, expected=rec.expected, student_id=sid, phase=HIDDEN_PHASE)
        assert judge.run("q1", ctx).fraction == 1.0
    wrong = _ctx(Module(f=lambda x: 3 * x), q, expected=rec.expected, phase=HIDDEN_PHASE)
    out = judge.run("q1", wrong)
    assert out.fraction == 0.0 and out.parts[0].hidden
    assert out.parts[0].message.startswith("hidden case 1 of 1: wrong value")


def test_a_per_student_case_without_an_oracle_is_a_judge_bug():
    q = _question([PART], [_case("h", hidden=True, draw={"B": [2, 9]})])
    judge = Judge()

    @judge.part("q1", "p")
    def p(ctx, case):
        ctx.expect(ctx.ask("f", 1.0, answer=gate.Number()), rtol=0, atol=0)
    with pytest.raises(JudgeBug):
        judge.run("q1", _ctx(Module(f=lambda x: x), q, phase=HIDDEN_PHASE))


def test_hidden_failures_show_no_input_no_answer_no_exception_text():
    q = _question([PART], [_case("h", hidden=True, seed=3)])
    judge = Judge()

    @judge.part("q1", "p")
    def p(ctx, case):
        got = ctx.ask("f", 0.8125, answer=gate.Floats((2,)))
        raise ctx.fail(f"the judge saw {got} for 0.8125")
    for fn in (lambda x: [x, 0.5151], lambda x: [x, np.nan], lambda x: "0.8125",
               lambda x: 1 / 0):
        out = judge.run("q1", _ctx(Module(f=fn), q, phase=HIDDEN_PHASE))
        text = "\n".join(out.lines) + repr([p.record() for p in out.parts])
        assert "0.8125" not in text and "0.5151" not in text and "division" not in text, text
        assert out.parts[0].hidden and out.parts[0].case == "hidden case 1 of 1"


def test_a_diagnosis_is_attached_to_a_wrong_value_only():
    q = _question([PART], [_case("a", seed=1)])
    judge = Judge()

    @judge.part("q1", "p")
    def p(ctx, case):
        got = ctx.ask("f", np.ones(2), answer=gate.Floats((2,)))
        ctx.check(got, np.full(2, 2.0), rtol=0, atol=0, diagnose=lambda g: "halved")
    out = judge.run("q1", _ctx(Module(f=lambda x: x / 2), q, phase=PUBLIC_PHASE))
    assert out.parts[0].diagnosis == "halved" and out.parts[0].fn == "f"
    out = judge.run("q1", _ctx(Module(f=lambda x: x[:1]), q, phase=PUBLIC_PHASE))
    assert out.parts[0].diagnosis == "" and out.parts[0].kind == "shape"


def test_blame_an_exception_after_an_answer_is_the_submissions_before_it_the_graders():
    q = _question([PART], [_case("a", seed=1)])
    judge = Judge()

    @judge.part("q1", "p")
    def p(ctx, case):
        got = ctx.ask("f", 1.0, answer=gate.Anything())
        got["key"]                               # judge code that trusts the answer's form
    ctx = _ctx(Module(f=lambda x: [x]), q, phase=PUBLIC_PHASE)
    out = judge.run("q1", ctx)
    assert out.status is Status.FAILED and out.parts[0].kind == "shape"
    assert "f()" in out.parts[0].message and ctx.staff          # the staff see the details
    before = Judge()

    @before.part("q1", "p")
    def early(ctx, case):
        {}["judge bug"]                         # before any answer: the grader's own fault
    with pytest.raises(KeyError):
        before.run("q1", _ctx(Module(), q, phase=PUBLIC_PHASE))


def test_a_declared_part_nobody_judged_fails_and_an_undeclared_one_is_a_bug():
    parts = [PART, config.PartSpec("other", "the other", 1.0)]
    q = _question(parts, [_case("a", seed=1)])
    judge = Judge()

    @judge.question("q1")
    def q1(ctx):
        with ctx.part("p") as part:
            part.case_list()
    out = judge.run("q1", _ctx(Module(), q, phase=PUBLIC_PHASE))
    other = next(p for p in out.parts if p.id == "other")
    assert not other.passed and other.kind == "not_judged" and out.fraction == 0.5
    bad = Judge()

    @bad.question("q1")
    def q1_bad(ctx):
        with ctx.part("nope"):
            pass
    with pytest.raises(JudgeBug):
        bad.run("q1", _ctx(Module(), q, phase=PUBLIC_PHASE))


def test_a_part_without_cases_is_judged_once_and_one_whose_cases_never_run_is_refused(tmp_path):
    """No declared part scores unjudged: a part declared ``cases = []`` runs its
    function once (case None), and a full toml whose part names case groups
    holding no case (a question with no cases at all) does not load."""
    caseless = config.PartSpec("p", "the part", 1.0, cases=())
    judge, seen = Judge(), []

    @judge.part("q1", "p")
    def p(ctx, case):
        seen.append(case)
        raise ctx.fail("wrong")
    out = judge.run("q1", _ctx(Module(), _question([caseless], []), phase=PUBLIC_PHASE))
    assert seen == [None] and out.fraction == 0.0 and not out.parts[0].passed
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "assignment.toml").write_text(
        'id = "t1"\n[submission]\nfiles = ["m.py"]\n[hidden]\ninstance_salt = "x"\n'
        '[[questions]]\nname = "q"\npoints = 1\nbudget_cpu_s = 5\n'
        '[[questions.parts]]\nid = "p"\ntitle = "p"\npoints = 1\n')
    with pytest.raises(config.ConfigError, match="hold no case"):
        config.load("t1", tmp_path)


def test_each_student_has_own_hidden_order_and_numbering():
    q = _question([config.PartSpec("log", "{case}", 6.0, each="case")],
                  [_case(f"log {i}", hidden=True, seed=i) for i in range(6)])
    orders = {}
    for sid in ("1001", "2002", "1001"):
        ctx = _ctx(Module(), q, student_id=sid, phase=HIDDEN_PHASE)
        orders.setdefault(sid, []).append([(c.name, c.label) for c in ctx.cases_in()])
    assert orders["1001"][0] == orders["1001"][1]                # the same id: the same
    assert orders["1001"][0] != orders["2002"][0]                # two ids: two orders
    assert [lbl for _, lbl in orders["2002"][0]] == [f"hidden case {i} of 6"
                                                     for i in range(1, 7)]


# ----------------------------------------------------------------------------- cascades
def test_a_slip_is_named_where_it_bites():
    a = config.load("d_grpo")
    q2, q6 = a.question("q2_standardised"), a.question("q6_k_sweep")
    o2 = score([_part("differs", False, points=1.5, fn="group_standardised_weight"),
                _part("zeros", True, points=0.5)], 2.0)
    o6 = score([_part("runs", False, points=0.0, fn="group_standardised_weight"),
                _part("learns", True, points=3.0),
                _part("k1", False, points=1.0, fn="group_standardised_weight")], 4.0)
    cascade.annotate([(q2, o2), (q6, o6)], a)
    assert all("fails in q2_standardised" in p.cause for p in o6.parts if not p.passed)
    assert not o2.parts[0].cause                                 # charged where it is
    assert any(line.startswith("FAIL") and "fails in q2_standardised" in line
               for line in o6.lines)


# ----------------------------------------------------------------------------- the README
def _readme_block(lang: str, first_line: str) -> str:
    import doc_pages
    return doc_pages.code_block("docs/adding-an-assignment.md", lang, first_line)


def test_readme_example_assignment_grades_right_and_wrong_work(tmp_path, monkeypatch):
    """docs/adding-an-assignment.md's example, as written: its toml and
    judge, a reference, a right and a wrong submission, graded in the fast
    tier with the hidden case drawn for two students."""
    from autograder.grading import expected, reference
    from autograder.grading.grade import grade
    toml = _readme_block("toml", "# assignments/example/assignment.toml")
    source = _readme_block("python", "# autograder/judges/example.py")
    (tmp_path / "assignments" / "example").mkdir(parents=True)
    (tmp_path / "assignments" / "example" / "assignment.toml").write_text(toml)
    (tmp_path / "solutions" / "example").mkdir(parents=True)
    (tmp_path / "solutions" / "example" / "double.py").write_text(
        "def double(x):\n    return 2 * x\n")
    judge = types.ModuleType("autograder.judges.example")
    judge.__package__ = "autograder.judges"
    exec(compile(source, "example.py", "exec"), judge.__dict__)
    oracle = types.ModuleType("autograder.oracles.example")
    oracle.double = lambda x: 2 * x
    monkeypatch.setitem(sys.modules, "autograder.judges.example", judge)
    monkeypatch.setitem(sys.modules, "autograder.oracles.example", oracle)
    monkeypatch.setattr(reference, "SOLUTIONS_DIR", tmp_path / "solutions")
    monkeypatch.setattr(expected, "SOLUTIONS_DIR", tmp_path / "solutions")
    expected._recorded_question.cache_clear()
    subs = {"right": "import numpy as np\ndef double(x):\n    return np.asarray(x) + x\n",
            "halves": "def double(x):\n    return x / 2\n"}
    for name, text in subs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "double.py").write_text(text)
        for sid in ("1001", "2002"):
            report = grade("example", tmp_path / name, echo=False, in_process=True,
                           assignments_dir=tmp_path / "assignments", student_id=sid)
            (q,) = report.questions
            assert (q.score == 2.0) == (name == "right"), q.output
            if name == "halves":
                assert "your double() halves" in q.output and q.parts[0]["id"] == "doubles"
    expected._recorded_question.cache_clear()


# ----------------------------------------------------------------------------- instances
@pytest.mark.parametrize("assignment", ["a_ppo", "b_ablations", "c_diagnose", "d_grpo",
                                        "exercises"])
def test_two_ids_two_hidden_draws_one_id_the_same_draw_every_time(assignment):
    a = config.load(assignment)
    assert a.needs_student_id            # a grading reads the student's id

    def draws(sid: str) -> list:
        out = []
        for q in a.questions:
            if not q.has_hidden_cases:
                continue
            ctx = Context(lambda *a, **k: None, a.params, public_only=False, question=q,
                          student_id=sid, hidden=a.hidden, phase=HIDDEN_PHASE)
            for group in sorted({c.group for c in q.cases}):
                out += [(q.name, c.name, c.label, sorted(c.table.items(), key=str))
                        for c in ctx.cases_in(group)]
        return out
    assert draws("1001") == draws("1001")
    assert draws("1001") != draws("2002")


def test_a_grading_reads_the_platform_id_and_draws_that_students_instance(tmp_path):
    import json
    from autograder.grading.grade import grade
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text((ROOT / "solutions" / "d_grpo" / "grpo.py").read_text())
    meta = tmp_path / "submission_metadata.json"
    meta.write_text(json.dumps({"users": [{"sid": "2002", "name": "B"}]}))
    report = grade("d_grpo", sub, metadata=meta, questions=["q1_centred"], echo=False,
                   in_process=True)
    assert report.student_id == "2002" and report.student_id_source == "metadata"
    assert report.questions[0].score == report.questions[0].max_score


# ----------------------------------------------------------------------------- blame
def test_a_syntax_error_is_the_submissions_once_and_not_gradable_on_prairielearn(tmp_path):
    from autograder.grading.grade import grade
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text("def centred_weight(r)\n    return r\n")
    report = grade("d_grpo", sub, echo=False)
    assert {q.status for q in report.questions} == {Status.IMPORT_ERROR}
    assert report.overall() == "import_error"
    assert report.to_gradescope()["extra_data"]["status"] == "import_error"
    pl = report.to_prairielearn()
    assert pl["gradable"] is False and "SyntaxError" in " ".join(pl["format_errors"])
    assert not any(q.status == Status.AUTOGRADER_FAULT for q in report.questions)


def test_the_whole_gradings_deadline_says_so_with_how_far_it_got(tmp_path):
    """A correct submission that meets the grading's own time limit (a busy
    machine) is told so: never "broke the protocol", never its fault."""
    from autograder.grading.grade import grade
    toml = (ROOT / "assignments" / "d_grpo" / "assignment.toml").read_text()
    (tmp_path / "a" / "d_grpo").mkdir(parents=True)
    (tmp_path / "a" / "d_grpo" / "assignment.toml").write_text(
        re.sub(r"(?m)^deadline_s = \d+", "deadline_s = 6", toml))
    sub = tmp_path / "sub"
    sub.mkdir()
    # The busy machine, made certain on a fast one: the first call of the (correct)
    # group_standardised_weight in a worker waits 8 s, so the deadline falls in q6's visible
    # phase (its public K-sweep), after q4's and q1's and before any hidden one.
    (sub / "grpo.py").write_text((ROOT / "solutions" / "d_grpo" / "grpo.py").read_text() + (
        "\n\nimport time as _time\n_fast_weight = group_standardised_weight\n_slow = [True]\n\n\n"
        "def group_standardised_weight(*args, **kwargs):\n"
        "    if _slow.pop() if _slow else False:\n"
        "        _time.sleep(8)\n"
        "    return _fast_weight(*args, **kwargs)\n"))
    report = grade("d_grpo", sub, echo=False, assignments_dir=tmp_path / "a",
                   questions=["q4_enumeration", "q1_centred", "q6_k_sweep", "q7_clipped_sweep"])
    by_name = {q.name: q for q in report.questions}
    assert by_name["q4_enumeration"].status == Status.PASSED     # public cases only: done
    # q1's hidden phase would run after every visible phase, past the deadline: not graded
    for name in ("q1_centred", "q6_k_sweep", "q7_clipped_sweep"):
        q = by_name[name]
        assert q.status == Status.DEADLINE, (q.status, q.output)
        assert "time limit of 6 s" in q.output and "q4_enumeration" in q.output
        assert "protocol" not in q.output
    assert report.to_prairielearn()["gradable"] is False


def test_titles_may_be_reworded_without_changing_a_grade(tmp_path):
    from autograder.catalogue.d_grpo import WRONG
    from autograder.grading.grade import grade
    toml = (ROOT / "assignments" / "d_grpo" / "assignment.toml").read_text()
    reworded = re.sub(r'(?m)^title = "(.*)"$', lambda m: f'title = "Reworded: {m.group(1)}"', toml)
    (tmp_path / "a" / "d_grpo").mkdir(parents=True)
    (tmp_path / "a" / "d_grpo" / "assignment.toml").write_text(reworded)
    entry = next(w for w in WRONG if w.name == "sample_std")
    sub = entry.write("d_grpo", tmp_path / "sub", ("grpo.py",))
    runs = [grade("d_grpo", sub, questions=["q1_centred", "q2_standardised"], echo=False,
                  in_process=True, assignments_dir=d) for d in (None, tmp_path / "a")]
    records = [[(q.name, q.score, str(q.status), [(p["id"], p["instance"], p["passed"],
                                                    p["kind"], p["diagnosis"]) for p in q.parts])
                for q in r.questions] for r in runs]
    assert records[0] == records[1]
    assert all(p["label"].startswith("Reworded") for q in runs[1].questions for p in q.parts)
