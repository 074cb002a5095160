"""The resource limits of one worker (every process it starts), and their
defaults. The tree's CPU and memory are accounted over all its processes by
the reaper (``treewatch.py``); these are the per-process rlimits on top,
applied to every process the worker starts, and the uid-wide ones where the
uid is the worker's alone (a slot). The file quota of the fallback is the
file-system policy's (``fspolicy.QUOTA_MB``)."""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MEMORY_MB = 1024                       # worker address space, unless assignment.toml says


@dataclass(frozen=True)
class Limits:
    """Per-worker resource limits: CPU seconds (hard = soft + 1 s, since
    SIGXCPU can be caught), address space, largest file written, processes."""
    cpu_s: float
    memory_mb: int = DEFAULT_MEMORY_MB
    file_mb: int = 64
    nproc: int = 16                  # processes and threads of the slot uid
    nofile: int = 256

    def rlimits(self, dedicated: bool) -> dict[str, tuple[int, int]]:
        cpu = max(1, int(round(self.cpu_s)))
        mem, size = self.memory_mb * 1024 * 1024, self.file_mb * 1024 * 1024
        limits = {"RLIMIT_CPU": (cpu, cpu + 1), "RLIMIT_AS": (mem, mem),
                  "RLIMIT_FSIZE": (size, size), "RLIMIT_CORE": (0, 0),
                  "RLIMIT_NOFILE": (self.nofile, self.nofile)}
        if dedicated:
            limits["RLIMIT_NPROC"] = (self.nproc, self.nproc)
            limits["RLIMIT_MSGQUEUE"] = (0, 0)     # no POSIX queue, whatever the filter
        return limits
