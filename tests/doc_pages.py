"""The README and the docs/ pages, read by the tests that run their commands as
written: a page's ```bash blocks, found by the heading they sit under."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]


def text(page: str) -> str:
    return (ROOT / page).read_text()


def section(page: str, heading: str) -> str:
    """The body of ``## <heading>`` (or any level) of ``page``, up to the next
    heading of the same or a higher level."""
    body = text(page)
    m = re.search(rf"^(#+) {re.escape(heading)}\s*$", body, re.M)
    assert m, f"{page} has no heading {heading!r}"
    level = len(m.group(1))
    rest = body[m.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[:end.start()] if end else rest


def bash(page: str, heading: str, index: int = 0) -> list[str]:
    """The command lines of the ``index``-th ```bash block under ``heading``
    (comments and blank lines dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", section(page, heading), re.S)
    assert len(blocks) > index, f"{page}, {heading!r}: no bash block {index}"
    return [l.strip() for l in blocks[index].splitlines()
            if l.strip() and not l.lstrip().startswith("#")]


def blocks(page: str, lang: str = "bash") -> list[tuple[str, list[str]]]:
    """Every ```<lang> block of ``page``: (the heading it sits under, its lines)."""
    out, heading = [], ""
    for m in re.finditer(r"^(#+ [^\n]*)$|^```(\w*)\n(.*?)^```", text(page), re.M | re.S):
        if m.group(1):
            heading = m.group(1).lstrip("#").strip()
        elif m.group(2) == lang:
            out.append((heading, [l.strip() for l in m.group(3).splitlines()
                                  if l.strip() and not l.lstrip().startswith("#")]))
    return out


def code_block(page: str, lang: str, first_line: str) -> str:
    """The ```<lang> block of ``page`` whose first line is ``first_line``."""
    for block in re.findall(rf"```{lang}\n(.*?)```", text(page), re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"no ```{lang} block starting {first_line!r} in {page}")
