"""Where things live in the repo checkout (or in an unpacked zip), and how
its TOML files are read."""
from __future__ import annotations

import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (older Gradescope images)
    import tomli as tomllib

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
ASSIGNMENTS_DIR = ROOT / "assignments"
TEMPLATE_DIR = ROOT / "student_template"
SOLUTIONS_DIR = ROOT / "solutions"
# Built zips (make dist). RLCAP_DIST_DIR moves them: the test suite gives each of its parallel
# workers its own, so that no worker reads a zip another is rewriting.
DIST_DIR = Path(os.environ.get("RLCAP_DIST_DIR") or ROOT / "dist")
EXPECTED_DIR = PACKAGE_DIR / "expected"      # recorded answers (written by make dist)


def read_toml(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)
