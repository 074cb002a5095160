"""Memory a worker tree can hold in kernel buffers, and how much of it the
sandbox counts: pipes and AF_UNIX socket pairs are the only kernel objects
the allowlist leaves that hold data. Measured in both sandbox modes.

    .venv/bin/python bench/bench_hidden_memory.py [--hold 4]

As root. Grades, on capstone D's q1, a submission whose function forks 14
children (the slot's 16 tasks, less the worker and one to spare), each
filling every pipe and socket pair its 256 descriptors allow (pipes grown to
1 MB with F_SETPIPE_SZ while the uid's pipe quota lasts), all held for
``--hold`` seconds; then the same submission filling nothing. Prints, per
mode: the bytes the submission says it queued in pipes and in sockets, the
tree's peak as the reaper counted it in both runs, and so the kernel bytes
it counted (the difference) and those it did not (queued less counted).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.grading.grade import grade  # noqa: E402
from autograder.harness import namespaces, probe  # noqa: E402

FILLER = r"""
import fcntl, os, socket, time
import numpy as np
HOLD, FILL = {hold}, {fill}
def _fill(fd):
    os.set_blocking(fd, False)
    n, block = 0, b'x' * 65536
    while True:
        try:
            n += os.write(fd, block)
        except OSError:
            return n
def _child(report):
    piped = sent = 0
    kept = []
    while FILL:
        try:
            r, w = os.pipe()
        except OSError:
            break
        try:
            fcntl.fcntl(w, 1031, 1 << 20)          # F_SETPIPE_SZ: 1 MB while the quota lasts
        except OSError:
            pass
        piped += _fill(w)
        kept += [r, w]
        try:
            a, b = socket.socketpair()
        except OSError:
            break
        sent += _fill(a.fileno()) + _fill(b.fileno())
        kept += [a, b]
    os.write(report, f'{{piped}} {{sent}}\n'.encode())
    time.sleep(HOLD + 30)
def centred_weight(r):
    rd, wr = os.pipe()
    kids = 0
    for _ in range(14):
        try:
            if os.fork() == 0:
                os.close(rd)
                _child(wr)
                os._exit(0)
            kids += 1
        except OSError:
            break
    os.close(wr)
    total, got = 0, b''
    deadline = time.time() + 20
    while got.count(b'\n') < kids and time.time() < deadline:
        chunk = os.read(rd, 4096)
        if not chunk:
            break
        got += chunk
    numbers = [int(x) for x in got.split()]
    time.sleep(HOLD)
    raise RuntimeError(f'QUEUED {{sum(numbers[0::2])}} {{sum(numbers[1::2])}} in {{kids}} children')
def group_standardised_weight(r):
    return np.zeros_like(np.asarray(r, dtype=float))
"""


def _one(hold: float, fill: bool) -> tuple[float, str, str]:
    """(the tree's peak MB as the reaper counted it, the worker's message, the notes)."""
    sub = Path(tempfile.mkdtemp(prefix="rlcap-hidden-mem-"))
    (sub / "grpo.py").write_text(FILLER.format(hold=hold, fill=fill))
    usages = []
    close = probe.ProbeSession.close

    def recording(session):
        fresh = not session._closed
        close(session)
        if fresh:
            usages.append(dict(session.usage))
    probe.ProbeSession.close = recording
    try:
        report = grade("d_grpo", sub, questions=["q1_centred"], echo=False)
    finally:
        probe.ProbeSession.close = close
        shutil.rmtree(sub, ignore_errors=True)
    peak = max((u.get("peak_mb", 0.0) for u in usages), default=0.0)
    return peak, report.questions[0].output, report.notes[0] if report.notes else ""


def measure(namespaces: bool, hold: float) -> dict:
    os.environ.pop("RLCAP_NO_NAMESPACES", None)
    if not namespaces:
        os.environ["RLCAP_NO_NAMESPACES"] = "1"
    namespaces._NAMESPACES.clear()
    empty_mb, _, _ = _one(hold, False)
    full_mb, text, note = _one(hold, True)
    got = re.search(r"QUEUED (\d+) (\d+) in (\d+) children", text)
    if not got:
        return {"mode": "namespaces" if namespaces else "container", "error": text[:500]}
    piped, sent = int(got.group(1)) / 2**20, int(got.group(2)) / 2**20
    counted = full_mb - empty_mb
    return {"mode": "namespaces" if namespaces else "container", "children": int(got.group(3)),
            "pipes_mb": round(piped), "sockets_mb": round(sent),
            "tree_peak_mb": round(full_mb), "tree_peak_filling_nothing_mb": round(empty_mb),
            "kernel_counted_mb": round(counted), "outside_mb": round(piped + sent - counted),
            "note": note[:80]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hold", type=float, default=4.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_hidden_memory: run as root (the sandbox needs it)")
    for namespaces in (True, False):
        print(json.dumps(measure(namespaces, args.hold)), flush=True)


if __name__ == "__main__":
    main()
