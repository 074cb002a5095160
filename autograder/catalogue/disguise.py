"""A copied submission, disguised the way a student hides a copy: every
function's local variables renamed, the top-level functions in another
order, comments and formatting gone (the module is re-printed from its
syntax tree). The code computes exactly what the original computes.

Used for the class report's near-copies (``make demo``, the similarity
tests, ``bench/bench_report.py``); ``disguise(text, seed)`` with another seed
gives another disguise of the same code.
"""
from __future__ import annotations

import ast
import builtins
import random

ADJECTIVES = ("my", "tmp", "the", "new", "cur", "out", "res", "val", "buf", "aux")


class _Renamer(ast.NodeTransformer):
    """Renames the names of ``mapping`` inside one function's body (its
    arguments are not in it: callers may pass them by keyword)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.mapping:
            return ast.copy_location(ast.Name(self.mapping[node.id], node.ctx), node)
        return node

    def visit_FunctionDef(self, node):      # a nested function: its own scope, untouched
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef


def _locals(fn: ast.FunctionDef) -> set[str]:
    """Names ``fn`` itself assigns (not its arguments, globals or nonlocals,
    nor any name a nested function, lambda or class mentions)."""
    args = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    args |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    declared, assigned = set(), set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                  ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp,
                                  ast.GeneratorExp)):
                continue
            if isinstance(child, (ast.Global, ast.Nonlocal)):
                declared.update(child.names)
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                assigned.add(child.id)
            walk(child)

    for stmt in fn.body:
        walk(stmt)
    closures = {n.id for inner in ast.walk(fn) if inner is not fn and isinstance(
        inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        for n in ast.walk(inner) if isinstance(n, ast.Name)}
    return assigned - args - declared - closures


def _shuffled_runs(body: list, rng: random.Random) -> list:
    """``body`` with each run of consecutive function definitions shuffled
    (module-level code between them keeps its place)."""
    out, run = [], []
    for node in body + [None]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            run.append(node)
            continue
        rng.shuffle(run)
        out += run + ([node] if node is not None else [])
        run = []
    return out


def disguise(text: str, seed: int = 0) -> str:
    """``text`` (a Python module) with each function's local names renamed
    and each run of consecutive top-level functions shuffled."""
    rng = random.Random(seed)
    tree = ast.parse(text)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(dir(builtins))
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                            ast.AsyncFunctionDef))]:
        mapping = {}
        for name in sorted(_locals(fn)):
            new = f"{rng.choice(ADJECTIVES)}_{name}"
            while new in taken or new in mapping.values():
                new += "_"
            mapping[name] = new
        fn.body = [_Renamer(mapping).visit(stmt) for stmt in fn.body]
    tree.body = _shuffled_runs(tree.body, rng)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
