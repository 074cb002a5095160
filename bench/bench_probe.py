"""Probe round-trip overhead against its floor, measured in one run.

    .venv/bin/python bench/bench_probe.py [--calls 3000]

For D's ``group_standardised_weight`` on (4, 8) rewards (the K-sweep) and
A's ``clipped_policy_loss`` on a (256, 2) minibatch (A's bar), three ways of
calling, interleaved call by call (so a busy minute of the shared machine
is charged to all three alike):

* in-process: :class:`InProcessCaller` on the reference (copies of the
  arguments, the modified-input check: what the probe's worker also does);
* through the probe: a sandboxed :class:`ProbeSession` worker;
* the floor: a bare pipe round trip of the same payload (the request frame's
  bytes to a plain child process that reads them with blocking reads and
  writes back as many bytes as the worker's reply frame has).

Prints microseconds per call (median and p95 over ``--calls`` calls), the
probe's overhead (probe minus in-process, median and p95), the floor and the
ratio overhead / floor (the issue's goal: at most 3); then A's minibatch
(normalised advantages, clipped loss, value loss) as one batched round trip
against three single calls, and D's K-sweep step (every K's weights) as one
batched round trip against five single calls. Also the CPU and the load
average.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

from autograder.paths import SOLUTIONS_DIR
from autograder.harness import wire
from autograder.harness.probe import Call, InProcessCaller, ProbeSession, Result
from autograder.grading.reference import load_reference
from autograder.harness import treewatch
from autograder.harness.sandbox import Limits, open_sandbox
from bench_ppo import cpu_kind

# The floor's child: read a frame of the given size, answer with one of the other size.
ECHO = ("import os, sys\n"
        "n, m = int(sys.argv[1]), int(sys.argv[2]); reply = b'r' * m\n"
        "buf = bytearray(n); view = memoryview(buf)\n"
        "while True:\n"
        "    got = 0\n"
        "    while got < n:\n"
        "        k = os.readv(0, [view[got:]])\n"
        "        if not k:\n"
        "            sys.exit(0)\n"
        "        got += k\n"
        "    os.write(1, reply)\n")


class Floor:
    """A bare pipe round trip: ``n`` bytes out, ``m`` bytes back."""

    def __init__(self, n: int, m: int):
        self.out, self.m = b"q" * n, m
        self.buf = memoryview(bytearray(m))
        self.proc = subprocess.Popen([sys.executable, "-c", ECHO, str(n), str(m)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.fd_out, self.fd_in = self.proc.stdin.fileno(), self.proc.stdout.fileno()

    def __call__(self) -> None:
        os.write(self.fd_out, self.out)
        got = 0
        while got < self.m:
            got += os.readv(self.fd_in, [self.buf[got:]])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def frame_sizes(module: str, fn: str, args: tuple, reply) -> tuple[int, int]:
    """Bytes on the pipe for the request and the reply of one call."""
    request = {"op": "call", "module": module, "fn": fn, "args": list(args)}
    return (len(wire.encode(request)) + 8,
            len(wire.encode({"ok": reply, "modified": []})) + 8)


def timed(call) -> tuple[float, float]:
    """(wall s, CPU s of this process) of ``call()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - t0, time.process_time() - c0


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants so far (from /proc)."""
    total = 0.0
    for p in [pid] + treewatch.tree(pid):
        fields = treewatch._stat(p)
        total += fields[1] if fields else 0.0
    return total


def stats(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    return statistics.median(xs) * 1e6, xs[int(0.95 * (len(xs) - 1))] * 1e6


def single_calls(sb, calls: int) -> None:
    rng = np.random.default_rng(0)
    cases = [("d_grpo", "grpo.py", "group_standardised_weight", (rng.random((4, 8)),)),
             ("a_ppo", "ppo.py", "clipped_policy_loss",
              (rng.normal(size=(256, 2)), rng.integers(0, 2, 256), rng.normal(size=256) - 1.0,
               rng.normal(size=256), 0.2))]
    for assignment, filename, fn, args in cases:
        directory = sb.new_dir()
        shutil.copy(SOLUTIONS_DIR / assignment / filename, directory / filename)
        module = filename[:-3]
        local = InProcessCaller(load_reference(assignment, filename))
        floor = Floor(*frame_sizes(module, fn, args, local.call(fn, *args)))
        with ProbeSession(directory, module, Limits(120), 300, sb) as session:
            session.import_module()
            rows = {"in-process": [], "probe": [], "floor": []}
            cpu = dict.fromkeys(rows, 0.0)
            partner = {"probe": session.proc.pid, "floor": floor.proc.pid}
            for i in range(calls + 100):
                if i == 100:                               # after the warm-up
                    before = {k: tree_cpu_s(pid) for k, pid in partner.items()}
                t = (timed(lambda: local.call(fn, *args)), timed(lambda: session.call(fn, *args)),
                     timed(floor))
                if i >= 100:
                    for key, (wall, own) in zip(rows, t):
                        rows[key].append(wall)
                        cpu[key] += own
            for key, pid in partner.items():               # the other process's CPU
                cpu[key] += tree_cpu_s(pid) - before[key]
        floor.close()
        (lm, lp), (pm, pp), (fm, fp) = (stats(rows[k]) for k in rows)
        per = {k: v / calls * 1e6 for k, v in cpu.items()}
        print(f"{assignment}.{fn} (request {len(floor.out):,} B, reply {floor.m:,} B):\n"
              f"  in-process {lm:6.1f} us (p95 {lp:6.1f}); probe {pm:6.1f} us (p95 {pp:6.1f})\n"
              f"  overhead {pm - lm:6.1f} us (p95 {pp - lp:6.1f}); bare pipe round trip "
              f"{fm:5.1f} us (p95 {fp:5.1f}); overhead / floor = {(pm - lm) / fm:.2f} "
              f"(goal <= 3)\n"
              f"  CPU per call (both processes; /proc ticks for the other one): in-process "
              f"{per['in-process']:.0f} us, probe {per['probe']:.0f} us, floor "
              f"{per['floor']:.0f} us; overhead / floor = "
              f"{(per['probe'] - per['in-process']) / per['floor']:.2f}", flush=True)


def batched_minibatch(sb, calls: int) -> None:
    """A's minibatch as the judge's loop asks for it: three calls in one round trip."""
    rng = np.random.default_rng(1)
    directory = sb.new_dir()
    shutil.copy(SOLUTIONS_DIR / "a_ppo" / "ppo.py", directory / "ppo.py")
    logits, actions = rng.normal(size=(256, 2)), rng.integers(0, 2, 256)
    logp_old, adv, values, returns = (rng.normal(size=256) for _ in range(4))
    batch = [Call("normalise_advantages", (adv,)),
             Call("clipped_policy_loss", (logits, actions, logp_old, Result(0), 0.2)),
             Call("value_loss", (values, returns))]
    local = InProcessCaller(load_reference("a_ppo", "ppo.py"))
    with ProbeSession(directory, "ppo", Limits(120), 300, sb) as session:
        session.import_module()

        def three():
            a = session.call("normalise_advantages", adv)
            session.call("clipped_policy_loss", logits, actions, logp_old, a, 0.2)
            session.call("value_loss", values, returns)
        rows = {"in-process batch": [], "three single calls": [], "one batched round trip": []}
        cpu = dict.fromkeys(rows, 0.0)
        for i in range(calls // 3 + 100):
            if i == 100:
                before = tree_cpu_s(session.proc.pid)
            t = (timed(lambda: local.call_many(batch)), timed(three),
                 timed(lambda: session.call_many(batch)))
            if i >= 100:
                for key, (wall, own) in zip(rows, t):
                    rows[key].append(wall)
                    cpu[key] += own
        worker = tree_cpu_s(session.proc.pid) - before     # both probe ways together
    (lm, _), (sm, sp), (bm, bp) = (stats(rows[k]) for k in rows)
    n = calls // 3
    print(f"a_ppo minibatch (normalise_advantages, clipped_policy_loss fed its answer, "
          f"value_loss): in-process {lm:6.1f} us; three single calls {sm:6.1f} us (p95 "
          f"{sp:6.1f}); one batched round trip {bm:6.1f} us (p95 {bp:6.1f}): overhead "
          f"{sm - lm:6.1f} us -> {bm - lm:6.1f} us per minibatch; judge CPU per minibatch: "
          f"in-process {cpu['in-process batch'] / n * 1e6:.0f} us, single calls "
          f"{cpu['three single calls'] / n * 1e6:.0f} us, batched "
          f"{cpu['one batched round trip'] / n * 1e6:.0f} us (worker: "
          f"{worker / n * 1e6:.0f} us for both)", flush=True)


def sweep_step(sb, calls: int) -> None:
    """D's K-sweep step as the judge asks for it: every K's weights (K = 1, 2,
    4, 8, 32; two seeds' prompts stacked, (8, K)) in one round trip."""
    rng = np.random.default_rng(2)
    directory = sb.new_dir()
    shutil.copy(SOLUTIONS_DIR / "d_grpo" / "grpo.py", directory / "grpo.py")
    batch = [Call("group_standardised_weight", ((rng.random((8, K)) < 0.5) * 1.0,))
             for K in (1, 2, 4, 8, 32)]
    with ProbeSession(directory, "grpo", Limits(120), 300, sb) as session:
        session.import_module()
        rows = {"five single calls": [], "one batched round trip": []}
        for i in range(calls // 5 + 100):
            t = (timed(lambda: [session.call(c.fn, *c.args) for c in batch]),
                 timed(lambda: session.call_many(batch)))
            if i >= 100:
                for key, (wall, _) in zip(rows, t):
                    rows[key].append(wall)
    (sm, sp), (bm, bp) = (stats(rows[k]) for k in rows)
    print(f"d_grpo K-sweep step (group_standardised_weight at K = 1, 2, 4, 8, 32): five single "
          f"calls {sm:6.1f} us (p95 {sp:6.1f}); one batched round trip {bm:6.1f} us (p95 "
          f"{bp:6.1f}); single / batched = {sm / bm:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    print(f"CPU: {cpu_kind()}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with open_sandbox() as sb:
        print(sb.note)
        single_calls(sb, args.calls)
        batched_minibatch(sb, args.calls)
        sweep_step(sb, args.calls)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
