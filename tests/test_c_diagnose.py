"""Capstone C through the real harness: reference (several student ids),
template, per-student letters, evidence parsing, the logs' determinism, and
what the student zip must not hold (agent code, fault labels)."""
from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autograder.grading import config, expected
from autograder.grading.grade import grade
from autograder.grading.judging import HIDDEN_PHASE, Context
from autograder.grading.status import Kind, Status
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
    assert {q.name for q in A.questions if not q.public} == {*ANSWERS, "q7_unseen"}
    assert all(c.hidden for c in A.question("q7_unseen").cases)
    # the answer key covers every run, and names only faults of the vocabulary
    assert len(A.hidden["runs"]) == len(A.params["letters"]) == len(A.hidden["run_seeds"])
    assert set(A.hidden["agent_faults"]) == set(c_agents.AGENTS) == set(A.hidden["runs"])
    assert set(A.hidden["agent_faults"].values()) <= set(A.params["faults"])
    # each family's citations name its own statistics, and a healthy entry exists
    for fam, cites in A.params["cite"].items():
        assert "healthy" in cites
        stats = judge.PPO_STATS if fam == "ppo" else judge.DQN_STATS
        for fault, names in cites.items():
            assert fault in A.params["faults"] and set(names) <= set(stats), (fam, fault)
    # no threshold is handed out: the handout's toml names none
    assert "thresholds" not in A.params and "rules" not in A.params


def test_parts_are_the_old_weights_and_one_per_fault_and_log():
    """The parts keep the fractions of the old weights (q1 2:1:1, q2 1.5:0.5:1:1,
    q3 1.5:0.5:0.5:0.5, q4 1:1:1:1), q5 and q6 hold one part per fault of the
    key, q7 one per hidden log (plus the zero-point part the healthy logs
    require), q8 is graded by hand; each question owns its functions."""
    def fractions(name):
        q = A.question(name)
        return pytest.approx([p.points / q.points for p in q.parts], abs=1e-12)
    assert [0.5, 0.25, 0.25] == fractions("q1_entropy")
    assert [0.375, 0.125, 0.25, 0.25] == fractions("q2_kl_clip")
    assert [0.5, 1 / 6, 1 / 6, 1 / 6] == fractions("q3_critic")
    assert [0.25] * 4 == fractions("q4_replay")
    faults = set(A.hidden["agent_faults"].values())
    for name in ANSWERS:
        q = A.question(name)
        assert {p.id for p in q.parts} == faults and q.parts[-1].id == "healthy"
        assert all(p.cases == () for p in q.parts)          # the letters, not declared cases
    q7 = A.question("q7_unseen")
    found, log = q7.parts
    assert (found.points, log.points, log.each, log.requires) == (0, q7.points, "case", found.id)
    assert A.question("q8_mechanism").hand
    owned = [fn for q in A.questions for fn in q.functions]
    assert len(owned) == len(set(owned))
    assert set(owned) == set(judge.SHAPE_FROM) | {"diagnose"}


def test_the_stubs_summary_windows_are_the_judges():
    """The stub's given summary() uses the windows and clip width the judge's
    oracle uses (assignment.toml), so a right diagnose() cites the right numbers."""
    from autograder.grading.reference import load_reference
    ref = load_reference("c_diagnose", "diagnose.py")
    for module in (ref, STUB):
        ns = module.__dict__ if not isinstance(module, Path) else _constants(module)
        assert list(ns["EARLY"]) == A.params["early"] and list(ns["LATE"]) == A.params["late"]
        assert ns["CLIP_EPS"] == A.params["clip_eps"]
    assert tuple(ref.FAULTS) == tuple(A.params["faults"])


def _constants(path: Path) -> dict:
    import ast
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def test_reference_gets_full_marks():
    report = graded("c_diagnose", "solutions")
    assert [q.score for q in report.questions] == [q.points for q in A.questions], report.table()


def test_blank_template_gets_zero_and_says_why():
    report = graded("c_diagnose", "student_template")
    assert report.score == 0, report.table()
    assert report.status == Status.NOTHING_IMPLEMENTED, report.table()
    by_name = {q.name: q for q in report.questions}
    for name in ("q1_entropy", *ANSWERS, "q7_unseen"):
        assert by_name[name].status == Status.NOT_IMPLEMENTED, name
    for name in ANSWERS:
        assert all(p["kind"] == Kind.NOT_IMPLEMENTED and p["fn"] == "diagnose"
                   for p in by_name[name].parts), name
    q7 = by_name["q7_unseen"].parts
    assert len(q7) == 1 + len(A.question("q7_unseen").cases)
    assert all(p["kind"] == Kind.NOT_IMPLEMENTED for p in q7)


def test_reference_full_marks_for_several_student_ids(tmp_path):
    """The reference derives its diagnosis from the logs (diagnose() is a
    function of the log), so it keeps full marks under any id: several
    Gradescope ids in the metadata (an instructor's "Test autograder" upload),
    a STUDENT_ID of its own that differs from the metadata's, and no id at all."""
    sub = _sub(tmp_path, REFERENCE.read_text(), "ref")
    for sid in ("12345678", "alice@example.edu", "s0042", "87654321"):
        report = grade("c_diagnose", sub, questions=list(ANSWERS), echo=False,
                       metadata=_metadata(tmp_path, sid))
        assert report.student_id == sid
        assert report.score == report.max_score, report.table()
    own = _sub(tmp_path, REFERENCE.read_text().replace('STUDENT_ID = ""',
                                                       'STUDENT_ID = "s0042"'), "own")
    for meta in (None, _metadata(tmp_path, "99999999")):
        report = grade("c_diagnose", own, questions=list(ANSWERS), echo=False, metadata=meta)
        assert report.score == report.max_score, report.table()
    assert "not the id this grading uses ('99999999')" in report.questions[0].output
    report = grade("c_diagnose", sub, questions=["q5_faults"], echo=False,
                   metadata=_metadata(tmp_path, "87654321"))
    assert "STUDENT_ID in diagnose.py is empty: graded the letters of '87654321'" in \
        report.questions[0].output


def _answer_fraction(module, sid: str, question: str) -> float:
    exp, _, public_keys = expected.load(A, list(ANSWERS))
    caller = InProcessCaller(module)
    ctx = Context(caller.call, A.params, public_only=False, expected=exp,
                  public_keys=set(public_keys), student_id=sid, constant=caller.constant,
                  hidden=A.hidden, question=A.question(question))
    return judge.QUESTIONS[question](ctx).fraction


def test_answers_in_process_for_many_ids():
    """q5 and q6 of the reference under 12 ids (the same judge code, in-process)."""
    from autograder.grading.reference import load_reference
    ref = load_reference("c_diagnose", "diagnose.py")
    for sid in [f"id-{i}" for i in range(12)]:
        for q in ANSWERS:
            assert _answer_fraction(ref, sid, q) == 1.0, (sid, q)


def test_letters_differ_between_students_and_repeat_for_one():
    p = A.params
    seen = {sid: tuple(judge.letters_for(sid, p).values()) for sid in
            [f"s{i:03d}" for i in range(200)]}
    assert len(set(seen.values())) > 80                          # of 120 orders
    assert judge.letters_for("s007", p) == judge.letters_for(" s007 ", p)
    assert judge.letters_for(None, p) == judge.letters_for("", p)
    for order in seen.values():
        assert sorted(order) == list(range(len(p["letters"])))


# ----------------------------------------------------------------------------- evidence
def test_the_references_rule_names_every_shipped_log():
    """The reference's diagnose() names the key's fault on every shipped log and
    cites what assignment.toml's [params.cite] asks (bench/c_diagnose_facts.py
    measures its margins over more seeds)."""
    from autograder.grading.reference import load_reference
    ref = load_reference("c_diagnose", "diagnose.py")
    p, h = A.params, A.hidden
    for run, agent in enumerate(h["runs"]):
        log = judge.load_run(run, p)
        fault, evidence = ref.diagnose(log)
        assert fault == h["agent_faults"][agent], (agent, fault)
        assert set(p["cite"][judge.family(log)][fault]) <= set(evidence)


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


def _stored_runs() -> list[tuple[str, int, dict, Path]]:
    """(agent, seed, overrides, file) of every stored log: the five shipped ones
    and q7's hidden pool."""
    p, h = A.params, A.hidden
    out = [(agent, int(h["run_seeds"][run]), {}, judge.logs_dir(p) / f"run_{run}.npz")
           for run, agent in enumerate(h["runs"])]
    for case in c_logs.pool_cases(A):
        knob = c_agents.SEVERITY.get(case.agent)
        over = {} if case.severity is None else {
            knob: int(case.severity) if knob == "buffer_size" else float(case.severity)}
        out.append((case.agent, int(case.seed), over, judge.pool_path(case, h)))
    return out


def _prefix_mismatches() -> list:
    """(agent, array) of every stored log whose first entries differ from a retrain."""
    bad = []
    for agent, seed, over, path in _stored_runs():
        stored = np.load(path, allow_pickle=False)
        if agent in c_agents.PPO_OVERRIDES:
            # update 0 depends on nothing later (its learning rate is the full lr)
            new = c_logs.compact(c_agents.train_ppo(agent, seed, updates=1, overrides=over))
            bad += [(agent, k) for k in ("logits_before", "logits_after", "actions", "values",
                                         "value_targets")
                    if not np.array_equal(new[k][0], stored[k][0])]
        else:
            saved = c_agents.DQN_HP["total_steps"]
            starts = {**c_agents.DQN_HP, **c_agents.DQN_OVERRIDES[agent], **over}[
                "learning_starts"]
            try:          # 1500 steps of learning (a late start's random steps before them)
                c_agents.DQN_HP["total_steps"] = starts + 1500
                new = c_logs.compact(c_agents.train_dqn(agent, seed, overrides=over))
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


@pytest.mark.slow          # 27 stored logs retrained in part: about 20 s of CPU
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
    for *_, f in _stored_runs():
        with np.load(f, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        assert c_logs.npz_bytes(arrays) == f.read_bytes(), f.name


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
        assert not any(k.startswith(("q5_", "q6_", "q7_")) or "hidden" in k or "@" in k
                       for k in public.files), public.files
    gs = zipfile.ZipFile(gs_zip).namelist()
    assert not any(n.startswith(("solutions/", "instructor/")) for n in gs)
    assert "student_template/c_diagnose/logs/run_0.npz" in gs
    pool = {f"{A.hidden['pool_dir']}/{c.name}.npz" for c in c_logs.pool_cases(A)}
    assert pool <= set(gs) and not any("hidden_logs" in n for n in names)


@pytest.mark.slow
def test_gradescope_zip_grades_reference_without_solutions(built_dist):
    res = zip_graded("c_diagnose", "solutions")
    assert res["extra_data"]["expected_source"] == "stored"
    assert res["score"] == A.total_points, json.dumps(res, indent=1)[:3000]


def _module(path: Path, name: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_evidence_tolerance_passes_4_digits_and_fails_the_closest_wrong_diagnostic(tmp_path):
    """Rounded to the 4 significant digits the stub and the notebook allow, every
    statistic of every shipped log is within the evidence tolerance; the statistic
    of a catalogued wrong diagnostic (q1-q4) nearest to the truth is outside it."""
    import warnings
    from autograder.catalogue import c_diagnose as catalogue
    from autograder.oracles import c_diagnose as oracle
    tol = A.params["tolerance"]
    rtol, atol = tol["evidence_rtol"], tol["evidence_atol"]
    logs = [judge.load_run(i, A.params) for i in range(len(A.params["letters"]))]
    truths = [judge.summary(log, oracle.DIAGNOSTICS, A.params) for log in logs]
    for t in truths:
        for v in t.values():
            assert abs(float(f"{v:.4g}") - v) <= atol + rtol * abs(v), v
    nearest = (math.inf, "")
    for w in catalogue.WRONG:
        if not set(w.loses) & {"q1_entropy", "q2_kl_clip", "q3_critic", "q4_replay"}:
            continue
        d = w.write("c_diagnose", tmp_path / w.name, A.submission_files)
        module = _module(d / "diagnose.py", f"wrong_{w.name}")
        for log, truth in zip(logs, truths):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = module.summary(log)
            for k, v in got.items():
                off = abs(v - truth[k])
                if np.isfinite(v) and off > 1e-9 * max(1.0, abs(truth[k])):
                    nearest = min(nearest, (off / (atol + rtol * abs(truth[k])), f"{w.name} {k}"))
    print(f"closest wrong statistic: {nearest[1]}, {nearest[0]:.3g} x the tolerance")
    assert nearest[0] > 1.0, nearest


# ----------------------------------------------------------------------------- q7's pool
def test_pool_logs_are_the_hidden_cases_and_hold_no_label():
    cases = c_logs.pool_cases(A)
    files = sorted((ROOT / A.hidden["pool_dir"]).glob("*.npz"))
    assert [f.stem for f in files] == sorted(c.name for c in cases)
    assert {c.fault for c in cases} == {"healthy", "saturated_policy", "untrained_critic",
                                        "undersized_buffer"}
    # each fault at two severities or forms, healthy decoys of both algorithms
    for fault in ("saturated_policy", "untrained_critic", "undersized_buffer"):
        forms = {(c.agent, c.severity) for c in cases if c.fault == fault}
        assert len(forms) >= 2, fault
    healthy = [judge.family(judge._load(judge.pool_path(c, A.hidden))) for c in cases
               if c.fault == "healthy"]
    assert healthy.count("ppo") >= 3 and healthy.count("dqn") >= 3
    assert not {(c.agent, c.seed) for c in cases} & set(zip(A.hidden["runs"],
                                                             A.hidden["run_seeds"]))
    names = set(c_agents.PPO_OVERRIDES) | set(c_agents.DQN_OVERRIDES) | set(A.params["faults"])
    for f in files:
        with np.load(f, allow_pickle=False) as data:
            assert set(data.files) in (set(judge.PPO_KEYS), set(judge.DQN_KEYS)), f
        with zipfile.ZipFile(f) as zf:
            blob = b"".join(zf.read(n) for n in zf.namelist()).lower()
        assert not any(n.encode() in blob for n in names), f
    assert sum(f.stat().st_size for f in files) < 8e6


def test_the_references_rule_names_every_hidden_log_with_margin():
    """Acceptance: the reference's own rule gets every hidden log right, each
    statistic it reads at least 1.5x away from its threshold."""
    from instructor import c_pool
    rows = c_pool.reference_margins(A)
    assert all(named == fault for _, fault, named, _ in rows), rows
    assert min(m for *_, m in rows) >= 1.5, rows


def _held_out_points():
    """The held-out logs of bench/data/c_pool_heldout.json as points, each weighted by
    its configuration's count in the pool, after checking they are the pool's."""
    from collections import Counter
    from instructor import c_pool
    data = json.loads((ROOT / "bench" / "data" / "c_pool_heldout.json").read_text())
    cases = c_logs.pool_cases(A)
    comp = c_pool.composition(cases)
    rows, seeds = data["logs"], data["seeds"]
    assert not set(seeds) & {c.seed for c in cases}
    have = Counter((r["agent"], r["severity"], r["fault"]) for r in rows)
    assert set(have) == set(comp) and set(have.values()) == {len(seeds)}, (have, comp)
    return rows, [(r["fault"], r["family"], r["features"]) for r in rows
                  for _ in range(comp[(r["agent"], r["severity"], r["fault"])])]


def test_return_features_do_not_name_the_hidden_faults():
    """Acceptance: a rule on mean return, first-half mean, final return or episode
    count (or all four), calibrated on the public logs (what a student has), names
    fewer than half the hidden logs right; so does one answer per family.
    (Leave-one-out over the hidden answers and cuts fitted on the hidden logs are
    printed as bounds: no student has those answers.)"""
    from instructor import c_pool
    shares = c_pool.return_classifiers(A)
    student = {k: shares[k] for k in c_pool.BAR}
    print(student)
    assert max(student.values()) < 0.5, student


def test_the_pool_holds_on_held_out_seeds():
    """The pool's composition, trained again from seeds it was not chosen on
    (bench/c_pool_heldout.py, stored in bench/data/c_pool_heldout.json): the
    reference names every held-out log with margin, and the rules a student can
    calibrate on the public logs name fewer than half right, each configuration
    weighted by its count in the pool. A pool edited without re-running the
    bench fails here."""
    from instructor import c_pool
    rows, points = _held_out_points()
    assert all(r["reference"] == r["fault"] and r["margin"] >= 1.5 for r in rows), \
        [r for r in rows if r["reference"] != r["fault"] or r["margin"] < 1.5]
    shares = c_pool.return_classifiers(A, points)
    student = {k: shares[k] for k in c_pool.BAR}
    print(student)
    assert max(student.values()) < 0.5, student


@pytest.mark.slow          # 200 id pairs through the judge in-process: about 8 s of CPU
def test_a_shared_public_diagnosis_earns_no_more_than_a_guess():
    """Acceptance, over 200 (classmate, student) id pairs: a classmate's right
    mapping of the public letters, copied as is or translated through the public
    letters_for into a lookup of the public logs (healthy for any other log),
    earns on q5-q7 no more than a diagnose() that guesses; the reference earns all."""
    from instructor import c_pool
    s = c_pool.sharing(200, A)
    print(f"q5-q7 points over {s['pairs']:.0f} id pairs, of {s['max']:g}: copied "
          f"{s['copied']:.2f}, translated {s['translated']:.2f}, guess {s['guess']:.2f}")
    assert s["copied"] <= s["guess"] and s["translated"] <= s["guess"], s
    assert s["reference"] == s["max"], s


def test_mechanism_reaches_the_results_for_hand_grading():
    report = graded("c_diagnose", "solutions")
    q8 = next(q for q in report.questions if q.name == "q8_mechanism")
    assert q8.max_score == 0 and "graded by hand with the rubric" in q8.output
    assert "a near one-hot softmax" in q8.output and "note:" not in q8.output
    assert (ROOT / "assignments" / "c_diagnose" / "rubric.md").is_file()
    blank = graded("c_diagnose", "student_template")
    assert "MECHANISM is empty" in next(q for q in blank.questions
                                        if q.name == "q8_mechanism").output


# ----------------------------------------------------------------------------- blame, the gate
def _entry(name: str, tmp_path: Path) -> Path:
    from autograder.catalogue import c_diagnose as catalogue
    entry = next(w for w in catalogue.WRONG + catalogue.RIGHT if w.name == name)
    return entry.write("c_diagnose", tmp_path / name, A.submission_files)


def test_a_string_from_value_loss_is_the_submissions_failure_and_gradable(tmp_path):
    """Issue 36's blame case: value_loss() answers a string, and the evidence
    diagnose() cites is wrong, so the judge runs the student's value_loss() on
    the log to say where the number comes from. That string used to be
    converted outside any check (q6 and q7 "autograder fault", PrairieLearn
    "gradable": false). Now it fails q3 at the gate, and q6's and q7's parts it
    touches name value_loss() and q3 first; nothing is the grader's fault."""
    sub = _entry("value_loss_returns_a_report_line", tmp_path)
    report = grade("c_diagnose", sub, questions=["q3_critic", "q6_evidence", "q7_unseen"],
                   echo=False)
    by_name = {q.name: q for q in report.questions}
    assert all(q.status == Status.FAILED and q.score < q.max_score
               for q in report.questions), report.table()
    gated = [p for p in by_name["q3_critic"].parts if not p["passed"]]
    assert {p["id"] for p in gated} == {"value_loss", "logs"}
    assert all(p["kind"] == Kind.SHAPE and p["fn"] == "value_loss" for p in gated)
    for name in ("q6_evidence", "q7_unseen"):
        failed = [p for p in by_name[name].parts if not p["passed"]]
        assert failed and all(p["fn"] == "value_loss" and p["kind"] == Kind.VALUE
                              and "q3_critic" in p["cause"] for p in failed), failed
        assert all("value_loss() gives no usable late_value_loss" in p["diagnosis"]
                   for p in failed)
    assert {p["id"] for p in by_name["q6_evidence"].parts if not p["passed"]} == \
        {"untrained_critic", "healthy"}
    assert report.not_gradable() == []
    assert report.to_prairielearn()["gradable"] is True


def test_an_evidence_of_the_wrong_form_costs_the_evidence_only(tmp_path):
    """diagnose()'s evidence passes a lenient gate: a string instead of the
    dict keeps q5 (the faults are right) and fails each q6 part as a shape."""
    sub = _entry("evidence_as_a_string", tmp_path)
    report = grade("c_diagnose", sub, questions=list(ANSWERS), echo=False, in_process=True)
    q5, q6 = report.questions
    assert q5.score == q5.max_score, q5.output
    assert q6.score == 0 and {p["kind"] for p in q6.parts} == {Kind.SHAPE}
    assert all(p["fn"] == "diagnose" and p["cause"] == "" for p in q6.parts)


# ----------------------------------------------------------------------------- q7's order
def _q7_labels(module, sid):
    """{hidden case label: q7 case name} the judge showed student ``sid`` (the
    reference passes every log; the instructors' record says which is which)."""
    exp, _, _ = expected.load(A, ["q7_unseen"])
    caller = InProcessCaller(module)
    ctx = Context(caller.call, A.params, public_only=False, expected=exp, student_id=sid,
                  constant=caller.constant, hidden=A.hidden, question=A.question("q7_unseen"),
                  phase=HIDDEN_PHASE)
    outcome = judge.QUESTIONS["q7_unseen"](ctx)
    assert outcome.fraction == 1.0, outcome.lines
    assert [p.instance for p in outcome.parts if p.id == "log"] == \
        [f"log[hidden case {i} of 27]" for i in range(1, 28)]
    return {r["label"]: r["case"] for r in ctx.reveal}


def test_hidden_logs_are_numbered_per_student():
    """Each student meets q7's hidden logs in an order and numbering of their
    own: "hidden case k" names different logs for two ids, the same log for one
    id graded twice."""
    from autograder.grading.reference import load_reference
    ref = load_reference("c_diagnose", "diagnose.py")
    a, b = _q7_labels(ref, "s0001"), _q7_labels(ref, "s0002")
    assert sorted(a.values()) == sorted(c.name for c in A.question("q7_unseen").cases)
    assert len(a) == len(b) == 27 and sorted(a.values()) == sorted(b.values())
    assert sum(a[k] != b[k] for k in a) >= 20, (a, b)
    assert _q7_labels(ref, "s0001") == a


BAD_ANSWERS = {      # diagnose()'s answer -> the kind of q5's failures (None: q5 keeps it)
    "None": Kind.SHAPE,
    "('healthy',)": Kind.SHAPE,
    "('healthy', {}, 1.0)": Kind.SHAPE,
    "(3, {})": Kind.SHAPE,
    "('no_such_fault', {})": Kind.VALUE,
    "(_right(log)[0], {'early_entropy': [0.1, 0.2]})": None,
    "(_right(log)[0], {'early_entropy': float('nan')})": None,
    "(_right(log)[0], {f'stat_{i}': 1.0 for i in range(5000)})": None,
    "(_right(log)[0], {'EARLY_ENTROPY': '0.61'})": None,
}


@pytest.mark.parametrize("answer", list(BAD_ANSWERS))
def test_malformed_answers_of_diagnose_are_the_submissions(answer, tmp_path):
    """Whatever diagnose() answers, the grade is the submission's: a pair of
    the wrong form or an unknown fault fails q5 (and so q6, q7) as a shape or
    a value; a right fault beside a malformed evidence keeps q5 and loses the
    evidence only. Never an autograder fault."""
    text = REFERENCE.read_text() + f"\n\n_right = diagnose\n\n\ndef diagnose(log):\n" \
                                   f"    return {answer}\n"
    report = grade("c_diagnose", _sub(tmp_path, text), echo=False, in_process=True,
                   questions=[*ANSWERS, "q7_unseen"])
    q5, q6, q7 = report.questions
    assert not any(q.status == Status.AUTOGRADER_FAULT for q in report.questions)
    assert q6.score < q6.max_score and q7.score == 0, report.table()
    kind = BAD_ANSWERS[answer]
    if kind is None:
        assert q5.score == q5.max_score, q5.output
        assert {p["kind"] for p in q6.parts} <= {Kind.SHAPE, Kind.VALUE, Kind.NONFINITE}
    else:
        assert q5.score == 0 and {p["kind"] for p in q5.parts} == {kind}, q5.output
