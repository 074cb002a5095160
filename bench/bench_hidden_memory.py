"""Memory a worker tree can hold outside what the sandbox counts: kernel
buffers of pipes and AF_UNIX socket pairs (the only kernel objects the
allowlist leaves that hold data), measured in both sandbox modes.

    .venv/bin/python bench/bench_hidden_memory.py [--hold 4]

As root. Grades, on capstone D's q1, a submission whose function forks as
many children as the slot's process limit lets it (16 tasks), each filling
every pipe and socket pair its 256 descriptors allow (pipes grown to 1 MB
with F_SETPIPE_SZ while the uid's pipe quota lasts), all held for
``--hold`` seconds. Prints, per mode: the tree's peak as the reaper counted
it (RssAnon + RssShmem + deleted files), the drop of the machine's
MemAvailable at its deepest (sampled every 10 ms) less that peak, i.e. the
memory outside the count, and the bytes the submission itself says it
queued. The machine is shared: the drop carries other processes' noise
(the baseline's spread is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.grading.grade import grade  # noqa: E402
from autograder.harness import probe, sandbox  # noqa: E402

FILLER = r"""
import fcntl, os, socket, time
import numpy as np
HOLD = {hold}
def _fill(fd):
    os.set_blocking(fd, False)
    n, block = 0, b'x' * 65536
    while True:
        try:
            n += os.write(fd, block)
        except OSError:
            return n
def _child(report):
    queued, kept = 0, []
    while True:
        try:
            r, w = os.pipe()
        except OSError:
            break
        try:
            fcntl.fcntl(w, 1031, 1 << 20)          # F_SETPIPE_SZ: 1 MB while the quota lasts
        except OSError:
            pass
        queued += _fill(w)
        kept += [r, w]
        try:
            a, b = socket.socketpair()
        except OSError:
            break
        queued += _fill(a.fileno()) + _fill(b.fileno())
        kept += [a, b]
    os.write(report, f'{{queued}}\n'.encode())
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
    total = sum(int(x) for x in got.split())
    time.sleep(HOLD)
    raise RuntimeError(f'QUEUED {{total}} bytes in {{kids}} children')
def group_standardised_weight(r):
    return np.zeros_like(np.asarray(r, dtype=float))
"""


def _available_kb() -> int:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def measure(namespaces: bool, hold: float) -> dict:
    os.environ.pop("RLCAP_NO_NAMESPACES", None)
    if not namespaces:
        os.environ["RLCAP_NO_NAMESPACES"] = "1"
    sandbox._NAMESPACES.clear()
    sub = Path(tempfile.mkdtemp(prefix="rlcap-hidden-mem-"))
    (sub / "grpo.py").write_text(FILLER.format(hold=hold))
    base = []
    for _ in range(50):                                   # the baseline and its noise
        base.append(_available_kb())
        time.sleep(0.01)
    lowest, stop = [min(base)], threading.Event()

    def sample():
        while not stop.is_set():
            lowest[0] = min(lowest[0], _available_kb())
            time.sleep(0.01)
    usages = []
    close = probe.ProbeSession.close

    def recording(session):
        fresh = not session._closed
        close(session)
        if fresh:
            usages.append(dict(session.usage))
    probe.ProbeSession.close = recording
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        report = grade("d_grpo", sub, questions=["q1_centred"], echo=False)
    finally:
        stop.set()
        t.join()
        probe.ProbeSession.close = close
        shutil.rmtree(sub, ignore_errors=True)
    text = report.questions[0].output
    queued = re.search(r"QUEUED (\d+) bytes in (\d+) children", text)
    peak = max((u.get("peak_mb", 0.0) for u in usages), default=0.0)
    drop_mb = (statistics.median(base) - lowest[0]) / 1024
    return {"mode": "namespaces" if namespaces else "container", "tree_peak_mb": round(peak),
            "available_drop_mb": round(drop_mb),
            "outside_mb": round(drop_mb - peak),
            "baseline_spread_mb": round((max(base) - min(base)) / 1024),
            "queued_mb": round(int(queued.group(1)) / 2**20) if queued else None,
            "children": int(queued.group(2)) if queued else None,
            "note": report.notes[0][:90] if report.notes else ""}


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
