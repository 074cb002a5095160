"""Which submissions of a class look alike: pairs and clusters for an
instructor's review, never a verdict.

Each submission's declared ``.py`` files, read as grading reads them
(:func:`autograder.harness.intake.take`: the files at the top level or one
folder down, never anything else), make one *document*. Common code is what
the handout ships, and only that (never what most of the class wrote: five
students who copy one leaked solution are five alike, not five "common"):

* the stubs' own lines go: every line of the stubs
  (``student_template/<id>/*.py`` and the stubs borrowed from another
  assignment), compared with whitespace collapsed, is dropped from every
  document (the given code, the docstrings, a handout example pasted again);
* copydetect (PyPI ``copydetect``, pinned in the ``report`` extra) tokenises
  the rest with Pygments, replaces every variable, function and class name by
  one letter and every string by ``S``, drops comments and whitespace, and
  fingerprints every k-gram of ``NOISE`` normalised characters (the
  winnowing scheme of MOSS, Schleimer et al. 2003, with a window of 1: every
  k-gram is kept, so the outcome does not depend on Python's per-process hash
  seed);
* the fingerprints of everything the handout ships are ignored: the stubs,
  the code cells of its notebooks and the runtime package's modules
  (``rlkit``: a helper pasted from it is given code).

A pair's *share* on each side is copydetect's similarity: the part of that
document's remaining code (in normalised characters) covered by passages the
other document also has. A pair is flagged for review when its larger share
is at least ``FLAG_SHARE`` and the shared code is at least ``MIN_OVERLAP``
normalised characters (five or six lines of numpy once every name is one
letter: ``x = np.asarray(x, dtype=np.float64)`` is ``V=V.V(V,V=V.V)``), so
that two short submissions that happen to agree on one formula are not
flagged.

A *cluster* is a group of ``CLUSTER_MIN`` or more submissions joined by
flagged pairs (connected through them): a shared source, e.g. one leaked
solution. Its *share* is, per member, the part of its code covered by the
cluster's core (the passages found in more than half of its members); the
report gives the median ("9 submissions share 94 % of their code").

Every pair that shares any fingerprint is measured: the shares of all of
them come from one incidence matrix of the class's shared fingerprints
(numpy), giving exactly what copydetect's ``compare_files`` gives for the
pair; ``compare_files`` itself finds the matching lines of the pairs shown.
"""
from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..harness.intake import take
from ..paths import ROOT, TEMPLATE_DIR

NOISE = 25              # copydetect's noise threshold (its default): k-gram length, characters
FLAG_SHARE = 0.6        # the larger share of a pair flagged for review
MIN_OVERLAP = 80        # normalised characters the pair's shared passages cover, at least
MIN_CODE = 2 * NOISE    # a document with less code of its own is not compared
CLUSTER_MIN = 3         # submissions joined by flagged pairs that make a cluster
TOP_PAIRS = 30          # pairs listed (sharing MIN_OVERLAP or more), highest score first ...
PAIRS_PER_CLUSTER = 3   # ... at most this many of them inside one cluster
RUNTIME = "rlkit/"      # the runtime package the handout ships (its modules are given code)
CHUNK = 1 << 22         # entries of one block of the incidence matrix's product


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
    shared passages touch: filled for the pairs listed, else empty) and
    ``cluster`` (the index of the cluster holding both, else None)."""
    a: str
    b: str
    shares: tuple[float, float]
    overlap: int
    matched: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))
    cluster: int | None = None

    @property
    def score(self) -> float:
        return max(self.shares)

    @property
    def flagged(self) -> bool:
        return self.score >= FLAG_SHARE and self.overlap >= MIN_OVERLAP


@dataclass
class Cluster:
    """Submissions joined by flagged pairs: ``members`` (names, in the
    class's order), ``shares`` (per member, the part of its code covered by
    the cluster's core: the passages found in more than half of the
    members), ``pairs`` (flagged pairs among them)."""
    members: list[str]
    shares: list[float]
    pairs: int

    @property
    def share(self) -> float:
        """The median member's share of its code in the cluster's core."""
        return statistics.median(self.shares)


@dataclass
class Similarity:
    """The class's pairs: ``pairs`` (every pair that shares any passage,
    highest score first), ``listed`` (the pairs to show: the first
    ``TOP_PAIRS`` that share at least ``MIN_OVERLAP`` characters, at most
    ``PAIRS_PER_CLUSTER`` inside one cluster, with their matching lines),
    ``clusters`` (largest first), ``documents`` (by name), ``too_short``
    (documents with less than ``MIN_CODE`` code of their own beyond what the
    handout ships, not compared), ``compared`` (pairs measured: those sharing
    any passage) of ``possible`` and ``error`` (why nothing was compared,
    e.g. copydetect missing)."""
    pairs: list[Pair] = field(default_factory=list)
    listed: list[Pair] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    documents: dict[str, Document] = field(default_factory=dict)
    too_short: list[str] = field(default_factory=list)
    compared: int = 0
    possible: int = 0
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


def shipped_texts(assignment_id: str, template_dir: Path = TEMPLATE_DIR,
                  root: Path = ROOT) -> list[str]:
    """The rest of the code the handout ships, beyond its stubs: the code
    cells of its notebooks and the runtime package's modules (the handout
    zip's allowlist, :mod:`.shipping`). Its fingerprints are not counted;
    its lines are not dropped (a one-line idiom of the runtime, e.g.
    ``return out``, says nothing of where a submission's code came from)."""
    from .shipping import student_files
    texts = []
    for nb in sorted((template_dir / assignment_id).glob("*.ipynb")):
        try:
            cells = json.loads(nb.read_text()).get("cells") or []
        except (OSError, ValueError):
            continue
        texts += ["".join(c.get("source") or []) if isinstance(c.get("source"), list)
                  else str(c.get("source") or "") for c in cells
                  if isinstance(c, dict) and c.get("cell_type") == "code"]
    texts += [(root / f).read_text(errors="replace") for f in student_files(root, assignment_id)
              if f.startswith(RUNTIME)]
    return texts


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


class _Incidence:
    """The class's shared fingerprints as a matrix: ``present[i, c]`` (bool)
    when document ``i`` has fingerprint column ``c`` (a fingerprint of two or
    more documents); per document, the start of each of its k-grams and its
    column (-1: a fingerprint no other document has)."""

    def __init__(self, prints: list):
        import numpy as np
        seen: dict[int, int] = {}
        for fp in prints:
            for h in fp.hashes:
                seen[h] = seen.get(h, 0) + 1
        column = {h: c for c, h in enumerate(h for h, n in seen.items() if n > 1)}
        self.present = np.zeros((len(prints), len(column)), dtype=bool)
        self.starts, self.columns, self.lengths, self.coverage = [], [], [], []
        for i, fp in enumerate(prints):
            starts, cols = [], []
            for h, idx in fp.hash_idx.items():
                c = column.get(h, -1)
                starts += idx
                cols += [c] * len(idx)
            order = np.argsort(starts, kind="stable")
            self.starts.append(np.asarray(starts, dtype=np.int64)[order])
            self.columns.append(np.asarray(cols, dtype=np.int64)[order])
            mine = self.columns[-1]
            self.present[i, mine[mine >= 0]] = True
            self.lengths.append(len(fp.filtered_code))
            self.coverage.append(float(fp.token_coverage))
        self.k = prints[0].k if prints else NOISE

    def counts(self):
        """(n, n) fingerprints each pair shares (the product in blocks of columns)."""
        import numpy as np
        n, u = self.present.shape
        out = np.zeros((n, n), dtype=np.float64)
        step = max(1, CHUNK // max(n, 1))
        for lo in range(0, u, step):
            block = self.present[:, lo:lo + step].astype(np.float32)
            out += block @ block.T
        return out

    def covered(self, i: int, hits) -> "np.ndarray":
        """Characters of document ``i`` covered by its k-grams marked in
        ``hits`` ((m, positions) bool, one row per partner): the union of
        [start, start + k) over the marked k-grams, per row."""
        import numpy as np
        starts, marks = self.starts[i], hits.astype(np.int8)   # at most k overlap: int8
        edges = np.zeros((hits.shape[0], self.lengths[i] + self.k + 1), dtype=np.int8)
        edges[:, starts] = marks
        edges[:, starts + self.k] -= marks
        return (np.cumsum(edges, axis=1, dtype=np.int8) > 0).sum(axis=1)

    def overlap(self, i: int, partners) -> "np.ndarray":
        """Characters of document ``i`` covered by passages each of
        ``partners`` (indices) also has: copydetect's token overlap."""
        import numpy as np
        cols = self.columns[i]
        hits = self.present[np.ix_(partners, cols.clip(min=0))] & (cols >= 0)
        return self.covered(i, hits)


def _clusters(names: list[str], flagged: list[tuple[int, int]], inc: _Incidence) -> list[Cluster]:
    """The components of ``CLUSTER_MIN`` or more documents joined by the
    ``flagged`` pairs (indices into ``names``), largest first."""
    import numpy as np
    parent = list(range(len(names)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in flagged:
        parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in range(len(names)):
        groups.setdefault(root(i), []).append(i)
    out = []
    for members in groups.values():
        if len(members) < CLUSTER_MIN:
            continue
        core = inc.present[members].sum(axis=0) * 2 > len(members)
        shares = []
        for i in members:
            cols = inc.columns[i]
            hits = (core[cols.clip(min=0)] & (cols >= 0))[None, :]
            shares.append(round(float(inc.covered(i, hits)[0]) / inc.coverage[i], 4)
                          if inc.coverage[i] else 0.0)
        inside = set(members)
        out.append(Cluster([names[i] for i in members], shares,
                           sum(a in inside and b in inside for a, b in flagged)))
    out.sort(key=lambda c: (-len(c.members), -c.share, c.members[0]))
    return out


def given_fingerprints(handout: list[str], shipped: Iterable[str] = ()) -> set:
    """The fingerprints of the code the handout ships: of each text of
    ``handout`` (the stubs) and ``shipped`` (:func:`shipped_texts`) as it is,
    and as a document made of it would be (its docstrings, blank lines and
    the stubs' lines dropped: a pasted module's passages around a dropped
    docstring then match too)."""
    given = handout_lines(handout)
    texts = [*handout, *shipped]
    plain = [without_handout("given", [("given.py", t)], given).text for t in texts]
    return set().union(*(_fingerprint("handout", t).hashes for t in texts + plain))


def compare(docs: list[Document], handout: list[str], shipped: Iterable[str] = ()
            ) -> Similarity:
    """Every pair of ``docs`` that shares a passage, measured after removing
    the fingerprints of what the handout ships (:func:`given_fingerprints`
    of the stubs ``handout`` and the rest, ``shipped``); the clusters of the
    flagged pairs; the listed pairs' matching lines."""
    result = Similarity(documents={d.name: d for d in docs})
    try:
        from copydetect import compare_files
    except ImportError:
        result.error = ("copydetect is not installed (pip install -e '.[report]'): no "
                        "similarity check")
        return result
    import numpy as np
    plate = given_fingerprints(list(handout), shipped)
    prints = {d.name: _fingerprint(d.name, d.text) for d in docs}
    for fp in prints.values():
        _drop(fp, plate)
    names = [d.name for d in docs if prints[d.name].token_coverage >= MIN_CODE]
    result.too_short = [d.name for d in docs if d.name not in names]
    result.possible = len(names) * (len(names) - 1) // 2
    if len(names) < 2:
        return result
    inc = _Incidence([prints[n] for n in names])
    counts = inc.counts()
    overlaps = np.zeros_like(counts)
    for i in range(len(names)):
        partners = np.flatnonzero(counts[i] > 0)
        partners = partners[partners != i]
        if len(partners):
            overlaps[i, partners] = inc.overlap(i, partners)
    coverage = np.asarray(inc.coverage)
    flagged = []
    for a, b in zip(*np.nonzero(np.triu(counts, 1))):
        shares = (float(overlaps[a, b] / coverage[a]), float(overlaps[b, a] / coverage[b]))
        pair = Pair(names[a], names[b], shares, int(overlaps[a, b]))
        result.pairs.append(pair)
        if pair.flagged:
            flagged.append((int(a), int(b)))
    result.compared = len(result.pairs)
    result.pairs.sort(key=lambda p: (-p.score, -p.overlap, p.a, p.b))
    result.clusters = _clusters(names, flagged, inc)
    member_of = {m: c for c, cl in enumerate(result.clusters) for m in cl.members}
    per_cluster: dict[int, int] = {}
    for p in result.pairs:
        if p.flagged and member_of.get(p.a) is not None \
                and member_of.get(p.a) == member_of.get(p.b):
            p.cluster = member_of[p.a]
        if len(result.listed) < TOP_PAIRS and p.overlap >= MIN_OVERLAP:
            if p.cluster is not None:
                per_cluster[p.cluster] = per_cluster.get(p.cluster, 0) + 1
                if per_cluster[p.cluster] > PAIRS_PER_CLUSTER:
                    continue
            result.listed.append(p)
    for p in result.listed:
        _, _, slices = compare_files(prints[p.a], prints[p.b])
        p.matched = (_matched_lines(result.documents[p.a], slices[0]),
                     _matched_lines(result.documents[p.b], slices[1]))
    return result


def class_similarity(assignment_id: str, declared: tuple[str, ...],
                     submissions: list[tuple[str, Path]],
                     template_dir: Path = TEMPLATE_DIR) -> Similarity:
    """:func:`compare` over the submissions ((name, path) pairs) of a class:
    the stubs' lines dropped, and the fingerprints of everything the handout
    ships (:func:`handout_texts`, :func:`shipped_texts`) not counted."""
    handout = handout_texts(assignment_id, template_dir)
    given = handout_lines(handout)
    docs = [without_handout(name, submission_files(path, declared), given)
            for name, path in submissions]
    return compare(docs, handout, shipped_texts(assignment_id, template_dir))
