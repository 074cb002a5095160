"""A synthetic class of one assignment, from its catalogue (``make demo``,
the report's tests, ``bench/bench_report.py``): one folder per submission,
named after what it is.

* ``reference``: the reference solution;
* ``right-<name>``: each correct style of the catalogue (``RIGHT``);
* ``wrong-<name>``: each catalogued mistake (``WRONG``);
* ``blank-<i>``: the unedited handout;
* ``copy<i>-of-<source>``: a near-copy (:func:`autograder.catalogue.disguise.disguise`:
  names renamed, functions reordered) of the correct style with the most code
  of its own (the largest edit), or of the one before it, and so on.
"""
from __future__ import annotations

import importlib
import shutil
from pathlib import Path

from ..catalogue.disguise import disguise
from ..grading import config
from ..paths import SOLUTIONS_DIR, TEMPLATE_DIR


def catalogue(assignment_id: str):
    return importlib.import_module(f"autograder.catalogue.{assignment_id}")


def _size(entry) -> int:
    """How much code of its own a correct style has."""
    if hasattr(entry, "bodies"):
        return sum(len(body) for _, body in entry.bodies)
    return len(entry.new)


def _copy_files(sources: list[Path], dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for src in sources:
        if src.is_file():
            shutil.copyfile(src, dest / src.name)
    return dest


def disguised(src: Path, dest: Path, files: tuple[str, ...], seed: int) -> Path:
    """The submission in ``src`` written to ``dest`` with each ``.py`` file disguised."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        if not (src / f).is_file():
            continue
        text = (src / f).read_text()
        (dest / f).write_text(disguise(text, seed) if f.endswith(".py") else text)
    return dest


def write_class(assignment_id: str, folder: Path, *, copies: int = 2, blanks: int = 2) -> dict:
    """Write the class into ``folder`` (emptied first); return {submission
    name: what it is}."""
    a = config.load(assignment_id)
    files = a.submission_files
    cat = catalogue(assignment_id)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    made = {"reference": "the reference solution"}
    _copy_files(a.sources(SOLUTIONS_DIR), folder / "reference")
    for r in cat.RIGHT:
        r.write(assignment_id, folder / f"right-{r.name}", files)
        made[f"right-{r.name}"] = f"correct, another style: {r.why or r.name}"
    for w in cat.WRONG:
        w.write(assignment_id, folder / f"wrong-{w.name}", files)
        made[f"wrong-{w.name}"] = f"wrong: {w.why or w.name}"
    for i in range(1, blanks + 1):
        _copy_files(a.sources(TEMPLATE_DIR), folder / f"blank-{i}")
        made[f"blank-{i}"] = "the unedited handout"
    sources = sorted(cat.RIGHT, key=lambda r: -_size(r))
    for i in range(copies):
        src = sources[i % len(sources)]
        name = f"copy{i + 1}-of-{src.name}"
        disguised(folder / f"right-{src.name}", folder / name, files, seed=i + 1)
        made[name] = f"a near-copy of right-{src.name} (names renamed, functions reordered)"
    return made


FIRST = ("Ada", "Alan", "Barbara", "Claude", "Donald", "Edsger", "Frances", "Grace", "Hedy",
         "Ivan", "John", "Katherine", "Leslie", "Margaret", "Niklaus", "Radia", "Sophie", "Tim")
LAST = ("Lovelace", "Turing", "Liskov", "Shannon", "Knuth", "Dijkstra", "Allen", "Hopper",
        "Lamarr", "Sutherland", "Backus", "Johnson", "Lamport", "Hamilton", "Wirth", "Perlman",
        "Wilson", "Berners-Lee")


def student(n: int) -> dict:
    """The ``n``-th made-up student (from 0): name, sid and email."""
    first, last = FIRST[n % len(FIRST)], LAST[(n * 7 + n // len(FIRST)) % len(LAST)]
    return {"name": f"{first} {last}", "sid": f"{7000 + n:05d}",
            "email": f"{first.lower()}.{last.lower()}{n}@example.edu"}


def as_export(folder: Path, names: list[str]) -> dict[str, dict]:
    """Rename each of ``names`` (sub-folders of the class ``folder``) to
    ``submission_<n>`` and write the export's ``submission_metadata.yml``,
    one made-up student each; return {export key: {"what": the old name,
    "name", "sid", "email"}}."""
    people, yml = {}, []
    for n, name in enumerate(names):
        key = f"submission_{100001 + n}"
        (folder / name).rename(folder / key)
        people[key] = {"what": name, **student(n)}
        p = people[key]
        yml += [f"{key}:", "  :submitters:", f"  - :name: {p['name']}",
                f"    :sid: '{p['sid']}'", f"    :email: {p['email']}"]
    (folder / "submission_metadata.yml").write_text("\n".join(yml) + "\n")
    return people
