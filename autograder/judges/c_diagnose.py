"""Judge of capstone C: diagnose three faulty agents from their training logs.

The handout ships five raw training logs (``logs/run_<i>.npz``: three PPO
agents, two DQN agents; no code, no labels). Each student sees them under
letters of their own: :func:`letters_for` permutes them with the student id
(public, so the notebook shows the same letters the grader uses).

* q1-q4: the student's diagnostics on the judge's inputs (identities such as
  entropy([0, 0]) = ln 2, EV(y, y) = 1, EV(const, y) = 0, ratios on both sides
  of both clip edges, ...; random batches of other shapes) and on every shipped
  log, against the reference's answers. Every input is a case declared in
  assignment.toml (``[[questions.cases]]``); hidden ones draw their shapes per
  student and are checked against the oracle's answers.
* q5: the student's ``diagnose(log)`` called on each of their letters' logs
  (Gradescope only: the answer key is in ``[hidden]``), one part per fault:
  the letters it names with a fault must be exactly the agents that have it
  (so "all healthy" earns 0). The reference derives its answer from the log,
  so it scores full marks under any id.
* q6 (public: the notebook's check and the local grade): ``diagnose(log)`` on
  each of the five public logs, whatever fault it names: its answer's form, a
  fault the log's family can show, the statistics ``[params.cite]`` asks for
  that fault, and every cited statistic the log's own number (an oracle's,
  never the student's code), in the handout's units; a wrong number is traced
  to the q1-q4 diagnostic that gives it. Nothing of it depends on the answer
  key, so an unknown statistic or an entropy in bits is named before upload.
* q7: ``diagnose(log)`` on hidden logs (q7's hidden cases, stored logs in the
  Gradescope zip only), a pool of the submission's own: ``[hidden] pool_draw``
  logs of each kind (a fault at some severities, or healthy decoys that
  invite one careless reading), drawn and ordered per submission, each a
  sample of its stored run drawn per submission too (:func:`sample_log`: how
  many episodes it lists, or their total, names nothing). Two parts of
  one item per log: its fault (the healthy logs count only in the share of
  the faulty logs of their family named right, so that "healthy" everywhere
  earns nothing) and its evidence (beside the right fault): a right fault with a
  wrong or extra statistic loses the evidence's points only. The feedback
  names kinds and counts ("untrained_critic log 2 of 3: named healthy"),
  never a log; the hidden phase lasts its whole time limit (``pad_hidden``),
  so no time shown tells how long diagnose() took on a hidden log.
* q8: ``MECHANISM``, one sentence per fault, carried to results.json for hand
  grading (0 points; the staff's rubric is assignments/c_diagnose/rubric.md, its criteria
  without the model sentences are the handout README's, ``[handout] rubric``).

The parts, their points and the functions each question owns are declared in
assignment.toml. Everything the submission answers crosses the gate
(``grading.gate``) before this module reads it: the diagnostics' arrays
(:func:`answer_shape`), and diagnose()'s pair (:class:`DiagnosisAnswer`),
whose evidence is lenient: an evidence of the wrong form costs the evidence
only, never the fault named beside it.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import numpy as np

from ..grading.gate import Floats, GateFail, Invalid, Lenient, Text, describe
from ..grading.judging import (RUBRIC_WHERE, Context, Fail, Judge, ReferenceFailed,
                               hand_graded)
from ..grading.parts import Outcome, ended
from ..grading.safe import one_line
from ..grading.status import Kind, Status
from ..paths import ROOT, TEMPLATE_DIR

ASSIGNMENT = "c_diagnose"
PPO_KEYS = ("logits_before", "logits_after", "actions", "values", "value_targets",
            "episode_returns", "episode_update")
DQN_KEYS = ("batch_step", "batch_inserted", "batch_episode", "q_step", "q_pred", "q_return",
            "episode_returns", "episode_end_step")
INT_KEYS = ("actions", "episode_update", "batch_step", "batch_inserted", "batch_episode",
            "q_step", "episode_end_step")
PPO_STATS = ("early_entropy", "early_explained_variance", "late_value_loss", "early_approx_kl",
             "early_clip_fraction")
DQN_STATS = ("batch_diversity", "sample_age", "max_q", "q_overestimation")


# ----------------------------------------------------------------------------- the logs
def logs_dir(params: Mapping[str, Any]) -> Path:
    """The folder of ``run_<i>.npz``: the handout's own (its root), else the
    checkout's (and the Gradescope zip's) ``student_template/c_diagnose/``."""
    for base in (ROOT, TEMPLATE_DIR / ASSIGNMENT):
        d = base / params["logs_dir"]
        if (d / "run_0.npz").is_file():
            return d
    raise FileNotFoundError(f"no logs found (looked for {params['logs_dir']}/run_0.npz beside "
                            "the notebook); rebuild them with `make c-logs`")


def family(log: Mapping[str, np.ndarray]) -> str:
    """``"ppo"`` or ``"dqn"``, from the log's keys."""
    return "ppo" if "logits_before" in log else "dqn"


def _load(path: Path) -> dict[str, np.ndarray]:
    """The log stored at ``path`` (read once per process; its arrays read-only,
    so that no caller changes another's copy: the worker gets wire copies)."""
    return dict(_read(str(path)))


@functools.lru_cache(maxsize=64)
def _read(path: str) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        out = {k: data[k].astype(np.int64 if k in INT_KEYS else np.float64)
               for k in data.files}
    for v in out.values():
        v.setflags(write=False)
    return out


def load_run(i: int, params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Run ``i``'s log: floats as float64, indices and steps as int64."""
    return _load(logs_dir(params) / f"run_{int(i)}.npz")


def letters_for(student_id: Optional[str], params: Mapping[str, Any]) -> dict[str, int]:
    """``{letter: run index}``: the runs in an order drawn from the student id
    (``None`` or empty: the default instance)."""
    who = (student_id or "").strip() or "default"
    digest = hashlib.sha256(f"{ASSIGNMENT}/{params['letter_salt']}/{who}".encode()).digest()
    perm = np.random.default_rng(int.from_bytes(digest[:8], "little")).permutation(
        len(params["letters"]))
    return {letter: int(run) for letter, run in zip(params["letters"], perm)}


def load_instance(student_id: Optional[str], params: Mapping[str, Any]
                  ) -> dict[str, dict[str, np.ndarray]]:
    """``{letter: log}`` of ``student_id``'s instance (what the notebook plots)."""
    return {letter: load_run(run, params) for letter, run in letters_for(student_id,
                                                                         params).items()}


# ----------------------------------------------------------------------------- evidence
# Which diagnostic each summary statistic is computed with (and the question grading it).
STAT_FUNCTION = {"early_entropy": ("entropy", "q1"), "early_approx_kl": ("approx_kl", "q2"),
                 "early_clip_fraction": ("clip_fraction", "q2"),
                 "early_explained_variance": ("explained_variance", "q3"),
                 "late_value_loss": ("value_loss", "q3"),
                 "batch_diversity": ("batch_diversity", "q4"),
                 "sample_age": ("replay_sample_age", "q4"),
                 "q_overestimation": ("q_overestimation", "q4"), "max_q": (None, "")}

# The diagnostics' answers: one number per batch, so the answer's shape is an argument's shape
# less its last axis (samples, actions or the batch); this names that argument, by position.
SHAPE_FROM = {"entropy": 0, "explained_variance": 0, "value_loss": 0, "approx_kl": 2,
              "clip_fraction": 2, "q_overestimation": 0, "replay_sample_age": 1,
              "batch_diversity": 0}


def answer_shape(fn: str, args: tuple) -> tuple[int, ...]:
    """The shape of diagnostic ``fn``'s answer to ``args``: e.g. entropy of
    logits (U, S, A) is (U, S); approx_kl(old, new, actions (U, S)) is (U,)."""
    return tuple(np.shape(args[SHAPE_FROM[fn]])[:-1])


def _statistic_call(log: Mapping[str, np.ndarray], name: str, params: Mapping[str, Any]
                    ) -> tuple[Optional[str], tuple]:
    """``(diagnostic, its arguments)`` whose answer's mean over the batches is
    statistic ``name`` of ``log`` (``max_q``: no diagnostic, the max of its
    one argument). PPO windows: ``params["early"]``/``["late"]``, [first,
    stop) updates."""
    if name in PPO_STATS:
        (e0, e1), (l0, l1) = params["early"], params["late"]
        lb, la, act = log["logits_before"][e0:e1], log["logits_after"][e0:e1], \
            log["actions"][e0:e1]
        v, y = log["values"], log["value_targets"]
        return {"early_entropy": ("entropy", (lb,)),
                "early_explained_variance": ("explained_variance", (v[e0:e1], y[e0:e1])),
                "late_value_loss": ("value_loss", (v[l0:l1], y[l0:l1])),
                "early_approx_kl": ("approx_kl", (lb, la, act)),
                "early_clip_fraction": ("clip_fraction", (lb, la, act, params["clip_eps"]))
                }[name]
    return {"batch_diversity": ("batch_diversity", (log["batch_episode"],)),
            "sample_age": ("replay_sample_age", (log["batch_step"], log["batch_inserted"])),
            "max_q": (None, (log["q_pred"],)),
            "q_overestimation": ("q_overestimation", (log["q_pred"], log["q_return"]))}[name]


def statistic(log: Mapping[str, np.ndarray], name: str, fns: Any,
              params: Mapping[str, Any]) -> float:
    """Summary statistic ``name`` of ``log`` from diagnostics ``fns`` (anything
    with the handout's functions as attributes): the mean of the diagnostic's
    per-update (PPO) or per-batch (DQN) answer."""
    fn, args = _statistic_call(log, name, params)
    if fn is None:
        return float(np.max(args[0]))
    return float(np.mean(getattr(fns, fn)(*args)))


def summary(log: Mapping[str, np.ndarray], fns: Any, params: Mapping[str, Any]
            ) -> dict[str, float]:
    """A log's summary statistics from diagnostics ``fns``: window means of
    per-update curves (PPO: the names of ``PPO_STATS``) or means over the
    logged batches (DQN: ``DQN_STATS``), as the handout's ``summary()``."""
    names = PPO_STATS if family(log) == "ppo" else DQN_STATS
    return {name: statistic(log, name, fns, params) for name in names}


def format_evidence(stats: Mapping[str, float]) -> str:
    """``"name = value, ..."`` with 6 significant digits (for printing)."""
    return ", ".join(f"{k} = {v:.6g}" for k, v in stats.items())


class _Probed:
    """The submission's own diagnostics as attributes, each asked through the
    gate (a finite float64 array of :func:`answer_shape`), so that
    :func:`statistic` gives the number a student's code gives; an answer that
    fails the gate is a failed case naming the diagnostic."""

    def __init__(self, ctx: Context):
        self._ctx = ctx

    def __getattr__(self, fn: str) -> Callable[..., np.ndarray]:
        if fn not in SHAPE_FROM:
            raise AttributeError(fn)
        return lambda *args: self._ctx.ask(fn, *args, answer=Floats(answer_shape(fn, args)))


@dataclass(frozen=True)
class Statistic:
    """One cited number: a finite int or float of any width (4 significant
    digits are enough for the evidence, so single precision is fine here),
    as a Python float."""

    def admit(self, value: Any, path: str = "") -> float:
        if isinstance(value, (bool, int, float, np.generic)):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray) or value.shape != () or \
                value.dtype.kind not in "biuf":
            raise GateFail(f"{path} must be one finite number, got {describe(value)}")
        if not np.isfinite(value):
            raise GateFail(f"{path} must be one finite number, got {value.item()}",
                           Kind.NONFINITE)
        return float(value)


@dataclass(frozen=True)
class Evidence:
    """diagnose()'s evidence: a dict ``{statistic: number}`` of at most
    ``max_items`` entries, each name (any case, blanks around it) one of
    ``stats`` (the log's family's), each value a :class:`Statistic`. Returns
    the dict with the names normalised."""
    stats: tuple
    family: str
    max_items: int = 64

    def admit(self, value: Any, path: str = "") -> dict[str, float]:
        if isinstance(value, str):
            raise GateFail("the evidence is a string; return a dict {statistic: number}, e.g. "
                           "{'early_entropy': 0.6124}")
        if not isinstance(value, dict):
            raise GateFail(f"the evidence must be a dict {{statistic: number}}, got "
                           f"{describe(value)}")
        if len(value) > self.max_items:
            raise GateFail(f"the evidence cites {len(value)} statistics (a "
                           f"{self.family.upper()} log has {len(self.stats)})")
        out = {}
        for name, number in value.items():
            name = str(name).strip().lower()
            if name not in self.stats:
                raise GateFail(f"cites {name[:40]!r}: a {self.family.upper()} log's statistics "
                               f"are {', '.join(sorted(self.stats))}", Kind.VALUE)
            out[name] = Statistic().admit(number, name)
        return out


@dataclass(frozen=True)
class DiagnosisAnswer:
    """diagnose()'s answer on ``where`` (a log of family ``family``): ``(fault,
    evidence)``, ``fault`` a string naming one of ``faults`` (any case, blanks
    around it). Returns ``(fault, evidence)`` with the fault normalised and
    the evidence through :class:`Evidence`, leniently: an evidence of another
    form comes back as an :class:`~autograder.grading.gate.Invalid` (it
    costs the evidence only, not the fault)."""
    faults: tuple
    stats: tuple
    family: str
    where: str

    def admit(self, value: Any, path: str = "") -> tuple[str, Any]:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise GateFail(f"returns {describe(value)} on {self.where}; it must return "
                           "(fault, evidence)")
        fault, evidence = value
        if not isinstance(fault, str):
            raise GateFail(f"the fault it names on {self.where} is {describe(fault)}; it must "
                           "be a string")
        fault = Text(200).admit(fault).strip().lower()
        if fault not in self.faults:
            raise GateFail(f"names {fault[:40]!r} on {self.where}: not one of "
                           f"{', '.join(self.faults)}", Kind.VALUE)
        return fault, Lenient(Evidence(self.stats, self.family)).admit(evidence)


def diagnosis_answer(log: Mapping[str, np.ndarray], params: Mapping[str, Any],
                     where: str) -> DiagnosisAnswer:
    """The spec of diagnose()'s answer on ``log``."""
    fam = family(log)
    return DiagnosisAnswer(tuple(params["faults"]), PPO_STATS if fam == "ppo" else DQN_STATS,
                           fam, where)


# ----------------------------------------------------------------------------- cases
# Every input is a declared case of assignment.toml ([[questions.cases]]). A public case
# with a random kind and no seed draws from the public stream it names (``stream``: the same
# for everyone), in the order the cases are declared, before any call (so one failing case
# changes no other's inputs); a public case with a seed draws from default_rng(seed); a
# hidden case from its seed or, drawn per student, from the student's instance (its
# expected values then come from the oracle of the same name in autograder/oracles).
Make = Callable[[Any, Optional[np.random.Generator], Any], tuple]


def _dims(case: Any) -> tuple[int, ...]:
    """A case's array shape: its set dimensions among ``P``, ``updates`` and ``B``
    (in that order; the samples ``B`` last)."""
    return tuple(int(case.get(f)) for f in ("P", "updates", "B") if case.get(f) is not None)


def _unknown(case: Any) -> ReferenceFailed:
    return ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind "
                           f"{case.kind!r}")


def _need(rng: Optional[np.random.Generator], case: Any) -> np.random.Generator:
    if rng is None:
        raise ReferenceFailed(f"{case.question}: case {case.name!r} ({case.kind}) declares "
                              "neither a seed nor a draw")
    return rng


def _literal(case: Any) -> tuple:
    """``values = [argument, ..., answer]``: the arguments as arrays, then the answer."""
    *args, answer = case.get("values")
    return tuple(np.array(a) for a in args) + (np.asarray(answer, dtype=np.float64),)


def _inputs(ctx: Context, groups: tuple[str, ...], make: Make) -> Callable[[Any], tuple]:
    """``inputs(case)``: the arguments of a declared case, made by ``make(case,
    rng, previous)``. The public cases of ``groups`` without a seed are made
    now, in declaration order, from the public stream they name (``stream`` in
    assignment.toml; ``previous``: the inputs of the case made before, for a
    kind that reuses them)."""
    streams: dict[str, np.random.Generator] = {}
    drawn: dict[tuple[str, str], tuple] = {}
    previous = None
    for group in groups:
        for case in ctx.declared(group):
            if not case.hidden and case.get("seed") is None:
                name = case.get("stream")
                if name and name not in streams:
                    streams[name] = ctx.public_rng(name)
                previous = drawn[(group, case.name)] = make(case, streams.get(name), previous)

    def inputs(case: Any) -> tuple:
        if not case.hidden and (case.group, case.name) in drawn:
            return drawn[(case.group, case.name)]
        own = case.per_student or case.get("seed") is not None
        return make(case, ctx.case_rng(case) if own else None, None)
    return inputs


def _what(case: Any) -> str:
    """What feedback calls a case's inputs (a hidden case: its label only)."""
    return case.label if case.hidden else (case.description or case.name)


def _log(ctx: Context, case: Any, fam: str) -> dict[str, np.ndarray]:
    """The shipped log a ``logs`` case names (``agent = "run_<i>"``), of family ``fam``."""
    log = _load(logs_dir(ctx.params) / f"{case.agent}.npz")
    if family(log) != fam:
        raise ReferenceFailed(f"{case.question}: logs/{case.agent}.npz is not a "
                              f"{fam.upper()} log")
    return log


# ----------------------------------------------------------------------------- helpers
judge = Judge()


def _tol(ctx: Context) -> tuple[float, float]:
    t = ctx.params["tolerance"]
    return t["diagnostic_rtol"], t["diagnostic_atol"]


@dataclass(frozen=True)
class On:
    """``spec``, a failure of which is said of ``what`` (the case's inputs, as
    the feedback names them: "entropy(): on random logits (4, 5, 3): expected
    shape (4, 5), got shape (5, 3)")."""
    spec: Any
    what: str

    def admit(self, value: Any, path: str = "") -> Any:
        return self.spec.admit(value, path or f"on {self.what}")


def _ask(ctx: Context, fn: str, args: tuple, what: str) -> np.ndarray:
    """Diagnostic ``fn``'s answer to ``args`` (inputs called ``what``), through
    the gate: a finite float64 array of :func:`answer_shape`."""
    return ctx.ask(fn, *args, answer=On(Floats(answer_shape(fn, args)), what))


def _expect(ctx: Context, fn: str, args: tuple, case: Any, what: str = "",
            name: str = "") -> None:
    """The student's ``fn(*args)`` against the reference's answer for the
    current case (a case drawn per student: against the oracle's)."""
    rtol, atol = _tol(ctx)
    what = what or _what(case)
    got = _ask(ctx, fn, args, what)
    ctx.expect(got, rtol=rtol, atol=atol, oracle=(f"c_diagnose.{fn}", *args), name=name,
               label=f"{fn}() on {what}")


def _check(ctx: Context, fn: str, args: tuple, want: Any, case: Any,
           atol: Optional[float] = None, diagnosis: str = "") -> None:
    """The student's ``fn(*args)`` against a value the judge knows (``atol``:
    instead of the diagnostics' absolute tolerance; ``diagnosis``: what a
    wrong value means)."""
    rtol, default_atol = _tol(ctx)
    want = np.asarray(want, dtype=np.float64)
    got = _ask(ctx, fn, args, _what(case))
    ctx.check(got, want, rtol=rtol, atol=max(default_atol, 1e-12) if atol is None else atol,
              label=f"{fn}() on {_what(case)}",
              diagnose=(lambda _: diagnosis) if diagnosis else None)


# ----------------------------------------------------------------------------- q1
def _entropy_input(case: Any, rng: Optional[np.random.Generator], previous: Any) -> tuple:
    """(logits,) of shape ``dims + (A,)``: ``logits`` normal(0, scale); ``equal``
    all ``loc`` (or the literal ``values``); ``one_hot``: the literal ``values``."""
    if case.get("values") is not None:
        return (np.array(case.get("values")[0], dtype=np.float64),)
    shape = _dims(case) + (int(case.A),)
    if case.kind == "logits":
        return (_need(rng, case).normal(0.0, case.scale, shape),)
    if case.kind == "equal":
        return (np.full(shape, case.loc),)
    raise _unknown(case)


@judge.question("q1_entropy")
def q1_entropy(ctx: Context) -> None:
    fn = "entropy"
    inputs = _inputs(ctx, ("", "identity"), _entropy_input)
    with ctx.part("general") as part:
        for case in part.cases():
            _expect(ctx, fn, inputs(case), case)
    one_hot = ctx.params["tolerance"]["one_hot_atol"]
    with ctx.part("ends") as part:
        for case in part.cases():
            (z,) = inputs(case)
            if case.kind == "equal":
                _check(ctx, fn, (z,), np.full(z.shape[:-1], math.log(z.shape[-1])), case)
            elif case.kind == "one_hot":
                _check(ctx, fn, (z,), np.zeros(z.shape[:-1]), case, atol=one_hot, diagnosis=(
                    f"a one-hot policy's entropy must be 0 to {one_hot:g}: a guard inside the "
                    "log, log(p + eps), adds about eps; take log p from the log-softmax, or "
                    "guard with np.maximum(p, tiny)"))
            else:
                raise _unknown(case)
    with ctx.part("logs") as part:
        for case in part.cases():
            z = _log(ctx, case, "ppo")["logits_before"]
            _expect(ctx, fn, (z,), case, f"logs/{case.agent}.npz logits_before")


# ----------------------------------------------------------------------------- q2
def _ratio_case(rng: np.random.Generator, ratios: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two-action logits (old, new) and actions whose ratios pi_new / pi_old of
    the taken actions are ``ratios`` (to ~1e-15)."""
    S = ratios.size
    p_old = rng.uniform(0.2, 0.55, S)
    actions = rng.integers(0, 2, S)
    p_new = ratios * p_old
    def logits(p):   # noqa: E306 - prob p on the taken action, 1 - p on the other
        out = np.empty((S, 2))
        out[np.arange(S), actions] = np.log(p)
        out[np.arange(S), 1 - actions] = np.log1p(-p)
        return out + rng.normal(0.0, 3.0, (S, 1))        # a shift per row changes nothing
    return logits(p_old), logits(p_new), actions


def _clip_ratios(eps: float, delta: float = 1e-3) -> np.ndarray:
    """Ratios on both sides of both clip edges, and inside and far outside."""
    return np.array([1 + eps - delta, 1 + eps + delta, 1 - eps + delta, 1 - eps - delta,
                     1.0, 1 + 3 * eps, 1 - 3 * eps, 1 + eps / 2, 1 - eps / 2, 1 + 2 * eps])


def _policy_input(case: Any, rng: Optional[np.random.Generator], previous: Any) -> tuple:
    """``logits``: (old, new, actions), old logits normal(0, scale), new ones
    normal(0, spread or scale), shape ``dims + (A,)``; ``unchanged``: new = old;
    ``ratios``: (old, new, actions, ratios), one update whose ratios lie on both
    sides of both edges of the clip ``eps``."""
    rng = _need(rng, case)
    if case.kind == "ratios":
        ratios = _clip_ratios(case.eps)
        old, new, acts = _ratio_case(rng, ratios)
        if not (np.all(np.isfinite(old)) and np.all(np.isfinite(new))):
            raise ReferenceFailed(f"{case.question}: case {case.name!r}: eps = {case.eps} "
                                  "gives ratios no two-action policy has")
        return old, new, acts, ratios
    dims, A = _dims(case), int(case.A)
    if case.kind == "logits":
        old = rng.normal(0.0, case.scale, dims + (A,))
        new = rng.normal(0.0, case.get("spread", case.scale), dims + (A,))
        return old, new, rng.integers(0, A, dims)
    if case.kind == "unchanged":
        same = rng.normal(0.0, case.scale, dims + (A,))
        return same, same.copy(), rng.integers(0, A, dims)
    raise _unknown(case)


EDGE = ("a ratio exactly on the band's edge is not clipped: count |rho - 1| > eps (strictly), "
        "not >=")


@judge.question("q2_kl_clip")
def q2_kl_clip(ctx: Context) -> None:
    inputs = _inputs(ctx, ("", "zero", "clip"), _policy_input)
    with ctx.part("kl") as part:
        for case in part.cases():
            _expect(ctx, "approx_kl", inputs(case), case)
    with ctx.part("kl_zero") as part:
        for case in part.cases():
            old, new, acts = inputs(case)
            _check(ctx, "approx_kl", (old, new, acts), np.zeros(acts.shape[:-1]), case)
    with ctx.part("clip") as part:
        for case in part.cases():
            if case.kind == "unchanged":          # every ratio exactly 1: none strictly out
                old, new, acts = inputs(case)
                _check(ctx, "clip_fraction", (old, new, acts, case.eps),
                       np.zeros(acts.shape[:-1]), case, diagnosis=EDGE)
                continue
            old, new, acts, r = inputs(case)
            want = np.mean(np.abs(r - 1.0) > case.eps)
            _check(ctx, "clip_fraction", (old[None], new[None], acts[None], case.eps),
                   np.array([want]), case)
    eps = ctx.params["clip_eps"]
    with ctx.part("logs") as part:
        for case in part.cases():
            log = _log(ctx, case, "ppo")
            args = (log["logits_before"], log["logits_after"], log["actions"])
            _expect(ctx, "approx_kl", args, case,
                    f"logs/{case.agent}.npz (before, after, actions)", name="kl")
            _expect(ctx, "clip_fraction", args + (eps,), case,
                    f"logs/{case.agent}.npz with clip_eps = {eps}", name="clip")


# ----------------------------------------------------------------------------- q3
def _critic_input(case: Any, rng: Optional[np.random.Generator], previous: Any) -> tuple:
    """(values, targets) of shape ``dims``. ``noisy``: targets normal(loc, scale),
    values 0.7 x targets + normal(0, spread) noise (Var(values) != Var(targets));
    ``worse_row``: the first row of the previous case's targets, values those
    plus normal(0, spread) noise (worse than a constant: EV < 0); ``perfect``:
    values = targets; ``constant``: values all ``loc``; ``random``: values
    normal(0, scale), targets normal(loc, scale); ``literal``: (values,
    targets, answer) from ``values``."""
    if case.kind == "literal":
        return _literal(case)
    rng = _need(rng, case)
    if case.kind == "worse_row":
        if previous is None:
            raise ReferenceFailed(f"{case.question}: case {case.name!r} has no case before it")
        y = previous[1][0]
        return y + rng.normal(0.0, case.spread, y.shape), y
    dims = _dims(case)
    if case.kind == "random":
        v = rng.normal(0.0, case.scale, dims)
        return v, rng.normal(case.loc, case.scale, dims)
    y = rng.normal(case.loc, case.scale, dims)
    if case.kind == "noisy":
        return 0.7 * y + rng.normal(0.0, case.spread, dims), y
    if case.kind == "perfect":
        return y.copy(), y
    if case.kind == "constant":
        return np.full(dims, case.loc), y
    raise _unknown(case)


@judge.question("q3_critic")
def q3_critic(ctx: Context) -> None:
    inputs = _inputs(ctx, ("", "identity", "vl"), _critic_input)
    with ctx.part("ev") as part:
        for case in part.cases():
            _expect(ctx, "explained_variance", inputs(case), case)
    with ctx.part("ev_ends") as part:
        for case in part.cases():
            v, y = inputs(case)
            if case.kind not in ("perfect", "constant"):
                raise _unknown(case)
            want = np.full(y.shape[:-1], 1.0 if case.kind == "perfect" else 0.0)
            _check(ctx, "explained_variance", (v, y), want, case)
    with ctx.part("value_loss") as part:
        for case in part.cases():
            if case.kind == "literal":
                v, y, want = inputs(case)
                _check(ctx, "value_loss", (v, y), want, case)
            else:
                _expect(ctx, "value_loss", inputs(case), case)
    with ctx.part("logs") as part:
        for case in part.cases():
            log = _log(ctx, case, "ppo")
            args = (log["values"], log["value_targets"])
            what = f"logs/{case.agent}.npz (values, value_targets)"
            _expect(ctx, "explained_variance", args, case, what, name="ev")
            _expect(ctx, "value_loss", args, case, what, name="vl")


# ----------------------------------------------------------------------------- q4
def _replay_input(case: Any, rng: Optional[np.random.Generator], previous: Any) -> tuple:
    """The arguments of one q4 case, by group. ``over``: (q_pred, returns),
    returns uniform(0, 100) of shape ``dims`` and ``random`` Q = returns +
    normal(loc, scale), or ``offsets`` one row of returns, Q = returns + each
    of ``values`` (the answer). ``age``: ``random`` sample steps in [loc, loc +
    4000) (shape ``dims`` less the samples), ages in [0, scale). ``div``:
    ``random`` episode ids in [0, scale). ``literal``: arguments and answer
    from ``values``."""
    if case.kind == "literal":
        return _literal(case)
    rng = _need(rng, case)
    dims = _dims(case)
    if case.group == "over" and case.kind == "random":
        G = rng.uniform(0.0, 100.0, dims)
        return G + rng.normal(case.loc, case.scale, G.shape), G
    if case.group == "over" and case.kind == "offsets":
        G = rng.uniform(0.0, 100.0, dims)
        offsets = np.array(case.get("values"), dtype=np.float64)
        return (np.stack([G + o for o in offsets]), np.stack([G for _ in offsets]),
                offsets)
    if case.group == "age" and case.kind == "random":
        step = rng.integers(int(case.loc), int(case.loc) + 4000, dims[:-1])
        return step, step[..., None] - rng.integers(0, int(case.scale), dims)
    if case.group == "div" and case.kind == "random":
        return (rng.integers(0, int(case.scale), dims),)
    raise _unknown(case)


Q4_PARTS = {"overestimation": "q_overestimation", "sample_age": "replay_sample_age",
            "diversity": "batch_diversity"}


@judge.question("q4_replay")
def q4_replay(ctx: Context) -> None:
    inputs = _inputs(ctx, ("over", "age", "div"), _replay_input)
    for part_id, fn in Q4_PARTS.items():
        with ctx.part(part_id) as part:
            for case in part.cases():
                args = inputs(case)
                if case.kind in ("literal", "offsets"):
                    *args, want = args
                    _check(ctx, fn, tuple(args), want, case)
                else:
                    _expect(ctx, fn, args, case)
    with ctx.part("logs") as part:
        for case in part.cases():
            log = _log(ctx, case, "dqn")
            _expect(ctx, "replay_sample_age", (log["batch_step"], log["batch_inserted"]), case,
                    f"logs/{case.agent}.npz (batch_step, batch_inserted)", name="age")
            _expect(ctx, "batch_diversity", (log["batch_episode"],), case,
                    f"logs/{case.agent}.npz batch_episode", name="div")
            _expect(ctx, "q_overestimation", (log["q_pred"], log["q_return"]), case,
                    f"logs/{case.agent}.npz (q_pred, q_return)", name="over")


# ----------------------------------------------------------------------------- diagnose()
def _diagnosis(ctx: Context, log: Mapping[str, np.ndarray], where: str) -> tuple[str, Any]:
    """``diagnose(log)`` of the submission through the gate: ``(fault,
    evidence)``, the fault one of ``params["faults"]`` (normalised), the
    evidence ``{statistic: value}`` or the :class:`Invalid` saying what is
    wrong with it (it costs the evidence only, not the fault)."""
    return ctx.ask("diagnose", dict(log), answer=diagnosis_answer(log, ctx.params, where))


def _close(got: float, truth: float, tol: Mapping[str, float]) -> bool:
    return bool(abs(got - truth) <= tol["evidence_atol"] + tol["evidence_rtol"] * abs(truth))


def _own_statistic(ctx: Context, log: Mapping[str, np.ndarray], s: str,
                   truth: float) -> tuple[str, str]:
    """``(function, diagnosis)`` of a cited statistic ``s`` that is not the
    (public) log's own number: the student's own diagnostic is run on the log;
    when it gives a wrong number (or no usable answer) the statistic is that
    function's (q1-q4 show where), else diagnose() cites another number."""
    fn, q = STAT_FUNCTION[s]
    if fn is None:
        return "diagnose", ""
    tol = ctx.params["tolerance"]
    try:
        own = statistic(log, s, _Probed(ctx), ctx.params)
    except Fail as e:          # its answer failed the gate, or it raised: a diagnosis only
        return fn, (f"your {fn}() gives no usable {s} on this log ({one_line(str(e))[:200]}): "
                    f"{fn}() is wrong ({q} shows where); the statistic follows once it is right")
    if not _close(own, truth, tol):
        return fn, (f"your {fn}() gives {s} = {own:.6g} on this log: {fn}() is wrong ({q} shows "
                    "where); the statistic follows once it is right")
    return "diagnose", (f"your {fn}() gives the right {s} ({own:.6g}); diagnose() cites another "
                        "number: cite summary(log)'s value (unrounded, or to 4 significant "
                        "digits)")


def _cite(ctx: Context, log: Mapping[str, np.ndarray], fault: str, evidence: Any,
          truth: Mapping[str, float], where: str) -> None:
    """The evidence of ``fault`` on a public ``log``: of the right form, every
    statistic the fault must cite (``[params.cite]``) there, and every cited
    statistic the log's own number (``truth``, the oracle's); else a failure
    saying which, naming the diagnostic of q1-q4 that gives a wrong number, or
    a statistic in other units (an entropy in bits). (A hidden log's evidence
    is judged in fewer words: :func:`_judge_log`.)"""
    p = ctx.params
    tol = p["tolerance"]
    fam = family(log)
    if isinstance(evidence, Invalid):      # what is wrong with it is the diagnosis: read first
        raise ctx.fail(f"diagnose() on {where}: its evidence is not {{statistic: one number}} "
                       "of this log's family", evidence.kind, diagnosis=evidence.message,
                       fn="diagnose")
    required = p["cite"][fam].get(fault, ())   # a fault of the other family: q6 warns
    missing = [s for s in required if s not in evidence]
    if missing:
        raise ctx.fail(f"diagnose() on {where} names {fault} but does not cite "
                       f"{', '.join(missing)}", diagnosis=f"for {fault} on a {fam.upper()} log "
                       f"cite {', '.join(required)}: {', '.join(missing)} missing",
                       fn="diagnose")
    for s, got in evidence.items():
        if not _close(got, truth[s], tol):
            fn, diagnosis = _own_statistic(ctx, log, s, truth[s])
            units = _units(s, got, truth[s], tol)
            if units and fn == "diagnose":          # its diagnostic is right: diagnose() converts
                diagnosis = units
            elif units:
                diagnosis += f" ({units.partition(' (')[0].replace('the cited ', 'the ')})"
            raise ctx.fail(f"diagnose() on {where} cites {s} = {got:.6g}: not this log's "
                           "number", Kind.VALUE, diagnosis, fn=fn)
    # The comparison as the case's recorded check (every statistic is within tolerance here;
    # a wrong one was named above with the diagnostic that gives it).
    cited = list(evidence)
    ctx.check(np.array([evidence[s] for s in cited]), np.array([truth[s] for s in cited]),
              rtol=tol["evidence_rtol"], atol=tol["evidence_atol"],
              label=f"the statistics diagnose() cites on {where}")


def _units(s: str, got: float, truth: float, tol: Mapping[str, float]) -> str:
    """What a cited statistic ``s`` that is off by a known factor means (an
    entropy in bits: 1/ln 2 times the nats), or ""."""
    if s == "early_entropy" and truth > 0 and _close(got, truth / math.log(2.0), tol):
        return ("the cited early_entropy is this log's in bits (1/ln 2 = 1.443 times its value "
                "in nats): cite it in nats, as summary(log) gives it")
    return ""


def _truth(ctx: Context, log: Mapping[str, np.ndarray], values: Any) -> dict[str, float]:
    """``{statistic: value}`` of an oracle's summary (``values`` in the order of
    the log's family's statistics)."""
    names = PPO_STATS if family(log) == "ppo" else DQN_STATS
    return dict(zip(names, np.atleast_1d(np.asarray(values, dtype=np.float64)).tolist()))


# ----------------------------------------------------------------------------- q5, q6
def _say(ctx: Context, line: str) -> None:
    """In the question's feedback and in the top-level output (always visible: a
    student who graded the wrong letters must see why before publishing)."""
    ctx.note(line)
    ctx.tell(line)


def _id_note(ctx: Context) -> None:
    declared = ctx.constant("STUDENT_ID")
    declared = declared.strip() if isinstance(declared, str) else ""
    graded = (ctx.student_id or "").strip()
    if graded and declared and declared != graded:
        _say(ctx, f"STUDENT_ID = {declared[:40]!r} in diagnose.py is not the id this grading "
                  f"uses ({graded[:40]!r}): your letters are those of {graded[:40]!r}; "
                  "set STUDENT_ID to it and redo the notebook's diagnosis")
    elif graded and not declared:
        _say(ctx, f"STUDENT_ID in diagnose.py is empty: graded the letters of {graded[:40]!r} "
                  f"(your id here); the notebook shows them once STUDENT_ID = {graded[:40]!r}")
    elif not graded:
        _say(ctx, "no student id: graded the default instance (set STUDENT_ID in diagnose.py "
                  "to the id your course uses where you submit)")


def _letters_diagnosed(ctx: Context) -> Optional[tuple[dict[str, int], dict[str, Any]]]:
    """``({letter: run}, {letter: (fault, evidence), or the Fail its diagnose()
    met})`` for this student's letters (diagnose() asked once per letter, each
    failure held for the parts it stops), or None where no answer key is
    present."""
    _id_note(ctx)
    if not ctx.hidden.get("agent_faults"):
        return None
    letters = letters_for(ctx.student_id, ctx.params)
    out: dict[str, Any] = {}
    for letter, run in letters.items():
        try:
            out[letter] = _diagnosis(ctx, load_run(run, ctx.params), f"agent {letter}'s log")
        except Fail as e:
            out[letter] = e
    return letters, out


def _raise_first(diagnosed: Mapping[str, Any], letters: list[str]) -> None:
    """Re-raise the failure of the first of ``letters`` whose diagnose() failed."""
    for k in letters:
        if isinstance(diagnosed[k], Exception):
            raise diagnosed[k]


def _graded_on_submission() -> Outcome:
    return ended(Status.NOT_GRADED, ["graded on submission only, on Gradescope or PrairieLearn "
                                     "(the answer key is not in the handout)"])


def _truth_letters(ctx: Context, letters: Mapping[str, int], fault: str) -> list[str]:
    """The letters whose agent has ``fault`` (the answer key)."""
    runs, key = ctx.hidden["runs"], ctx.hidden["agent_faults"]
    if fault not in key.values():
        raise ReferenceFailed(f"{ctx.question.name}: part {fault!r} names a fault no agent of "
                              "[hidden.agent_faults] has")
    return sorted(k for k, run in letters.items() if key[runs[run]] == fault)


@judge.question("q5_faults")
def q5_faults(ctx: Context) -> Optional[Outcome]:
    """diagnose() on each of the student's letters' logs, one part per fault
    of the key (its id): the letters it names with a fault must be exactly the
    agents that have it. A diagnose() that calls everything healthy, or one
    that guesses, earns what a guess earns: about nothing."""
    got = _letters_diagnosed(ctx)
    if got is None:
        return _graded_on_submission()
    letters, diagnosed = got
    named = {k: v[0] for k, v in diagnosed.items() if not isinstance(v, Exception)}
    for spec in ctx.question.parts:
        fault = spec.id
        truth = _truth_letters(ctx, letters, fault)
        with ctx.part(fault):
            _raise_first(diagnosed, truth)
            mine = sorted(k for k, v in named.items() if v == fault)
            if not mine:
                raise ctx.fail(f"diagnose() names no letter {fault}", fn="diagnose")
            if mine != truth:
                raise ctx.fail(f"the letters diagnose() names {fault} ({', '.join(mine)}) are "
                               f"not the agent{'s' if len(truth) > 1 else ''} with that fault",
                               fn="diagnose")
    return None


def _run_of(case: Any) -> int:
    """The run index of a ``logs`` case (``agent = "run_<i>"``)."""
    return int(case.agent.rpartition("_")[2])


def public_warning(fault: Any, log: Mapping[str, np.ndarray], params: Mapping[str, Any],
                   agent: str) -> str:
    """What the handout already tells about a fault diagnose() names on one of
    its five logs (``agent``: how the student knows the log, "agent C"), or "":
    a fault the handout says no public log has (the five hold
    ``[params] public_faults``), or a fault the log's family cannot show (a DQN
    fault on a PPO log, or the reverse). q6 and the notebook say it before
    upload; it costs nothing there (q5 and q7 grade the fault, after publication)."""
    if not isinstance(fault, str) or fault.strip().lower() not in params["faults"]:
        return ""
    fault, fam = fault.strip().lower(), family(log)
    own = [f for f in params["cite"][fam] if f != "healthy"]
    if fault not in params["cite"][fam]:
        other = "DQN" if fam == "ppo" else "PPO"
        return (f"{agent}'s log is a {fam.upper()} log, and diagnose() names it {fault}, a fault "
                f"only a {other} agent can show (a {fam.upper()} log is healthy or shows "
                f"{' or '.join(own)})")
    if fault not in params["public_faults"]:
        present = [("an " if f[0] in "aeiou" else "a ") + f.replace("_", " ")
                   for f in params["public_faults"] if f != "healthy"]
        return (f"diagnose() names {agent}'s log {fault}: no log of this handout has that "
                f"fault (its five agents: {', '.join(present)} and two healthy ones, as "
                "diagnose.py's docstring says); a careless reading of one statistic suggests it")
    return ""


WARNED = ("warning (it costs nothing here; q5 and q7 grade the faults named, when grades are "
          "published): ")


def letters_of_runs(ctx: Context) -> dict[int, str]:
    """``{run: letter}`` as the student knows the logs: the letters of the id
    this grading uses, else of ``STUDENT_ID`` in the module (the notebook's
    check, which knows no platform id)."""
    declared = ctx.constant("STUDENT_ID")
    sid = ctx.student_id or (declared.strip() if isinstance(declared, str) else "") or None
    return {run: letter for letter, run in letters_for(sid, ctx.params).items()}


@judge.question("q6_evidence")
def q6_evidence(ctx: Context) -> None:
    """diagnose() on each public log, one part per log, named as the notebook
    names it ("agent C (logs/run_2.npz)"), whatever fault it names (that is q5's
    and q7's, after publication): its answer's form, what that fault must cite,
    and every cited statistic the log's own number (the oracle's), in the
    handout's units. Nothing here depends on the answer key, so it is checked
    before upload (the notebook, the local grade); what the handout already
    says about the fault named (:func:`public_warning`) is a warning, free."""
    letters = letters_of_runs(ctx)
    for case in sorted(ctx.each_case("log"), key=lambda c: letters[_run_of(c)]):
        letter = letters[_run_of(case)]
        named = replace(case, label=f"agent {letter} (logs/{case.agent}.npz)")
        with ctx.part("log", cases=[named]) as scope:
            for c in scope.cases():
                q6_log(ctx, c, f"agent {letter}")


def q6_log(ctx: Context, case: Any, agent: str) -> None:
    """diagnose() on one public log (``agent``: the letter the student knows it by)."""
    run = _run_of(case)
    log = load_run(run, ctx.params)
    where = f"{agent}'s log"
    fault, evidence = _diagnosis(ctx, log, where)
    warning = public_warning(fault, log, ctx.params, agent)
    if warning:
        _say(ctx, WARNED + warning)
    truth = _truth(ctx, log, ctx.oracle("summary", "c_diagnose.summary_of_run", run,
                                        ctx.params)) if not isinstance(evidence, Invalid) else {}
    _cite(ctx, log, fault, evidence, truth, f"{where} (it names {fault})")


# ----------------------------------------------------------------------------- q7
# Each submission meets a pool of its own: of every kind of q7's hidden cases (their ``kind``:
# one fault, or healthy decoys that invite one careless reading) [hidden] pool_draw[kind] logs,
# in the submission's own order (the framework's order of hidden cases, drawn per submission),
# so that two submissions (of one student, or of two) meet other logs in other orders. The
# feedback speaks of kinds and counts only ("untrained_critic log 3 of 3: named healthy"): within
# a kind, the parts passed come first, and the failures in the order of their diagnoses, so that
# no part names a log.
KINDS = ("saturated_policy", "untrained_critic", "undersized_buffer", "healthy PPO",
         "healthy DQN")
QUIET = "one of your hidden logs"      # the label of every hidden log (no index, no name)


def pool_path(case: Any, hidden: Mapping[str, Any]) -> Path:
    """The stored log of hidden case ``case`` of q7 (Gradescope zip only)."""
    return ROOT / hidden["pool_dir"] / f"{case.name}.npz"


def kind_of(fault: str, fam: str) -> str:
    """A hidden log's kind, as q7's feedback names it: its fault, or "healthy PPO"/"healthy DQN"."""
    return f"healthy {fam.upper()}" if fault == "healthy" else fault


def students_logs(ctx: Context) -> list:
    """This submission's hidden logs of q7: of each ``kind`` of hidden case (a
    fault at some severities, or healthy decoys that invite one careless
    reading), ``[hidden] pool_draw[kind]`` cases, the first ones of that kind
    in the submission's own order of the question's hidden cases (a draw of the
    submission's), all in that order."""
    draw = ctx.hidden.get("pool_draw", {})
    cases = ctx.cases_in("")
    mine = []
    for kind in sorted({c.kind for c in cases}):
        of_kind = [c for c in cases if c.kind == kind]
        if len(of_kind) < draw.get(kind, len(of_kind) + 1):
            raise ReferenceFailed(f"q7_unseen: hidden logs of kind {kind!r}: {len(of_kind)}, "
                                  f"and [hidden] pool_draw asks {draw.get(kind)} per student")
        mine += of_kind[:draw[kind]]
    return sorted(mine, key=lambda c: c.hidden_index)


# A hidden log as a submission meets it: a sample of the stored run, drawn per submission
# (``[params.unseen_sample]``), the same way for every log of a family whatever its kind. The
# stored pool is finite (a few dozen logs), so a log shown whole would be the same bytes at every
# submission: its length and return total (or a hash of any array) a fingerprint a class could
# tabulate against the kinds its feedback names. A sample keeps every diagnostic's verdict
# (the windows' states all kept, the batches' means over most of the same batches; the
# episodes are in no diagnostic) and makes every draw another log, bit for bit:
# * PPO: each update's 256 logged states in a drawn order (the same in each of the five
#   per-update arrays): every state of the updates the summary statistics read (``early``,
#   ``late``: every windowed statistic, so every verdict read from them, is the stored log's),
#   and outside them a resample, ``states`` of them kept and the rest of the 256 repeats;
# * DQN: ``batches`` of the logged batches, in order; the episode ids relabelled (each
#   episode a random label of its own: a batch's diversity is unchanged, while the largest id
#   + 1, or a span of ids, no longer counts the run's episodes);
# * both: ``episodes`` (a log-uniform draw between its two bounds, at most any pool log's
#   count) of the run's finished episodes, in order, with their update (PPO) or end step and
#   Q records (DQN): how many episodes a log lists, and their total, is a draw, not the run's.
def _draw_count(rng: np.random.Generator, bounds: Any) -> int:
    """A count in ``[lo, hi]``, log-uniform (as many draws below ``sqrt(lo hi)`` as above)."""
    lo, hi = int(bounds[0]), int(bounds[1])
    return min(hi, int(np.exp(rng.uniform(np.log(lo), np.log(hi + 1)))))


def sample_log(log: Mapping[str, np.ndarray], rng: np.random.Generator,
               sample: Mapping[str, Any], windows: Any = ()) -> dict[str, np.ndarray]:
    """The draw of stored ``log`` that a submission meets (``sample``: the
    ``[params.unseen_sample]`` table; ``rng``: this submission's draw of this
    log; ``windows``: the PPO updates ``[first, stop)`` the summary statistics
    read, kept whole)."""
    out = dict(log)
    returns = np.asarray(log["episode_returns"])
    count = _draw_count(rng, sample["episodes"][family(log)])
    if count > returns.size:
        raise ReferenceFailed(f"a hidden log lists {returns.size} episodes, fewer than the "
                              f"{count} [params.unseen_sample] episodes may draw")
    shown = np.sort(rng.choice(returns.size, count, replace=False))
    out["episode_returns"] = returns[shown]
    if family(log) == "ppo":
        out["episode_update"] = np.asarray(log["episode_update"])[shown]
        U, S = np.shape(log["actions"])
        keep = int(sample["states"])
        whole = np.zeros(U, dtype=bool)
        for first, stop in windows:
            whole[first:stop] = True
        rows = np.empty((U, S), dtype=np.int64)
        for u in range(U):
            if whole[u]:                        # a summary window's update: all its states
                rows[u] = rng.permutation(S)
            else:                               # `keep` of them, S - keep of those twice
                kept = rng.choice(S, keep, replace=False)
                rows[u] = rng.permutation(np.concatenate([kept, rng.choice(kept, S - keep)]))
        for k in ("logits_before", "logits_after", "actions", "values", "value_targets"):
            v = np.asarray(log[k])
            out[k] = v[np.arange(U)[:, None], rows]
        return out
    ends = np.asarray(log["episode_end_step"])
    out["episode_end_step"] = ends[shown]
    listed = np.zeros(returns.size, dtype=bool)
    listed[shown] = True
    records = listed[np.searchsorted(ends, np.asarray(log["q_step"]))]  # of a listed episode
    for k in ("q_step", "q_pred", "q_return"):
        out[k] = np.asarray(log[k])[records]
    batches = np.sort(rng.choice(np.size(log["batch_step"]), int(sample["batches"]),
                                 replace=False))
    for k in ("batch_step", "batch_inserted", "batch_episode"):
        out[k] = np.asarray(log[k])[batches]
    ids = np.asarray(out["batch_episode"])
    present = np.zeros(int(ids.max()) + 1, dtype=bool)
    present[ids] = True
    label = np.zeros(present.size, dtype=np.int64)
    label[present] = rng.choice(int(sample["episode_labels"]), int(present.sum()),
                                replace=False)
    out["batch_episode"] = label[ids]
    return out


def drawn_log(ctx: Context, case: Any) -> dict[str, np.ndarray]:
    """Hidden case ``case``'s log as this submission meets it (:func:`sample_log`
    of the stored log, from the submission's own draw)."""
    return sample_log(_load(pool_path(case, ctx.hidden)),
                      ctx.instance_rng(f"{ctx.question.name}/{case.name}/sample"),
                      ctx.params["unseen_sample"], (ctx.params["early"], ctx.params["late"]))


@dataclass
class Verdict:
    """What diagnose() did on one hidden log: its ``kind`` and ``family``, the
    failure of its fault (None: named right) and of its evidence (None: right),
    and the fault it named (None: no usable answer)."""
    kind: str
    family: str
    fault: Optional[Fail]
    evidence: Optional[Fail]
    named: Optional[str] = None


# What a hidden log's items may say: a few fixed outcomes, the same words for every log, so
# that the records tell per kind how many logs met each outcome and nothing else (a student's
# code that chose among many outcomes by a log's content could otherwise name each log's kind).
# The evidence's failures are told apart on the public logs (q6), not here; nor is a wrong
# number traced to the diagnostic that gives it (that would be one more outcome per log).
NOT_WRITTEN = "diagnose() is not written yet"
RAISED = "diagnose() raised an exception on it"
MODIFIED = "diagnose() changed the log it was given"
UNUSABLE = "diagnose()'s answer on it is not (fault, evidence) with a fault of FAULTS"
NOT_RIGHT = "its fault is not named right: the evidence counts only beside the right fault"
WRONG_EVIDENCE = ("its evidence is not right: not a dict of its family's statistics, or it misses "
                  "one its fault must cite, or a number is not the log's own (q6 shows which on "
                  "the public logs)")


def _no_answer(e: Fail) -> Fail:
    """The one outcome a failed diagnose() call on a hidden log is."""
    if e.kind is Kind.NOT_IMPLEMENTED:
        return Fail("not implemented", Kind.NOT_IMPLEMENTED, NOT_WRITTEN, "diagnose")
    if e.kind is Kind.RAISED:
        return Fail("raised", Kind.RAISED, RAISED, "diagnose")
    if e.kind is Kind.MODIFIED_INPUT:
        return Fail("modified its input", Kind.MODIFIED_INPUT, MODIFIED, "diagnose")
    return Fail("no usable answer", Kind.SHAPE, UNUSABLE, "diagnose")


def _judge_log(ctx: Context, case: Any) -> Verdict:
    """diagnose() on one hidden log (inside that case, labelled :data:`QUIET`):
    its outcomes, in the few words above."""
    log = drawn_log(ctx, case)
    fam = family(log)
    kind = kind_of(case.fault, fam)
    # per_student: the case's keys name this submission's draw (a recorded summary of
    # another draw never stands in for this one's)
    with ctx.within([replace(case, label=QUIET, per_student=True)]):
        try:
            fault, evidence = _diagnosis(ctx, log, "this log")
        except Fail as e:
            failed = _no_answer(e)
            return Verdict(kind, fam, failed, failed)
        if fault != case.fault:
            return Verdict(kind, fam, Fail("not its fault", Kind.VALUE, f"named {fault}",
                                           "diagnose"),
                           Fail("not its fault", Kind.VALUE, NOT_RIGHT, "diagnose"), fault)
        wrong = Verdict(kind, fam, None, Fail("wrong evidence", Kind.VALUE, WRONG_EVIDENCE,
                                              "diagnose"), fault)
        required = ctx.params["cite"][fam][fault]
        if isinstance(evidence, Invalid) or any(k not in evidence for k in required):
            return wrong
        truth = _truth(ctx, log, ctx.oracle("summary", "c_diagnose.summary_of_log", log,
                                            ctx.params))
        tol = ctx.params["tolerance"]
        cited = list(evidence)
        try:
            ctx.check(np.array([evidence[k] for k in cited]), np.array([truth[k] for k in cited]),
                      rtol=tol["evidence_rtol"], atol=tol["evidence_atol"],
                      label="the statistics diagnose() cites on this log")
        except Fail:
            return wrong
    return Verdict(kind, fam, None, None, fault)


def _healthy_cap(verdicts: list[Verdict], fam: str) -> tuple[int, int, int]:
    """``(cap, found, faulty)``: how many healthy logs of family ``fam`` may
    count, in the share of its faulty logs whose fault diagnose() named right
    (``found`` of ``faulty``; all of them when every faulty log is found,
    none when none is)."""
    faulty = [v for v in verdicts if v.family == fam and not v.kind.startswith("healthy")]
    healthy = sum(1 for v in verdicts if v.family == fam and v.kind.startswith("healthy"))
    found = sum(1 for v in faulty if v.fault is None)
    return (healthy * found // len(faulty) if faulty else healthy), found, len(faulty)


def _fault_cap(verdicts: list[Verdict], kind: str, fam: str) -> tuple[int, int, int]:
    """``(cap, clean, others)``: how many logs of faulty ``kind`` (a fault of
    family ``fam``) named right may count, in the share of the family's other
    logs that diagnose() did not name ``kind`` (``clean`` of ``others``; all of
    them when it names no other log so): naming a fault everywhere earns
    nothing for it, as naming "healthy" everywhere earns nothing for the decoys."""
    right = sum(1 for v in verdicts if v.kind == kind and v.fault is None)
    others = [v for v in verdicts if v.family == fam and v.kind != kind]
    clean = sum(1 for v in others if v.named != kind)
    return (right * clean // len(others) if others else right), clean, len(others)


def _items(verdicts: list[Verdict], which: str) -> list[tuple[str, Optional[Fail]]]:
    """``[(item, failure or None)]`` of part ``which`` ("fault" or "evidence"):
    per kind (in :data:`KINDS` order), the passed ones first, then the failures
    in the order of their diagnoses; the healthy logs named right count only up
    to :func:`_healthy_cap` of their family (a diagnose() that names everything
    healthy earns nothing for the decoys), the faulty ones only up to
    :func:`_fault_cap` (one that names a fault everywhere earns nothing for it)."""
    out = []
    for kind in KINDS:
        mine = [v for v in verdicts if v.kind == kind]
        if not mine:
            continue
        results = [v.fault if which == "fault" else v.evidence for v in mine]
        fam = mine[0].family
        if kind.startswith("healthy"):
            cap, found, faulty = _healthy_cap(verdicts, fam)
            beyond = Fail("a healthy log beyond the faulty logs found", Kind.VALUE,
                          f"named healthy, rightly, but the healthy {fam.upper()} logs count only "
                          f"in the share of the faulty {fam.upper()} logs named right (you named "
                          f"{found} of your {faulty}: {cap} of your {len(mine)} healthy ones "
                          "count); its evidence does not count either", "diagnose")
        else:
            cap, clean, others = _fault_cap(verdicts, kind, fam)
            beyond = Fail("a faulty log beyond the other logs not named so", Kind.VALUE,
                          f"named {kind}, rightly, but the {kind} logs count only in the share "
                          f"of your other {fam.upper()} logs not named {kind} ({clean} of your "
                          f"{others}: {cap} of the {kind} logs named right count); its evidence "
                          "does not count either", "diagnose")
        right = [i for i, v in enumerate(mine) if v.fault is None]   # rightly named: capped
        for i in right[cap:]:
            results[i] = beyond
        results.sort(key=lambda f: (f is not None, "" if f is None else
                                    (f.kind.value, f.diagnosis, f.fn)))
        n = len(results)
        out += [(f"{kind} log {i} of {n}", f) for i, f in enumerate(results, 1)]
    return out


@judge.question("q7_unseen")
def q7_unseen(ctx: Context) -> Optional[Outcome]:
    """diagnose() on hidden logs no student saw, a pool of the student's own
    (:func:`students_logs`: every fault at other seeds and severities, healthy
    decoys that invite the careless readings). Part ``fault``: one item per log,
    its fault named right (the healthy logs count only in the share of the
    faulty logs of their family named right); part ``evidence``: one item per log, the
    statistics cited beside the right fault. Items are named by kind and count
    only (:func:`_items`)."""
    if not any(c.hidden for c in ctx.declared()):
        return ended(Status.NOT_GRADED, ["graded on submission only (Gradescope or PrairieLearn): "
                                         "diagnose() on logs of other seeds and severities "
                                         "that the handout does not hold"])
    logs = students_logs(ctx)
    if not logs:
        return None                       # the public phase: no hidden log runs here
    n = sum(ctx.hidden["pool_draw"].values())
    if n != ctx.params["unseen_logs"] or any(spec.count != n for spec in ctx.question.parts):
        counts = [spec.count for spec in ctx.question.parts]
        raise ReferenceFailed(f"q7_unseen: its parts declare {counts} items and [params] "
                              f"unseen_logs = {ctx.params['unseen_logs']}, but [hidden] "
                              f"pool_draw gives each student {n} logs")
    verdicts = [_judge_log(ctx, case) for case in logs]
    for which in ("fault", "evidence"):
        for item, fail in _items(verdicts, which):
            with ctx.part(which, item=item) as part:
                part.case_list()          # met: judged on this phase's (hidden) logs
                if fail is not None:
                    raise fail
    return None


# ----------------------------------------------------------------------------- q8
@judge.question("q8_mechanism")
def q8_mechanism(ctx: Context) -> Outcome:
    """A zero-point entry carrying the written mechanisms into results.json."""
    text = ctx.constant("MECHANISM")
    if not isinstance(text, str) or not text.strip():
        return hand_graded(["no written answer found: MECHANISM is empty or not a string. One "
                            "sentence per fault on why its statistic shows it is graded by hand "
                            "with the rubric."], answered=False)
    lines = ["One sentence per fault: 0 points here, graded by hand with the rubric (its "
             f"criteria: {RUBRIC_WHERE}). Your MECHANISM:", text.strip()]
    absent = [f for f in ctx.params["faults"] if f != "healthy"
              and f.replace("_", " ") not in text.lower().replace("_", " ")]
    if absent:
        lines.insert(0, f"note: MECHANISM does not name {', '.join(absent)}")
    return hand_graded(lines)


QUESTIONS = judge.questions
