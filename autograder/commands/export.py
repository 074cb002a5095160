"""A class's submissions: a plain folder (one sub-folder or zip each) or
Gradescope's "Export Submissions" download with its ``submission_metadata.yml``,
and each submission's metadata in the format of Gradescope's
``submission_metadata.json``.

The layout is decided from the class folder alone, before any submission is
read: only the folder given (or its one entry, a folder, as when the export
zip was unzipped into it) may hold the ``submission_metadata.yml`` that
makes it an export; a yml inside a submission is that submission's file and
changes nothing. Every path the yml names is a plain name of an entry of
the export folder (no ``/``, ``..`` or symlink; resolved, it stays inside),
else it gets a row that says why it was refused, and no file outside is
read. Every entry of the class folder gets a row (dot-names, odd names and
a *folder* named ``submission_metadata.yml`` included); only the output
folder and the export's own yml file get none. Each submission is known by
a stable key (its name in the class folder, or its key in the yml), from
which its output folder is derived (:func:`out_name`), so that two names
never share results or a re-run's skip.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

from ..grading import config
from ..harness.intake import unsafe_zip_entry, zip_too_large

METADATA_YML = "submission_metadata.yml"


EXPORT_MAX_MEMBERS = 200_000       # an export zip's members (a class of 1,000 with notebooks fits)


@dataclass
class Submission:
    name: str                               # its key: name in the class folder, or key in the yml
    path: Path
    submitters: list[dict] = field(default_factory=list)   # [{"name", "sid", "email"}]
    gradescope: Optional[dict] = None       # the export's metadata of this submission
    refused: str = ""                       # why it is not graded (a path outside the export)


def _safe_name(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "submission"
    return safe[:120]


def out_name(key: str, taken: set[str] = frozenset()) -> str:
    """The output folder of the submission known as ``key``: the key itself
    when it is a safe name, else its safe form and a hash of the key (so
    ``top student`` and ``top_student`` never share one); the same on every
    run. ``taken``: folders already given in this run (a name forged to
    equal another's hashed form gets a longer hash)."""
    safe = _safe_name(key)
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
    name = safe if safe == key else f"{safe[:100]}-{digest[:8]}"
    return name if name not in taken else f"{safe[:100]}-{digest[:24]}"


def _load_yaml(text: str) -> dict:
    try:
        import yaml
    except ImportError:                     # PyYAML comes with the grading extra
        return _parse_metadata_fallback(text)

    class Loader(yaml.SafeLoader):
        pass

    def unknown(loader, suffix, node):      # Ruby tags (!ruby/object:...) as plain data
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("!", unknown)
    Loader.add_multi_constructor("tag:", unknown)
    data = yaml.load(text, Loader=Loader)
    return data if isinstance(data, dict) else {}


def _parse_metadata_fallback(text: str) -> dict:
    """Enough of Gradescope's YAML without PyYAML: submission keys and submitters."""
    data: dict = {}
    current, person, block = None, None, None      # block: indent of ":submitters:"
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith(("#", "---")):
            continue
        indent = len(raw) - len(raw.lstrip())
        line = raw.strip()
        if indent == 0:
            current = data.setdefault(line.rstrip(":").strip("'\""), {":submitters": []}) \
                if line.endswith(":") else None
            block, person = None, None
            continue
        if current is None:
            continue
        if line.startswith(":submitters:"):
            block, person = (indent if line == ":submitters:" else None), None
            continue
        if block is None:
            continue
        if indent <= block and not line.startswith("- "):
            block, person = None, None                # the next key of this submission
            continue
        m = re.match(r"^(- )?(:\w+):\s*(.*)$", line)
        if not m:
            continue
        if m.group(1):
            person = {}
            current[":submitters"].append(person)
        if person is not None:
            person[m.group(2)] = m.group(3).strip().strip("'\"") or None
    return data


def _submitters(meta: dict) -> list[dict]:
    people = []
    for p in (meta.get(":submitters") or meta.get("submitters") or []):
        if not isinstance(p, dict):
            continue
        get = lambda k: p.get(f":{k}", p.get(k))          # noqa: E731
        people.append({k: ("" if get(k) is None else str(get(k)).strip())
                       for k in ("name", "sid", "email")})
    return people


def _safe_extract(zip_path: Path, dest: Path) -> None:
    """Unpack an export zip, refusing absolute, '..' and symlink entries (and a
    zip of more than EXPORT_MAX_MEMBERS members: ValueError)."""
    too_large = zip_too_large(zip_path, EXPORT_MAX_MEMBERS)
    if too_large:
        raise ValueError(f"{zip_path}: {too_large}")
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if unsafe_zip_entry(info):
                continue
            target = tmp.joinpath(*PurePosixPath(info.filename).parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
    os.replace(tmp, dest)


def _holds_metadata(folder: Path) -> bool:
    """``folder`` (a real folder) holds a regular file ``submission_metadata.yml``."""
    try:
        return (stat.S_ISDIR(os.lstat(folder).st_mode)
                and stat.S_ISREG(os.lstat(folder / METADATA_YML).st_mode))
    except OSError:
        return False


def _entries(folder: Path, out: Path) -> list[Path]:
    """The entries of ``folder`` in name order, but the output folder."""
    try:
        out_real = out.resolve()
    except OSError:
        out_real = None
    return [p for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if os.path.realpath(p) != str(out_real)]


def export_root(folder: Path, out: Optional[Path] = None) -> Optional[Path]:
    """The export folder: ``folder`` when it holds ``submission_metadata.yml``,
    else its one entry (dot-names aside) when that is a folder holding it (as
    when ``assignment_123_export.zip`` was unzipped), else None. Nothing
    deeper is looked at: a submission's own yml never makes an export."""
    if _holds_metadata(folder):
        return folder
    entries = [p for p in _entries(folder, out or folder / "_grades")
               if not p.name.startswith(".")]
    if len(entries) == 1 and _holds_metadata(entries[0]):
        return entries[0]
    return None


def _plain_key(key: str) -> bool:
    """A yml key that can only name an entry of the export folder itself."""
    return bool(key) and key not in (".", "..") and "/" not in key and "\\" not in key \
        and "\0" not in key and key != METADATA_YML


def _listed(root: Path, key: str) -> tuple[Optional[Path], str]:
    """(path, "") of the entry the yml key names (``<key>`` or ``<key>.zip``),
    or (None, why it is refused)."""
    if not _plain_key(key):
        return None, ("refused: the export's metadata names a path that is not a plain "
                      "name in the export folder")
    for candidate in (root / key, root / f"{key}.zip"):
        try:
            st = os.lstat(candidate)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or os.path.dirname(os.path.realpath(candidate)) != \
                os.path.realpath(root):
            return None, "refused: the export's metadata names a link, not a folder or zip"
        return candidate, ""
    return root / key, ""                         # missing: intake says so


def discover(folder: Path, out: Path) -> tuple[list[Submission], str]:
    """The submissions in ``folder`` and the layout ("gradescope" or "plain"):
    one per entry (and per yml key), none left without a row."""
    root = export_root(folder, out)
    if root is None:
        return [Submission(p.name, p) for p in _entries(folder, out)], "plain"
    meta = _load_yaml((root / METADATA_YML).read_text(errors="replace"))
    subs, seen = [], set()
    for key in sorted(meta, key=str):
        entry = meta[key] if isinstance(meta[key], dict) else {}
        name = str(key)
        path, refused = _listed(root, name)
        if path is not None and path.name in seen:
            path, refused = None, f"refused: the export's metadata names {path.name} twice"
        subs.append(Submission(name, path if path is not None else root / "-",
                               _submitters(entry), entry, refused))
        seen.add(path.name if path is not None else name)   # a refused name: its row is this
    for p in _entries(root, out):                 # entries the yml does not list
        if p.name not in seen and not (p.name == METADATA_YML and _holds_metadata(root)):
            subs.append(Submission(p.name, p))
    if root != folder:                            # what sits beside the export folder
        subs += [Submission(f"../{p.name}", p) for p in _entries(folder, out) if p != root]
    return subs, "gradescope"


def gradescope_json(sub: Submission, assignment: config.Assignment) -> dict:
    """This submission's metadata in the format of Gradescope's
    /autograder/submission_metadata.json (what grade() reads)."""
    meta = sub.gradescope or {}
    digits = re.sub(r"\D", "", sub.name)

    def plain(v):
        return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)

    return {"id": int(digits) if digits else None,
            "created_at": plain(meta.get(":created_at")),
            "assignment": {"title": assignment.title,
                           "total_points": str(assignment.total_points)},
            "submission_method": "upload",
            "users": [{"email": p["email"], "name": p["name"], "sid": p["sid"]}
                      for p in sub.submitters],
            "previous_submissions": []}
