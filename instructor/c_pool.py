"""Capstone C's hidden pool (q7), measured: what return curves and episode
counts can tell, what the reference's rule tells, and what sharing the public
diagnosis is worth. Instructor only (bench/c_diagnose_pool.py prints it on the
pool, bench/c_pool_heldout.py on the pool's composition trained from held-out
seeds; tests/test_c_diagnose.py holds the acceptance lines).

A log's *return features* are what a student who plots rewards only sees:
``mean_return`` (every finished episode), ``first_half`` (the first half of the
episodes), ``final`` (the last 10) and ``episodes`` (how many finished).

A student's code never meets a stored hidden log, only a draw of it (the judge's
``sample_log``): :func:`drawn_pool` gives the pool as draws show it, and the
bookkeeping measures (:func:`bookkeeping`, :func:`separability`, the lookups a
class could fit on its members' pools, :func:`fit_lookup` and :func:`met_points`,
the reference's worst case over every draw, :func:`reference_worst_case`) are
printed by bench/c_pool_draws.py.
"""
from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from types import SimpleNamespace
from typing import Any, Callable, Mapping, Optional

import numpy as np

from autograder.grading import config
from autograder.grading.judging import Context
from autograder.grading.reference import load_reference
from autograder.harness.probe import InProcessCaller
from autograder.judges import c_diagnose as judge

ASSIGNMENT = "c_diagnose"
FEATURES = ("mean_return", "first_half", "final", "episodes")
SHARING = ("q5_faults", "q6_evidence", "q7_unseen")      # the questions sharing can touch


def return_features(log: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The return features of ``log`` (returns in CartPole steps; ``episodes`` a count)."""
    r = np.asarray(log["episode_returns"], dtype=np.float64)
    return {"mean_return": float(r.mean()), "first_half": float(r[:max(1, r.size // 2)].mean()),
            "final": float(r[-10:].mean()), "episodes": float(r.size)}


def pool(a: Optional[config.Assignment] = None) -> list[tuple[Any, dict[str, np.ndarray]]]:
    """``[(case, log)]`` of q7's hidden cases (the stored logs)."""
    a = a or config.load(ASSIGNMENT)
    return [(c, judge._load(judge.pool_path(c, a.hidden))) for c in
            a.question("q7_unseen").cases if c.hidden]


def composition(cases) -> Counter:
    """{(agent, severity, fault): how many of q7's hidden ``cases`` are of it}."""
    return Counter((c.agent, c.severity, c.fault) for c in cases)


def public(a: Optional[config.Assignment] = None) -> list[tuple[str, dict[str, np.ndarray]]]:
    """``[(fault, log)]`` of the five shipped logs, by the answer key."""
    a = a or config.load(ASSIGNMENT)
    return [(a.hidden["agent_faults"][agent], judge.load_run(i, a.params))
            for i, agent in enumerate(a.hidden["runs"])]


# ----------------------------------------------------------------------------- classifiers
# A classifier sees a log as a *point*: ``(fault, family, return features)``, the
# fault being the answer it is scored against ("ppo" or "dqn": a log's keys tell).
Point = tuple[str, str, dict]


def point(fault: str, log: Mapping[str, np.ndarray]) -> Point:
    return fault, judge.family(log), return_features(log)


def _nearest(dist: np.ndarray, faults: list[str]) -> list[str]:
    """The faults at the smallest distance (ties: every one tied there)."""
    return [f for d, f in zip(dist, faults) if d <= dist.min() + 1e-9]


def _credit(tied: list[str], truth: str) -> float:
    """Right, for a classifier that breaks its ties at random: the share of the
    tied answers that are the truth. (Two public PPO logs end at 500, so a
    final return of 500 ties healthy and saturated.)"""
    return tied.count(truth) / len(tied)


def nearest_public(features: tuple[str, ...], points: list[Point], known: list[Point]) -> float:
    """Share right when each point is named after the public log of its family
    nearest in ``features`` (each scaled by its spread over the family's public
    logs when there are several)."""
    right = 0.0
    for fault, fam, f in points:
        same = [(kf, kx) for kf, kfam, kx in known if kfam == fam]
        X = np.array([[kx[k] for k in features] for _, kx in same])
        sd = X.std(0) + 1e-12 if len(features) > 1 else np.ones(1)
        x = np.array([f[k] for k in features])
        right += _credit(_nearest((np.abs(X - x) / sd).sum(1), [kf for kf, _ in same]), fault)
    return right / len(points)


def leave_one_out(features: tuple[str, ...], points: list[Point], scored: int) -> float:
    """Share right of leave-one-out 1-nearest-neighbour (within a family, on
    features standardised over the family) among the first ``scored`` points."""
    right = 0.0
    for i in range(scored):
        fault, fam, f = points[i]
        same = [(pf, px) for j, (pf, pfam, px) in enumerate(points) if j != i and pfam == fam]
        X = np.array([[px[k] for k in features] for _, px in same])
        mu, sd = X.mean(0), X.std(0) + 1e-12
        x = (np.array([f[k] for k in features]) - mu) / sd
        right += _credit(_nearest(np.abs((X - mu) / sd - x).sum(1), [pf for pf, _ in same]),
                         fault)
    return right / scored


def best_stump(feature: str, points: list[Point]) -> float:
    """The best share right of any rule that cuts ``feature`` into intervals
    (one per fault of the family) and names each interval a fault, fitted on
    ``points`` themselves: an optimistic bound for a rule on that feature."""
    right = 0
    for fam in ("ppo", "dqn"):
        mine = sorted((f[feature], pf) for pf, pfam, f in points if pfam == fam)
        faults = sorted({pf for _, pf in mine})
        best = 0
        n = len(mine)
        for cuts in itertools.combinations(range(1, n), len(faults) - 1):
            bounds = (0, *cuts, n)
            for order in itertools.permutations(faults):
                best = max(best, sum(pf == order[k] for k in range(len(order))
                                     for _, pf in mine[bounds[k]:bounds[k + 1]]))
        right += best
    return right / len(points)


def best_constant(points: list[Point]) -> float:
    """The share right of the best rule that names every log of a family one
    fault (read off ``points`` themselves: a bound for a student who answers
    without looking at a log, e.g. "every DQN log has an undersized buffer")."""
    right = 0
    for fam in ("ppo", "dqn"):
        faults = Counter(pf for pf, pfam, _ in points if pfam == fam)
        right += max(faults.values(), default=0)
    return right / len(points)


# what a student can build: rules calibrated on the five public logs (the bar);
# the others read the hidden answers (leave-one-out) or are fitted on the logs they
# score: bounds, printed, not a bar
STUDENT_RULES = (*(f"nearest public log by {k}" for k in FEATURES), "nearest public log on all four")
CONSTANT = "one fault per family, the commonest"
# held below half: the student rules, and the constant answer (a bound, but one a student
# could stumble on: it needs no diagnostic at all)
BAR = (*STUDENT_RULES, CONSTANT)


def return_classifiers(a: Optional[config.Assignment] = None,
                       points: Optional[list[Point]] = None) -> dict[str, float]:
    """The share of the hidden pool (or of ``points``) each return classifier
    names right; ties broken at random (their expected share)."""
    if points is None:
        points = [point(c.fault, log) for c, log in pool(a)]
    known = [point(f, log) for f, log in public(a)]
    out = {}
    for k in FEATURES:
        out[f"nearest public log by {k}"] = nearest_public((k,), points, known)
    out["nearest public log on all four"] = nearest_public(FEATURES, points, known)
    for k in FEATURES:
        out[f"leave-one-out 1-NN on {k}"] = leave_one_out((k,), points + known, len(points))
    out["leave-one-out 1-NN on all four"] = leave_one_out(FEATURES, points + known, len(points))
    for k in FEATURES:
        out[f"best cut of {k}, fitted on the logs it names"] = best_stump(k, points)
    out[CONSTANT] = best_constant(points)
    return out


# ----------------------------------------------------------------------------- per student
# q7 as a student meets it: pool_draw[kind] logs of each kind, a healthy log counting only up to
# the faulty logs of its family named right. A rule's q7 fraction is its expected share of q7's
# points over students (its evidence right whenever its fault is: these rules cite the log's own
# numbers), ties and guesses drawn at random.
PPO_ANSWERS = ("healthy", "saturated_policy", "untrained_critic", "learning_rate_too_high")
DQN_ANSWERS = ("healthy", "undersized_buffer")
GUESS = "a guess, of the five faults"
FAMILY_GUESS = "a guess, of the faults its family can show"
HEALTHY = "healthy everywhere"
PER_FAMILY = "one answer per family, the best"
ONE_ANSWER = "one answer everywhere, the best"
FIVE = ("healthy", "saturated_policy", "untrained_critic", "learning_rate_too_high",
        "undersized_buffer")


def q7_fraction(results: list[tuple]) -> float:
    """q7's fraction for one student's logs ``[(fault, family, named right[,
    named])]``: the faulty logs of each fault named right up to the share of the
    family's other logs not named that fault (the judge's ``_fault_cap``; a
    wrong answer without ``named`` names no fault here, an upper bound), and the
    healthy ones named right up to the share of the faulty logs of their family
    named right (``_healthy_cap``), over all of them."""
    right = 0
    for fam in ("ppo", "dqn"):
        mine = [(r[0], r[2], r[3] if len(r) > 3 else (r[0] if r[2] else None))
                for r in results if r[1] == fam]
        faulty = [ok for f, ok, _ in mine if f != "healthy"]
        healthy = [ok for f, ok, _ in mine if f == "healthy"]
        for fault in {f for f, _, _ in mine if f != "healthy"}:
            ok = sum(1 for f, k, _ in mine if f == fault and k)
            others = [n for f, _, n in mine if f != fault]
            clean = sum(1 for n in others if n != fault)
            right += ok * clean // len(others) if others else ok
        cap = len(healthy) * sum(faulty) // len(faulty) if faulty else len(healthy)
        right += min(cap, sum(healthy))
    return right / len(results)


def expected_fractions(points_by_kind: Mapping[str, list], draw: Mapping[str, int],
                       known: list, students: int = 400, seed: int = 0) -> dict[str, float]:
    """``{rule: its mean q7 fraction}`` over ``students`` draws of
    ``draw[kind]`` points of each kind (``points_by_kind``: kind -> [(fault,
    family, return features)]), for the return rules calibrated on the public
    points ``known`` (:data:`STUDENT_RULES`), "healthy" everywhere, the best one
    answer per family, and two guesses."""
    rng = np.random.default_rng(seed)
    feats = [(k,) for k in FEATURES] + [FEATURES]
    pts = {kind: list(v) for kind, v in points_by_kind.items()}
    credit = {kind: np.array([[nearest_public(f, [p], known) for f in feats] for p in v])
              for kind, v in pts.items()}
    names = list(STUDENT_RULES)
    totals = {n: 0.0 for n in names + [HEALTHY, GUESS, FAMILY_GUESS]}
    constants = {(a, b): 0.0 for a in PPO_ANSWERS for b in DQN_ANSWERS}
    singles = {a: 0.0 for a in FIVE}
    for _ in range(students):
        chosen = []                  # (kind, index)
        for kind, k in draw.items():
            idx = rng.choice(len(pts[kind]), size=k, replace=False)
            chosen += [(kind, i) for i in idx]
        for r, n in enumerate(names):
            totals[n] += q7_fraction([(pts[kind][i][0], pts[kind][i][1],
                                       bool(rng.random() < credit[kind][i, r]))
                                      for kind, i in chosen])
        logs = [pts[kind][i][:2] for kind, i in chosen]

        def answered(names):
            return q7_fraction([(f, fam, f == n, n) for (f, fam), n in zip(logs, names)])
        totals[HEALTHY] += answered(["healthy"] * len(logs))
        totals[GUESS] += answered([FIVE[rng.integers(len(FIVE))] for _ in logs])
        totals[FAMILY_GUESS] += answered([
            (PPO_ANSWERS if fam == "ppo" else DQN_ANSWERS)[
                rng.integers(len(PPO_ANSWERS if fam == "ppo" else DQN_ANSWERS))]
            for _, fam in logs])
        for (a, b) in constants:
            constants[(a, b)] += answered([a if fam == "ppo" else b for _, fam in logs])
        for a in FIVE:
            singles[a] += answered([a] * len(logs))
    out = {n: v / students for n, v in totals.items()}
    best = max(constants, key=constants.get)
    out[PER_FAMILY] = constants[best] / students
    out[PER_FAMILY + f" ({best[0]} PPO, {best[1]} DQN)"] = out[PER_FAMILY]
    one = max(singles, key=singles.get)
    out[ONE_ANSWER] = singles[one] / students
    out[ONE_ANSWER + f" ({one})"] = out[ONE_ANSWER]
    return out


def expected_fractions_drawn(a: Optional[config.Assignment] = None, draws: int = 10,
                             students: int = 400, seed: int = 0) -> dict[str, float]:
    """:func:`expected_fractions` over students who each meet their pool as a
    draw shows it (``draws`` draws of the pool, ``students / draws`` students
    on each): the return rules calibrated on the public logs (shipped whole)."""
    a = a or config.load(ASSIGNMENT)
    known = [point(f, log) for f, log in public(a)]
    runs = [expected_fractions(pool_by_kind(a, draw=d), a.hidden["pool_draw"], known,
                               students=max(1, students // draws), seed=seed + d)
            for d in range(draws)]
    return {k: float(np.mean([r[k] for r in runs])) for k in runs[0] if k in runs[-1]}


# ----------------------------------------------------------------------------- what feedback tells
# After publication, a resubmission's q7 feedback is all a student learns about their own pool
# (its logs are never shown; the time shown is padded). Bounds, in bits: log2 of how many
# different q7 records one grading can give.
# outcomes of an item: right; named one of the 4 other answers; diagnose() not written, raised,
# changed its input, or no usable answer; a log beyond its kind's cap (healthy or faulty)
FAULT_OUTCOMES = {"faulty": 1 + 4 + 4 + 1, "healthy": 1 + 4 + 4 + 1}
# right; its fault not named right; its evidence wrong; the four of diagnose(); beyond the cap
EVIDENCE_OUTCOMES = {"faulty": 1 + 1 + 1 + 4 + 1, "healthy": 1 + 1 + 1 + 4 + 1}


def _multisets(n: int, symbols: int) -> int:
    from math import comb
    return comb(n + symbols - 1, symbols - 1)


def feedback_bits(per_kind: Mapping[str, int]) -> dict[str, float]:
    """What one q7 grading can tell a student whose pool holds ``per_kind``
    logs of each kind of q7's feedback (its fault, or "healthy PPO"/"healthy
    DQN"), in bits: ``now``, an upper bound (log2 of the number of different
    records: per kind and part, a multiset of the few outcomes an item can
    have); ``now, pass or fail``, the same if a student read only how many
    items of each kind passed; ``key``, how much the student does not know of
    their pool's answers once its kinds' counts are told (which of their PPO
    and DQN logs is which kind); ``before``, the earlier per-log records (one
    part per log, in an order fixed for the student and equal to the call
    order; outcomes: right, or its kind of failure), for comparison with the
    same number of logs."""
    from math import factorial, log2
    now = pass_fail = 0.0
    for kind, n in per_kind.items():
        h = "healthy" if kind.startswith("healthy") else "faulty"
        now += log2(_multisets(n, FAULT_OUTCOMES[h])) + log2(_multisets(n, EVIDENCE_OUTCOMES[h]))
        pass_fail += log2((n + 1) * (n + 2) / 2)      # (fault passed, evidence passed <= it)
    key = 0.0
    for fam in ("PPO", "DQN"):
        counts = [n for k, n in per_kind.items()
                  if (k == f"healthy {fam}") or (k != f"healthy {fam}" and not k.startswith(
                      "healthy") and (k == "undersized_buffer") == (fam == "DQN"))]
        total = sum(counts)
        ways = factorial(total)
        for c in counts:
            ways //= factorial(c)
        key += log2(ways)
    logs = sum(per_kind.values())
    # before: each log's part right, or failed as one of 8 kinds (value, shape, nonfinite,
    # raised, not implemented, modified input, timed out, crashed), by a number the student kept
    before = logs * log2(1 + 8)
    return {"now": now, "now, pass or fail": pass_fail, "key": key, "before": before,
            "before, pass or fail": float(logs)}


def pool_by_kind(a: Optional[config.Assignment] = None, draw: Optional[int] = None
                 ) -> dict[str, list]:
    """``{kind: [(fault, family, return features)]}`` of q7's pool: its stored
    logs, or (``draw``: a draw number) each log as one draw shows it (what a
    student's code meets, :func:`drawn_pool`)."""
    out: dict[str, list] = {}
    for case, log in (pool(a) if draw is None else drawn_pool(a, [draw])):
        out.setdefault(case.kind, []).append(point(case.fault, log))
    return out


# ----------------------------------------------------------------------------- draws
# What a student's code meets is never a stored log but a draw of it (judges/c_diagnose.py,
# sample_log: some of its states or batches, a drawn number of its episodes). Below: the
# pool as draws show it, the bookkeeping a draw still shows, and how far the one-feature cut
# or a lookup fitted on earlier draws gets with it.
def drawn_pool(a: Optional[config.Assignment] = None, draws: Any = (0,), seed: int = 0
               ) -> list[tuple[Any, dict[str, np.ndarray]]]:
    """``[(case, log as draw d shows it)]`` for every hidden case and every
    ``d`` of ``draws`` (each draw from its own generator: ``seed``, ``d``, the
    case)."""
    a = a or config.load(ASSIGNMENT)
    sample = a.params["unseen_sample"]
    windows = (a.params["early"], a.params["late"])
    return [(case, judge.sample_log(log, np.random.default_rng(
        [seed, d, int(hashlib.sha256(case.name.encode()).hexdigest()[:8], 16)]), sample,
        windows)) for d in draws for case, log in pool(a)]


def bookkeeping(log: Mapping[str, np.ndarray]) -> dict[str, float]:
    """What a log's bookkeeping says without any diagnostic: how many episodes
    it lists and their return total, the sizes of its arrays, the largest step
    or update an episode ends at, the largest episode id + 1 (a count, in the
    public logs), how many updates list an episode; and, for comparison, its
    mean return (the returns' level: the return rules' feature)."""
    r = np.asarray(log["episode_returns"], dtype=np.float64)
    out = {"episodes": float(r.size), "return total": float(r.sum())}
    if judge.family(log) == "ppo":
        out["updates listing an episode"] = float(np.unique(log["episode_update"]).size)
        out["last update listed"] = float(np.max(log["episode_update"]))
        out["states per update"] = float(np.shape(log["actions"])[1])
    else:
        out["Q records"] = float(np.size(log["q_step"]))
        out["last episode end"] = float(np.max(log["episode_end_step"]))
        out["first episode end"] = float(np.min(log["episode_end_step"]))
        out["batches"] = float(np.size(log["batch_step"]))
        out["largest episode id + 1"] = float(np.max(log["batch_episode"])) + 1
    out["mean return"] = float(r.mean())
    return out


# bookkeeping that counts, and reads neither the returns' level nor a measurement: near a
# guess (tests hold it)
COUNTS = ("episodes", "states per update", "batches")
# bookkeeping that carries the returns' level: a total is the mean return times the count
# listed; Q records are one per 5 steps of the listed episodes; when the listed episodes start
# and end, and which updates list one, follow how long the run's episodes were: each no more
# than the mean return itself tells
LEVELS = ("return total", "Q records", "last update listed", "updates listing an episode",
          "first episode end", "last episode end")
# in the public logs the largest episode id + 1 counts the run's episodes; relabelled, it
# follows how many episodes the batches sample (a reading of the measurement batch_diversity
# reads per batch), not bookkeeping
MEASURED = ("largest episode id + 1",)


def best_cut(x: Any, y: Any) -> float:
    """The best share right of a rule that cuts feature values ``x`` into
    intervals, one per answer of ``y`` (fitted on the points themselves, cuts
    between distinct values only; 2 or 3 answers)."""
    order = np.argsort(np.asarray(x, dtype=np.float64), kind="stable")
    xs, ys = np.asarray(x, dtype=np.float64)[order], np.asarray(y)[order]
    answers = sorted(set(ys.tolist()))
    n = len(ys)
    C = np.zeros((n + 1, len(answers)))
    for k, f in enumerate(answers):
        C[1:, k] = np.cumsum(ys == f)
    cuts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1], True])
    best = C[n].max()
    for order_ in itertools.permutations(range(len(answers))):
        if len(answers) == 2:
            a_, b_ = order_
            best = max(best, (C[cuts, a_] + C[n, b_] - C[cuts, b_]).max())
        elif len(answers) == 3:
            a_, b_, c_ = order_
            I, J = cuts[:, None], cuts[None, :]
            v = C[I, a_] + C[J, b_] - C[I, b_] + C[n, c_] - C[J, c_]
            best = max(best, np.where(I <= J, v, -1).max())
        elif len(answers) > 3:
            raise ValueError("best_cut: at most 3 answers")
    return float(best / n)


def separability(logs: list[tuple[Any, Mapping[str, np.ndarray]]], seed: int = 0
                 ) -> dict[str, dict[str, float]]:
    """``{family: {feature: best share right of one cut of it}}`` over ``logs``
    (``[(case, log)]``: their faults the answers), with ``"a guess"`` (the
    commonest answer) and ``"noise"`` (a feature of random numbers, for the
    optimism of a cut fitted on the points it names)."""
    rng = np.random.default_rng(seed)
    out = {}
    for fam in ("ppo", "dqn"):
        mine = [(c.fault, bookkeeping(log)) for c, log in logs if judge.family(log) == fam]
        y = [f for f, _ in mine]
        out[fam] = {k: best_cut([x[k] for _, x in mine], y) for k in mine[0][1]}
        out[fam]["a guess"] = max(Counter(y).values()) / len(y)
        out[fam]["noise"] = best_cut(rng.random(len(y)), y)
    return out


def fit_lookup(points: list[tuple[str, float, str]]) -> dict[str, list]:
    """``{family: [[upper edge, fault], ...]}``: a lookup of one feature fitted
    on ``points`` ``[(family, value, fault)]``, each value the fault of the
    nearest point met (log scale; the edges halfway between neighbours whose
    faults differ; the last edge infinite)."""
    out: dict[str, list] = {}
    for fam in sorted({p[0] for p in points}):
        mine = sorted((np.log(max(v, 1e-9)), f) for pf, v, f in points if pf == fam)
        table = []
        for (x0, f0), (x1, f1) in zip(mine, mine[1:]):
            if f1 != f0:
                table.append([float(np.exp((x0 + x1) / 2)), f0])
        table.append([float("inf"), mine[-1][1]])
        out[fam] = table
    return out


def lookup_fault(table: Mapping[str, list], fam: str, value: float) -> str:
    """The fault ``table`` (:func:`fit_lookup`) names for ``value`` in ``fam``."""
    for edge, fault in table[fam]:
        if value <= edge:
            return fault
    return table[fam][-1][1]


def met_points(feature: str, sids: list[str], draw_key: str = "",
               a: Optional[config.Assignment] = None) -> list[tuple[str, float, str]]:
    """``[(family, feature value, fault)]`` of every hidden log the students
    ``sids`` met (each their q7 pool as their submission, ``draw_key``, draws
    it): what classmates who pooled their q7 records could tabulate at most
    (their feedback says only how many logs of each kind their answers got
    right, never which log was which)."""
    from autograder.grading.judging import HIDDEN_PHASE
    a = a or config.load(ASSIGNMENT)
    out = []
    for sid in sids:
        ctx = Context(lambda *_, **__: None, a.params, public_only=False, student_id=sid,
                      hidden=a.hidden, question=a.question("q7_unseen"), phase=HIDDEN_PHASE,
                      draw_key=draw_key)
        for case in judge.students_logs(ctx):
            log = judge.drawn_log(ctx, case)
            out.append((judge.family(log), bookkeeping(log)[feature], case.fault))
    return out


def reference_worst_case(a: Optional[config.Assignment] = None
                         ) -> list[tuple[str, str, set, float]]:
    """``[(case, fault, faults named, smallest margin)]`` of the reference's
    rule over EVERY draw a hidden log can give. A PPO draw keeps every state of
    the windows its statistics read: they are the stored log's. A DQN
    statistic is a mean of per-batch values, so over all the subsets of
    batches a draw may keep it lies between the means that drop the largest
    or the smallest values; the rule (thresholds, one statistic at a time) is
    judged at every corner of that box."""
    from autograder.oracles import c_diagnose as oracle
    a = a or config.load(ASSIGNMENT)
    ref = load_reference(ASSIGNMENT, "diagnose.py")
    sample = a.params["unseen_sample"]
    out = []
    for case, log in pool(a):
        per = {} if judge.family(log) == "ppo" else {      # PPO: the windows whole, no box
            "batch_diversity": oracle.batch_diversity(log["batch_episode"]),
            "sample_age": oracle.replay_sample_age(log["batch_step"], log["batch_inserted"])}
        drop = np.size(log["batch_step"]) - int(sample["batches"]) if per else 0

        def box(v):
            v = np.sort(np.asarray(v, dtype=np.float64))
            return float(v[:v.size - drop].mean()), float(v[drop:].mean())
        bounds = {k: box(v) for k, v in per.items()}
        stats = dict(ref.summary(log))
        named, worst = set(), float("inf")
        for corner in itertools.product(*bounds.values()):
            s = {**stats, **dict(zip(bounds, corner))}
            named.add(_rule_named(s, judge.family(log), ref.THRESHOLDS))
            worst = min(worst, rule_margin(s, judge.family(log), ref.THRESHOLDS))
        out.append((case.name, case.fault, named, worst))
    return out


def _rule_named(s: Mapping[str, float], fam: str, th: Mapping[str, float]) -> str:
    """The reference's rule (solutions/c_diagnose/diagnose.py) on summary ``s``."""
    if fam == "ppo":
        if s["early_entropy"] < th["early_entropy"]:
            return "saturated_policy"
        if s["late_value_loss"] > th["late_value_loss"]:
            return "untrained_critic"
        if s["early_approx_kl"] > th["early_approx_kl"] and \
                s["early_clip_fraction"] > th["early_clip_fraction"]:
            return "learning_rate_too_high"
        return "healthy"
    if s["batch_diversity"] < th["batch_diversity"] and s["sample_age"] < th["sample_age"]:
        return "undersized_buffer"
    return "healthy"


# ----------------------------------------------------------------------------- the reference
def rule_margin(stats: Mapping[str, float], fam: str, th: Mapping[str, float]) -> float:
    """How far the reference's rule is from another answer on a log with
    summary ``stats``: the smallest factor by which a statistic it decides on
    would have to move to cross its threshold (>= 1; PPO: the entropy, then
    the late value loss unless the entropy already named the fault; DQN: the
    diversity and the age, the nearer of the two to its threshold)."""
    def factor(k):
        r = stats[k] / th[k]
        return max(r, 1.0 / r)
    if fam == "ppo":
        if stats["early_entropy"] < th["early_entropy"]:
            return factor("early_entropy")
        return min(factor("early_entropy"), factor("late_value_loss"))
    return min(factor("batch_diversity"), factor("sample_age"))


def reference_margins(a: Optional[config.Assignment] = None) -> list[tuple[str, str, str, float]]:
    """``[(case, fault, named, margin)]`` for every hidden log: the reference's
    diagnosis and :func:`rule_margin`."""
    ref = load_reference(ASSIGNMENT, "diagnose.py")
    out = []
    for case, log in pool(a):
        named, _ = ref.diagnose(log)
        out.append((case.name, case.fault, named,
                    rule_margin(ref.summary(log), judge.family(log), ref.THRESHOLDS)))
    return out


# ----------------------------------------------------------------------------- kinds of hidden logs
# q7's hidden logs come in kinds (their case's ``kind`` in assignment.toml): each student meets
# [hidden] pool_draw[kind] logs of each. A kind is a fault (or healthy) at some configurations
# (c_agents agent, severity), and a property of the log that makes it test one careless
# reading (catalogue WRONG diagnose_by_*), read off its diagnostics (the oracle's summary).
# bench/c_pool_compose.py trains the configurations from the pool's seeds and keeps, per kind,
# the first logs (seeds ascending, its configurations in turn, a public agent's first) that have
# the property and are clear: the reference's rule names them with margin >= MARGIN, and every honest rule of the
# catalogue names them right.
MARGIN = 1.5
KL_FIRST = 2 * 0.0157         # the KL-first reading's cut: twice the largest public early KL
TWICE_ENTROPY = 2 * 0.00996   # twice the public saturated log's early entropy
TWICE_BUFFER = (2 * 1.18, 2 * 15.62)   # twice the public small buffer's diversity and age
LATE_EV = 0.2                 # the late-window reading's cut on explained variance (50-59)
_SATURATED = [("saturated_policy", None), ("saturated_policy", 70.0),
              ("saturated_lr3e-3", 100.0), ("saturated_lr3e-3", 300.0),
              ("saturated_lr1e-2", 100.0), ("saturated_lr1e-2", 30.0)]


# saturated at a milder gain, whose runs now and then escape early and learn (seed by seed)
_SATURATED_MILDER = [("saturated_policy", 30.0), ("saturated_lr3e-3", 30.0),
                     ("saturated_policy", 20.0), ("saturated_lr3e-3", 20.0)]
LEARNED = 150.0               # a mean return (steps) a run reaches only if it learned


def _late_ev(log: Mapping[str, np.ndarray]) -> float:
    from autograder.oracles import c_diagnose as oracle
    (l0, l1) = config.load(ASSIGNMENT).params["late"]
    return float(np.mean(oracle.explained_variance(log["values"][l0:l1],
                                                   log["value_targets"][l0:l1])))


# kind: (fault, its configurations, its property of (summary, log), logs in the pool)
KINDS = {
    "converged_ppo": ("healthy", [("healthy_ppo", None), ("lr2e-3_ppo", None),
                                  ("fast_lr_ppo", None), ("epochs15_ppo", None)],
                      lambda s, log: _late_ev(log) < LATE_EV, 4),
    "short_horizon_ppo": ("healthy", [("gamma0.85_ppo", None), ("gamma0.9_ppo", None)],
                          lambda s, log: True, 5),
    "saturated_stuck": ("saturated_policy", _SATURATED,
                        lambda s, log: s["early_approx_kl"] <= KL_FIRST
                        and s["early_entropy"] < TWICE_ENTROPY, 2),
    "saturated_escaping": ("saturated_policy", _SATURATED,
                           lambda s, log: s["early_approx_kl"] > KL_FIRST
                           and s["early_entropy"] < TWICE_ENTROPY, 3),
    "saturated_mild": ("saturated_policy", _SATURATED,
                       lambda s, log: s["early_entropy"] >= TWICE_ENTROPY, 2),
    # round 4 (issue 47): kinds whose return levels sit where another fault's do, so that the
    # returns' level names no fault: a saturated policy that learned (its mean return that of a
    # healthy or untrained run) ...
    "saturated_learning": ("saturated_policy", _SATURATED_MILDER,
                           lambda s, log: return_features(log)["mean_return"] >= LEARNED, 3),
    "untrained": ("untrained_critic", [("untrained_critic", None),
                                       ("fast_untrained_critic", None)],
                  lambda s, log: True, 4),
    "late_start_dqn": ("healthy", [("late_start_dqn", None),
                                   ("late_start_long_exploration_dqn", None)],
                       lambda s, log: True, 4),
    "exploring_dqn": ("healthy", [("healthy_dqn", None), ("long_exploration_dqn", None),
                                  ("slow_long_exploration_dqn", None)],
                      lambda s, log: True, 4),
    # ... a healthy DQN that learns fast (the mean return of a buffer of a few hundred slots) ...
    "fast_dqn": ("healthy", [("fast_lr_dqn", None)], lambda s, log: True, 3),
    # ... and a small buffer that starts late (the late-start healthy decoys' mean return)
    "late_buffer": ("undersized_buffer", [("late_start_small_buffer", None),
                                          ("late_start_small_buffer", 64)],
                    lambda s, log: True, 3),
    "small_buffer": ("undersized_buffer", [("small_buffer", None),
                                           ("small_buffer_fast_target", 32),
                                           ("small_buffer_fast_target_fast_lr", 32)],
                     lambda s, log: s["batch_diversity"] < TWICE_BUFFER[0]
                     and s["sample_age"] < TWICE_BUFFER[1], 4),
    "mid_buffer": ("undersized_buffer", [("small_buffer", 64), ("small_buffer", 128),
                                         ("small_buffer", 256),
                                         ("small_buffer_fast_target_fast_lr", 64),
                                         ("small_buffer_fast_target_fast_lr", 128),
                                         ("small_buffer_fast_target_slow_lr", 128)],
                   lambda s, log: not (s["batch_diversity"] < TWICE_BUFFER[0]
                                       and s["sample_age"] < TWICE_BUFFER[1]), 4),
}


def kind_family(kind: str) -> str:
    """"ppo" or "dqn": the family of a kind's configurations."""
    from instructor import c_agents
    agent = KINDS[kind][1][0][0]
    return "dqn" if agent in c_agents.DQN_OVERRIDES else "ppo"


def feedback_kinds(draw: Mapping[str, int]) -> dict[str, int]:
    """``{kind as q7's feedback names it: logs a student meets}``: the kinds of
    ``draw`` (pool_draw) merged by fault ("healthy PPO", "healthy DQN")."""
    out: dict[str, int] = {}
    for kind, n in draw.items():
        k = judge.kind_of(KINDS[kind][0], kind_family(kind))
        out[k] = out.get(k, 0) + n
    return out


def kind_of_log(fault: str, configuration: tuple, log: Mapping[str, np.ndarray],
                stats: Mapping[str, float]) -> Optional[str]:
    """The kind a log of ``configuration`` (agent, severity) with fault
    ``fault`` and summary ``stats`` belongs to (the first whose configurations
    hold it and whose property it has), or None."""
    for kind, (f, configurations, has, _) in KINDS.items():
        if f == fault and tuple(configuration) in configurations and has(stats, log):
            return kind
    return None


def clear(fault: str, log: Mapping[str, np.ndarray], ref: Any, honest: Mapping[str, Any]
          ) -> tuple[bool, str]:
    """(whether ``log`` is clear, why not): the reference's rule names ``fault``
    with margin >= MARGIN, and every honest rule (``honest``: name -> module)
    names it too."""
    named_ref = ref.diagnose(dict(log))[0]
    margin = rule_margin(ref.summary(dict(log)), judge.family(log), ref.THRESHOLDS)
    if named_ref != fault or margin < MARGIN:
        return False, f"the reference names {named_ref} (margin {margin:.2f}x)"
    wrong = [n for n, m in honest.items() if named(m, log) != fault]
    return (not wrong), (f"honest rules name it wrong: {', '.join(wrong)}" if wrong else "")


# ----------------------------------------------------------------------------- rules of others
def catalogue_rules(kind: str = "all") -> dict[str, Any]:
    """``{entry name: module}``: the diagnose() rules of the catalogue
    (autograder/catalogue/c_diagnose.py), each written into a folder of its
    own and imported: ``"honest"`` (RIGHT's ``diagnose_by_*``, the readings
    that must keep full marks), ``"careless"`` (WRONG's ``diagnose_by_*`` and
    the diagnosis entries that lose q7), or ``"all"``."""
    from autograder.catalogue import c_diagnose as catalogue
    honest = [r for r in catalogue.RIGHT if r.name.startswith("diagnose_by_")]
    careless = [w for w in catalogue.WRONG if w.name.startswith("diagnose_by_")
                or w.name in ("everything_healthy", "diagnosis_by_return")]
    entries = {"honest": honest, "careless": careless, "all": honest + careless}[kind]
    return entry_modules(entries)


def entry_modules(entries: list) -> dict[str, Any]:
    """``{entry name: module}``: catalogue ``entries``, each written into a
    folder of its own and imported."""
    import importlib.util
    import tempfile
    from pathlib import Path
    a = config.load(ASSIGNMENT)
    base = Path(tempfile.mkdtemp(prefix="c-rules-"))
    out = {}
    for e in entries:
        d = e.write(ASSIGNMENT, base / e.name, a.submission_files)
        spec = importlib.util.spec_from_file_location(f"c_rule_{e.name}", d / "diagnose.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out[e.name] = module
    return out


def named(module: Any, log: Mapping[str, np.ndarray]) -> str:
    """The fault ``module``'s diagnose() names on ``log`` (its exception's
    type, if it raises)."""
    try:
        return str(module.diagnose(dict(log))[0]).strip().lower()
    except Exception as e:  # noqa: BLE001 - a rule that fails on a log names nothing
        return type(e).__name__


# ----------------------------------------------------------------------------- sharing
def _module(diagnose: Callable, ref: Any) -> SimpleNamespace:
    return SimpleNamespace(diagnose=diagnose, STUDENT_ID="", **{
        k: getattr(ref, k) for k in ("summary", "entropy", "approx_kl", "clip_fraction",
                                     "explained_variance", "value_loss", "q_overestimation",
                                     "replay_sample_age", "batch_diversity")})


def _cited(ref: Any, log: Mapping, fault: str, params: Mapping) -> dict[str, float]:
    stats = ref.summary(log)
    names = params["cite"][judge.family(log)].get(fault) or list(stats)
    return {k: stats[k] for k in names}


def lookup(table: Mapping[int, str], ref: Any, params: Mapping,
           rest: Optional[Callable] = None) -> Callable:
    """A diagnose() that names a log by its episode count in ``table`` (a
    diagnosis shared in sentences, "the 4250-episode log is the saturated
    one"), and any other log "healthy" (or as ``rest`` names it), citing that
    log's own numbers."""
    def diagnose(log):
        fault = table.get(int(np.asarray(log["episode_returns"]).size))
        if fault is None and rest is not None:
            return rest(log)
        fault = fault or "healthy"
        return fault, _cited(ref, log, fault, params)
    return diagnose


def guess(seed: str, ref: Any, params: Mapping, by_family: bool = False) -> Callable:
    """A diagnose() naming a uniformly random fault per log (fixed by ``seed``
    and the log), citing that log's own numbers: of the whole vocabulary, or
    (``by_family``) of the faults its family can show (a PPO log's keys differ
    from a DQN log's, so a student can tell them apart without any diagnostic)."""
    def diagnose(log):
        h = hashlib.sha256(f"{seed}/{np.asarray(log['episode_returns']).size}".encode())
        faults = list(params["cite"][judge.family(log)]) if by_family else params["faults"]
        fault = faults[int.from_bytes(h.digest()[:4], "little") % len(faults)]
        return fault, _cited(ref, log, fault, params)
    return diagnose


def points(module: Any, sid: str, a: config.Assignment, exp: dict,
           questions: tuple[str, ...] = SHARING) -> float:
    """The points ``module`` earns on ``questions`` under ``sid`` (the judge
    in-process, both phases; ``module``'s functions called directly, without
    the copies the worker's wire makes: these modules never modify a log; an
    exception one raises reaches the judge as the worker's would)."""
    from autograder.harness.probe import ProbeRaised
    from autograder.harness.worker import describe_exception
    caller = InProcessCaller(module)

    def call(fn, *args, **_):
        try:
            return getattr(module, fn)(*args)
        except Exception as exc:  # noqa: BLE001 - the module's, as a student's code raises
            raise ProbeRaised(fn, describe_exception(exc, "")) from None
    total = 0.0
    for q in questions:
        ctx = Context(call, a.params,
                      public_only=False, expected=exp, student_id=sid,
                      constant=caller.constant, hidden=a.hidden, question=a.question(q))
        total += judge.QUESTIONS[q](ctx).fraction * a.question(q).points
    return total


def sharing(pairs: int = 200, a: Optional[config.Assignment] = None,
            family: bool = False) -> dict[str, float]:
    """Mean points on q5-q7 over ``pairs`` (classmate, student) id pairs: a
    classmate's right mapping copied as is (the classmate's letters read as
    one's own), the same translated through the public ``letters_for`` (every
    public log named right; the others "healthy", or guessed within their
    family), and a guess (of any fault, or of its family's); the reference for
    scale. The family's guesses (``family``) take two more gradings per pair."""
    from autograder.grading import expected
    a = a or config.load(ASSIGNMENT)
    exp, _, _ = expected.load(a, list(SHARING))
    ref = load_reference(ASSIGNMENT, "diagnose.py")
    p, h = a.params, a.hidden
    count = {i: int(judge.load_run(i, p)["episode_returns"].size) for i in range(len(h["runs"]))}
    truth = {i: h["agent_faults"][agent] for i, agent in enumerate(h["runs"])}
    ids = [f"student-{i:04d}" for i in range(pairs + 1)]
    translated = _module(lookup({count[i]: truth[i] for i in count}, ref, p), ref)
    # healthy on every hidden log: q7 is 0 under any id (a healthy log counts only beside a
    # faulty one of its family named right)
    unseen = points(translated, ids[0], a, exp, ("q7_unseen",))
    out = {"copied": [], "translated": [], "guess": []}
    out.update({"family_guess": [], "translated_then_family_guess": []} if family else {})
    for mate, me in zip(ids, ids[1:]):
        theirs = {letter: truth[run] for letter, run in judge.letters_for(mate, p).items()}
        mine = judge.letters_for(me, p)
        copied = _module(lookup({count[run]: theirs[letter] for letter, run in mine.items()},
                                ref, p), ref)
        out["copied"].append(points(copied, me, a, exp, SHARING[:2]) + unseen)
        out["translated"].append(points(translated, me, a, exp, SHARING[:2]) + unseen)
        out["guess"].append(points(_module(guess(me, ref, p), ref), me, a, exp))
        if family:
            out["family_guess"].append(points(_module(guess(me, ref, p, True), ref), me, a,
                                              exp))
            both = lookup({count[i]: truth[i] for i in count}, ref, p, guess(me, ref, p, True))
            out["translated_then_family_guess"].append(points(_module(both, ref), me, a, exp))
    result = {k: float(np.mean(v)) for k, v in out.items()}
    result["reference"] = points(ref, ids[0], a, exp)
    result["max"] = float(sum(a.question(q).points for q in SHARING))
    result["pairs"] = float(pairs)
    return result
