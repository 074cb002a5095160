"""Text a submission controls, made safe where it lands.

A worker's strings (exception text, printed output, written answers, names)
reach terminals, logs and CSV cells. Control characters (C0 but newline and
tab, DEL, C1, ESC) and Unicode bidi overrides are shown escaped (``\\x1b``),
so no string can move a cursor, recolour a line or reorder what is shown.
"""
from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                     "\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """``text`` with every control character but newline and tab escaped."""
    return _UNSAFE.sub(_escape, str(text))


def one_line(text: str) -> str:
    """``text`` on one line: newlines and tabs escaped too."""
    return terminal(text).replace("\n", "\\n").replace("\t", "\\t")
