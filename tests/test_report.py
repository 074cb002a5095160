"""The class report of ``grade-all`` (report.json, report.html): its counts
agree with grades.csv, each diagnosed catalogue mistake lands in its
diagnosis's group, near-copies are flagged and independent work is not, the
page opens in a real browser, ``--anonymous`` names nobody, and no
results.json changes."""
from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from autograder.catalogue import a_ppo as A_CATALOGUE
from autograder.catalogue import d_grpo as D_CATALOGUE
from autograder.catalogue.disguise import disguise
from autograder.commands import similarity as S
from autograder.commands.batch import grade_all
from autograder.commands.export import _safe_name
from autograder.commands.report import HTML_NAME, JSON_NAME, write_report
from autograder.commands.synthetic import disguised
from autograder.grading import config
from autograder.paths import DIST_DIR
from conftest import ROOT

Q6 = "q6_minibatch_update"
DIAGNOSED = [w for w in A_CATALOGUE.WRONG if w.diagnosis and Q6 in w.loses]
STYLE = next(r for r in A_CATALOGUE.RIGHT if r.name == "gae_one_environment_at_a_time")


# ============================================================================ a graded class
def _export(root: Path) -> tuple[Path, dict[str, dict]]:
    """A Gradescope export of capstone A: the reference, a blank, every mistake
    the judge diagnoses on q6, a correct style and a near-copy of it."""
    a = config.load("a_ppo")
    folder = root / "export"
    entries: dict[str, tuple[str, callable]] = {}
    people = {}

    def add(key: str, what: str, write) -> None:
        n = len(people) + 1
        people[f"submission_{1000 + n}"] = {"what": what, "name": f"Student {key}",
                                           "sid": f"9{n:05d}", "email": f"s{n}@example.edu"}
        write(folder / f"submission_{1000 + n}")

    def copy_from(src: Path):
        return lambda d: (d.mkdir(parents=True), [shutil.copy(src / f, d / f)
                                                  for f in a.submission_files])

    add("Reference", "reference", copy_from(ROOT / "solutions" / "a_ppo"))
    add("Blank", "blank", copy_from(ROOT / "student_template" / "a_ppo"))
    for w in DIAGNOSED:
        add(w.name, w.name, lambda d, w=w: w.write("a_ppo", d, a.submission_files))
    add("Style", STYLE.name, lambda d: STYLE.write("a_ppo", d, a.submission_files))
    style_dir = folder / f"submission_{1000 + len(people)}"
    add("Copy", "copy", lambda d: disguised(style_dir, d, a.submission_files, seed=7))
    yml = []
    for key, p in people.items():
        yml += [f"{key}:", "  :submitters:", f"  - :name: {p['name']}", f"    :sid: '{p['sid']}'",
                f"    :email: {p['email']}"]
    (folder / "submission_metadata.yml").write_text("\n".join(yml) + "\n")
    return folder, people


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    folder, people = _export(root)
    rows = grade_all("a_ppo", folder, questions=[Q6], jobs=2, show_progress=False,
                     echo=lambda *a: None)
    out = folder / "_grades"
    return {"folder": folder, "out": out, "people": people, "rows": rows,
            "report": json.loads((out / JSON_NAME).read_text())}


def _csv_by_submission(path: Path) -> dict[str, dict]:
    with open(path, newline="") as f:
        return {r["submission"]: r for r in csv.DictReader(f)}


@pytest.mark.slow
def test_report_counts_agree_with_grades_csv(graded_class):
    report, out = graded_class["report"], graded_class["out"]
    rows = _csv_by_submission(out / "grades.csv")
    assert report["submissions"] == len(rows) == len(graded_class["people"])
    totals = {s["submission"]: s["total"] for s in report["students"]}
    assert totals == {k: float(r["total"]) for k, r in rows.items()}
    q = next(q for q in report["questions"] if q["name"] == Q6)
    scores = [float(r[Q6]) for r in rows.values()]
    assert q["mean"] == pytest.approx(statistics.fmean(scores), abs=1e-6)
    assert q["zeros"] == sum(s <= 0 for s in scores)
    assert q["pass_rate"] == pytest.approx(sum(s >= q["points"] for s in scores) / len(scores),
                                           abs=1e-6)
    assert sum(report["totals"]["histogram"]["counts"]) == len(rows)
    # every lost point is in a group of causes, among the faults, or a whole submission's
    # (nothing implemented: the blank, counted once under "whole")
    explained = sum(g["points_lost"] for g in report["causes"][Q6]) + q["lost_to_faults"] \
        + q["lost_whole"]
    assert explained == pytest.approx(q["lost"], abs=1e-5) and q["lost"] > 0
    groups = report["causes"][Q6]
    assert groups == sorted(groups, key=lambda g: -g["points_lost"])


@pytest.mark.slow
def test_each_diagnosed_mistake_lands_in_its_diagnosis_group(graded_class):
    report, people = graded_class["report"], graded_class["people"]
    index = {s["submission"]: i for i, s in enumerate(report["students"])}
    by_what = {p["what"]: index[key] for key, p in people.items()}
    for w in DIAGNOSED:
        mine = [g for g in report["causes"][Q6] if by_what[w.name] in g["members"]]
        assert mine, f"{w.name} is in no group of {Q6}"
        assert any(w.diagnosis in g["diagnosis"] for g in mine), \
            f"{w.name}: groups {[g['diagnosis'] for g in mine]} lack {w.diagnosis!r}"
        for g in mine:
            assert g["count"] == len(g["members"])
            assert g["example"] and g["points_lost"] > 0
    for ok in ("reference", STYLE.name, "copy"):
        assert not any(by_what[ok] in g["members"] for g in report["causes"][Q6]), ok


@pytest.mark.slow
def test_graded_near_copy_is_flagged_and_report_links_results(graded_class):
    report, people = graded_class["report"], graded_class["people"]
    names = {key: p["what"] for key, p in people.items()}
    sim = report["similarity"]
    flagged = {frozenset((names[report["students"][p["a"]]["submission"]],
                          names[report["students"][p["b"]]["submission"]]))
               for p in sim["pairs"] if p["flagged"]}
    assert flagged == {frozenset((STYLE.name, "copy"))}, flagged
    html = (graded_class["out"] / HTML_NAME).read_text()
    for s in report["students"]:
        assert (graded_class["out"] / s["results"]).is_file()
        assert f'href="{s["results"]}"' in html
    assert "for review" in html


def _digests(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("results.json"))}


@pytest.mark.slow
def test_anonymous_report_names_nobody_and_results_stay_untouched(graded_class, tmp_path):
    out, rows = graded_class["out"], graded_class["rows"]
    before = _digests(out)
    a = config.load("a_ppo")
    dirs = {r.submission.name: out / _safe_name(r.submission.name) for r in rows}
    anon = tmp_path / "anon"
    anon.mkdir()
    write_report(anon, a, [a.question(Q6)], rows, dirs, anonymous=True, echo=lambda *x: None)
    write_report(out, a, [a.question(Q6)], rows, dirs, echo=lambda *x: None)
    assert _digests(out) == before
    for name in (JSON_NAME, HTML_NAME):
        text = (anon / name).read_text()
        for key, p in graded_class["people"].items():
            for secret in (key, p["name"], p["sid"], p["email"]):
                assert secret not in text, f"{secret} in the anonymous {name}"
    assert not re.search(r'href="(?!#)', (anon / HTML_NAME).read_text())   # no link out
    data = json.loads((anon / JSON_NAME).read_text())
    assert all(set(s) == {"label", "total", "status"} for s in data["students"])
    assert sorted(s["label"] for s in data["students"]) == \
        [f"student {i:03d}" for i in range(1, len(rows) + 1)]
    assert all("lines" not in p for p in data["similarity"]["pairs"])


# ============================================================================ the browser
def _chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on this machine (Debian: apt-get install chromium; .ci/run "
                    "installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (the dev extra pins it)")
    return path, sync_playwright


@pytest.mark.slow
def test_report_opens_in_a_headless_browser(graded_class):
    """No console error (the page's Content-Security-Policy makes any load an
    error), every chart draws marks, the flagged pair's code shows; the
    screenshot goes to dist/screenshots/ for the test log."""
    executable, sync_playwright = _chromium()
    page_path = graded_class["out"] / HTML_NAME
    shots = DIST_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            problems = []
            page.on("console", lambda m: problems.append(f"{m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            charts = page.evaluate("""() => [...document.querySelectorAll('svg.chart')].map(s =>
                [s.dataset.chart, [...s.querySelectorAll('rect.mark')].filter(r => {
                    const b = r.getBoundingClientRect(); return b.width > 0 && b.height > 0;
                }).length])""")
            page.screenshot(path=str(shots / "report-a_ppo.png"), full_page=True)
            opened = page.evaluate("""() => { const d = document.querySelector('details.pair');
                if (!d) return 0; d.open = true; d.scrollIntoView();
                return d.querySelectorAll('.code .m').length; }""")
            page.screenshot(path=str(shots / "report-a_ppo-pair.png"))
        finally:
            browser.close()
    print(f"screenshots: {shots / 'report-a_ppo.png'}, {shots / 'report-a_ppo-pair.png'}")
    assert not problems, problems
    assert {c for c, _ in charts} >= {"totals", "questions", "times"}, charts
    assert all(n > 0 for _, n in charts), charts
    assert opened > 0, "the flagged pair shows no matched lines"


# ============================================================================ similarity
HANDOUT_EXAMPLE = '''
def example_run(weight_fn, seed=0, updates=40, K=4):
    """The handout's worked example: train with a weight function, plot the success rate."""
    import matplotlib.pyplot as plt
    from rlkit.reinforce import train
    history = train(weight_fn, K=K, updates=updates, seed=seed)
    steps = np.arange(len(history["success"]))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(steps, history["success"], label=f"K = {K}")
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("update")
    ax.set_ylabel("success rate")
    ax.set_ylim(0.0, 1.0)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(f"figures/success_K{K}_seed{seed}.png", dpi=120)
    return history


def example_sweep(weight_fn, Ks=(1, 2, 4, 8), seeds=(0, 1, 2), updates=40):
    """The handout's K-sweep: the median final success rate for each group size."""
    table = {}
    for K in Ks:
        finals = []
        for seed in seeds:
            history = example_run(weight_fn, seed=seed, updates=updates, K=K)
            finals.append(history["success"][-1])
        table[K] = float(np.median(finals))
        print(f"K = {K:2d}: median final success {table[K]:.3f} over {len(seeds)} seeds")
    best = max(table, key=table.get)
    print(f"best group size: K = {best} ({table[best]:.3f})")
    return table
'''


def _d_documents(tmp_path: Path, extra: str = "", handout=None) -> dict[str, S.Document]:
    """The reference, a correct style written from the stub, a near-copy of
    that style, the blank stub: each with ``extra`` appended, without the
    lines of ``handout`` (default: the stub)."""
    filled = next(r for r in D_CATALOGUE.RIGHT if r.name == "written_from_the_stub")
    text = filled.write("d_grpo", tmp_path / "filled", ("grpo.py",)).joinpath("grpo.py").read_text()
    sources = {"reference": (ROOT / "solutions/d_grpo/grpo.py").read_text(), "filled": text,
               "copy": disguise(text, 3),
               "blank": (ROOT / "student_template/d_grpo/grpo.py").read_text()}
    given = S.handout_lines(handout or S.handout_texts("d_grpo"))
    return {k: S.without_handout(k, [("grpo.py", v + extra)], given)
            for k, v in sources.items()}


def _flagged(result: S.Similarity) -> set[frozenset]:
    return {frozenset((p.a, p.b)) for p in result.flagged}


def test_near_copy_is_flagged_and_independent_styles_are_not(tmp_path):
    docs = _d_documents(tmp_path)
    result = S.compare(list(docs.values()), S.handout_texts("d_grpo"))
    assert not result.error
    assert _flagged(result) == {frozenset(("filled", "copy"))}
    assert result.too_short == ["blank"]
    pair = result.flagged[0]
    assert pair.matched[0] and pair.matched[1]
    independent = [p for p in result.pairs if {p.a, p.b} == {"reference", "filled"}]
    assert all(p.score < S.FLAG_SHARE for p in independent)


def test_a_pair_that_copied_the_handouts_example_is_not_flagged(tmp_path):
    stub = S.handout_texts("d_grpo")
    handout = stub + [HANDOUT_EXAMPLE]
    docs = _d_documents(tmp_path, HANDOUT_EXAMPLE, handout)
    with_example = S.compare([docs["reference"], docs["filled"]], handout)
    assert _flagged(with_example) == set()
    docs = _d_documents(tmp_path, HANDOUT_EXAMPLE, stub)   # the example not in the handout
    without = S.compare([docs["reference"], docs["filled"]], stub)
    assert _flagged(without) == {frozenset(("reference", "filled"))}


def test_disguise_keeps_the_code_working(tmp_path):
    """A near-copy computes what its original computes."""
    import importlib.util
    import numpy as np
    text = disguise((ROOT / "solutions/d_grpo/grpo.py").read_text(), 5)
    assert text != (ROOT / "solutions/d_grpo/grpo.py").read_text()
    (tmp_path / "grpo_copy.py").write_text(text)
    spec = importlib.util.spec_from_file_location("grpo_copy", tmp_path / "grpo_copy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    np.testing.assert_allclose(mod.leave_one_out_weight(r),
                               r - (r.sum(axis=1, keepdims=True) - r) / 3)


# ============================================================================ roots and wholes
@pytest.mark.slow
def test_whole_submissions_count_once_and_a_cascade_groups_under_its_root(tmp_path):
    """A blank and an empty module are one "nothing implemented" line and a
    syntax error one "does not import" line (never per question, never among
    the faults); a sweep that fails because q2's weight fails is grouped
    under that root, not as a cause of its own."""
    from autograder.commands.export import Submission
    from autograder.commands.report import build
    from autograder.commands.tables import GRADED, Row
    from autograder.grading.grade import grade
    a = config.load("d_grpo")
    questions = [a.question(n) for n in ("q2_standardised", "q6_k_sweep")]
    sample = next(w for w in D_CATALOGUE.WRONG if w.name == "sample_std")
    writers = {
        "blank": lambda d: shutil.copytree(ROOT / "student_template" / "d_grpo", d),
        "empty": lambda d: (d.mkdir(), (d / "grpo.py").write_text("")),
        "syntax": lambda d: (d.mkdir(), (d / "grpo.py").write_text("def centred_weight(r)\n")),
        "ddof1": lambda d: sample.write("d_grpo", d, a.submission_files),
        "reference": lambda d: shutil.copytree(ROOT / "solutions" / "d_grpo", d),
    }
    rows = []
    for name, write in writers.items():
        write(tmp_path / name)
        report = grade("d_grpo", tmp_path / name, questions=[q.name for q in questions],
                       echo=False, in_process=True)
        rows.append(Row(Submission(name, tmp_path / name), report.to_gradescope(), GRADED))
    data = build(a, questions, rows, {}, tmp_path, anonymous=True)
    whole = {w["status"]: w["members"] for w in data["whole"]}
    assert whole == {"nothing_implemented": [0, 1], "import_error": [2]}, data["whole"]
    assert data["faults"] == []
    members = {i for groups in data["causes"].values() for g in groups for i in g["members"]}
    assert members == {3}                      # only the ddof=1 submission has causes
    q6 = data["causes"]["q6_k_sweep"]
    assert len(q6) == 1 and "fails in q2_standardised" in q6[0]["cause"], q6
    q2 = data["causes"]["q2_standardised"]
    assert any("ddof=1" in g["diagnosis"] for g in q2)
    for q in data["questions"]:
        explained = sum(g["points_lost"] for g in data["causes"][q["name"]]) \
            + q["lost_to_faults"] + q["lost_whole"]
        assert explained == pytest.approx(q["lost"], abs=1e-6)
