"""Which system calls the worker makes once its allowlist is loaded, and which
the allowlist refuses: the measurement behind ``autograder/harness/syscalls.py``.

    .venv/bin/python bench/syscall_census.py [assignment ...] [--styles-only]

As root, with ``strace`` installed (Debian's package). Grades, in the sandbox's
container mode (``RLCAP_NO_NAMESPACES=1``, so that the traces can be written
outside the worker's namespaces), the reference of each assignment (all its
questions) and each correct style of its catalogue (``RIGHT``, on the
questions it keeps), with the worker's interpreter run under ``strace -f``;
then runs a script of other legitimate things a submission may do (OpenBLAS
threads, threads, fork, multiprocessing's fork pool and queue, temporary
files, numpy's save/load/memmap, a socketpair, signals, resource limits)
under the filter. Prints, for the calls made after the filter was loaded:
each syscall with its count and the number of runs that made it, and every
call that failed with EPERM, EACCES or ENOSYS (what the filter returns), so
that a refusal a correct submission meets shows up here, with the run that
met it, and every score (each must be full marks).
"""
from __future__ import annotations

import argparse
import collections
import importlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.grading import config  # noqa: E402
from autograder.harness import sandbox  # noqa: E402

LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z0-9_]+)(?:\(| resumed>)(.*)$")
REFUSALS = ("EPERM", "EACCES", "ENOSYS")

STYLES = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import syscalls
syscalls.install()
import json, pickle, random, resource, signal, socket, tempfile, threading, time
with syscalls.known_libraries():
    from threadpoolctl import threadpool_limits
with threadpool_limits(2):                                    # OpenBLAS threads
    a = np.random.default_rng(0).random((500, 500))
    for _ in range(3):
        a = np.tanh(a @ a)
t = threading.Thread(target=sum, args=(range(10**5),)); t.start(); t.join()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
import multiprocessing as mp
with mp.get_context("fork").Pool(2) as pool:
    assert pool.map(abs, [-1, -2]) == [1, 2]
q = mp.get_context("fork").Queue(); q.put(1); assert q.get() == 1
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(2) as ex:
    assert list(ex.map(abs, [-1])) == [1]
with tempfile.TemporaryDirectory() as d:
    np.save(os.path.join(d, "x.npy"), a); np.load(os.path.join(d, "x.npy"))
    m = np.memmap(os.path.join(d, "m.dat"), dtype=float, mode="w+", shape=(100,))
    m[:] = 1; m.flush(); del m
s1, s2 = socket.socketpair(); s1.send(b"x"); assert s2.recv(1) == b"x"
signal.signal(signal.SIGALRM, lambda *a: None); signal.alarm(0)
resource.getrusage(resource.RUSAGE_SELF); resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
time.sleep(0.01); os.urandom(8); random.random(); pickle.loads(pickle.dumps(a)); os.cpu_count()
print("styles ok")
"""


def scan(path: Path, names: collections.Counter, refused: collections.Counter) -> None:
    """Add the calls of one trace made after the filter was loaded (by processes
    that did not exec another program)."""
    loaded, execd = False, set()
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        pid, name, rest = m.groups()
        if name == "seccomp" and "filter=" in rest and rest.rstrip().endswith("= 0"):
            loaded = True
            continue
        if not loaded:
            continue
        if name == "execve" and rest.rstrip().endswith("= 0"):
            execd.add(pid)
        if pid in execd:
            continue
        names[name] += 1
        for code in REFUSALS:
            if re.search(rf"= -1 {code}\b", rest):
                refused[(name, code)] += 1


def traced_grading(assignment: str, sub: Path, questions, wrapper: Path, out: Path, env: dict):
    cmd = [sys.executable, "-m", "autograder", "grade", assignment, str(sub)]
    if questions:
        cmd += ["--questions", ",".join(questions)]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(env, AUTOGRADER_WORKER_PYTHON=str(wrapper)),
                          capture_output=True, text=True)
    total = next((l.split()[1] for l in proc.stdout.splitlines() if l.startswith("total")), "?")
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("assignments", nargs="*")
    parser.add_argument("--styles-only", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0 or not shutil.which("strace"):
        sys.exit("syscall_census: run as root, with strace installed")
    python = sandbox.worker_venv_path() / "bin" / "python"
    if not python.exists():
        python = Path(sandbox.build_worker_venv())
    work = Path(tempfile.mkdtemp(prefix="census-", dir=sandbox.STATE_DIR))
    os.chmod(work, 0o755)
    traces = work / "traces"
    traces.mkdir()
    os.chmod(traces, 0o1777)             # the worker uid writes here (not a swept place)
    wrapper = work / "python"
    wrapper.write_text(f"#!/bin/sh\nexec /usr/bin/strace -f -qq -o \"{traces}/t.$$\" "
                       f"-- {python} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    env = dict(os.environ, RLCAP_NO_NAMESPACES="1")
    runs = []
    try:
        for a in ([] if args.styles_only else (args.assignments or config.available())):
            ref = work / f"{a}-reference"
            ref.mkdir()
            for src in config.load(a).sources(ROOT / "solutions"):
                shutil.copy(src, ref / src.name)
            jobs = [("reference", ref, None)]
            module = importlib.import_module(f"autograder.catalogue.{a}")
            for r in getattr(module, "RIGHT", []):
                jobs.append((r.name, r.write(a, work / f"{a}-{r.name}",
                                             config.load(a).submission_files), r.keeps))
            for name, sub, questions in jobs:
                total = traced_grading(a, sub, questions, wrapper, traces, env)
                got = work / f"traces-{a}-{name}"
                traces.rename(got)
                traces.mkdir()
                os.chmod(traces, 0o1777)
                runs.append((f"{a} {name} ({total})", got))
                print(f"graded {a} {name}: {total}", flush=True)
        styles = work / "styles.py"
        styles.write_text(STYLES)
        got = work / "traces-styles"
        got.mkdir()
        proc = subprocess.run(["strace", "-f", "-qq", "-o", str(got / "t"), str(python),
                               str(styles), str(ROOT / "autograder" / "harness")],
                              capture_output=True, text=True, cwd=work,
                              env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"})
        print("styles:", proc.stdout.strip() or proc.stderr[-500:], flush=True)
        runs.append(("styles", got))
        total, users = collections.Counter(), collections.Counter()
        refused = collections.defaultdict(collections.Counter)
        for label, d in runs:
            names = collections.Counter()
            for f in d.iterdir():
                scan(f, names, refused[label])
            total.update(names)
            users.update(names.keys())
        print(f"\n{len(total)} syscalls after the filter was loaded, over {len(runs)} runs:")
        for name in sorted(total):
            print(f"  {name:20s} {total[name]:9d} calls in {users[name]:3d} runs")
        print("\nfailed with EPERM, EACCES or ENOSYS after the filter (run: call errno count):")
        for label, got in refused.items():
            for (name, code), n in sorted(got.items()):
                print(f"  {label}: {name} {code} x{n}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
