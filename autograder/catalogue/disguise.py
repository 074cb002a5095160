"""A copied submission, disguised the way a student hides a copy: every
function's local variables renamed and the top-level functions in another
order, the rest of the text (formatting, comments, docstrings) as it was.
The code computes exactly what the original computes.

Used for the class report's near-copies (``make demo``, the similarity
tests, ``bench/bench_report.py``); ``disguise(text, seed)`` with another seed
gives another disguise of the same code. The text is edited in place (names
at their positions in the syntax tree, functions moved as blocks of lines),
never re-printed, so two disguised copies share nothing a re-printing would
add.
"""
from __future__ import annotations

import ast
import builtins
import random

PREFIXES = ("my", "tmp", "the", "new", "cur", "out", "res", "val", "buf", "aux")
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _inner_nodes(fn: ast.AST):
    """The nodes of ``fn``'s own scope (not of a nested function or class)."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, SCOPES):
            todo.extend(ast.iter_child_nodes(node))


def _locals(fn: ast.FunctionDef) -> set[str]:
    """Names ``fn`` itself assigns, less its arguments, its globals and
    nonlocals, and any name a nested scope or an f-string mentions."""
    args = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    args |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    assigned, keep = set(), set()
    for node in _inner_nodes(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            keep.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned.add(node.id)
        if isinstance(node, SCOPES + (ast.JoinedStr,)):
            keep.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    return assigned - args - keep


def _renames(tree: ast.Module, rng: random.Random) -> list[tuple[int, int, int, str]]:
    """(line, start column, end column, new name) of every use of a renamed
    local (columns in UTF-8 bytes, as ast gives them)."""
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(dir(builtins))
    edits = []
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                            ast.AsyncFunctionDef))]:
        mapping: dict[str, str] = {}
        for name in sorted(_locals(fn)):
            new = f"{rng.choice(PREFIXES)}_{name}"
            while new in taken or new in mapping.values():
                new += "_"
            mapping[name] = new
        edits += [(n.lineno, n.col_offset, n.end_col_offset, mapping[n.id])
                  for n in _inner_nodes(fn) if isinstance(n, ast.Name) and n.id in mapping]
    return edits


def _apply(lines: list[str], edits: list[tuple[int, int, int, str]]) -> list[str]:
    out = list(lines)
    for line, start, end, new in sorted(edits, reverse=True):
        raw = out[line - 1].encode()
        out[line - 1] = (raw[:start] + new.encode() + raw[end:]).decode()
    return out


def _moved(tree: ast.Module, lines: list[str], rng: random.Random) -> list[str]:
    """``lines`` with each run of consecutive top-level functions shuffled,
    each function moved with the lines after it (blank lines, comments) up to
    the next statement."""
    body = tree.body
    starts = [min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
              for n in body] + [len(lines) + 1]
    chunks = [lines[starts[i] - 1:starts[i + 1] - 1] for i in range(len(body))]
    out, run = lines[:starts[0] - 1], []
    for node, chunk in zip(body + [None], chunks + [None]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            run.append(chunk)
            continue
        rng.shuffle(run)
        for c in run:
            out += c
        run = []
        if chunk is not None:
            out += chunk
    return out


def disguise(text: str, seed: int = 0) -> str:
    """``text`` (a Python module) with each function's local names renamed
    and each run of consecutive top-level functions shuffled."""
    rng = random.Random(seed)
    tree = ast.parse(text)
    lines = _apply(text.split("\n"), _renames(tree, rng))
    moved = _moved(tree, lines, rng)
    if moved and moved[-1].strip():
        moved.append("")
    return "\n".join(moved)
