"""Load the hidden reference modules from ``solutions/<id>/`` (instructor side only)."""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from ..paths import SOLUTIONS_DIR


def load_reference(assignment_id: str, filename: str, directory=None) -> ModuleType:
    """Import ``solutions/<assignment_id>/<filename>`` under a private module name.

    Its folder, and the folders of the references it borrows (``[submission]
    borrowed``), are on ``sys.path`` while it loads, so a reference that
    imports a sibling submission file (capstone B's ``import ppo``) finds the
    reference's (capstone A's)."""
    from . import config
    assignment = config.load(assignment_id, directory)
    path = assignment.source(SOLUTIONS_DIR, filename)
    if not path.is_file():
        raise FileNotFoundError(f"reference solution {path} is missing (solutions/ is not "
                                "shipped in the Gradescope zip; use the stored expected values)")
    name = f"_reference_{assignment_id}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folders = list(dict.fromkeys(str(p.parent) for p in
                                 [path, *assignment.sources(SOLUTIONS_DIR)]))
    sys.path[:0] = folders
    try:
        spec.loader.exec_module(module)
    finally:
        for folder in folders:
            sys.path.remove(folder)
    return module
