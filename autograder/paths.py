"""Where things live in the repo checkout (or in an unpacked Gradescope zip)."""
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
ASSIGNMENTS_DIR = ROOT / "assignments"
TEMPLATE_DIR = ROOT / "student_template"
SOLUTIONS_DIR = ROOT / "solutions"
DIST_DIR = ROOT / "dist"
