"""Capstone C's hidden pool (q7), measured: what return curves and episode
counts can tell, what the reference's rule tells, and what sharing the public
diagnosis is worth. Instructor only (bench/c_diagnose_pool.py prints it on the
pool, bench/c_pool_heldout.py on the pool's composition trained from held-out
seeds; tests/test_c_diagnose.py holds the acceptance lines).

A log's *return features* are what a student who plots rewards only sees:
``mean_return`` (every finished episode), ``first_half`` (the first half of the
episodes), ``final`` (the last 10) and ``episodes`` (how many finished).
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
    the copies the worker's wire makes: these modules never modify a log)."""
    caller = InProcessCaller(module)
    total = 0.0
    for q in questions:
        ctx = Context(lambda fn, *args, **_: getattr(module, fn)(*args), a.params,
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
    unseen = points(translated, ids[0], a, exp, ("q7_unseen",))      # no id in q7
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
