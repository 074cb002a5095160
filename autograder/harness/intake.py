"""Intake: copy only the declared submission files into a fresh sandbox dir.

Accepts a directory or a zip. Files may sit at the top level or one folder
down (a zipped folder); anything else is reported, never copied. A zip of
more than MAX_ZIP_MEMBERS members is refused before it is opened (opening
one of 300,000 members took 18 s and 230 MB).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_ZIP_MEMBERS = 1000                 # a submission zip's members (a handout folder has ~20)
_EOCD, _EOCD64_LOCATOR = b"PK\x05\x06", b"PK\x06\x07"
SHADOWED = {"numpy", "threadpoolctl", "rlkit", "autograder", "wire", "worker", "json",
            "os", "sys", "math", "random", "time", "signal", "resource", "struct", "select",
            "io", "re", "abc", "types", "typing", "functools", "collections", "copy",
            "importlib", "site", "sitecustomize", "usercustomize", "tomllib", "tomli", "pathlib"}


@dataclass
class Intake:
    sandbox: Path
    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    digest: str = ""          # sha256 of the declared files as taken (:func:`files_digest`)


def files_digest(directory: Path, declared: tuple[str, ...]) -> str:
    """The submission itself, as a key: sha256 (hex) over each declared file's
    name, length and bytes in declared order (a missing file counts as
    absent). The same files give the same digest wherever they came from (a
    folder, a zip, one folder down); any edit of a byte gives another."""
    h = hashlib.sha256()
    for name in declared:
        path = Path(directory) / name
        data = path.read_bytes() if path.is_file() else None
        h.update(name.encode() + b"\0")
        h.update(b"absent\0" if data is None else len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _shadows(name: str) -> bool:
    stem = name[:-3] if name.endswith(".py") else name
    return stem in SHADOWED or stem in sys.builtin_module_names or \
        stem in getattr(sys, "stdlib_module_names", ())


def unsafe_zip_entry(info: zipfile.ZipInfo) -> bool:
    """An entry that could write outside the target: absolute, '..', a
    backslash path, or a symlink."""
    name = info.filename
    return (name.startswith("/") or ".." in PurePosixPath(name).parts or "\\" in name
            or stat.S_ISLNK(info.external_attr >> 16))


def renamed_copy(name: str, declared: str) -> bool:
    """``name`` is ``declared`` as a browser or a file manager renames a second
    download of it: ``grpo (1).py``, ``grpo(2).py``, ``grpo-1.py``, ``grpo_3.py``,
    ``grpo copy.py``."""
    stem, dot, ext = declared.rpartition(".")
    if not dot or not name.endswith("." + ext):
        return False
    rest = name[:-len(ext) - 1]
    if not rest.startswith(stem) or rest == stem:
        return False
    tail = rest[len(stem):]
    return bool(re.fullmatch(r" ?\(\d{1,3}\)|[-_ ]\d{1,3}| copy( \d{1,3})?| - Copy( \(\d{1,3}\))?",
                             tail))


def zip_too_large(path: Path, max_members: int) -> str:
    """Why the zip at ``path`` is refused before it is opened ("" if not): its
    end-of-central-directory record claims more than ``max_members`` members
    or a central directory larger than they need (zipfile reads the whole
    directory when it opens an archive, whatever the count says). A file
    without the record is left to zipfile to refuse."""
    cd_cap = max_members * (46 + 2 * 1024)          # header + a long name and extra field each
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 65536 - 22))
            tail = f.read()
    except OSError:
        return ""
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) < at + 22:
        return ""
    count = int.from_bytes(tail[at + 10:at + 12], "little")
    cd_size = int.from_bytes(tail[at + 12:at + 16], "little")
    locator = tail.rfind(_EOCD64_LOCATOR, 0, at)
    if locator >= 0 and (count == 0xFFFF or cd_size == 0xFFFFFFFF):
        with open(path, "rb") as f:                 # the zip64 record holds the real numbers
            f.seek(int.from_bytes(tail[locator + 8:locator + 16], "little"))
            record = f.read(56)
        if record[:4] == b"PK\x06\x06":
            count = int.from_bytes(record[32:40], "little")
            cd_size = int.from_bytes(record[40:48], "little")
    if count > max_members:
        return f"the zip has {count} members (more than {max_members}): refused"
    if cd_size > cd_cap:
        return (f"the zip's directory takes {cd_size} bytes (more than {max_members} members "
                "need): refused")
    return ""


def _candidates(entries: list[tuple[str, bool]], declared: tuple[str, ...],
                renamed: Optional[dict[str, str]] = None) -> dict[str, str]:
    """Map each declared file name to the entry path holding it (top level
    first, else one folder down); ``entries`` are (posix path, is_regular_file).
    A declared name found nowhere may be taken from exactly one browser-renamed
    copy of it (:func:`renamed_copy`); ``renamed`` receives {name: entry} of those."""
    chosen: dict[str, str] = {}
    for depth in (1, 2):
        for path, regular in entries:
            parts = PurePosixPath(path).parts
            if len(parts) == depth and regular and parts[-1] in declared \
                    and parts[-1] not in chosen:
                chosen[parts[-1]] = path
    for name in declared:
        if name in chosen:
            continue
        for depth in (1, 2):
            copies = [path for path, regular in entries
                      if regular and len(PurePosixPath(path).parts) == depth
                      and renamed_copy(PurePosixPath(path).name, name)]
            if len(copies) == 1:
                chosen[name] = copies[0]
                if renamed is not None:
                    renamed[name] = copies[0]
                break
            if copies:
                break                       # several copies: which one is the work? none
    return chosen


def _note_renamed(intake: "Intake", renamed: dict[str, str]) -> None:
    for name, entry in renamed.items():
        intake.messages.append(f"graded {entry!r} as {name} (no file named {name}; it looks "
                               f"like a renamed download of it). Upload it as {name} next time.")


def take(submission: Path, declared: tuple[str, ...], sandbox: Path) -> Intake:
    """Copy the declared files of ``submission`` (dir or .zip) into the empty
    directory ``sandbox``, readable (not writable) by the worker."""
    intake = Intake(sandbox)
    for name in declared:
        if _shadows(name):
            raise ValueError(f"assignment declares {name}, which shadows a module")
    submission = Path(submission)
    if submission.is_file() and (submission.suffix.lower() == ".zip"
                                 or zipfile.is_zipfile(submission)):
        _from_zip(submission, declared, intake)
    elif submission.is_dir():
        _from_dir(submission, declared, intake)
    elif submission.is_file():
        _from_file(submission, declared, intake)
    else:
        intake.messages.append(f"submission {submission} is neither a folder, a zip file nor "
                               "a file")
    intake.missing = [n for n in declared if n not in intake.found]
    intake.digest = files_digest(sandbox, declared)
    hint = " Upload the file itself (not a folder of folders)." if submission.is_dir() or \
        zipfile.is_zipfile(submission) else ""
    for n in intake.missing:
        intake.messages.append(f"{n} was not found in the submission; questions that need it "
                               f"score 0.{hint}")
    return intake


HANDOUT_PARTS = {"autograder", "rlkit", "tests", "assignments", ".venv", "__pycache__",
                 ".ipynb_checkpoints", "figures",      # figures/: what the notebook draws
                 "logs"}                               # capstone C's training logs
HANDOUT_FILES = {"README.md",                          # the handout's own
                 "__zip_filename__"}                   # otter's mark in the notebook's zip


def _note_extra(intake: Intake, extra: list[str]) -> None:
    # Grading the handout folder itself (``grade <id> .``): its own parts are not news.
    extra = [e for e in extra if PurePosixPath(e).parts[0] not in HANDOUT_PARTS
             and not e.endswith(".zip") and e not in HANDOUT_FILES
             and not re.fullmatch(r"requirements(-[\w]+)?\.txt", e)]   # the handout's pins
    shadow = [e for e in extra if _shadows(PurePosixPath(e).name)]
    if shadow:
        intake.messages.append("refused, would shadow a module: " + ", ".join(shadow[:10]))
    ignored = [e for e in extra if e not in shadow and not PurePosixPath(e).name.startswith(".")
               and "__pycache__" not in e and not e.endswith((".ipynb", ".pdf"))]
    if ignored:
        intake.messages.append("ignored (not part of the submission): " +
                               ", ".join(sorted(ignored)[:20]) +
                               (" ..." if len(ignored) > 20 else ""))


def _from_file(path: Path, declared: tuple[str, ...], intake: Intake) -> None:
    """One file given by itself (``grade d_grpo grpo.py``): graded as the declared
    file it names (or is a renamed copy of); any other file is refused, saying so."""
    renamed: dict[str, str] = {}
    if not _candidates([(path.name, True)], declared, renamed):
        intake.messages.append(f"{path.name} is not a file of this submission (expected "
                               f"{', '.join(declared)}): give the folder or zip holding them, "
                               "or the file itself")
        return
    _from_dir(path.parent, declared, intake, only=path.name)


def _from_dir(root: Path, declared: tuple[str, ...], intake: Intake,
              only: Optional[str] = None) -> None:
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        if len(rel.parts) >= 1:
            dirnames[:] = []                      # one level of nesting at most
        if only is not None:
            dirnames[:] = []
            filenames = [f for f in filenames if f == only]
        for f in filenames:
            p = Path(dirpath) / f
            st = os.lstat(p)
            entries.append(((rel / f).as_posix(), stat.S_ISREG(st.st_mode)))
    renamed: dict[str, str] = {}
    chosen = _candidates(entries, declared, renamed)
    _note_renamed(intake, renamed)
    missing = tuple(n for n in declared if n not in chosen)
    zips = [root / e for e, regular in entries
            if regular and "/" not in e and e.lower().endswith(".zip")]
    if missing and only is None and len(zips) == 1:
        # one zip uploaded as a file (a platform that does not unzip: the notebook's export)
        before = set(intake.found)
        _from_zip(zips[0], missing, intake)
        inside = [n for n in intake.found if n not in before]
        if inside:
            intake.messages.append(f"graded {', '.join(inside)} from inside {zips[0].name} "
                                   "(a zip uploaded as one file)")
    for name, rel in chosen.items():
        src = root / rel
        if os.lstat(src).st_size > MAX_FILE_BYTES:
            intake.messages.append(f"{rel} is larger than {MAX_FILE_BYTES} bytes; refused")
            continue
        try:
            shutil.copyfile(src, intake.sandbox / name)
        except OSError as e:
            (intake.sandbox / name).unlink(missing_ok=True)
            intake.messages.append(f"{rel} could not be read ({type(e).__name__}); refused")
            continue
        os.chmod(intake.sandbox / name, 0o640)
        intake.found.append(name)
    _note_extra(intake, [e for e, _ in entries if e not in chosen.values()])


ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError,
              EOFError, OSError, ValueError, zlib.error)


def _from_zip(path: Path, declared: tuple[str, ...], intake: Intake) -> None:
    """Every zip error (a broken archive; an encrypted, unknown-method,
    bad-CRC or lying-size member) and every duplicated name becomes a message;
    the file concerned is then missing, never half-copied."""
    too_large = zip_too_large(path, MAX_ZIP_MEMBERS)
    if too_large:
        intake.messages.append(f"{too_large}; upload the file itself or a zip of the files "
                               "named in the assignment")
        return
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            _zip_members(zf, infos, declared, intake)
    except ZIP_ERRORS as e:
        intake.messages.append(f"the zip file could not be read ({_zip_error(e)}); upload "
                               "the file itself or a plain zip")


def _zip_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:200]}"


def _zip_members(zf: zipfile.ZipFile, infos: list, declared: tuple[str, ...],
                 intake: Intake) -> None:
    entries, bad, seen, duplicated = [], [], set(), set()
    for info in infos:
        if unsafe_zip_entry(info):
            bad.append(info.filename)
        elif not info.is_dir():
            if info.filename in seen:
                duplicated.add(info.filename)
                continue
            seen.add(info.filename)
            entries.append((info.filename, True))
    if bad:
        intake.messages.append("refused unsafe zip entries (absolute, '..' or symlink): " +
                               ", ".join(bad[:10]))
    renamed: dict[str, str] = {}
    chosen = _candidates(entries, declared, renamed)
    _note_renamed(intake, renamed)
    for name, entry in chosen.items():
        if entry in duplicated:
            intake.messages.append(f"{entry} appears more than once in the zip; refused "
                                   "(which copy is your work?): zip it again with one copy")
            continue
        info = next(i for i in infos if i.filename == entry)
        if info.flag_bits & 0x1:
            intake.messages.append(f"{entry} is encrypted in the zip; refused (zip it "
                                   "without a password)")
            continue
        if info.file_size > MAX_FILE_BYTES:
            intake.messages.append(f"{entry} is larger than {MAX_FILE_BYTES} bytes; refused")
            continue
        target = intake.sandbox / name
        partial = intake.sandbox / f".{name}.partial"
        try:
            with zf.open(info) as src, open(partial, "wb") as dst:
                data = src.read(MAX_FILE_BYTES + 1)      # a lying size cannot get past this
                if len(data) > MAX_FILE_BYTES:
                    raise ValueError(f"more than {MAX_FILE_BYTES} bytes")
                dst.write(data)
        except ZIP_ERRORS as e:
            partial.unlink(missing_ok=True)
            intake.messages.append(f"{entry} could not be unpacked from the zip "
                                   f"({_zip_error(e)}); refused")
            continue
        os.chmod(partial, 0o640)
        os.replace(partial, target)
        intake.found.append(name)
    _note_extra(intake, [e for e, _ in entries if e not in chosen.values()])
