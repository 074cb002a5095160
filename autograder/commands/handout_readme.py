"""The handout's README.md, written by ``make dist`` from assignment.toml: the
one page a student who has only the zip starts from.

What it says comes from the toml (title, ``[handout] summary``, the
submission files, every question's points, whether the handout checks it,
its cases, when its result shows, a per-student instance), from the
PrairieLearn layout (:mod:`.dist_prairielearn`: which question grades what)
and from the measurements below, taken on the student side of the first
hour (``tests/test_readme.py`` prints them; docs/measured.md says how).
"""
from __future__ import annotations

from ..grading import config
from ..paths import read_toml

# Measured in a fresh venv per CPython, as an ordinary user following the handout's README
# (Linux x86_64; du -sk in MiB; docs/measured.md, "A student's first hour", says how): the venv after
# `pip install -r requirements.txt`, after requirements-lab.txt too, and once the notebook has
# run (Python compiles what it imports: --no-compile). What pip downloads, in MB.
VENV_MB = {"3.10": (267, 359, 387), "3.11": (269, 362, 400), "3.12": (261, 353, 389),
           "3.13": (258, 350, 385)}
DOWNLOAD_MB = (69, 31)            # requirements.txt, then requirements-lab.txt's own
PYTHONS = "3.10 to 3.14"          # the locks' range (requirements/student/)
LEFT_OUT = "python-on-whales, sphinx, docutils and jedi"   # what `pip check` names (excludes.txt)

WHEN_SHOWN = {"visible": "at once", "after_published": "when grades are published",
              "after_due_date": "after the due date", "hidden": "never (staff only)"}


def _handout(assignment: config.Assignment) -> dict:
    """The toml's ``[handout]`` table: ``summary`` (the README's first
    paragraph), for a per-student assignment ``student_id_here`` (what
    ``STUDENT_ID`` does in the handout), and for written answers ``rubric``
    (the criteria they are graded by, without the model answers: section 5)."""
    return {k: " ".join(str(v).split()) if k != "summary" else str(v)
            for k, v in read_toml(assignment.path).get("handout", {}).items()}


def summary(assignment: config.Assignment, facts: dict) -> str:
    """``[handout] summary`` of the toml, its placeholders filled."""
    text = _handout(assignment).get("summary", "").strip()
    if not text:
        raise config.ConfigError(f"{assignment.path}: [handout] summary is missing (the first "
                                 "paragraph of the handout's README)")
    return config.fill_placeholders(text, facts, f"{assignment.path}: [handout] summary")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _questions_table(a: config.Assignment) -> list[str]:
    rows = ["| question | points | checked in this handout | result shown where you submit |",
            "|---|---|---|---|"]
    for q in a.questions:
        public = sum(not c.hidden for c in q.cases)
        hidden = sum(c.hidden for c in q.cases)
        if q.points == 0:
            here = "its format only; read by your course staff (graded by hand)"
        elif not q.public:
            here = "no: graded only where you submit"
        elif hidden and public:
            here = (f"yes, on {_plural(public, 'public case')}; "
                    f"{_plural(hidden, 'more case')} where you submit")
        elif hidden:
            here = f"its format; {_plural(hidden, 'case')} where you submit"
        else:
            here = "yes"
        rows.append(f"| `{q.name}`: {q.title} | {q.points:g} | {here} | "
                    f"{WHEN_SHOWN.get(q.visibility, q.visibility)} |")
    total = a.total_points
    rows.append(f"| total | {total:g} | | |")
    return rows


def _setup(a: config.Assignment) -> list[str]:
    sizes = {v: mb for v, mb in VENV_MB.items() if mb[0]}
    span = lambda i: f"{min(mb[i] for mb in sizes.values())}-{max(mb[i] for mb in sizes.values())}"
    size = (f" pip downloads about {DOWNLOAD_MB[0]} MB ({DOWNLOAD_MB[1]} MB more for "
            f"JupyterLab); the venv takes {span(0)} MB, {span(1)} MB with JupyterLab and up "
            f"to {max(mb[2] for mb in sizes.values())} MB once the notebook has run (measured "
            f"on Linux with CPython {', '.join(sizes)}).")
    nb = f"{a.id}.ipynb"
    return [
        "## 1. Set up (once)",
        "",
        f"You need CPython {PYTHONS} (`python3 --version`; on Windows `py --version`). On Debian "
        "or Ubuntu, `python3 -m venv` needs `sudo apt install python3-venv` first; on macOS, "
        "the system's `python3` may be older than 3.10: install one from python.org or "
        f"Homebrew. In a terminal, in this folder (`{a.id}/`, where this README is):",
        "",
        "Linux and macOS:",
        "",
        "```bash",
        "python3 -m venv .venv",
        ".venv/bin/pip install --no-deps --no-compile -r requirements.txt",
        ".venv/bin/pip install --no-deps --no-compile -r requirements-lab.txt",
        f".venv/bin/jupyter lab {nb}",
        "```",
        "",
        "Windows (PowerShell):",
        "",
        "```powershell",
        "py -m venv .venv",
        r".venv\Scripts\pip install --no-deps --no-compile -r requirements.txt",
        r".venv\Scripts\pip install --no-deps --no-compile -r requirements-lab.txt",
        rf".venv\Scripts\jupyter lab {nb}",
        "```",
        "",
        "The third line installs JupyterLab; skip it if you open the notebook in VS Code instead "
        "(choose `.venv` as its kernel). `requirements.txt` pins every package for Linux, "
        "macOS and Windows, all as wheels (nothing compiles); `--no-deps` installs exactly "
        "that list." + size,
        f"`.venv/bin/pip check` names {LEFT_OUT} as missing: they are left out on purpose "
        "(otter-grader's Docker grading, fica's documentation build and IPython's optional "
        "completion engine; nothing in this handout uses them).",
        "",
        "As root (a container, a cloud machine), `jupyter lab` refuses to start without "
        f"`--allow-root`: `.venv/bin/jupyter lab --allow-root {nb}`.",
        "",
        *_hosted(a),
    ]


# A root local grade's footprint (measured here: Debian 12, the sandbox's worker venv built by
# `python -m autograder worker-venv` from the system python3 3.11 with a warm pip cache).
WORKER_VENV_MB, WORKER_VENV_S = 98, 9


def _hosted(a: config.Assignment) -> list[str]:
    """Setting up without a venv: a hosted runtime (Colab, a JupyterHub) or a root kernel."""
    from ..requirements import HOSTED_FLOORS, HOSTED_REQUIREMENTS
    nb = f"{a.id}.ipynb"
    kept = ", ".join(f.split(">=")[0] for f in HOSTED_FLOORS)
    return [
        "### No venv: Colab, a JupyterHub, a root kernel",
        "",
        "A hosted runtime has its own Python and packages and no venv; replacing its packages "
        f"with this handout's pins would break it. `{HOSTED_REQUIREMENTS}` installs only what "
        "the notebook's checks are built on, pinned (otter-grader 7.0.0, threadpoolctl), and "
        f"asks for {kept} only at a minimum: pip keeps the runtime's own {kept}, pandas, "
        "IPython and Jupyter wherever they satisfy otter-grader (on Colab it may upgrade "
        "ipywidgets to 8, which otter-grader needs). In a terminal in this folder:",
        "",
        "```bash",
        f"python3 -m pip install -r {HOSTED_REQUIREMENTS}",
        f"python3 -m autograder grade {a.id} . --no-sandbox",
        "```",
        "",
        "On **Colab**:",
        "",
        f"1. *File > Upload notebook*: `{nb}` from this folder; in the *Files* pane, upload "
        f"`{a.id}.zip` (the handout's zip).",
        f"2. In a new first cell: `!unzip -q {a.id}.zip`, then `%cd {a.id}`, then "
        f"`%pip install -r {HOSTED_REQUIREMENTS}`. If pip asks for a restart (*Runtime > "
        f"Restart session*), restart and `%cd /content/{a.id}` again.",
        "3. Run the notebook's cells. Edit your file in the *Files* pane (a double click opens "
        "it); the notebook's checks reload it. A runtime's disk is wiped when it ends: download "
        "your file(s) and the zip the last cell writes before you leave.",
        "",
        "On a Debian or Ubuntu system Python, pip refuses with *externally-managed-environment*: "
        "that Python belongs to the system's packages. Use the venv above instead; in a "
        "container you throw away, `--break-system-packages` after `install` overrides it.",
        "",
        f"**The local grade as root.** `python3 -m autograder grade {a.id} .` run as root "
        "sandboxes your code as it is where you submit, and for that changes the machine: it "
        "adds a system user `rlcap-w0` (one more, `rlcap-w1` ..., per grading running at the "
        "same time; no home, no login shell), makes `/var/lib/rlcap` (its sandboxes, emptied "
        "after each grading) and lock files in `/run/rlcap-slots`, and, when that user cannot "
        "run your Python (a Python under `/root`, as pyenv's), builds once a worker venv from "
        f"the system's `python3` with pip (`/var/lib/rlcap/venv-*`, about {WORKER_VENV_MB} MB, "
        f"{WORKER_VENV_S} s with pip's cache warm): your code then runs on that Python. To undo: "
        "`userdel rlcap-w0` (and each other `rlcap-w*`), `rm -rf /var/lib/rlcap "
        "/run/rlcap-slots`. With `--no-sandbox` (the line above) it changes nothing outside "
        "this folder: your code runs as root on this Python, with the same time and memory "
        "limits. As an ordinary user (section 1's venv) there is no sandbox either way.",
        "",
    ]


def _work(a: config.Assignment) -> list[str]:
    files = a.submission_files
    modules = [f for f in files if f.endswith(".py")]
    lines = ["## 2. Work", ""]
    for f, lender in a.borrowed.items():
        lines += [f"**Bring your `{f}` from the assignment `{lender}`**: copy it into this "
                  "folder, replacing the stub of the same name (the handout holds only that "
                  "stub).", ""]
    lines += [
        f"Edit {', '.join(f'`{m}`' for m in modules)} (every `raise NotImplementedError` "
        f"is yours to replace). `{a.id}.ipynb` is your lab book: it imports your code, runs the "
        "experiments and plots (figures under `figures/`), and its `grader.check(\"...\")` cells "
        "run this handout's public checks in seconds: the same judge that grades your "
        "submission, on public cases. A failed check prints the failure to read first: where "
        "the judge recognises a usual slip in your answer (a sample std where the population "
        "std is asked, say), it names it before the numbers (the case, where, expected and "
        "got).",
        "",
        "Every check of this handout at once, each question in a sandboxed process as where "
        "you submit (Linux and macOS; on Windows use WSL, or the notebook's checks):",
        "",
        "```bash",
        f".venv/bin/python -m autograder grade {a.id} .",
        "```",
        "",
        "It prints one row per question: its score and its first failure (`-v` prints every "
        "part of every question). A question marked `-/N not graded here` is graded only "
        "where you submit.",
        "",
    ]
    return lines


def _submit(a: config.Assignment) -> list[str]:
    from .dist_prairielearn import HIDDEN_SUFFIX, parts
    files = ", ".join(f"`{f}`" for f in a.submission_files)
    zip_name = f"{a.id}_submission.zip"
    split = parts(a)
    pl = [f"* **PrairieLearn**: the assignment is "
          + ("two questions" if len(split) > 1 else "one question") + ":"]
    for suffix, qs in split.items():
        title = a.title + (" (results after release)" if suffix == HIDDEN_SUFFIX else "")
        when = ("its results show once your course releases them" if suffix == HIDDEN_SUFFIX
                else "feedback at once")
        pl.append(f"  *{title}* grades {', '.join(f'`{q.name}`' for q in qs)} ({when}).")
    if len(split) > 1:
        pl.append(f"  Upload the same file(s), {files}, to both.")
    else:
        pl.append(f"  Upload {files}.")
    return [
        "## 3. Submit",
        "",
        f"The files graded are {files}, under these names (a browser's `name (1).py` is "
        f"accepted). The notebook's last cell writes `{zip_name}` (the files and the notebook; "
        "each run replaces it).",
        "",
        f"* **Gradescope**: upload {files}, or `{zip_name}`.",
        *pl,
        "",
        "Nothing in the notebook runs during grading: only the files above are read.",
        "",
    ]


def _student_id(a: config.Assignment) -> list[str]:
    lines = ["## 4. Your student id", ""]
    if not a.per_student:
        return lines + ["This assignment is the same for everyone: no id is needed.", ""]
    module = a.submission_files[0]
    return lines + [
        "Part of this assignment is drawn for you (your own instance, drawn anew at each "
        "submission from your id and your files, graded where you submit). Whose instance is "
        "graded:",
        "",
        "* **Gradescope**: your account's Student ID as your course registered it (from "
        "Gradescope's submission metadata; without one, your account's email; a group is "
        "graded as its first member).",
        "* **PrairieLearn**: the variant each of its questions gives you (one per student); "
        f"the question *{a.title} (results after release)* shows its instance number on its "
        "page.",
        f"* **Here** (the notebook and the local grade): `STUDENT_ID` in `{module}`. "
        + _handout(a).get("student_id_here", "Set it to the id above so that the notebook "
                          "shows the instance you are graded on; where you submit, the "
                          "platform's id wins."),
        "",
    ]


def _graded_there(a: config.Assignment) -> list[str]:
    only = [q for q in a.questions if not q.public and q.points > 0]
    hand = [q for q in a.questions if q.points == 0]
    hidden = sum(c.hidden for q in a.questions if q.public for c in q.cases)
    lines = ["## 5. What is graded only where you submit", ""]
    if only:
        lines.append(f"* the questions {', '.join(f'`{q.name}`' for q in only)} "
                     f"({sum(q.points for q in only):g} of {a.total_points:g} points): no "
                     "check here; the local grade shows them as `-/N not graded here`;")
    if hidden:
        lines.append(f"* {_plural(hidden, 'hidden case')} of the questions checked here "
                     "(other inputs, seeds or sizes): code that is right in general passes "
                     "them, code tuned to the public cases does not. Their feedback names the "
                     "case (\"hidden case 2 of 3\") and the kind of failure, never its inputs;")
    if hand:
        lines.append(f"* the written answers ({', '.join(f'`{q.name}`' for q in hand)}): read "
                     "by your course staff, 0 points in the automatic score.")
    rubric = _handout(a).get("rubric", "")
    if hand and rubric:
        lines += ["", f"**How the written answers are read** (the criteria your course staff "
                  f"grade {', '.join(f'`{q.name}`' for q in hand)} by): {rubric}"]
    return lines + [""]


def _when_it_fails(a: config.Assignment) -> list[str]:
    module = a.submission_files[0]
    return [
        "## 6. When something fails",
        "",
        "* `python3 -m venv` says *ensurepip is not available*: install `python3-venv` "
        "(Debian, Ubuntu). `pip` finds no matching version: your Python is outside "
        f"{PYTHONS}; make the venv with one inside it.",
        "* The notebook says `ModuleNotFoundError: No module named 'autograder'` (or `rlkit`): "
        "it is not running in this folder or not with `.venv`; start Jupyter from this folder "
        "with `.venv`'s `jupyter`, or pick `.venv` as the kernel.",
        "* A check says *not implemented yet*: that function still raises "
        "`NotImplementedError`. A check fails: read its first line; after an edit, run the "
        "cell again (the check reloads your module).",
        "* The local grade prints `needs Linux or macOS`: you are on Windows; use WSL, or the "
        "notebook's checks.",
        "* Where you submit, `not found in the upload`: upload the file(s) of section 3 under "
        f"their names (`{module}`, not a copy in a folder of another name).",
        "* Any message that says *autograder fault*: not your code's fault; tell your course "
        "staff, with the message.",
        "",
    ]


def readme(assignment: config.Assignment, facts: dict) -> str:
    """The README.md of ``assignment``'s handout."""
    a = assignment
    lines = [f"# {a.title}", "", summary(a, facts), "",
             f"This folder is the whole handout: the file(s) you edit, the notebook "
             f"`{a.id}.ipynb`, the public checks (`tests/`, `autograder/`) and the course's "
             "runtime (`rlkit/`).", "",
             *_questions_table(a), "",
             *_setup(a), *_work(a), *_submit(a), *_student_id(a), *_graded_there(a),
             *_when_it_fails(a)]
    return "\n".join(lines).rstrip() + "\n"
