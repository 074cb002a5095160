"""Compose capstone C's hidden pool (q7) by kinds of log, in one run.

    .venv/bin/python -m instructor.numerics -- .venv/bin/python bench/c_pool_compose.py \
        [--seeds 60-79] [--jobs 2] [--write]

Each student meets ``[hidden] pool_draw[kind]`` logs of each kind of
instructor/c_pool.py's ``KINDS`` (a fault, or healthy, at some configurations,
and a property of the log that makes it test one careless reading: a healthy
PPO that has converged, so that its explained variance read late looks
untrained; a saturated policy that escapes with huge steps, so that a KL read
first names the distractor; saturation or a buffer milder than twice the public
fault). This script trains each kind's configurations from the pool's seeds
(ascending, fixed in advance), keeps per kind the first logs that have its
property and are clear, its configurations in turn (the public agent's first) (the reference's rule names
them with margin 1.5 or more and every honest rule of the catalogue names them
right: a log on which careful readings disagree tests nothing), until the kind
holds its count (``KINDS``' last field), and prints per kind what it kept and
what it passed over, and why. ``--write`` writes the kept logs as q7's hidden
cases into assignment.toml (between its "pool" markers), under names shuffled
with a fixed seed, and then ``make c-logs`` (or ``instructor.c_logs --pool all``)
writes the same bytes as the cache here. Run it under the stated numerics
(instructor/numerics.py), or the cached logs differ from a regeneration's.
Logs are cached under --cache (one npz per run, 6-11 s CPU each).
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autograder.grading import config  # noqa: E402
from autograder.grading.reference import load_reference  # noqa: E402
from autograder.judges import c_diagnose as judge  # noqa: E402
from autograder.paths import ROOT  # noqa: E402
from instructor import c_logs, c_pool  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)
from c_pool_screen import train_missing  # noqa: E402

BEGIN = "# --- pool: written by bench/c_pool_compose.py --write; do not edit by hand ---\n"
END = "# --- end of the pool ---\n"
NAME_SEED = 2516                 # shuffles the case names (u01, ...), so a name tells no kind


def case_of(agent: str, severity, seed: int) -> SimpleNamespace:
    case = SimpleNamespace(agent=agent, seed=seed, severity=severity)
    case.get = lambda k: getattr(case, k, None)
    return case


def cache_path(cache: Path, agent: str, severity, seed: int) -> Path:
    return cache / f"{agent}_{'x' if severity is None else f'{severity:g}'}_s{seed}.npz"


def _train(job: tuple) -> str:
    agent, severity, seed, path = job
    Path(path).write_bytes(c_logs.npz_bytes(c_logs.pool_log(case_of(agent, severity, seed))))
    return path


def seeds_arg(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def classify(seeds: list[int], cache: Path, jobs: int, want: dict[str, int],
             chunk: int = 1, verbose: bool = True) -> tuple[dict, list]:
    """``({kind: [(agent, severity, seed)]}, [row per log examined])``: each
    kind's ``want[kind]`` logs, taken from its clear logs with its property in
    turn over its configurations (each configuration's in seed order), from
    ``seeds`` (trained ``chunk`` seeds at a time, while some kind lacks logs,
    or lacks a log of one of the five public agents among its configurations,
    for at most 8 seeds). A row: agent, severity, seed, fault, family, kind
    (or None), clear, why not, the return features, the reference's answer
    and margin, and every catalogue rule's answer."""
    from instructor import c_agents
    ref = load_reference("c_diagnose", "diagnose.py")
    rules = c_pool.catalogue_rules()
    honest = {n: m for n, m in rules.items() if n in c_pool.catalogue_rules("honest")}
    found: dict[str, dict] = {k: {} for k in c_pool.KINDS}     # kind -> conf -> [seed]
    rows, seen = [], set()
    configurations = []               # (agent, severity, fault), in the kinds' order
    for kind, (fault, confs, _, _) in c_pool.KINDS.items():
        configurations += [(a, s, fault) for a, s in confs if (a, s, fault) not in
                           configurations]

    def picked(kind):
        """Round robin over the kind's configurations, each one's logs in seed order."""
        confs = c_pool.KINDS[kind][1]
        queues = [list(found[kind].get(c, [])) for c in confs]
        out = []
        while any(queues) and len(out) < want[kind]:
            for c, q in zip(confs, queues):
                if q and len(out) < want[kind]:
                    out.append((*c, q.pop(0)))
        return out

    def short(kind, examined):
        n = sum(map(len, found[kind].values()))
        public = [c for c in c_pool.KINDS[kind][1] if c[0] in c_agents.AGENTS and c[1] is None]
        return n < want[kind] or (examined < 8 and any(not found[kind].get(c) for c in public))
    for start in range(0, len(seeds), chunk):
        block = seeds[start:start + chunk]
        if not any(short(k, start) for k in c_pool.KINDS):
            break
        needed = [(a, s, f) for a, s, f in configurations
                  if any(short(k, start) and (a, s) in c_pool.KINDS[k][1] for k in c_pool.KINDS)]
        todo = [(a, s, seed, str(cache_path(cache, a, s, seed))) for seed in block
                for a, s, _ in needed if not cache_path(cache, a, s, seed).exists()]
        if todo and verbose:
            print(f"training {len(todo)} logs (seeds {block[0]}-{block[-1]})", flush=True)
        train_missing(_train, todo, jobs)
        for seed in block:
            for a, s, fault in needed:
                if (a, s, seed) in seen:
                    continue
                seen.add((a, s, seed))
                log = judge._load(cache_path(cache, a, s, seed))
                stats = ref.summary(dict(log))
                kind = c_pool.kind_of_log(fault, (a, s), log, stats)
                ok, why = c_pool.clear(fault, log, ref, honest)
                rows.append({"agent": a, "severity": s, "seed": seed, "fault": fault,
                             "family": judge.family(log), "kind": kind, "clear": ok,
                             "why": why or ("" if kind else "no kind's property"),
                             "features": c_pool.return_features(log),
                             "reference": ref.diagnose(dict(log))[0],
                             "margin": c_pool.rule_margin(stats, judge.family(log),
                                                          ref.THRESHOLDS),
                             "named": {n: c_pool.named(m, log) for n, m in rules.items()}})
                if kind and ok:
                    found[kind].setdefault((a, s), []).append(seed)
    return {k: picked(k) for k in c_pool.KINDS}, rows


def toml_block(kept: dict) -> str:
    """q7's hidden cases for ``kept``, named u01, ... in a shuffled order."""
    logs = [(kind, *k) for kind, ks in kept.items() for k in ks]
    random.Random(NAME_SEED).shuffle(logs)
    out = [BEGIN]
    for i, (kind, agent, severity, seed) in enumerate(logs, 1):
        fault = c_pool.KINDS[kind][0]
        out.append(f'[[questions.cases]]\nname = "u{i:02d}"\nhidden = true\nkind = "{kind}"\n'
                   f'agent = "{agent}"\nseed = {seed}\n'
                   + (f"severity = {severity:g}\n" if severity is not None else "")
                   + f'fault = "{fault}"\n')
    out.append(END)
    return "".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="60-79", help="the pool's seeds, lo-hi")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path("/var/lib/rlcap-bench/c_pool3"))
    ap.add_argument("--chunk", type=int, default=1,
                    help="seeds trained at a time (the same logs are kept for any value)")
    ap.add_argument("--write", action="store_true", help="write the cases into assignment.toml")
    args = ap.parse_args()
    a = config.load("c_diagnose")
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"CPU: {cpu_name()}", flush=True)
    want = {k: v[3] for k, v in c_pool.KINDS.items()}
    kept, rows = classify(seeds_arg(args.seeds), args.cache, args.jobs, want, args.chunk)
    for kind, logs in kept.items():
        print(f"\n{kind}: kept {len(logs)} of {want[kind]} (each student meets "
              f"{a.hidden['pool_draw'].get(kind, '?')})")
        for r in rows:
            conf = (r["agent"], r["severity"])
            if conf not in c_pool.KINDS[kind][1]:
                continue
            tag = "KEPT " if (r["agent"], r["severity"], r["seed"]) in logs else "     "
            if r["kind"] not in (kind, None) and tag != "KEPT ":
                continue
            careless = [n.replace("diagnose_by_", "") for n, f in r["named"].items()
                        if f != r["fault"] and n not in c_pool.catalogue_rules("honest")]
            print(f"  {tag}{r['agent']} {r['severity'] or ''} seed {r['seed']}: "
                  + (f"kind {r['kind']}" if r["kind"] else "no kind")
                  + ("" if r["clear"] else f"; not clear: {r['why']}")
                  + f"; careless wrong: {', '.join(careless) or '-'}")
    short = [k for k in kept if len(kept[k]) < want[k]]
    if short:
        sys.exit(f"kinds short of logs: {short}; widen --seeds")
    if args.write:
        path = ROOT / "assignments" / "c_diagnose" / "assignment.toml"
        text = path.read_text()
        block = toml_block(kept)
        if BEGIN in text:
            text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda m: block, text,
                          flags=re.S)
        else:
            sys.exit(f"no pool markers in {path}")
        path.write_text(text)
        print(f"\nwrote {sum(map(len, kept.values()))} hidden cases into {path}")


if __name__ == "__main__":
    main()
