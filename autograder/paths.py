"""Where things live in the repo checkout (or in an unpacked zip), and how
its TOML files are read."""
from __future__ import annotations

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
DIST_DIR = ROOT / "dist"
EXPECTED_DIR = PACKAGE_DIR / "expected"      # recorded answers (written by make dist)


def read_toml(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)
