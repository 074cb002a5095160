"""The class report of ``grade-all`` (report.json, report.html): its counts
agree with grades.csv, each diagnosed catalogue mistake lands in its
diagnosis's group, every student is on the roster (zeros first, named in the
header) and one click opens their feedback on the page itself, near-copies
are flagged and independent work is not, a leaked solution copied by many is
one cluster, the page opens in a real browser and works copied alone,
``--anonymous`` names nobody and shows no code or feedback text, every name,
message and line of code is escaped, and no results.json changes."""
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
from autograder.commands.synthetic import as_export, disguised
from autograder.grading import config
from autograder.paths import DIST_DIR
from conftest import ROOT

Q6 = "q6_minibatch_update"
DIAGNOSED = [w for w in A_CATALOGUE.WRONG if w.diagnosis and Q6 in w.loses]
STYLE = next(r for r in A_CATALOGUE.RIGHT if r.name == "gae_one_environment_at_a_time")
FILLED = next(r for r in D_CATALOGUE.RIGHT if r.name == "written_from_the_stub")


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
def test_graded_class_derived_from_the_reference_is_one_cluster(graded_class):
    """The reference, each mistake (the reference with a line changed), the
    correct style (likewise) and its near-copy all share the reference's code:
    one cluster, the blank too short to compare; every student's name links to
    their feedback on the page, and their results.json stays linked as an extra."""
    report, people = graded_class["report"], graded_class["people"]
    names = {key: p["what"] for key, p in people.items()}
    sim = report["similarity"]
    what = [names[s["submission"]] for s in report["students"]]
    assert [sorted(what[i] for i in c["members"]) for c in sim["clusters"]] == \
        [sorted(w for w in what if w != "blank")], sim["clusters"]
    assert [what[i] for i in sim["too_short"]] == ["blank"]
    html = (graded_class["out"] / HTML_NAME).read_text()
    for i, s in enumerate(report["students"]):
        assert (graded_class["out"] / s["results"]).is_file()
        assert f'href="{s["results"]}"' in html and f'id="s-{i}"' in html
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
    assert all(set(s) == {"label", "total", "status", "state", "lost", "attempted", "similar"}
               for s in data["students"])
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


BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]


def _open(browser, path: Path, problems: list):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page


def _panel_opens(page, row: int) -> dict:
    """Click roster row ``row``'s student link; what the panel then shows."""
    page.click(f"#r-{row} a[href='#s-{row}']")
    panel = page.locator(f"#s-{row}")
    box = panel.bounding_box()
    return {"visible": panel.is_visible(), "width": box["width"] if box else 0,
            "text": panel.inner_text() if panel.is_visible() else "",
            "hash": page.evaluate("() => location.hash")}


@pytest.mark.slow
def test_report_opens_in_a_headless_browser_and_works_copied_alone(d_export, tmp_path):
    """No console error (the page's Content-Security-Policy makes any load an
    error), every chart draws marks, the flagged pair's code shows; a click on
    a student's roster row opens their feedback (every question's feedback as
    they see it) and its close link hides it; report.html copied alone to
    another folder does all of this too. Screenshots go to dist/screenshots/."""
    executable, sync_playwright = _chromium()
    out, report = d_export["out"], d_export["report"]
    alone = tmp_path / "elsewhere" / "copied.html"
    alone.parent.mkdir()
    shutil.copyfile(out / HTML_NAME, alone)
    zero = report["zeros"][0]
    graded = next(i for i in report["roster"] if report["students"][i]["state"] == "graded"
                  and report["students"][i]["lost"])
    shots = DIST_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    seen = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=BROWSER_ARGS)
        try:
            for where, path in (("in-place", out / HTML_NAME), ("copied-alone", alone)):
                problems: list = []
                page = _open(browser, path, problems)
                charts = page.evaluate("""() => [...document.querySelectorAll('svg.chart')].map(
                    s => [s.dataset.chart, [...s.querySelectorAll('rect.mark')].filter(r => {
                    const b = r.getBoundingClientRect(); return b.width > 0 && b.height > 0;
                    }).length])""")
                hidden_before = not page.locator(f"#s-{graded}").is_visible()
                opened = {i: _panel_opens(page, i) for i in (zero, graded)}
                page.screenshot(path=str(shots / f"report-d_grpo-feedback-{where}.png"))
                page.click(f"#s-{graded} a.close")
                closed = not page.locator(f"#s-{graded}").is_visible()
                pair = page.evaluate("""() => { const d = document.querySelector('details.pair');
                    if (!d) return 0; d.open = true; return d.querySelectorAll('.code .m').length; }""")
                # every line label of the side-by-side ends before its line of code starts
                overlaps = page.evaluate("""() => [...document.querySelectorAll(
                    'details.pair .code .ln')].filter(ln => {
                    const code = ln.nextSibling; if (!code || !code.textContent.trim()) return false;
                    const r = document.createRange(); r.selectNodeContents(code);
                    return r.getBoundingClientRect().left < ln.getBoundingClientRect().right;
                    }).map(ln => ln.textContent)""")
                pair = (pair, overlaps)
                if where == "in-place":
                    page.goto((out / HTML_NAME).as_uri())
                    page.screenshot(path=str(shots / "report-d_grpo.png"), full_page=True)
                seen[where] = (problems, charts, hidden_before, opened, closed, pair)
        finally:
            browser.close()
    data = {i: json.loads((out / report["students"][i]["results"]).read_text())
            for i in (zero, graded)}
    for where, (problems, charts, hidden_before, opened, closed, pair) in seen.items():
        assert not problems, (where, problems)
        assert {c for c, _ in charts} >= {"totals", "questions", "times"}, (where, charts)
        assert all(n > 0 for _, n in charts), (where, charts)
        assert hidden_before and closed, where
        for i, got in opened.items():
            assert got["visible"] and got["width"] > 300 and got["hash"] == f"#s-{i}", (where, got)
            assert report["students"][i]["label"] in got["text"], where
            for t in data[i]["tests"]:                  # every question, as the student sees it
                assert t["name"] in got["text"], (where, t["name"])
                for line in t["output"].splitlines()[:3]:
                    assert line.strip() in got["text"], (where, line)
        assert pair[0] > 0, f"{where}: the flagged pair shows no matched lines"
        assert not pair[1], f"{where}: line labels run into the code: {pair[1][:5]}"


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
    text = FILLED.write("d_grpo", tmp_path / "filled", ("grpo.py",)).joinpath("grpo.py").read_text()
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


# ============================================================================ capstone D's class
D_QUESTIONS = ["q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip"]
LEAKED = ("sample_std", "no_epsilon", "loo_off_by_one", "clip_wrong_side", "ratio_inverted",
          "centre_by_global_mean")


def _d_class(folder: Path) -> list[str]:
    """The issue's class (capstone D): the reference, three renamed copies of
    it, six mistakes and a correct style made from it (11 from one source),
    the stub filled in another hand, a blank, an empty module and one that
    does not import."""
    a = config.load("d_grpo")
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "solutions" / "d_grpo", folder / "reference")
    for i in (1, 2, 3):
        disguised(folder / "reference", folder / f"renamed-{i}", a.submission_files, seed=i)
    for name in LEAKED:
        next(w for w in D_CATALOGUE.WRONG if w.name == name).write(
            "d_grpo", folder / f"wrong-{name}", a.submission_files)
    D_CATALOGUE.RIGHT[0].write("d_grpo", folder / "right-style", a.submission_files)
    FILLED.write("d_grpo", folder / "own-work", a.submission_files)
    shutil.copytree(ROOT / "student_template" / "d_grpo", folder / "blank")
    (folder / "empty").mkdir()
    (folder / "empty" / "grpo.py").write_text("")
    (folder / "syntax").mkdir()
    (folder / "syntax" / "grpo.py").write_text("def centred_weight(r)\n    return r\n")
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="module")
def d_export(tmp_path_factory):
    folder = tmp_path_factory.mktemp("d_report") / "export"
    people = as_export(folder, _d_class(folder))
    rows = grade_all("d_grpo", folder, questions=D_QUESTIONS, jobs=2, show_progress=False,
                     echo=lambda *a: None)
    out = folder / "_grades"
    report = json.loads((out / JSON_NAME).read_text())
    what = {i: people[s["submission"]]["what"] for i, s in enumerate(report["students"])}
    return {"folder": folder, "out": out, "people": people, "rows": rows, "report": report,
            "what": what, "html": (out / HTML_NAME).read_text()}


@pytest.mark.slow
def test_roster_lists_everyone_zeros_first_and_the_header_names_them(d_export):
    report, what, html = d_export["report"], d_export["what"], d_export["html"]
    students, roster = report["students"], report["roster"]
    assert sorted(roster) == list(range(len(students))) == sorted(what)
    totals = [students[i]["total"] for i in roster]
    assert totals == sorted(totals)
    assert {what[i] for i in roster[:2]} == {"blank", "empty"} == \
        {what[i] for i in report["non_attempts"]}            # attempted nothing: first
    assert what[roster[2]] == "syntax" and students[roster[2]]["state"] == "import_error"
    assert {what[i] for i in report["zeros"]} == {"blank", "empty", "syntax"}
    assert all(students[i]["state"] == "nothing_implemented" for i in roster[:2])
    header = html[html.index('<p class="sub">'):]
    header = header[:header.index("</p>")]
    assert "3 scored 0" in header and "(2 of them attempted nothing)" in header
    for i in report["zeros"]:                  # named in the header, a link to their feedback
        assert f'<a href="#s-{i}">{students[i]["label"]}</a>' in header
    for i in roster:                           # one roster row each, opening their feedback
        assert html.count(f'<tr id="r-{i}">') == 1
        assert f'<tr id="r-{i}"><td class="n">{roster.index(i) + 1}</td><td><a href="#s-{i}">' \
            in html
        assert html.count(f'<section class="fb" id="s-{i}">') == 1
    sample_std = next(i for i, w in what.items() if w == "wrong-sample_std")
    assert [q for q, _ in students[sample_std]["lost"]] == ["q2_standardised"]
    assert students[next(i for i, w in what.items() if w == "reference")]["lost"] == []


@pytest.mark.slow
def test_each_panel_holds_the_feedback_the_student_sees(d_export):
    """Every question's feedback of each student's results.json, escaped, in
    their panel: the page needs nothing else (its only links out are the
    results.json extras)."""
    from html import escape
    report, html, out = d_export["report"], d_export["html"], d_export["out"]
    for i, st in enumerate(report["students"]):
        start = html.index(f'<section class="fb" id="s-{i}">')
        panel = html[start:html.index("</section>", start)]
        data = json.loads((out / st["results"]).read_text())
        for t in data["tests"]:
            assert escape(t["name"]) in panel and escape(t["output"]) in panel, (i, t["name"])
    links = set(re.findall(r'href="([^"]*)"', html))
    assert {l for l in links if not l.startswith("#")} == \
        {s["results"] for s in report["students"]}


@pytest.mark.slow
def test_the_leaked_solution_is_one_cluster_and_its_copies_are_not_too_short(d_export):
    report, what, html = d_export["report"], d_export["what"], d_export["html"]
    sim = report["similarity"]
    assert len(sim["clusters"]) == 1, sim["clusters"]
    cluster = sim["clusters"][0]
    derived = {"reference", "renamed-1", "renamed-2", "renamed-3", "right-style",
               *(f"wrong-{n}" for n in LEAKED)}
    assert {what[i] for i in cluster["members"]} == derived and cluster["size"] == 11
    assert cluster["share"] >= 0.9 and cluster["pairs"] == 55, cluster
    assert f"11 submissions share {100 * cluster['share']:.0f} % of their code" in html
    assert {what[i] for i in sim["too_short"]} == {"blank", "empty", "syntax"}
    for i in cluster["members"]:
        assert report["students"][i]["similar"]["cluster"] == 0
        assert f'href="#cluster-1">cluster 1 (11)</a>' in html
    own = next(i for i, w in what.items() if w == "own-work")
    assert report["students"][own]["similar"] == {"cluster": None, "pairs": []}


@pytest.mark.slow
def test_anonymous_report_of_the_class_names_nobody_and_quotes_nothing(d_export, tmp_path):
    """--anonymous: no name, id or email, no code, no feedback text (a part's
    message or an exception's text could carry anything the student wrote);
    each panel shows the scores and the failed parts' ids and kinds."""
    out, rows = d_export["out"], d_export["rows"]
    a = config.load("d_grpo")
    dirs = {r.submission.name: out / _safe_name(r.submission.name) for r in rows}
    write_report(tmp_path, a, [a.question(q) for q in D_QUESTIONS], rows, dirs,
                 anonymous=True, echo=lambda *x: None)
    html = (tmp_path / HTML_NAME).read_text()
    data = json.loads((tmp_path / JSON_NAME).read_text())
    for name in (JSON_NAME, HTML_NAME):
        text = (tmp_path / name).read_text()
        for key, p in d_export["people"].items():
            for secret in (key, p["name"], p["sid"], p["email"]):
                assert secret not in text, f"{secret} in the anonymous {name}"
    assert not re.search(r'href="(?!#)', html) and 'class="code"' not in html
    assert "diagnosis" not in html.split('<section class="fb"', 1)[1]     # no feedback text
    assert "expected" not in html.split('<section class="fb"', 1)[1]
    assert len(data["similarity"]["clusters"]) == 1
    sample_std = next(i for i, w in d_export["what"].items() if w == "wrong-sample_std")
    label = data["students"][sample_std]["label"]
    start = html.index(f'<section class="fb" id="s-{sample_std}">')
    panel = html[start:html.index("</section>", start)]
    assert label in panel and "q2_standardised" in panel and "value" in panel


# ============================================================================ shared sources
def _similarity_of(folder: Path, names: list[str]) -> S.Similarity:
    return S.class_similarity("d_grpo", ("grpo.py",), [(n, folder / n) for n in names])


def test_a_leaked_solution_copied_by_most_is_one_cluster(tmp_path):
    """Most of the class copies one leaked solution (renamed, reordered, a line
    changed here and there): one cluster of all of them, however many (the
    class's majority is never "common code"); the reference and its renamed
    copies have code of their own; the students who wrote their own are in
    no cluster and in no flagged pair."""
    from hands_d_grpo import HANDS
    a = config.load("d_grpo")
    folder = tmp_path / "class"
    names = _d_class(folder)
    for i in range(4, 9):
        disguised(folder / "reference", folder / f"renamed-{i}", a.submission_files, seed=i)
        names.append(f"renamed-{i}")
    for h in HANDS[:3]:
        h.write("d_grpo", folder / h.name, a.submission_files)
        names.append(h.name)
    result = _similarity_of(folder, names)
    assert not result.error
    derived = {"reference", "right-style", *(f"renamed-{i}" for i in range(1, 9)),
               *(f"wrong-{n}" for n in LEAKED)}
    assert [set(c.members) for c in result.clusters] == [derived], result.clusters
    cluster = result.clusters[0]
    assert cluster.share >= 0.9 and min(cluster.shares) >= 0.6, cluster.shares
    assert cluster.pairs == len(derived) * (len(derived) - 1) // 2
    assert set(result.too_short) == {"blank", "empty", "syntax"}
    own = {"own-work", *(h.name for h in HANDS[:3])}
    assert not any({p.a, p.b} & own for p in result.flagged)
    listed_in_cluster = [p for p in result.listed if p.cluster == 0]
    assert 0 < len(listed_in_cluster) <= S.PAIRS_PER_CLUSTER
    assert all(p.matched[0] and p.matched[1] for p in listed_in_cluster)


def test_a_class_that_writes_its_own_has_no_cluster(tmp_path):
    """The reference, five other hands and the catalogue's filled stub, each
    written alone, a blank, and one mistake made from the reference: no
    cluster, the one pair made from the same code flagged, nothing else."""
    from hands_d_grpo import HANDS
    a = config.load("d_grpo")
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copytree(ROOT / "solutions" / "d_grpo", folder / "reference")
    for h in [*HANDS, FILLED]:
        h.write("d_grpo", folder / h.name, a.submission_files)
    shutil.copytree(ROOT / "student_template" / "d_grpo", folder / "blank")
    next(w for w in D_CATALOGUE.WRONG if w.name == "sample_std").write(
        "d_grpo", folder / "wrong-sample_std", a.submission_files)
    names = sorted(p.name for p in folder.iterdir())
    result = _similarity_of(folder, names)
    assert result.clusters == []
    assert _flagged(result) == {frozenset(("reference", "wrong-sample_std"))}
    assert result.too_short == ["blank"]
    independent = [p for p in result.pairs if "wrong-sample_std" not in (p.a, p.b)]
    assert max(p.score for p in independent) < S.FLAG_SHARE / 2, \
        [(p.a, p.b, round(p.score, 3)) for p in independent[:3]]


def test_code_the_handout_ships_is_not_counted(tmp_path):
    """Two students who wrote their own functions and both pasted the runtime's
    verifier module and the notebook's code cells into grpo.py: not flagged
    (given code); the same two sharing a passage of their own are."""
    from hands_d_grpo import HANDS
    given = (ROOT / "rlkit" / "verifier.py").read_text()
    cells = "\n".join(_notebook_cells())
    a, b = HANDS[0], HANDS[3]
    texts = {}
    for h in (a, b):
        text = h.write("d_grpo", tmp_path / h.name, ("grpo.py",)).joinpath("grpo.py").read_text()
        texts[h.name] = text + "\n\n" + given + "\n\n" + cells
    handout = S.handout_texts("d_grpo")
    lines = S.handout_lines(handout)
    docs = [S.without_handout(n, [("grpo.py", t)], lines) for n, t in texts.items()]
    assert _flagged(S.compare(docs, handout, S.shipped_texts("d_grpo"))) == set()
    assert _flagged(S.compare(docs, handout)) == {frozenset((a.name, b.name))}   # without it


def _notebook_cells() -> list[str]:
    nb = json.loads((ROOT / "student_template" / "d_grpo" / "d_grpo.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_shares_are_copydetects_own(tmp_path):
    """The shares measured for every pair at once (the incidence matrix) are
    what copydetect's compare_files gives each pair, and a pair left out
    shares nothing."""
    from itertools import combinations
    from copydetect import compare_files
    from hands_d_grpo import HANDS
    folder = tmp_path / "class"
    names = _d_class(folder)
    for h in HANDS:
        h.write("d_grpo", folder / h.name, ("grpo.py",))
        names.append(h.name)
    result = _similarity_of(folder, names)
    plate = S.given_fingerprints(S.handout_texts("d_grpo"), S.shipped_texts("d_grpo"))
    prints = {}
    for name, doc in result.documents.items():
        prints[name] = S._fingerprint(name, doc.text)
        S._drop(prints[name], plate)
    measured = {frozenset((p.a, p.b)): p for p in result.pairs}
    compared = [n for n in names if n not in result.too_short]
    for x, y in combinations(compared, 2):
        overlap, shares, _ = compare_files(prints[x], prints[y])
        p = measured.get(frozenset((x, y)))
        if p is None:
            assert overlap == 0, (x, y)
            continue
        assert (p.a, p.b) == (x, y)                       # in the class's order
        assert p.shares == pytest.approx(shares, abs=1e-12) and p.overlap == overlap, (x, y)


def test_own_hands_compute_what_the_reference_computes(tmp_path):
    """The test class's other hands are correct work (graded q1-q5 full marks
    when written): each of their functions agrees with the reference's."""
    import importlib.util
    import numpy as np
    from hands_d_grpo import HANDS

    def load(name: str, path: Path):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    ref = load("grpo_reference", ROOT / "solutions" / "d_grpo" / "grpo.py")
    rng = np.random.default_rng(0)
    r = rng.integers(0, 2, size=(5, 4)).astype(float)
    theta = rng.normal(size=(4, 6))
    ys = rng.integers(0, 6, size=(4, 5))
    w = rng.normal(size=(4, 5))
    logp_old = np.log(ref.softmax_policy(theta + rng.normal(scale=0.3, size=theta.shape))
                      [np.arange(4)[:, None], ys])
    for h in HANDS:
        mod = load(h.name, h.write("d_grpo", tmp_path / h.name, ("grpo.py",)) / "grpo.py")
        for fn in ("centred_weight", "group_standardised_weight", "leave_one_out_weight"):
            np.testing.assert_allclose(getattr(mod, fn)(r), getattr(ref, fn)(r), atol=1e-12,
                                       err_msg=f"{h.name}.{fn}")
        with pytest.raises(ValueError):
            mod.leave_one_out_weight(r[:, :1])
        np.testing.assert_allclose(mod.policy_ratio(w, w / 2), ref.policy_ratio(w, w / 2))
        for eps in (0.1, 0.2, 0.5):
            np.testing.assert_allclose(mod.clipped_surrogate_grad(theta, ys, w, logp_old, eps),
                                       ref.clipped_surrogate_grad(theta, ys, w, logp_old, eps),
                                       atol=1e-12, err_msg=f"{h.name} eps {eps}")


# ============================================================================ escaping
HOSTILE = ('<script>alert(1)</script><img src=x onerror=alert(2)> javascript:alert(3) '
           '" onmouseover="alert(4)\' <a href="data:text/html,x">x</a> </pre></section>')


class _Tags(__import__("html.parser").parser.HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_every_name_message_and_line_of_code_is_escaped(tmp_path):
    """Names, a submission's key, exception messages, printed output and code
    full of markup and URL schemes: the page's only elements are its own
    (no script, img, iframe, form, base, event handler), every link is a
    fragment of the page or a results.json, and the text shows as text."""
    from autograder.commands.export import Submission
    from autograder.commands.tables import GRADED, Row
    from autograder.grading.grade import grade
    a = config.load("d_grpo")
    reference = (ROOT / "solutions" / "d_grpo" / "grpo.py").read_text()
    body = ("    r = np.asarray(r, dtype=np.float64)\n"
            "    return r - r.mean(axis=-1, keepdims=True)\n")
    hostile = reference.replace(body, f"    print({HOSTILE!r})\n    raise ValueError({HOSTILE!r})\n"
                                ) + f"\n# {HOSTILE}\nBANNER = {HOSTILE!r}\n"
    assert hostile != reference
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "grpo.py").write_text(hostile)
    disguised(tmp_path / "one", tmp_path / "two", a.submission_files, seed=1)
    people = [[{"name": HOSTILE, "sid": "javascript:alert(5)", "email": HOSTILE}], []]
    rows, dirs = [], {}
    out = tmp_path / "out"
    for key, who in zip(("one", "two"), people):
        name = key if who else HOSTILE + key                 # a key is shown when no name is
        report = grade("d_grpo", tmp_path / key, questions=["q1_centred"], echo=False,
                       in_process=True)
        rows.append(Row(Submission(name, tmp_path / key, who), report.to_gradescope(), GRADED))
        dirs[name] = out / key
        (out / key).mkdir(parents=True)
        (out / key / "results.json").write_text(json.dumps(rows[-1].data))
    assert HOSTILE in rows[0].data["tests"][0]["output"]   # the message reached the feedback
    data = write_report(out, a, [a.question("q1_centred")], rows, dirs, echo=lambda *x: None)
    assert data["similarity"]["flagged"] == 1
    html = (out / HTML_NAME).read_text()
    parser = _Tags()
    parser.feed(html)
    allowed = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p",
               "span", "a", "div", "table", "tr", "th", "td", "pre", "details", "summary", "ul",
               "li", "b", "br", "section", "svg", "rect", "line", "text"}
    for tag, attrs in parser.tags:
        assert tag in allowed, (tag, attrs)
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        if "href" in attrs:
            assert attrs["href"].startswith("#") or attrs["href"] in ("one/results.json",
                                                                      "two/results.json"), attrs
    metas = [attrs for tag, attrs in parser.tags if tag == "meta"]
    assert {"http-equiv": "Content-Security-Policy",
            "content": "default-src 'none'; style-src 'unsafe-inline'; img-src data:"} in metas
    shown = __import__("html").unescape(re.sub(r"<[^>]+>", "", html))
    assert HOSTILE in shown                                 # as text: a name, output, code
    assert html.count('<section class="fb"') == 2 and 'class="code"' in html
