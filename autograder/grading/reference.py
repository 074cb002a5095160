"""Load the hidden reference modules from ``solutions/<id>/`` (instructor side only)."""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from ..paths import SOLUTIONS_DIR


def load_reference(assignment_id: str, filename: str) -> ModuleType:
    """Import ``solutions/<assignment_id>/<filename>`` under a private module name."""
    path = SOLUTIONS_DIR / assignment_id / filename
    if not path.is_file():
        raise FileNotFoundError(f"reference solution {path} is missing (solutions/ is not "
                                "shipped in the Gradescope zip; use the stored expected values)")
    name = f"_reference_{assignment_id}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
