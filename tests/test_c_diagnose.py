"""Capstone C through the real harness: reference (several student ids),
template, per-student letters, evidence parsing, the logs' determinism, and
what the student zip must not hold (agent code, fault labels)."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autograder.grading import config, expected
from autograder.grading.grade import grade
from autograder.grading.judging import Context, Fail
from autograder.harness.probe import InProcessCaller
from autograder.judges import c_diagnose as judge
from instructor import numerics
from conftest import ROOT, graded, zip_graded
from instructor import c_agents, c_logs

A = config.load("c_diagnose")
REFERENCE = ROOT / "solutions" / "c_diagnose" / "diagnose.py"
STUB = ROOT / "student_template" / "c_diagnose" / "diagnose.py"
ANSWERS = ("q5_faults", "q6_evidence")


def _sub(tmp_path: Path, text: str, name: str = "sub") -> Path:
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    (d / "diagnose.py").write_text(text)
    return d


def _reference_for(student_id: str) -> str:
    return c_logs.with_answers(REFERENCE.read_text(), student_id, c_logs.answers_for(student_id))


def _metadata(tmp_path: Path, sid: str) -> Path:
    meta = tmp_path / f"meta-{sid}.json"
    meta.write_text(json.dumps({"users": [{"sid": sid, "email": "x@y.z"}]}))
    return meta


# ----------------------------------------------------------------------------- contracts
def test_assignment_contract():
    assert A.submission_files == ("diagnose.py",)
    assert A.per_student
    assert set(judge.QUESTIONS) == {q.name for q in A.questions}
    for q in A.questions:
        if q.points > 0 and not q.public:
            assert q.visibility == "after_published", q.name
    assert {q.name for q in A.questions if not q.public} == set(ANSWERS)
    # the answer key covers every run, and names only faults of the vocabulary
    assert len(A.hidden["runs"]) == len(A.params["letters"]) == len(A.hidden["run_seeds"])
    assert set(A.hidden["agent_faults"]) == set(c_agents.AGENTS) == set(A.hidden["runs"])
    assert set(A.hidden["agent_faults"].values()) <= set(A.params["faults"])
    # every statistic a rule names has a threshold, and each family's healthy rule exists
    for fam, rules in A.params["rules"].items():
        assert "healthy" in rules
        for fault, conds in rules.items():
            assert fault in A.params["faults"]
            for stat, side in conds:
                assert stat in A.params["thresholds"] and side in ("below", "above")


def test_reference_gets_full_marks():
    report = graded("c_diagnose", "solutions")
    assert [q.score for q in report.questions] == [q.points for q in A.questions], report.table()


def test_blank_template_gets_zero_and_says_why():
    report = graded("c_diagnose", "student_template")
    assert report.score == 0, report.table()
    assert "not implemented yet" in report.questions[0].output
    assert "no answer yet" in next(q for q in report.questions if q.name == "q5_faults").output


def test_reference_full_marks_for_several_student_ids(tmp_path):
    """The reference with each id's own answers, graded under that id (Gradescope
    metadata), keeps full marks; another id's answers lose them."""
    for sid in ("12345678", "alice@example.edu", "s0042"):
        sub = _sub(tmp_path, _reference_for(sid), sid.replace("@", "_"))
        report = grade("c_diagnose", sub, questions=list(ANSWERS), echo=False,
                       metadata=_metadata(tmp_path, sid))
        assert report.student_id == sid
        assert report.score == report.max_score, report.table()
        assert "not the id this grading uses" not in "".join(q.output for q in report.questions)


def test_copied_mapping_loses_and_says_whose_letters(tmp_path):
    sub = _sub(tmp_path, _reference_for("12345678"))
    report = grade("c_diagnose", sub, questions=list(ANSWERS), echo=False,
                   metadata=_metadata(tmp_path, "87654321"))
    assert all(q.score < q.max_score for q in report.questions), report.table()
    assert "not the id this grading uses ('87654321')" in report.questions[0].output
    blank_id = _sub(tmp_path, REFERENCE.read_text(), "blank_id")
    report = grade("c_diagnose", blank_id, questions=["q5_faults"], echo=False,
                   metadata=_metadata(tmp_path, "87654321"))
    assert "STUDENT_ID in diagnose.py is empty: graded the letters of '87654321'" in \
        report.questions[0].output


def _answer_fraction(answers: dict, sid: str, question: str) -> float:
    exp, _, public_keys = expected.load(A, list(ANSWERS))
    ctx = Context(lambda *a: None, A.params, public_only=False, expected=exp,
                  public_keys=set(public_keys), student_id=sid,
                  constant=lambda name: answers.get(name), hidden=A.hidden)
    return judge.QUESTIONS[question](ctx).fraction


def test_a_copied_mapping_earns_what_a_guess_earns():
    """Over 120 pairs of ids, a classmate's answers earn on average what a random
    order earns (3 faults at 1/5, the healthy pair at 1/10: 0.175 of q5), and
    naming every letter healthy earns nothing."""
    ids = [f"u{i:03d}" for i in range(121)]
    answers = {sid: c_logs.answers_for(sid, A) for sid in ids}
    copied = [_answer_fraction(answers[a], b, "q5_faults") for a, b in zip(ids, ids[1:])]
    assert np.mean(copied) < 0.3, np.mean(copied)
    evidence = [_answer_fraction(answers[a], b, "q6_evidence") for a, b in zip(ids, ids[1:])]
    assert np.mean(evidence) < 0.3, np.mean(evidence)
    lazy = {**answers["u000"], **{f"FAULT_{k}": "healthy" for k in A.params["letters"]}}
    assert _answer_fraction(lazy, "u000", "q5_faults") == 0.0
    assert _answer_fraction(lazy, "u000", "q6_evidence") == 0.0


def test_letters_differ_between_students_and_repeat_for_one():
    p = A.params
    seen = {sid: tuple(judge.letters_for(sid, p).values()) for sid in
            [f"s{i:03d}" for i in range(200)]}
    assert len(set(seen.values())) > 80                          # of 120 orders
    assert judge.letters_for("s007", p) == judge.letters_for(" s007 ", p)
    assert judge.letters_for(None, p) == judge.letters_for("", p)
    for order in seen.values():
        assert sorted(order) == list(range(len(p["letters"])))


def test_answers_in_process_for_many_ids():
    """q5 and q6 with each id's answers (the same judge code, in-process): 40 ids."""
    from autograder.grading.reference import load_reference
    ref = load_reference("c_diagnose", "diagnose.py")
    exp, _, public_keys = expected.load(A, list(ANSWERS))
    for sid in [f"id-{i}" for i in range(40)]:
        answers = c_logs.answers_for(sid, A)

        def constant(name, answers=answers, sid=sid):
            return answers.get(name, sid if name == "STUDENT_ID" else None)
        for q in ANSWERS:
            ctx = Context(InProcessCaller(ref).call, A.params, public_only=False, expected=exp,
                          public_keys=set(public_keys), student_id=sid, constant=constant,
                          hidden=A.hidden)
            out = judge.QUESTIONS[q](ctx)
            assert out.fraction == 1.0, (sid, q, out.lines)


# ----------------------------------------------------------------------------- evidence
def test_parse_evidence_reads_the_printed_line_and_rejects_junk():
    line = judge.format_evidence({"early_entropy": 0.0123456789, "late_value_loss": 121.0})
    assert judge.parse_evidence(line) == {"early_entropy": 0.0123457, "late_value_loss": 121.0}
    assert judge.parse_evidence("A_B: 1e-3;\n c = -2") == {"a_b": 1e-3, "c": -2.0}
    for bad in ("early_entropy 0.1", "x = 1, x = 2", "x = one", "x = 1 2"):
        with pytest.raises(Fail):
            judge.parse_evidence(bad)
    assert judge.parse_evidence("x = nan")["x"] != judge.parse_evidence("x = nan")["x"]


def test_rules_fail_nan_and_the_wrong_family():
    p = A.params
    ok = {"batch_diversity": 1.2, "sample_age": 15.0}
    assert judge.rules_hold("undersized_buffer", "dqn", ok, p) == []
    assert judge.rules_hold("undersized_buffer", "dqn", {**ok, "sample_age": float("nan")}, p)
    assert judge.rules_hold("undersized_buffer", "ppo", ok, p)
    assert judge.rules_hold("healthy", "dqn", ok, p)


def test_shipped_logs_satisfy_exactly_their_own_rules():
    """On every shipped log the rules of assignment.toml name the key's fault
    and no other (bench/c_diagnose_facts.py measures it over more seeds)."""
    from autograder.grading.reference import load_reference
    ref = load_reference("c_diagnose", "diagnose.py")
    p, h = A.params, A.hidden
    for run, agent in enumerate(h["runs"]):
        log = judge.load_run(run, p)
        stats = judge.summary(log, ref, p)
        fam = judge.family(log)
        holds = [f for f in p["rules"][fam] if not judge.rules_hold(f, fam, stats, p)]
        assert holds == [h["agent_faults"][agent]], (agent, stats)


def test_declared_log_cases_are_every_log_of_their_family():
    """q1-q3 declare every PPO log as a ``logs`` case, q4 every DQN log (and
    nothing else): a log added by ``make c-logs`` must be declared."""
    p = A.params
    fams = {f"run_{i}": judge.family(judge.load_run(i, p)) for i in range(len(p["letters"]))}
    for q, fam in (("q1_entropy", "ppo"), ("q2_kl_clip", "ppo"), ("q3_critic", "ppo"),
                   ("q4_replay", "dqn")):
        logs = [c for c in A.question(q).cases if c.group == "logs"]
        assert not any(c.hidden for c in logs), q
        assert sorted(c.agent for c in logs) == sorted(r for r, f in fams.items() if f == fam), q


def test_hidden_cases_draw_their_shapes_per_student():
    """Two ids get hidden cases of other shapes, checked against the oracle
    (nothing recorded), and the reference passes both."""
    from autograder.grading.reference import load_reference
    caller = InProcessCaller(load_reference("c_diagnose", "diagnose.py"))

    def drawn(sid):
        out = {}
        for q in ("q1_entropy", "q2_kl_clip", "q3_critic", "q4_replay"):
            ctx = Context(caller.call, A.params, public_only=False, student_id=sid,
                          hidden=A.hidden, question=A.question(q), phase="hidden",
                          constant=caller.constant)
            assert judge.QUESTIONS[q](ctx).fraction == 1.0, (sid, q)
            assert ctx.keys and all("@" in k for k in ctx.keys), ctx.keys
            out.update({(q, r["case"], r["key"].partition("@")[0]): r["inputs"]
                        for r in ctx.reveal})
        return out
    a, b = drawn("s0001"), drawn("s0002")
    assert set(a) == set(b) and len(a) == 11
    assert all(a[k] != b[k] for k in a), [k for k in a if a[k] == b[k]]


# ----------------------------------------------------------------------------- the logs
def test_logs_are_compact_and_hold_no_label():
    files = sorted(judge.logs_dir(A.params).glob("*.npz"))
    assert [f.name for f in files] == [f"run_{i}.npz" for i in range(len(A.params["letters"]))]
    assert sum(f.stat().st_size for f in files) < 5e6
    names = set(c_agents.AGENTS) | set(A.params["faults"]) | {"ppo", "dqn", "saturat", "buffer",
                                                               "critic"}
    for f in files:
        with np.load(f, allow_pickle=False) as data:
            assert set(data.files) in (set(judge.PPO_KEYS), set(judge.DQN_KEYS)), f
            assert all(data[k].dtype.kind in "fi" for k in data.files)
        with zipfile.ZipFile(f) as zf:
            assert all(i.date_time == c_logs.ZIP_TIME for i in zf.infolist())
            blob = b"".join(zf.read(n) for n in zf.namelist()).lower()
        assert not any(n.encode() in blob for n in names), f


def _prefix_mismatches() -> list:
    """(agent, array) of every stored log whose first entries differ from a retrain."""
    p, h = A.params, A.hidden
    bad = []
    for run, agent in enumerate(h["runs"]):
        stored = np.load(judge.logs_dir(p) / f"run_{run}.npz", allow_pickle=False)
        seed = int(h["run_seeds"][run])
        if agent in c_agents.PPO_AGENTS:
            # update 0 depends on nothing later (its learning rate is the full lr)
            new = c_logs.compact(c_agents.train_ppo(agent, seed, updates=1))
            bad += [(agent, k) for k in ("logits_before", "logits_after", "actions", "values",
                                         "value_targets")
                    if not np.array_equal(new[k][0], stored[k][0])]
        else:
            saved = c_agents.DQN_HP["total_steps"]
            try:
                c_agents.DQN_HP["total_steps"] = 2500
                new = c_logs.compact(c_agents.train_dqn(agent, seed))
            finally:
                c_agents.DQN_HP["total_steps"] = saved
            K = new["batch_step"].size
            M = new["q_pred"].size
            if K <= 10:
                bad.append((agent, "fewer than 11 sampled batches"))
            bad += [(agent, k) for k in ("batch_step", "batch_slots", "batch_inserted",
                                         "batch_episode") if not np.array_equal(new[k], stored[k][:K])]
            bad += [(agent, k) for k in ("q_step", "q_pred", "q_return")
                    if not np.array_equal(new[k], stored[k][:M])]
    return bad


def test_logs_regenerate_bit_identically_prefix():
    """Each agent's first steps, retrained, equal the stored log's first
    entries exactly (the stored values are float32 of a deterministic run),
    both computed under the stated numerics of ``instructor/numerics.py`` (``make
    c-logs`` writes under them), so that CPUs with and without AVX-512 agree."""
    out = numerics.run_python("import json, test_c_diagnose as t; "
                              "print(json.dumps(t._prefix_mismatches()))")
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_stored_logs_are_the_writers_bytes_of_their_arrays():
    """make c-logs's writer depends on the arrays only: each stored file is
    exactly npz_bytes() of its own arrays (with the prefix test above, a
    retrained run gives the same bytes; bench/c_diagnose_facts.py compares
    every whole retrained log byte for byte, about 90 s of CPU)."""
    for f in sorted(judge.logs_dir(A.params).glob("run_*.npz")):
        with np.load(f, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        assert c_logs.npz_bytes(arrays) == f.read_bytes(), f.name


def test_reference_answer_block_is_current():
    """solutions/c_diagnose/diagnose.py holds the default instance's answers for
    the stored logs (make c-logs rewrites it)."""
    assert c_logs.with_answers(REFERENCE.read_text(), "", c_logs.answers_for(None)) == \
        REFERENCE.read_text()


# ----------------------------------------------------------------------------- zips
def test_student_zip_holds_no_agent_code_and_no_fault_labels(built_dist):
    student_zip, gs_zip = built_dist["c_diagnose"]
    zf = zipfile.ZipFile(student_zip)
    names = zf.namelist()
    assert "c_diagnose/diagnose.py" in names and "c_diagnose/c_diagnose.ipynb" in names
    assert {f"c_diagnose/logs/run_{i}.npz" for i in range(5)} <= set(names)
    assert not any("solutions" in n or "instructor" in n or "oracles" in n or "catalogue" in n
                   or n.endswith("c_diagnose.npz") for n in names), names
    text = "\n".join(zf.read(n).decode("utf-8", "replace") for n in names
                     if not n.endswith(".npz"))
    # no agent code: nothing of instructor/c_agents.py, no optimiser step, no PPO loop
    from autograder.commands.shipping import IDIOMS, significant_lines
    agent_lines = significant_lines((ROOT / "instructor" / "c_agents.py").read_text()) - IDIOMS
    shipped = significant_lines(text)
    assert len(agent_lines) > 50 and not agent_lines & shipped, agent_lines & shipped
    for word in ("minibatch_update", "train_dqn", "train_ppo", "compute_gae"):
        assert word not in text, word
    # no fault labels: neither the answer key nor the run -> agent map, anywhere
    toml = zf.read("c_diagnose/assignments/c_diagnose/assignment.toml").decode()
    assert "[hidden" not in toml and "agent_faults" not in toml and "small_buffer" not in toml
    assert "run_seeds" not in toml
    for n in names:
        if n.endswith(".npz"):
            blob = zf.read(n).lower()
            assert not any(a.encode() in blob for a in c_agents.AGENTS), n
    with zf.open("c_diagnose/autograder/expected/c_diagnose.public.npz") as f:
        public = np.load(f, allow_pickle=False)
        assert not any(k.startswith("q6/") or "hidden" in k for k in public.files)
    gs = zipfile.ZipFile(gs_zip).namelist()
    assert not any(n.startswith(("solutions/", "instructor/")) for n in gs)
    assert "student_template/c_diagnose/logs/run_0.npz" in gs


@pytest.mark.slow
def test_gradescope_zip_grades_reference_without_solutions(built_dist):
    res = zip_graded("c_diagnose", "solutions")
    assert res["extra_data"]["expected_source"] == "stored"
    assert res["score"] == A.total_points, json.dumps(res, indent=1)[:3000]
