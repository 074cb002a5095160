"""Keep freed memory in the process instead of handing it back at once (glibc).

A training step allocates and frees many (B, 64) float64 temporaries of
about 128 KiB each. With glibc's default malloc settings such blocks are
mmap'ed, or the top of the heap is trimmed as soon as they are freed, so the
next step takes fresh pages from the kernel and page-faults on every one:
measured here, a third of a PPO minibatch update went to that. Raising the
mmap and trim thresholds keeps those pages in the process for reuse; the
process keeps up to ``TRIM_THRESHOLD`` bytes of freed memory it would
otherwise have returned. Call ``keep_freed_memory()`` once, early (rlkit does
at import, as it pins BLAS threads). No effect where the C library is not
glibc.
"""
import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1      # mallopt parameter numbers, from glibc's malloc.h
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 16 * 2**20   # blocks below 16 MiB come from the heap ...
TRIM_THRESHOLD = 64 * 2**20   # ... and up to 64 MiB of its free top stays with the process


def keep_freed_memory():
    """Set glibc's mmap and trim thresholds (see the module doc).

    Returns:
        True if both were set, False elsewhere (not glibc, or refused).
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
