"""A class's submissions: a plain folder (one sub-folder or zip each) or
Gradescope's "Export Submissions" download with its ``submission_metadata.yml``,
and each submission's metadata in the format of Gradescope's
``submission_metadata.json``."""
from __future__ import annotations

import os
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

from ..grading import config
from ..harness.intake import unsafe_zip_entry

METADATA_YML = "submission_metadata.yml"


@dataclass
class Submission:
    name: str                               # folder or file name in the batch folder
    path: Path
    submitters: list[dict] = field(default_factory=list)   # [{"name", "sid", "email"}]
    gradescope: Optional[dict] = None       # the export's metadata of this submission


def _safe_name(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "submission"
    return safe[:120]


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
    """Unpack an export zip, refusing absolute, '..' and symlink entries."""
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


def export_root(folder: Path) -> Optional[Path]:
    """The folder holding ``submission_metadata.yml`` (``folder`` or its only
    sub-folder, as when ``assignment_123_export.zip`` was unzipped), else None."""
    if (folder / METADATA_YML).is_file():
        return folder
    subs = [d for d in folder.iterdir() if d.is_dir() and (d / METADATA_YML).is_file()]
    return subs[0] if len(subs) == 1 else None


def _ignored(p: Path, out: Path) -> bool:
    return (p.name.startswith((".", "__MACOSX")) or p.name == METADATA_YML
            or p.resolve() == out.resolve())


def discover(folder: Path, out: Path) -> tuple[list[Submission], str]:
    """The submissions in ``folder`` and the layout ("gradescope" or "plain")."""
    root = export_root(folder)
    if root is None:
        subs = [Submission(p.name, p) for p in sorted(folder.iterdir(), key=lambda p: p.name)
                if not _ignored(p, out)]
        return subs, "plain"
    meta = _load_yaml((root / METADATA_YML).read_text(errors="replace"))
    subs, seen = [], set()
    for key in sorted(meta, key=str):
        entry = meta[key] if isinstance(meta[key], dict) else {}
        name = str(key)
        path = root / name
        if not path.exists() and (root / f"{name}.zip").exists():
            path = root / f"{name}.zip"
        subs.append(Submission(name, path, _submitters(entry), entry))
        seen.add(path.name)
    for p in sorted(root.iterdir(), key=lambda p: p.name):   # folders the yml does not list
        if p.name not in seen and not _ignored(p, out):
            subs.append(Submission(p.name, p))
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
