"""Text a submission controls, made safe where it lands.

A worker's strings (exception text, printed output, written answers), a
submission's names (files, zip members, folders), ids (``STUDENT_ID``, the
export's names and sids) reach results.json, terminals, logs and CSV cells:

* :func:`terminal`: control characters (C0 but newline and tab, DEL, C1,
  ESC), Unicode line and paragraph separators and bidi overrides are shown
  escaped (``\\x1b``), so no string can move a cursor, recolour a line,
  clear the screen or reorder what is shown. Feedback is made so before it
  is stored (results.json holds no raw control character), and every
  terminal table, log line and CSV cell applies it again.
* :func:`one_line`: the same, with newlines and tabs escaped too: for a
  name, an id or a message that sits on one line (a table cell, a CSV cell,
  a note), so that no text can start a line of its own and forge one.
* :func:`csv_cell`: :func:`one_line`, then OWASP's rule against CSV
  injection: a cell that begins with ``=``, ``+``, ``-`` (unless it is a
  number), ``@``, tab or carriage return is prefixed with ``'``, so that no
  spreadsheet reads it as a formula.
* :func:`capped`: a JSON value with every string and list cut to a size
  (results.json's caps, stated in docs/sandbox.md).
"""
from __future__ import annotations

import re
from typing import Any

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                     "\u2066-\u2069]")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _escape(m: re.Match) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """``text`` with every control character but newline and tab escaped."""
    return _UNSAFE.sub(_escape, str(text))


def one_line(text: str) -> str:
    """``text`` on one line: newlines and tabs escaped too."""
    return terminal(text).replace("\n", "\\n").replace("\t", "\\t")


def csv_cell(value: Any) -> str:
    """A CSV cell that no spreadsheet runs and no reader sees split or recoloured."""
    text = one_line("" if value is None else value)
    if text.startswith(_FORMULA) and not _NUMBER.match(text):
        return "'" + text
    return text


def capped(value: Any, text: int, items: int) -> Any:
    """``value`` (JSON data) with every string cut to ``text`` characters and
    every list and dict to ``items`` entries (dict keys cut like strings)."""
    if isinstance(value, str):
        return value if len(value) <= text else value[:text] + " ... (cut)"
    if isinstance(value, (list, tuple)):
        return [capped(v, text, items) for v in list(value)[:items]]
    if isinstance(value, dict):
        return {capped(str(k), text, items): capped(v, text, items)
                for k, v in list(value.items())[:items]}
    return value
