"""``make dist`` for PrairieLearn: ``dist/prairielearn/<id>/``, laid out like
the root of a PrairieLearn course, so that copying its two folders into a
course adds the assignment:

    questions/rlcap/<id>/          the visible questions: feedback at once
        info.json                  External grading (image, entrypoint, timeout)
        question.html              the upload element and the results element
        tests/rlcap.json           which questions this one grades
    questions/rlcap/<id>_hidden/   the other questions (Gradescope's after_published):
        ...                        put it where scores show only once released (docs)
        server.py                  per-student assignments: shows the instance id
    serverFilesCourse/rlcap/<id>/  the grader, shared by both: the Gradescope zip's
        run_prairielearn           grading files (same allowlist), the entry point
        vendor/pyseccomp.py        and what the stock image lacks (VENDORED)

and, beside the assignments, ``dist/prairielearn/image/Dockerfile``: the
optional course image (PrairieLearn's Python grader image and a venv of our
pins, ``/opt/rlcap-venv``, which the grader then runs on).

The stock image (``prairielearn/grader-python``, networking off) grades as it
is: its own ``python3`` (numpy, and threadpoolctl through its scikit-learn)
runs the grader and the worker; it has no pyseccomp, so the pure-Python
binding ships here (copied from the installed, pinned distribution, its
RECORD hash checked) and the worker imports it from its own folder.

Why two questions: PrairieLearn shows a question's whole results.json (every
``tests[]`` entry and the score) as soon as it is graded, and withholds
feedback only per assessment (an Exam without real-time grading, a score
shown after a date); so what Gradescope shows after publishing is a question
of its own, placed in such an assessment.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import uuid
from importlib import metadata
from pathlib import Path

from ..grading import config
from ..grading.results import pl_placeholder, write_atomically
from ..harness.sandbox import PLATFORM_VENV, VENDOR_DIR, VENDORED
from ..paths import DIST_DIR, PACKAGE_DIR
from ..requirements import grader_requirements
from .dist import PLACEHOLDER, ShippingError, _check_allowlist, grader_tree, platform_script

IMAGE = "prairielearn/grader-python"   # PrairieLearn's documented Python image (its /venv
                                       # python3 has numpy and threadpoolctl)
IMAGE_ENV = "RLCAP_PL_IMAGE"           # make dist: the course image to name in info.json instead
COURSE_VENV = PLATFORM_VENV            # the course image's venv (the sandbox tries it first)
MAX_TIMEOUT_S = 600                    # PrairieLearn's ceiling for externalGradingOptions.timeout
STARTUP_S = 30                         # the entry point's own time around the grader's deadline
ENTRY = "run_prairielearn"
HIDDEN_SUFFIX = "_hidden"
UUID_NAMESPACE = uuid.UUID("6f1c3e02-5b1e-4c8e-9a57-2d0c6c1f7a10")   # rl-capstones questions


def parts(assignment: config.Assignment) -> dict[str, list[config.Question]]:
    """``{question id suffix: its questions}``: "" the visible ones, "_hidden"
    the rest (a part with no question is left out)."""
    split = {"": [q for q in assignment.questions if q.visibility == "visible"],
             HIDDEN_SUFFIX: [q for q in assignment.questions if q.visibility != "visible"]}
    return {k: v for k, v in split.items() if v}


def timeout_s(assignment: config.Assignment) -> int:
    """externalGradingOptions.timeout: the entry point's deadline (deadline_s +
    60, as on Gradescope), its 10 s kill grace and the start-up around it."""
    t = int(assignment.deadline_s) + 60 + 10 + STARTUP_S
    if t > MAX_TIMEOUT_S:
        raise ShippingError(f"{assignment.id}: deadline_s = {assignment.deadline_s:g} needs a "
                            f"PrairieLearn timeout of {t} s; PrairieLearn allows at most "
                            f"{MAX_TIMEOUT_S} s")
    return t


# What a course's infoCourse.json must declare (PrairieLearn's sync warns about an undeclared
# topic or tag): written by make dist to dist/prairielearn/infoCourse-additions.json. Every tag
# starts with "rlcap", so that none clashes with a course's own (a course may have "released").
TOPIC = {"name": "rl-capstones", "color": "blue3",
         "description": "rl-capstones: autograded RL capstones and exercises"}
ADDITIONS = "infoCourse-additions.json"
STEPS = "README.md"


def tags(assignment: config.Assignment, suffix: str) -> list[dict]:
    """The tags of one question, as infoCourse.json declares them."""
    out = [{"name": "rlcap", "color": "gray1", "description": "rl-capstones: external grader"},
           {"name": f"rlcap-{assignment.id}", "color": "gray1",
            "description": f"rl-capstones: {assignment.title}"}]
    if suffix:
        out.append({"name": "rlcap-after-release", "color": "gray1",
                    "description": "rl-capstones: results shown once the staff release them"})
    return out


def info_course_additions(ids: list[str]) -> dict:
    """The topic and every tag of the questions of ``ids``, to merge into a
    course's infoCourse.json (its "topics" and "tags" lists)."""
    declared: dict[str, dict] = {}
    for a in ids:
        assignment = config.load(a)
        for suffix in parts(assignment):
            for t in tags(assignment, suffix):
                declared.setdefault(t["name"], t)
    return {"topics": [TOPIC], "tags": list(declared.values())}


COURSE_STEPS = """# Adding these assignments to a PrairieLearn course

Each `<id>/` here is laid out like the root of a course. For each assignment:

1. Copy its questions and its grader into the course:

       cp -r <id>/questions/rlcap <course>/questions/
       mkdir -p <course>/serverFilesCourse/rlcap
       cp -r <id>/serverFilesCourse/rlcap/<id> <course>/serverFilesCourse/rlcap/

2. Declare the questions' topic and tags in `<course>/infoCourse.json`: add the entries of
   `infoCourse-additions.json` (this folder) to its `"topics"` and `"tags"` lists. PrairieLearn's
   sync warns about a topic or tag it does not find there. Every tag starts with `rlcap`, so
   none clashes with a tag of your course.

3. Put `rlcap/<id>` (feedback at once) in a Homework, and `rlcap/<id>_hidden` (results once you
   release them) in an Exam with `"allowRealTimeGrading": false` and scores shown after your
   release date. The repository's docs/prairielearn.md says why and how.

4. Sync the course.

`image/Dockerfile` is the optional course image (the grader's pinned packages on PrairieLearn's
Python image); the stock image grades as it is.
"""


def info_json(assignment: config.Assignment, suffix: str) -> dict:
    server = f"rlcap/{assignment.id}/"
    title = assignment.title + (" (results after release)" if suffix else "")
    return {
        "uuid": str(uuid.uuid5(UUID_NAMESPACE, f"{assignment.id}{suffix}")),
        "type": "v3",
        "title": title,
        "topic": TOPIC["name"],
        "tags": [t["name"] for t in tags(assignment, suffix)],
        "gradingMethod": "External",
        "singleVariant": True,
        "externalGradingOptions": {
            "enabled": True,
            "image": os.environ.get(IMAGE_ENV) or IMAGE,
            "entrypoint": f"/grade/serverFilesCourse/{server}{ENTRY}",
            "serverFilesCourse": [server],
            "timeout": timeout_s(assignment),
            "enableNetworking": False,
        },
    }


def shows_instance(assignment: config.Assignment, suffix: str) -> bool:
    """The hidden part of a per-student assignment shows the instance id (its
    questions are where an answer depends on it, e.g. capstone C's letters)."""
    return assignment.per_student and suffix == HIDDEN_SUFFIX


SERVER_PY = '''"""Shows the instance this question grades: the grader reads the same
variant_seed from /grade/data/data.json (autograder/grading/prairielearn.py)."""


def generate(data):
    data["params"]["rlcap_student_id"] = str(data["variant_seed"])
'''


def question_html(assignment: config.Assignment, questions: list[config.Question],
                  suffix: str) -> str:
    files = assignment.submission_files
    module = files[0]
    what = ("Graded here: " + "; ".join(f"{q.title} ({q.points:g} point{'' if q.points == 1 else 's'})" for q in questions)
            + ".")
    if suffix:
        what += (" Results appear once the course staff release them; the other questions "
                 "of this assignment are graded, with feedback at once, in its own question.")
    instance = ""
    if shows_instance(assignment, suffix):
        instance = ('<p>This question grades your instance '
                    '<code>{{params.rlcap_student_id}}</code>: set '
                    '<code>STUDENT_ID = "{{params.rlcap_student_id}}"</code> in '
                    f'<code>{module}</code> before you work through the notebook, so that it '
                    'shows the same instance.</p>')
    html = (PACKAGE_DIR / "prairielearn" / "question.html").read_text()
    return (html.replace("@TITLE@", assignment.title).replace("@WHAT@", what)
            .replace("@FILES@", ", ".join(f"<code>{f}</code>" for f in files))
            .replace("@FILE_NAMES@", ", ".join(files)).replace("@INSTANCE@", instance))


def vendor(server: Path) -> set[str]:
    """Copy the VENDORED modules (pyseccomp, MIT) and their licence into
    ``server/vendor/`` from this interpreter's installed distribution, which
    must be the pinned version and match its own RECORD; returns the paths."""
    written = set()
    for module in VENDORED:
        name = module[:-3]
        pin = next((r for r in grader_requirements() if re.match(rf"{name}==", r)), "")
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise ShippingError(f"{name} is not installed here: make dist ships it to "
                                f"PrairieLearn (pip install -e '.[sandbox]')") from None
        if not pin.startswith(f"{name}=={dist.version}"):
            raise ShippingError(f"{name} {dist.version} is installed, the pin is {pin!r}")
        for f in dist.files or []:
            if f.name == module or f.name.upper().startswith("LICENSE"):
                data = Path(dist.locate_file(f)).read_bytes()
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                if f.hash is None or digest.decode() != f.hash.value:
                    raise ShippingError(f"{name}'s installed {f.name} differs from its RECORD")
                target = module if f.name == module else f"{name}-{dist.version}.LICENSE"
                (server / VENDOR_DIR).mkdir(exist_ok=True)
                (server / VENDOR_DIR / target).write_bytes(data)
                written.add(f"{VENDOR_DIR}/{target}")
        if f"{VENDOR_DIR}/{module}" not in written:
            raise ShippingError(f"{name}'s installed files hold no {module}")
    return written


DOCKERFILE = """\
# rl-capstones' course image for PrairieLearn's external grader (optional; the repository's
# docs/prairielearn.md). PrairieLearn's Python grader image, plus a venv of the grader's pins
# beside the image's own packages: run_prairielearn runs the grader on it, and the worker
# (the submission's process) too, so that grades are computed with the pinned numpy, as on
# Gradescope. libseccomp: the worker's syscall filter binds it (a no-op if present).
# Written by `make dist`; build for PrairieLearn's platform:
#   docker build --platform linux/amd64 -t <account>/rlcap-grader dist/prairielearn/image
FROM @IMAGE@
RUN dnf install -y libseccomp && dnf clean all
RUN python3 -m venv @VENV@ \\
    && @VENV@/bin/python -m pip install --no-cache-dir --disable-pip-version-check \\
@PINS@ \\
    && chmod -R a+rX @VENV@
"""


def dockerfile() -> str:
    """The course image's Dockerfile: FROM the stock image, our pins, nothing else."""
    pins = " \\\n".join(f'        "{r}"' for r in grader_requirements())
    return (DOCKERFILE.replace("@IMAGE@", IMAGE).replace("@VENV@", COURSE_VENV)
            .replace("@PINS@", pins))


def build_prairielearn(assignment: config.Assignment) -> Path:
    """Write ``dist/prairielearn/<id>/`` afresh; returns it."""
    out = DIST_DIR / "prairielearn" / assignment.id
    shutil.rmtree(out, ignore_errors=True)
    server = out / "serverFilesCourse" / "rlcap" / assignment.id
    server.mkdir(parents=True)
    entry = platform_script(f"prairielearn/{ENTRY}", assignment, server)
    write_atomically(server / PLACEHOLDER, pl_placeholder(assignment.id))
    _check_allowlist(server, grader_tree(assignment, server) | {entry, PLACEHOLDER}
                     | vendor(server))
    image = DIST_DIR / "prairielearn" / "image"
    image.mkdir(parents=True, exist_ok=True)
    (image / "Dockerfile").write_text(dockerfile())
    # what to paste into infoCourse.json, and the steps, beside the assignments' folders
    (DIST_DIR / "prairielearn" / ADDITIONS).write_text(
        json.dumps(info_course_additions(config.available()), indent=2) + "\n")
    (DIST_DIR / "prairielearn" / STEPS).write_text(COURSE_STEPS)
    for suffix, questions in parts(assignment).items():
        qdir = out / "questions" / "rlcap" / f"{assignment.id}{suffix}"
        (qdir / "tests").mkdir(parents=True)
        written = {"info.json", "question.html", "tests/rlcap.json"}
        (qdir / "info.json").write_text(json.dumps(info_json(assignment, suffix), indent=2)
                                        + "\n")
        (qdir / "question.html").write_text(question_html(assignment, questions, suffix))
        (qdir / "tests" / "rlcap.json").write_text(json.dumps(
            {"assignment": assignment.id, "questions": [q.name for q in questions]},
            indent=2) + "\n")
        if shows_instance(assignment, suffix):
            (qdir / "server.py").write_text(SERVER_PY)
            written.add("server.py")
        _check_allowlist(qdir, written)
    return out
