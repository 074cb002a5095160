"""Stub modules and reference modules agree on everything but the answers:
the same functions with the same signatures, and every piece the handout
gives complete (not raising NotImplementedError) is the reference's, verbatim."""
from __future__ import annotations

import ast

import pytest

from autograder.grading import config
from conftest import ROOT

FILES = [(a, f) for a in config.available() for f in config.load(a).submission_files
         if f.endswith(".py")]


def _functions(path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _raises_not_implemented(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n)
               for n in ast.walk(fn))


@pytest.mark.parametrize("assignment,filename", FILES)
def test_stub_and_reference_share_api_and_given_code(assignment, filename):
    stub = _functions(ROOT / "student_template" / assignment / filename)
    ref = _functions(ROOT / "solutions" / assignment / filename)
    public = {n for n in stub if not n.startswith("_")}
    assert public == {n for n in ref if not n.startswith("_")}
    for name in public:
        assert ast.unparse(stub[name].args) == ast.unparse(ref[name].args), name
    given = [n for n in public if not _raises_not_implemented(stub[n])]
    for name in given:
        assert ast.unparse(stub[name]) == ast.unparse(ref[name]), f"given {name}() differs"
    assert len(given) < len(public), "the stub asks the student for nothing"
