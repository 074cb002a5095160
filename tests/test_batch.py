"""Instructor workflow: ``grade-all`` over a class folder or a Gradescope
export, and ``validate`` after editing assignment.toml."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from autograder.commands import export, tables
from autograder.grading import config
from autograder.grading.grade import grade, read_student_id
from autograder.catalogue.d_grpo import WRONG
from autograder.catalogue.hostile import HOSTILE
from conftest import ROOT

A = config.load("d_grpo")
QS = ["q1_centred", "q2_standardised", "q5_ratio_clip"]
FULL = sum(A.question(q).points for q in QS)
REFERENCE = (ROOT / "solutions" / "d_grpo" / "grpo.py").read_text()
TEMPLATE = (ROOT / "student_template" / "d_grpo" / "grpo.py").read_text()
CATALOGUE = ["sample_std", "no_epsilon", "centring_without_scaling", "standardise_wrong_axis",
             "centre_by_global_mean", "k1_special_case", "loo_off_by_one", "ratio_inverted",
             "clip_wrong_side", "min_max_swapped", "clip_the_advantage", "gradient_ignores_clip",
             "do_nothing_update", "hardcoded_public_answers"]
# Hostile submissions that end quickly (no wall-clock backstop) and are harmless unsandboxed.
HOSTILE_QUICK = ["os_exit", "sys_exit", "segfault_via_ctypes", "allocates_6_gb",
                 "monkeypatches_numpy_comparisons", "reads_grader_files_and_raises_them"]
MALFORMED = {"empty_folder": "not found", "not_really.zip": "zip file could not be read",
             "no_grpo.zip": "not found", "too_deep.zip": "not found",
             "README.txt": "README.txt is not a file of this submission"}


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _zip(path: Path, entries: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in entries.items():
            zf.writestr(name, text)
    return path


def _class_folder(root: Path) -> Path:
    """30 submissions: reference (3 forms), template, catalogue, hostile, malformed."""
    folder = root / "class"
    folder.mkdir()
    (folder / "reference").mkdir()
    (folder / "reference" / "grpo.py").write_text(REFERENCE)
    extras = folder / "reference_with_notebook"
    (extras / "__pycache__").mkdir(parents=True)
    (extras / "grpo.py").write_text(REFERENCE)
    (extras / "d_grpo.ipynb").write_text("{}")
    _zip(folder / "reference.zip", {"grpo.py": REFERENCE})
    _zip(folder / "reference_nested.zip", {"my_work/grpo.py": REFERENCE})
    (folder / "template").mkdir()
    (folder / "template" / "grpo.py").write_text(TEMPLATE)
    for w in WRONG:
        if w.name in CATALOGUE:
            w.write("d_grpo", folder / f"wrong_{w.name}", A.submission_files)
    for h in HOSTILE:
        if h.name in HOSTILE_QUICK:
            d = folder / f"hostile_{h.name}"
            d.mkdir()
            (d / "grpo.py").write_text(h.source.replace("{root}", str(ROOT))
                                       .replace("{agroot}", "/nonexistent-agroot"))
    (folder / "empty_folder").mkdir()
    (folder / "not_really.zip").write_text("this is not a zip file")
    _zip(folder / "no_grpo.zip", {"notes.txt": "forgot the file", "ppo.py": "x = 1"})
    _zip(folder / "too_deep.zip", {"a/b/grpo.py": REFERENCE})
    (folder / "README.txt").write_text("not a submission")
    assert len(list(folder.iterdir())) == 30
    return folder


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    folder = _class_folder(tmp_path_factory.mktemp("batch"))
    t0 = time.monotonic()
    proc = _cli("grade-all", "d_grpo", str(folder), "--jobs", "2", "--questions", ",".join(QS))
    return folder, proc, time.monotonic() - t0


def test_grade_all_grades_30_mixed_submissions(class_run):
    folder, proc, seconds = class_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = folder / "_grades"
    rows = {r["submission"]: r for r in _rows(out / "grades.csv")}
    assert len(rows) == 30
    assert list(next(iter(rows.values()))) == (tables.CSV_STUDENT + QS +
                                               ["total", "max_score", "reason", "declared_id"])
    for name in ("reference", "reference_with_notebook", "reference.zip",
                 "reference_nested.zip"):
        assert float(rows[name]["total"]) == FULL, rows[name]
        assert rows[name]["reason"] == ""
    assert float(rows["template"]["total"]) == 0
    assert "not implemented" in rows["template"]["reason"]
    for w in WRONG:
        if w.name not in CATALOGUE:
            continue
        row = rows[f"wrong_{w.name}"]
        graded = [q for q in w.loses if q in QS]
        for q in graded:
            assert float(row[q]) < A.question(q).points, (w.name, q, row)
        if not graded:                          # loses only on questions not graded here
            assert float(row["total"]) == FULL, row
    for name in HOSTILE_QUICK:
        row = rows[f"hostile_{name}"]
        assert float(row["total"]) == 0 and row["reason"], row
    assert "ended the process" in rows["hostile_os_exit"]["reason"]
    for name, why in MALFORMED.items():
        assert float(rows[name]["total"]) == 0 and why in rows[name]["reason"], rows[name]
    for d in out.iterdir():
        if d.is_dir():
            data = json.loads((d / "results.json").read_text())
            assert "placeholder" not in data["extra_data"] and "run_error" not in \
                data["extra_data"], d
    summary = (out / "summary.txt").read_text()
    assert "median" in summary and "30 graded" in summary \
        and "0 stopped at the batch's time limit" in summary \
        and "0 question time-outs in all" in summary
    zeros_q1 = sum(float(r["q1_centred"]) == 0 for r in rows.values())
    q1_line = next(l for l in summary.splitlines() if l.startswith("q1_centred"))
    assert q1_line.split()[4] == str(zeros_q1), summary
    assert "median" in proc.stdout
    print(f"30 submissions x {len(QS)} questions, --jobs 2: {seconds:.1f} s")


def test_grade_all_rows_match_grading_alone(class_run, tmp_path):
    folder, _, _ = class_run
    rows = {r["submission"]: r for r in _rows(folder / "_grades" / "grades.csv")}
    for name in ("wrong_clip_wrong_side", "hostile_segfault_via_ctypes", "not_really.zip"):
        report = grade("d_grpo", folder / name, questions=QS, echo=False)
        assert [float(rows[name][q.name]) for q in report.questions] == \
            [q.score for q in report.questions], name
        assert float(rows[name]["total"]) == report.score


def test_grade_all_rerun_skips(class_run):
    folder, _, _ = class_run
    results = folder / "_grades" / "reference" / "results.json"
    before = results.stat().st_mtime_ns
    t0 = time.monotonic()
    proc = _cli("grade-all", "d_grpo", str(folder), "--jobs", "2", "--questions", ",".join(QS))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert time.monotonic() - t0 < 15
    assert "30 skipped" in proc.stdout and "0 graded" in proc.stdout
    assert results.stat().st_mtime_ns == before
    assert len(_rows(folder / "_grades" / "grades.csv")) == 30


METADATA_YML = """\
---
submission_2401001:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2025-03-01 12:00:00.123456000 -08:00
  :score: 16.0
  :status: processed
  :results:
    score: 16.0
    tests:
    - name: 'q1_centred: (a) centring by the group mean'
      score: 1.0
      max_score: 1.0
  :history: []
submission_2401002:
  :submitters:
  - :name: Alan Turing
    :sid: '1912'
    :email: alan@example.edu
  - :name: Grace Hopper
    :sid: '1906'
    :email: grace@example.edu
  :created_at: 2025-03-02 09:30:00.000000000 -08:00
  :score: 0.0
  :history:
  - :created_at: 2025-03-01 09:30:00.000000000 -08:00
    :score: 0.0
submission_2401003:
  :submitters:
  - :name: "O'Brien, Pat"
    :sid:
    :email: pat@example.edu
  :created_at: 2025-03-03 10:00:00.000000000 -08:00
  :score:
"""


def _export(root: Path) -> Path:
    """Gradescope's 'Export Submissions', unzipped: assignment_<id>_export/ with
    submission_metadata.yml and one folder per submission."""
    export = root / "assignment_5512_export"
    for sub in ("submission_2401001", "submission_2401002", "submission_2401003/hw"):
        (export / sub).mkdir(parents=True)
    (export / "submission_2401001" / "grpo.py").write_text(REFERENCE)
    (export / "submission_2401002" / "grpo.py").write_text(TEMPLATE)
    wrong = next(w for w in WRONG if w.name == "ratio_inverted")
    wrong.write("d_grpo", export / "submission_2401003" / "hw", A.submission_files)
    (export / "submission_metadata.yml").write_text(METADATA_YML)
    return export


def test_gradescope_export_rows_carry_student_ids(tmp_path):
    download = tmp_path / "download"
    _export(download)
    qs = "q1_centred,q5_ratio_clip"
    proc = _cli("grade-all", "d_grpo", str(download), "--jobs", "2", "--questions", qs)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = download / "_grades"
    rows = _rows(out / "grades.csv")
    assert [(r["sid"], r["name"], r["submission"]) for r in rows] == [
        ("1815", "Ada Lovelace", "submission_2401001"),
        ("1912", "Alan Turing", "submission_2401002"),
        ("1906", "Grace Hopper", "submission_2401002"),       # a group: one row per member
        ("", "O'Brien, Pat", "submission_2401003")]
    assert rows[0]["email"] == "ada@example.edu" and float(rows[0]["total"]) == 4
    assert float(rows[1]["total"]) == 0 and rows[1]["reason"] == rows[2]["reason"] != ""
    assert float(rows[3]["q1_centred"]) == 1 and float(rows[3]["q5_ratio_clip"]) < 3
    meta = out / "submission_2401002" / "submission_metadata.json"
    assert json.loads(meta.read_text())["users"][1]["sid"] == "1906"
    assert read_student_id(meta) == "1912"
    assert read_student_id(out / "submission_2401003" / "submission_metadata.json") == \
        "pat@example.edu"

    # Re-run: skipped; --force: regraded.
    results = out / "submission_2401001" / "results.json"
    before = results.stat().st_mtime_ns
    proc = _cli("grade-all", "d_grpo", str(download), "--questions", qs)
    assert "3 skipped" in proc.stdout and results.stat().st_mtime_ns == before
    proc = _cli("grade-all", "d_grpo", str(download), "--questions", qs, "--force")
    assert "3 graded" in proc.stdout and results.stat().st_mtime_ns != before
    assert _rows(out / "grades.csv") == rows

    # The export zip itself (unpacked next to it), into the same --out: already graded.
    zipped = tmp_path / "assignment_5512_export.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        for p in sorted((download / "assignment_5512_export").rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(download).as_posix())
    proc = _cli("grade-all", "d_grpo", str(zipped), "--questions", qs, "--out", str(out))
    assert proc.returncode == 0 and "3 skipped" in proc.stdout, proc.stderr[-2000:]
    assert (tmp_path / "assignment_5512_export" / "assignment_5512_export" /
            "submission_metadata.yml").is_file()
    assert _rows(out / "grades.csv") == rows


TRICKY_YML = """\
submission_1:
  :submitters: []
  :history:
  - :created_at: 2025-01-01 09:00:00.000000000 -08:00
    :score: 1.0
submission_2:
  :created_at: 2025-01-02 09:00:00.000000000 -08:00
  :submitters:
    - :email: kim@example.edu
      :name: Kim Lee
      :sid: 42
  :history:
  - :created_at: 2025-01-01 09:00:00.000000000 -08:00
"""


@pytest.mark.parametrize("text", [METADATA_YML, TRICKY_YML])
def test_metadata_parser_without_pyyaml_agrees(text):
    import yaml  # noqa: F401  (the grading extra brings it)
    full = export._load_yaml(text)
    fallback = export._parse_metadata_fallback(text)
    assert list(full) == list(fallback)
    for key in full:
        assert export._submitters(full[key]) == export._submitters(fallback[key])


def test_timeout_gives_a_row_and_leaves_nothing_running(tmp_path):
    folder = tmp_path / "class"
    (folder / "sleepy").mkdir(parents=True)
    sleepy = next(h for h in HOSTILE if h.name == "sleeps_forever")
    (folder / "sleepy" / "grpo.py").write_text(sleepy.source)
    t0 = time.monotonic()
    proc = _cli("grade-all", "d_grpo", str(folder), "--questions", "q1_centred",
                "--timeout", "3")
    assert proc.returncode == 0 and time.monotonic() - t0 < 30, proc.stderr[-2000:]
    row, = _rows(folder / "_grades" / "grades.csv")
    assert float(row["total"]) == 0 and "did not finish within 3 s" in row["reason"]
    time.sleep(0.5)
    assert not _running_on(folder, sleepy.source)


def _running_on(folder: Path, source: str) -> list[int]:
    """Processes still grading ``folder`` (the batch's child), or workers whose
    sandbox holds ``source`` (the worker of a stopped grading)."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(f"/proc/{pid}/cwd")
            if str(folder) in cmdline or (Path(cwd) / "grpo.py").read_text() == source:
                left.append(int(pid))
        except OSError:
            continue
    return left


# ----------------------------------------------------------------------------- validate
def test_validate_quick_passes():
    t0 = time.monotonic()
    proc = _cli("validate", "d_grpo", "--quick", timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "OK: reference full marks" in proc.stdout
    assert "q6_k_sweep, measured vs bar" in proc.stdout and "margin +" in proc.stdout
    assert "--quick: catalogue not graded on the slow questions q6_k_sweep, " \
        "q7_clipped_sweep" in proc.stdout
    print(f"validate d_grpo --quick: {time.monotonic() - t0:.1f} s")


def test_validate_catches_an_unreachable_bar(tmp_path):
    assignments = tmp_path / "assignments"
    shutil.copytree(ROOT / "assignments" / "d_grpo", assignments / "d_grpo")
    toml = assignments / "d_grpo" / "assignment.toml"
    text = toml.read_text()
    assert text.count("ceiling = 0.499 ") == 1
    toml.write_text(text.replace("ceiling = 0.499 ", "ceiling = 0.5001 "))
    proc = _cli("validate", "d_grpo", "--assignments-dir", str(assignments),
                "--questions", "q6_k_sweep", "--no-catalogue", timeout=300)
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-2000:]
    broken = proc.stdout.split("BROKEN", 1)[1]
    assert "d_grpo: reference scores" in broken and "on q6_k_sweep" in broken
    assert "below the bar" in broken
    assert "vs bar >= 0.5001: margin -" in proc.stdout


def test_validate_without_catalogue_checks_reference_and_template(monkeypatch, tmp_path,
                                                                   capsys):
    from autograder.commands import validate
    monkeypatch.setattr(validate, "load_catalogue", lambda assignment_id: None)
    code = validate.validate(["d_grpo"], questions=["q1_centred"], jobs=2,
                             show_progress=False)
    text = capsys.readouterr().out
    assert code == 0, text
    assert "no catalogue of wrong submissions" in text and "1 reference, 1 template" in text


def test_validate_catches_a_mistake_that_no_longer_loses(monkeypatch, capsys):
    """A catalogue entry that keeps full marks (here: a bar loosened in spirit,
    simulated by an entry whose 'mistake' is harmless) is reported."""
    from autograder.commands import validate
    module = validate.load_catalogue("d_grpo")
    harmless = module.WRONG[0].__class__(
        "harmless_comment", "grpo.py", "def centred_weight(r):",
        "def centred_weight(r):  # a comment changes nothing", ("q1_centred",))
    monkeypatch.setattr(module, "WRONG", [harmless])
    code = validate.validate(["d_grpo"], questions=["q1_centred"], jobs=2, show_progress=False)
    text = capsys.readouterr().out
    assert code == 1
    assert "harmless_comment keeps full marks (1/1) on q1_centred" in text


# ------------------------------------------------- round 3: discovery from the class folder only
from autograder.catalogue import hostile  # noqa: E402
from autograder.grading.safe import _UNSAFE  # noqa: E402

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cells_are_safe(path: Path) -> None:
    """No cell of ``path`` (a CSV) holds a control character or starts a formula."""
    with open(path, newline="") as f:
        for row in csv.reader(f):
            for cell in row:
                assert not _UNSAFE.search(cell) and "\n" not in cell, repr(cell)
                assert not cell.startswith(FORMULA_START) or cell.lstrip("+-").replace(
                    ".", "", 1).isdigit(), repr(cell)


def _no_escapes(*texts: str) -> None:
    for text in texts:
        assert "\x1b" not in text and "\u202e" not in text, repr(text[:300])
        assert not any(l.startswith("q1_centred: 1") and "FULL MARKS" in l
                       for l in text.splitlines()), "a forged line"


def test_planted_metadata_grades_every_student_as_themselves(tmp_path):
    """A plain class folder in which one student planted submission_metadata.yml
    (mapping ../victim, a link to the victim and the checkout's solutions to its
    own sid): every entry is graded as itself (dot-named, odd names and a folder
    named submission_metadata.yml included); on a re-run, a blank ``top student``
    added beside the graded ``top_student`` gets its own grade, not the other's."""
    folder = tmp_path / "class"
    expected = hostile.planted_class(folder, REFERENCE, TEMPLATE, ROOT)
    late = folder / "top student"
    shutil.move(late, tmp_path / "late")                     # added before the re-run
    del expected["top student"]
    proc = _cli("grade-all", "d_grpo", str(folder), "--jobs", "2", "--questions", "q1_centred")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {r["submission"]: r for r in _rows(folder / "_grades" / "grades.csv")}
    shown = {n.lstrip("'"): r for n, r in rows.items()}
    assert sorted(shown) == sorted(expected), sorted(shown)
    for name, total in expected.items():
        assert float(shown[name]["total"]) == total, (name, shown[name])
        assert shown[name]["sid"] == "", shown[name]                # plain layout: no metadata
    assert "plain layout" in proc.stdout
    _cells_are_safe(folder / "_grades" / "grades.csv")
    shutil.move(tmp_path / "late", late)
    proc = _cli("grade-all", "d_grpo", str(folder), "--jobs", "2", "--questions", "q1_centred")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {r["submission"]: r for r in _rows(folder / "_grades" / "grades.csv")}
    assert float(rows["top student"]["total"]) == 0 and float(rows["top_student"]["total"]) == 1
    assert f"{len(expected)} skipped" in proc.stdout and "1 graded" in proc.stdout, proc.stdout
    _no_escapes(proc.stdout, (folder / "_grades" / "summary.txt").read_text())


def test_export_metadata_paths_stay_inside_the_export(tmp_path):
    """An export whose yml names ../outside, an absolute path and a link: each
    gets a row with the reason, nothing outside is graded; every entry of the
    export gets a row (an unlisted folder, a dot-file, a listed name that is
    missing); a submitter's name that is a formula is shown as text."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "grpo.py").write_text(REFERENCE)
    export = tmp_path / "download" / "assignment_1_export"
    (export / "submission_1").mkdir(parents=True)
    (export / "submission_1" / "grpo.py").write_text(REFERENCE)
    (export / "unlisted").mkdir()
    (export / "unlisted" / "grpo.py").write_text(REFERENCE)
    (export / ".DS_Store").write_text("x")
    (export / "link").symlink_to(outside)
    person = "  :submitters:\n  - :name: {}\n    :sid: '{}'\n    :email: e@x\n"
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n" + person.format(hostile.FORMULAS[1], "1") +
        "../outside:\n" + person.format("Eve", "666") +
        f"{outside}:\n" + person.format("Eve", "666") +
        "link:\n" + person.format("Eve", "666") +
        "submission_1.zip:\n" + person.format("Eve", "666"))
    proc = _cli("grade-all", "d_grpo", str(tmp_path / "download"), "--jobs", "2",
                "--questions", "q1_centred")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "gradescope layout" in proc.stdout
    rows = _rows(tmp_path / "download" / "_grades" / "grades.csv")
    by_sub = {r["submission"]: r for r in rows}
    assert float(by_sub["submission_1"]["total"]) == 1 and by_sub["submission_1"]["sid"] == "1"
    assert by_sub["submission_1"]["name"] == "'" + hostile.FORMULAS[1]
    for key in ("../outside", str(outside), "link"):
        row = next(r for r in rows if r["submission"].lstrip("'") == key)
        assert float(row["total"]) == 0 and "refused" in row["reason"], row
    assert float(by_sub["submission_1.zip"]["total"]) == 0          # listed, not there
    assert float(by_sub["unlisted"]["total"]) == 1 and ".DS_Store" in by_sub
    assert "refused" in proc.stdout
    _cells_are_safe(tmp_path / "download" / "_grades" / "grades.csv")


@pytest.mark.slow
def test_output_that_cannot_forge_through_grade_all(tmp_path):
    """grade-all --jobs 2 on escape sequences in messages and output, forged
    lines and a formula in zip member names, and a Gradescope export whose
    names are formulas: no CSV cell, log or terminal line carries an escape,
    starts a formula or a forged line."""
    folder = tmp_path / "class"
    folder.mkdir()
    esc = next(h for h in hostile.OUTPUT if h.name == "escape_sequences_in_messages")
    named = folder / ("esc" + hostile.ESCAPES.replace("/", "|"))     # a folder name
    named.mkdir()
    (named / "grpo.py").write_text(esc.source)
    (folder / "forged_names.zip").write_bytes(hostile.forged_names_zip())
    (folder / f"{hostile.FORMULAS[0]}.zip").write_bytes(hostile.forged_names_zip())
    proc = _cli("grade-all", "d_grpo", str(folder), "--jobs", "2", "--questions",
                "q1_centred,q2_standardised")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = folder / "_grades"
    _cells_are_safe(out / "grades.csv")
    logs = [p.read_text(errors="replace") for p in out.glob("*/grade.log")]
    assert len(logs) == 3
    _no_escapes(proc.stdout, proc.stderr, (out / "summary.txt").read_text(), *logs)
    for p in out.glob("*/results.json"):
        data = json.loads(p.read_text())
        _no_escapes(data["output"])
        assert data["score"] == 0
