"""Run gradings in processes of their own, at most ``n`` at a time (``grade-all``
and ``validate``): each job is ``python -m autograder.commands.batch`` on one
submission, guarded by a wall-clock timeout a bit above the assignment's
``deadline_s``; a job that hangs is stopped (SIGTERM, then SIGKILL).

A job's paths (the submission, results, metadata) travel in its environment
(``RLCAP_JOB``, readable only by the job's own user), never in its command
line, which every user of the machine can read in /proc."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from ..grading import config
from .tables import AUTOGRADER_FAULT, TIMED_OUT

GRADED = "graded"                  # the job wrote its results (tables.GRADED)

KILL_GRACE_S = 10.0                # SIGTERM, then SIGKILL after this long
JOB_ENV = "RLCAP_JOB"


@dataclass
class Job:
    """One grading run in a process of its own."""
    key: str
    assignment: str
    submission: Path
    results: Path
    log: Path
    timeout_s: float
    questions: Optional[list[str]] = None
    metadata: Optional[Path] = None
    assignments_dir: Optional[Path] = None
    cost: float = 1.0                  # rough relative cost: costly jobs start first

    def command(self) -> list[str]:
        return [sys.executable, "-m", "autograder.commands.batch"]

    def arguments(self) -> list[str]:
        """The child's arguments (passed in its environment, see :data:`JOB_ENV`)."""
        args = [self.assignment, str(self.submission), "--results", str(self.results)]
        if self.questions:
            args += ["--questions", ",".join(self.questions)]
        if self.metadata:
            args += ["--metadata", str(self.metadata)]
        if self.assignments_dir:
            args += ["--assignments-dir", str(self.assignments_dir)]
        return args

    def environment(self) -> dict[str, str]:
        return dict(os.environ, **{JOB_ENV: json.dumps(self.arguments())})


@dataclass
class Done:
    job: Job
    status: str                        # GRADED | TIMED_OUT | AUTOGRADER_FAULT (tables.ROW_STATUSES)
    seconds: float
    error: str = ""


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the job's process group (the child then closes its sandbox,
    killing the worker uid's processes), SIGKILL it after a grace period."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


LOG_TAIL_BYTES = 4096              # how much of a job's log its tail is read from
TICK_EVERY_S = 1.0                 # how often ``run_jobs`` reports the running jobs


def log_tail(path: Path, lines: int = 3) -> str:
    """The last ``lines`` non-empty lines of a log (read from its last few KB
    only, however long the log grew), joined by " / "."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - LOG_TAIL_BYTES))
            text = f.read(LOG_TAIL_BYTES).decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return " / ".join(l.strip() for l in text[-lines:] if l.strip())


def run_jobs(jobs: Iterable[Job], n: int,
             on_tick: Optional[Callable[[list[tuple[Job, float]]], None]] = None
             ) -> Iterator[Done]:
    """Run ``jobs`` at most ``n`` at a time (costly first); yield each as it ends.
    A job past its timeout is stopped and reported as TIMED_OUT. Interrupting
    the iteration (Ctrl-C) stops every running job. ``on_tick``, if given, is
    called about every TICK_EVERY_S with the running jobs and their seconds
    so far (for a progress line)."""
    pending = sorted(jobs, key=lambda j: -j.cost)
    pending.reverse()                                    # pop() from the end: costly first
    running: dict[int, tuple[Job, subprocess.Popen, float, object]] = {}
    last_tick = 0.0
    try:
        while pending or running:
            while pending and len(running) < max(1, n):
                job = pending.pop()
                job.results.parent.mkdir(parents=True, exist_ok=True)
                log = open(job.log, "wb")
                proc = subprocess.Popen(job.command(), stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True,
                                        env=job.environment())
                running[proc.pid] = (job, proc, time.monotonic(), log)
            time.sleep(0.05)
            if on_tick is not None and time.monotonic() - last_tick >= TICK_EVERY_S:
                last_tick = time.monotonic()
                on_tick([(job, last_tick - t0) for job, _, t0, _ in running.values()])
            for pid in list(running):
                job, proc, t0, log = running[pid]
                code = proc.poll()
                elapsed = time.monotonic() - t0
                if code is None and elapsed <= job.timeout_s:
                    continue
                if code is None:
                    _stop(proc)
                    done = Done(job, TIMED_OUT, elapsed,
                                f"grading did not finish within {job.timeout_s:.0f} s "
                                "(wall-clock timeout of the batch); stopped")
                elif code != 0:
                    done = Done(job, AUTOGRADER_FAULT, elapsed,
                                f"grading crashed (exit code {code}): "
                                f"{log_tail(job.log)}"[:500])
                else:
                    done = Done(job, GRADED, elapsed)
                log.close()
                del running[pid]
                yield done
    finally:
        for job, proc, _, log in running.values():
            _stop(proc)
            log.close()


def default_jobs() -> int:
    n = os.cpu_count() or 1
    if os.geteuid() == 0:              # one worker uid per concurrent grading
        from ..harness.sandbox import SLOTS
        n = min(n, SLOTS)
    return n


def timeout_for(assignment: config.Assignment) -> float:
    """The batch's guard: a bit above grading's own overall deadline."""
    return assignment.deadline_s + max(30.0, 0.1 * assignment.deadline_s)
