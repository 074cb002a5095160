"""Progress bars that degrade gracefully: tqdm when installed, else a plain
line every few percent, else nothing (``enable=False``)."""
from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, Optional, TypeVar

T = TypeVar("T")


def progress(iterable: Iterable[T], *, enable: bool = True, desc: str = "",
             total: Optional[int] = None) -> Iterable[T]:
    """Wrap ``iterable`` in a progress bar when ``enable`` is true."""
    if not enable:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _plain_progress(iterable, desc, total)
    return tqdm(iterable, desc=desc, total=total, leave=False)


def _plain_progress(iterable: Iterable[T], desc: str, total: Optional[int]) -> Iterator[T]:
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    start, shown = time.monotonic(), -1
    for i, item in enumerate(iterable):
        if total:
            pct = 10 * (i * 10 // total)
            if pct != shown:
                shown = pct
                print(f"\r{desc} {pct:3d}% ({time.monotonic() - start:.1f} s)", end="",
                      file=sys.stderr, flush=True)
        yield item
    if total:
        print(f"\r{desc} 100% ({time.monotonic() - start:.1f} s)", file=sys.stderr, flush=True)
