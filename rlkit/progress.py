"""Progress bars that degrade gracefully: a bar that redraws in place where
one can (a terminal or a notebook, with tqdm installed), else one line every
10 % (a log file, a pipe, CI), else nothing (``enable=False``)."""
from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, Optional, TypeVar

T = TypeVar("T")

STEP_PERCENT = 10          # without a bar: one line per this many percent


def progress(iterable: Iterable[T], *, enable: bool = True, desc: str = "",
             total: Optional[int] = None) -> Iterable[T]:
    """Wrap ``iterable`` in a progress bar when ``enable`` is true."""
    if not enable:
        return iterable
    if not redraws(sys.stderr):
        return _lines(iterable, desc, total)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _lines(iterable, desc, total, in_place=True)
    return tqdm(iterable, desc=desc, total=total, leave=False)


def redraws(stream) -> bool:
    """Whether a bar can redraw itself on ``stream``: a terminal, or a
    notebook's output (ipykernel's stream, where tqdm.auto draws a widget).
    A file or a pipe would keep every redraw."""
    if type(stream).__module__.startswith("ipykernel"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _lines(iterable: Iterable[T], desc: str, total: Optional[int],
           in_place: bool = False) -> Iterator[T]:
    """One line at 0 % and at every STEP_PERCENT after it, in order (on a
    terminal without tqdm: the same line rewritten)."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    start, shown = time.monotonic(), -1
    end = "" if in_place else "\n"
    lead = "\r" if in_place else ""
    name = f"{desc}: " if desc else ""
    for i, item in enumerate(iterable):
        if total:
            pct = STEP_PERCENT * (i * 100 // (total * STEP_PERCENT))
            if pct != shown:
                shown = pct
                print(f"{lead}{name}{pct:3d}% ({i} of {total}, {time.monotonic() - start:.1f} s)",
                      end=end, file=sys.stderr, flush=True)
        yield item
    if total:
        print(f"{lead}{name}100% ({total} of {total}, {time.monotonic() - start:.1f} s)",
              file=sys.stderr, flush=True)
