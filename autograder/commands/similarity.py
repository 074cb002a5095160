"""Which submissions of a class look alike: pairs for an instructor's review,
never a verdict.

Each submission's declared ``.py`` files, read as grading reads them
(:func:`autograder.harness.intake.take`: the files at the top level or one
folder down, never anything else), make one *document*. Before comparing:

* the handout's own lines go: every line of the stubs
  (``student_template/<id>/*.py``), compared with whitespace collapsed, is
  dropped from every document (the given code, the docstrings, a handout
  example a student pasted again);
* copydetect (PyPI ``copydetect``, pinned in the ``report`` extra) tokenises
  the rest with Pygments, replaces every variable, function and class name by
  one letter and every string by ``S``, drops comments and whitespace, and
  fingerprints every k-gram of ``NOISE`` normalised characters (the
  winnowing scheme of MOSS, Schleimer et al. 2003, with a window of 1: every
  k-gram is kept, so the outcome does not depend on Python's per-process hash
  seed); the handout's own fingerprints are ignored;
* a passage found in more than ``common_limit(n)`` of the ``n`` documents is
  the class's common code (an idiom, a formula everyone writes one way), not
  evidence of copying: its fingerprints are ignored, as MOSS's ``-m`` does.

A pair's *share* on each side is copydetect's similarity: the part of that
document's remaining code (in normalised characters) covered by passages the
other document also has. A pair is flagged for review when its larger share
is at least ``FLAG_SHARE`` and the shared code is at least ``MIN_OVERLAP``
normalised characters (five or six lines of numpy once every name is one
letter: ``x = np.asarray(x, dtype=np.float64)`` is ``V=V.V(V,V=V.V)``), so
that two short submissions that happen to agree on one formula are not
flagged.

Only pairs that share at least ``MIN_OVERLAP - NOISE + 1`` fingerprints can
reach that (a shared run of L characters gives L - NOISE + 1 fingerprints);
they are found through an index of fingerprints and compared in full by
copydetect's ``compare_files``; every other pair's shares are below the
bar by construction.
"""
from __future__ import annotations

import math
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Iterable, Optional

from ..harness.intake import take
from ..paths import TEMPLATE_DIR

NOISE = 25              # copydetect's noise threshold (its default): k-gram length, characters
FLAG_SHARE = 0.6        # the larger share of a pair flagged for review
MIN_OVERLAP = 80        # normalised characters the pair's shared passages cover, at least
MIN_CODE = 2 * NOISE    # a document with less code of its own is not compared
COMMON_SHARE = 0.05     # a passage in more than this share of the class is common code ...
COMMON_MIN = 4          # ... and in more than this many documents in any case
TOP_PAIRS = 30          # pairs listed, highest score first (the flagged ones among them)


def common_limit(n: int) -> int:
    """A passage in more than this many of ``n`` documents is common code."""
    return max(COMMON_MIN, math.ceil(COMMON_SHARE * n))


def normalised(line: str) -> str:
    return " ".join(line.split())


@dataclass
class Document:
    """One submission's code without the handout's lines: ``text`` (lines
    joined by newlines) and, for each of its lines, ``origin`` (file, line
    number in that file, from 1)."""
    name: str
    text: str
    origin: list[tuple[str, int]] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


@dataclass
class Pair:
    """Two documents' shared passages: ``shares`` (each side's covered part,
    0..1), ``overlap`` (normalised characters of the first document covered),
    ``matched`` (per side, the indices of the document's lines that the
    shared passages touch)."""
    a: str
    b: str
    shares: tuple[float, float]
    overlap: int
    matched: tuple[list[int], list[int]]

    @property
    def score(self) -> float:
        return max(self.shares)

    @property
    def flagged(self) -> bool:
        return self.score >= FLAG_SHARE and self.overlap >= MIN_OVERLAP


@dataclass
class Similarity:
    """The class's pairs: ``pairs`` (every pair compared in full, highest score
    first), ``documents`` (by name), ``too_short`` (documents with less than
    ``MIN_CODE`` code of their own, not compared), ``compared`` (pairs compared
    in full) of ``possible``, ``common`` (the common-code limit used) and
    ``error`` (why nothing was compared, e.g. copydetect missing)."""
    pairs: list[Pair] = field(default_factory=list)
    documents: dict[str, Document] = field(default_factory=dict)
    too_short: list[str] = field(default_factory=list)
    compared: int = 0
    possible: int = 0
    common: int = 0
    error: str = ""

    @property
    def flagged(self) -> list[Pair]:
        return [p for p in self.pairs if p.flagged]


def handout_texts(assignment_id: str, template_dir: Path = TEMPLATE_DIR) -> list[str]:
    """The stubs' texts: every ``.py`` file of the handout folder, and the
    stubs it borrows from another assignment (``[submission] borrowed``)."""
    from ..grading import config
    borrowed = config.load(assignment_id).borrowed
    paths = [*sorted((template_dir / assignment_id).rglob("*.py")),
             *(template_dir / other / f for f, other in sorted(borrowed.items()))]
    return [p.read_text(errors="replace")            # a symlink to a borrowed stub: once
            for p in dict.fromkeys(p.resolve() for p in paths)]


def _spans(text: str) -> tuple[list[tuple[int, int]], set[int]]:
    """(the line spans (first, last, from 1) of tokens that cross lines, such
    as triple-quoted strings: kept or dropped whole, so that what is left
    still tokenises; the lines of standalone string statements, docstrings).
    Nothing when ``text`` does not tokenise."""
    import io
    import tokenize
    spans, prose = [], set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return [], set()
    starts = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
              tokenize.COMMENT}
    for i, tok in enumerate(tokens):
        if tok.end[0] > tok.start[0]:
            spans.append((tok.start[0], tok.end[0]))
        if tok.type == tokenize.STRING and (i == 0 or tokens[i - 1].type in starts) \
                and i + 1 < len(tokens) and tokens[i + 1].type in (tokenize.NEWLINE,
                                                                   tokenize.ENDMARKER):
            prose.update(range(tok.start[0], tok.end[0] + 1))
    return spans, prose


def handout_lines(handout: Iterable[str]) -> set[str]:
    """Every line of the ``handout`` texts, whitespace collapsed."""
    return {normalised(l) for text in handout for l in text.splitlines()}


def without_handout(name: str, files: list[tuple[str, str]], given: set[str]) -> Document:
    """The document of ``files`` ((file name, text) pairs) without its
    docstrings, blank lines and every line in ``given``
    (:func:`handout_lines`); a token that crosses lines (a triple-quoted
    string) goes only when all of its lines do."""
    kept, origin = [], []
    for fname, text in files:
        lines = text.splitlines()
        spans, prose = _spans(text)
        drop = {i for i, l in enumerate(lines, 1) if normalised(l) in given or not l.strip()}
        drop |= prose
        for first, last in spans:
            whole = set(range(first, last + 1))
            if whole <= drop:
                continue
            drop -= whole
        for i, line in enumerate(lines, 1):
            if i not in drop:
                kept.append(line)
                origin.append((fname, i))
    return Document(name, "\n".join(kept), origin)


def submission_files(path: Path, declared: tuple[str, ...]) -> list[tuple[str, str]]:
    """The declared ``.py`` files of the submission at ``path`` (folder or
    zip) as (name, text), read through intake (as grading reads them)."""
    with tempfile.TemporaryDirectory(prefix="rlcap-similarity-") as tmp:
        intake = take(Path(path), declared, Path(tmp))
        out = []
        for name in declared:
            if name.endswith(".py") and name in intake.found:
                out.append((name, (Path(tmp) / name).read_text(errors="replace")))
        return out


def _fingerprint(name: str, text: str):
    """copydetect's fingerprint of Python ``text``: every k-gram of NOISE
    normalised characters (window 1)."""
    import io
    from copydetect import CodeFingerprint
    return CodeFingerprint(f"{name}.py", NOISE, 1, fp=io.StringIO(text), language="python")


def _drop(fp, common: set) -> None:
    """Forget ``fp``'s fingerprints in ``common`` (copydetect's attributes:
    ``hashes``, ``hash_idx``, ``token_coverage``). Its own ``boilerplate``
    argument is not used: it matches repeated k-grams of a document as
    boilerplate (``np.intersect1d(..., assume_unique=True)`` on a list with
    repeats)."""
    from copydetect.utils import get_token_coverage
    if not common & fp.hashes:
        return
    fp.hashes = fp.hashes - common
    fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in common}
    fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))


def _matched_lines(doc: Document, slices) -> list[int]:
    """Indices of ``doc``'s lines that the character ``slices`` (2 x N:
    starts, ends, in ``doc.text``) touch."""
    import numpy as np
    if len(slices) == 0 or len(slices[0]) == 0:
        return []
    starts = np.cumsum([0] + [len(l) + 1 for l in doc.lines])[:-1]
    out: set[int] = set()
    for s, e in zip(slices[0], slices[1]):
        first = int(np.searchsorted(starts, s, side="right")) - 1
        last = int(np.searchsorted(starts, max(int(e) - 1, int(s)), side="right")) - 1
        out.update(range(first, last + 1))
    return sorted(out)


def compare(docs: list[Document], handout: Iterable[str]) -> Similarity:
    """Every pair of ``docs`` that can reach the bar, compared by copydetect,
    after removing ``handout``'s fingerprints and the class's common code."""
    result = Similarity(documents={d.name: d for d in docs})
    try:
        from copydetect import compare_files
    except ImportError:
        result.error = ("copydetect is not installed (pip install -e '.[report]'): no "
                        "similarity check")
        return result
    plate = set().union(*(_fingerprint("handout", t).hashes for t in handout))
    prints = {d.name: _fingerprint(d.name, d.text) for d in docs}
    frequency = Counter(h for fp in prints.values() for h in fp.hashes)
    result.common = common_limit(len(docs))
    ignored = plate | {h for h, n in frequency.items() if n > result.common}
    for fp in prints.values():
        _drop(fp, ignored)
    names = [d.name for d in docs if prints[d.name].token_coverage >= MIN_CODE]
    result.too_short = [d.name for d in docs if d.name not in names]
    result.possible = len(names) * (len(names) - 1) // 2
    index: dict[int, list[str]] = {}
    for name in names:
        for h in prints[name].hashes:
            index.setdefault(h, []).append(name)
    shared: Counter = Counter()
    for members in index.values():
        if len(members) > 1:
            shared.update(combinations(members, 2))
    need = MIN_OVERLAP - NOISE + 1
    for (a, b), count in shared.items():
        if count < need:
            continue
        overlap, shares, slices = compare_files(prints[a], prints[b])
        result.compared += 1
        pair = Pair(a, b, (float(shares[0]), float(shares[1])), int(overlap),
                    (_matched_lines(result.documents[a], slices[0]),
                     _matched_lines(result.documents[b], slices[1])))
        result.pairs.append(pair)
    result.pairs.sort(key=lambda p: (-p.score, -p.overlap, p.a, p.b))
    return result


def class_similarity(assignment_id: str, declared: tuple[str, ...],
                     submissions: list[tuple[str, Path]],
                     template_dir: Path = TEMPLATE_DIR) -> Similarity:
    """:func:`compare` over the submissions ((name, path) pairs) of a class."""
    handout = handout_texts(assignment_id, template_dir)
    given = handout_lines(handout)
    docs = [without_handout(name, submission_files(path, declared), given)
            for name, path in submissions]
    return compare(docs, handout)
