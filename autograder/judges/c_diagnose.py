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
* q6: the evidence ``diagnose(log)`` returns, per fault, for the letters named
  with it: a dict of summary statistics that must include what
  ``[params.cite]`` asks for the fault and be the log's own numbers (an
  oracle's, never the student's code); a wrong number is traced to the q1-q4
  diagnostic that gives it. The rule and its thresholds are the student's own.
* q7: ``diagnose(log)`` on the hidden pool (q7's hidden cases, stored logs in
  the Gradescope zip only): per log, the fault and its evidence; healthy logs
  count only beside a faulty one diagnosed right.
* q8: ``MECHANISM``, one sentence per fault, carried to results.json for hand
  grading (0 points; assignments/c_diagnose/rubric.md).
"""
from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import numpy as np

from ..grading.judging import (PUBLIC_PHASE, Context, Fail, Outcome, ProbeRaised,
                               ReferenceFailed, Scorecard, as_float_array)
from ..paths import ROOT, TEMPLATE_DIR

ASSIGNMENT = "c_diagnose"
PPO_KEYS = ("logits_before", "logits_after", "actions", "values", "value_targets",
            "episode_returns", "episode_update")
DQN_KEYS = ("batch_step", "batch_slots", "batch_inserted", "batch_episode", "q_step", "q_pred",
            "q_return", "episode_returns", "episode_end_step")
INT_KEYS = ("actions", "episode_update", "batch_step", "batch_slots", "batch_inserted",
            "batch_episode", "q_step", "episode_end_step")
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
def summary(log: Mapping[str, np.ndarray], fns: Any, params: Mapping[str, Any]
            ) -> dict[str, float]:
    """A log's summary statistics from diagnostics ``fns`` (anything with the
    handout's functions as attributes): window means of per-update curves
    (PPO, ``params["early"]``/``["late"]`` as [first, stop) updates) or means
    over the logged batches (DQN)."""
    if family(log) == "ppo":
        (e0, e1), (l0, l1) = params["early"], params["late"]
        lb, la, act = log["logits_before"], log["logits_after"], log["actions"]
        v, y = log["values"], log["value_targets"]
        return {
            "early_entropy": float(np.mean(fns.entropy(lb[e0:e1]))),
            "early_explained_variance": float(np.mean(fns.explained_variance(v[e0:e1],
                                                                             y[e0:e1]))),
            "late_value_loss": float(np.mean(fns.value_loss(v[l0:l1], y[l0:l1]))),
            "early_approx_kl": float(np.mean(fns.approx_kl(lb[e0:e1], la[e0:e1],
                                                           act[e0:e1]))),
            "early_clip_fraction": float(np.mean(fns.clip_fraction(
                lb[e0:e1], la[e0:e1], act[e0:e1], params["clip_eps"]))),
        }
    return {
        "batch_diversity": float(np.mean(fns.batch_diversity(log["batch_episode"]))),
        "sample_age": float(np.mean(fns.replay_sample_age(log["batch_step"],
                                                          log["batch_inserted"]))),
        "max_q": float(np.max(log["q_pred"])),
        "q_overestimation": float(fns.q_overestimation(log["q_pred"], log["q_return"])),
    }


def format_evidence(stats: Mapping[str, float]) -> str:
    """``"name = value, ..."`` with 6 significant digits (for printing)."""
    return ", ".join(f"{k} = {v:.6g}" for k, v in stats.items())


# Which diagnostic each summary statistic is computed with (and the question grading it).
STAT_FUNCTION = {"early_entropy": ("entropy", "q1"), "early_approx_kl": ("approx_kl", "q2"),
                 "early_clip_fraction": ("clip_fraction", "q2"),
                 "early_explained_variance": ("explained_variance", "q3"),
                 "late_value_loss": ("value_loss", "q3"),
                 "batch_diversity": ("batch_diversity", "q4"),
                 "sample_age": ("replay_sample_age", "q4"),
                 "q_overestimation": ("q_overestimation", "q4"), "max_q": (None, "")}


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
def _tol(ctx: Context) -> tuple[float, float]:
    t = ctx.params["tolerance"]
    return t["diagnostic_rtol"], t["diagnostic_atol"]


def _ask(ctx: Context, fn: str, args: tuple, shape: tuple, what: str) -> np.ndarray:
    return as_float_array(f"{fn}() on {what}", ctx.call(fn, *args), shape)


def _expect(ctx: Context, key: str, fn: str, args: tuple, shape: tuple, case: Any,
            what: str = "") -> None:
    """The student's ``fn(*args)`` against the reference's answer for case ``key``
    (a case drawn per student: against the oracle's)."""
    rtol, atol = _tol(ctx)
    what = what or _what(case)
    ctx.expect(key, lambda: _ask(ctx, fn, args, shape, what), rtol=rtol, atol=atol,
               label=f"{fn}() on {what}",
               oracle=(f"c_diagnose.{fn}", *args) if case.per_student else None)


def _check(ctx: Context, key: str, fn: str, args: tuple, want, what: str,
           atol: Optional[float] = None) -> None:
    """The student's ``fn(*args)`` against a value the judge knows (``atol``:
    instead of the diagnostics' absolute tolerance)."""
    rtol, default_atol = _tol(ctx)
    want = np.asarray(want, dtype=np.float64)
    ctx.check(key, f"{fn}() on {what}", lambda: _ask(ctx, fn, args, want.shape, what), want,
              rtol=rtol, atol=max(default_atol, 1e-12) if atol is None else atol)


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


def q1_entropy(ctx: Context) -> Outcome:
    card = Scorecard()
    fn = "entropy"
    inputs = _inputs(ctx, ("", "identity"), _entropy_input)
    general = "entropy() on random logits of several shapes, in nats over the last axis"
    with card.part(general, 2):
        for case in ctx.cases():
            (z,) = inputs(case)
            _expect(ctx, f"q1/{case.name}", fn, (z,), z.shape[:-1], case)
    with card.part("entropy() at both ends: ln A for equal logits, 0 for a one-hot policy "
                   "(no overflow)", 1, requires=general):
        for case in ctx.cases("identity"):
            (z,) = inputs(case)
            if case.kind == "equal":
                want = np.full(z.shape[:-1], math.log(z.shape[-1]))
            elif case.kind == "one_hot":
                want = np.zeros(z.shape[:-1])
            else:
                raise _unknown(case)
            one_hot = ctx.params["tolerance"]["one_hot_atol"] if case.kind == "one_hot" else None
            try:
                _check(ctx, f"q1/{case.name}", fn, (z,), want, _what(case), atol=one_hot)
            except Fail as e:
                if case.kind == "one_hot" and e.kind == "value" and not e.diagnosis:
                    e.diagnosis = (f"a one-hot policy's entropy must be 0 to {one_hot:g}: a guard "
                                   "inside the log, log(p + eps), adds about eps; take log p "
                                   "from the log-softmax, or guard with np.maximum(p, tiny)")
                raise
    with card.part("entropy() on every PPO log's logits_before [update, state]", 1,
                   requires=general):
        for case in ctx.cases("logs"):
            z = _log(ctx, case, "ppo")["logits_before"]
            _expect(ctx, f"q1/logs/{case.name}", fn, (z,), z.shape[:-1], case,
                    f"logs/{case.agent}.npz logits_before")
    return card.outcome()


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


def q2_kl_clip(ctx: Context) -> Outcome:
    card = Scorecard()
    inputs = _inputs(ctx, ("", "zero", "clip"), _policy_input)
    kl_ok = "approx_kl(): mean of (rho - 1) - log rho over the samples, rho = pi_new / pi_old"
    with card.part(kl_ok, 1.5):
        for case in ctx.cases():
            old, new, acts = inputs(case)
            _expect(ctx, f"q2/kl_{case.name}", "approx_kl", (old, new, acts), acts.shape[:-1],
                    case)
    with card.part("approx_kl() is 0 when the policy did not move", 0.5, requires=kl_ok):
        for case in ctx.cases("zero"):
            old, new, acts = inputs(case)
            _check(ctx, f"q2/kl_{case.name}", "approx_kl", (old, new, acts),
                   np.zeros(acts.shape[:-1]), _what(case))
    clip_ok = "clip_fraction(): the share of ratios strictly outside [1 - eps, 1 + eps], " \
              "on both sides of both edges"
    with card.part(clip_ok, 1):
        for case in ctx.cases("clip"):
            if case.kind == "unchanged":          # every ratio exactly 1: none strictly out
                old, new, acts = inputs(case)
                try:
                    _check(ctx, f"q2/clip/{case.name}", "clip_fraction",
                           (old, new, acts, case.eps), np.zeros(acts.shape[:-1]), _what(case))
                except Fail as e:
                    e.diagnosis = e.diagnosis or (
                        "a ratio exactly on the band's edge is not clipped: count "
                        "|rho - 1| > eps (strictly), not >=")
                    raise
                continue
            old, new, acts, r = inputs(case)
            want = np.mean(np.abs(r - 1.0) > case.eps)
            _check(ctx, f"q2/clip/{case.name}", "clip_fraction",
                   (old[None], new[None], acts[None], case.eps), np.array([want]), _what(case))
    with card.part("approx_kl() and clip_fraction() on every PPO log [update]", 1,
                   requires=kl_ok):
        for case in ctx.cases("logs"):
            log = _log(ctx, case, "ppo")
            args = (log["logits_before"], log["logits_after"], log["actions"])
            U = args[0].shape[0]
            _expect(ctx, f"q2/logs/kl/{case.name}", "approx_kl", args, (U,), case,
                    f"logs/{case.agent}.npz (before, after, actions)")
            _expect(ctx, f"q2/logs/clip/{case.name}", "clip_fraction",
                    args + (ctx.params["clip_eps"],), (U,), case,
                    f"logs/{case.agent}.npz with clip_eps = {ctx.params['clip_eps']}")
    return card.outcome()


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


def q3_critic(ctx: Context) -> Outcome:
    card = Scorecard()
    inputs = _inputs(ctx, ("", "identity", "vl"), _critic_input)
    ev_ok = "explained_variance(): 1 - Var(targets - values) / Var(targets) over the last axis"
    with card.part(ev_ok, 1.5):
        for case in ctx.cases():
            v, y = inputs(case)
            _expect(ctx, f"q3/ev_{case.name}", "explained_variance", (v, y), y.shape[:-1], case)
    with card.part("explained_variance(y, y) = 1 and explained_variance(constant, y) = 0", 0.5,
                   requires=ev_ok):
        for case in ctx.cases("identity"):
            v, y = inputs(case)
            if case.kind not in ("perfect", "constant"):
                raise _unknown(case)
            want = np.full(y.shape[:-1], 1.0 if case.kind == "perfect" else 0.0)
            _check(ctx, f"q3/ev_{case.name}", "explained_variance", (v, y), want, _what(case))
    vl_ok = "value_loss(): 0.5 * mean((values - targets)^2) over the last axis"
    with card.part(vl_ok, 0.5):
        for case in ctx.cases("vl"):
            if case.kind == "literal":
                v, y, want = inputs(case)
                _check(ctx, f"q3/vl_{case.name}", "value_loss", (v, y), want, _what(case))
            else:
                v, y = inputs(case)
                _expect(ctx, f"q3/vl_{case.name}", "value_loss", (v, y), y.shape[:-1], case)
    with card.part("explained_variance() and value_loss() on every PPO log [update]", 0.5,
                   requires=ev_ok):
        for case in ctx.cases("logs"):
            log = _log(ctx, case, "ppo")
            args = (log["values"], log["value_targets"])
            U = args[0].shape[0]
            what = f"logs/{case.agent}.npz (values, value_targets)"
            _expect(ctx, f"q3/logs/ev/{case.name}", "explained_variance", args, (U,), case, what)
            _expect(ctx, f"q3/logs/vl/{case.name}", "value_loss", args, (U,), case, what)
    return card.outcome()


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


def _replay_part(ctx: Context, inputs: Callable[[Any], tuple], group: str, fn: str) -> None:
    for case in ctx.cases(group):
        args = inputs(case)
        if case.kind in ("literal", "offsets"):
            *args, want = args
            _check(ctx, f"q4/{group}_{case.name}", fn, tuple(args), want, _what(case))
        else:
            shape = args[-1].shape[:-1]
            _expect(ctx, f"q4/{group}_{case.name}", fn, args, shape, case)


def q4_replay(ctx: Context) -> Outcome:
    card = Scorecard()
    inputs = _inputs(ctx, ("over", "age", "div"), _replay_input)
    over_ok = "q_overestimation(): mean(q_pred - realised_returns), positive when Q is too high"
    with card.part(over_ok, 1):
        _replay_part(ctx, inputs, "over", "q_overestimation")
    age_ok = "replay_sample_age(): mean of sample_step - inserted_step over the batch"
    with card.part(age_ok, 1):
        _replay_part(ctx, inputs, "age", "replay_sample_age")
    div_ok = "batch_diversity(): the number of distinct episode ids per batch"
    with card.part(div_ok, 1):
        _replay_part(ctx, inputs, "div", "batch_diversity")
    with card.part("the three on every DQN log", 1, requires=div_ok):
        for case in ctx.cases("logs"):
            log = _log(ctx, case, "dqn")
            K = log["batch_step"].shape[0]
            _expect(ctx, f"q4/logs/age/{case.name}", "replay_sample_age",
                    (log["batch_step"], log["batch_inserted"]), (K,), case,
                    f"logs/{case.agent}.npz (batch_step, batch_inserted)")
            _expect(ctx, f"q4/logs/div/{case.name}", "batch_diversity", (log["batch_episode"],),
                    (K,), case, f"logs/{case.agent}.npz batch_episode")
            _expect(ctx, f"q4/logs/over/{case.name}", "q_overestimation",
                    (log["q_pred"], log["q_return"]), (), case,
                    f"logs/{case.agent}.npz (q_pred, q_return)")
    return card.outcome()


# ----------------------------------------------------------------------------- q5, q6
def _say(ctx: Context, card: Scorecard, line: str) -> None:
    """In the question's feedback and in the top-level output (always visible: a
    student who graded the wrong letters must see why before publishing)."""
    card.note(line)
    ctx.tell(line)


def _id_note(ctx: Context, card: Scorecard) -> None:
    declared = ctx.constant("STUDENT_ID")
    declared = declared.strip() if isinstance(declared, str) else ""
    graded = (ctx.student_id or "").strip()
    if graded and declared and declared != graded:
        _say(ctx, card, f"STUDENT_ID = {declared[:40]!r} in diagnose.py is not the id this grading "
                  f"uses ({graded[:40]!r}): your letters are those of {graded[:40]!r}; "
                  "set STUDENT_ID to it and redo the notebook's diagnosis")
    elif graded and not declared:
        _say(ctx, card, f"STUDENT_ID in diagnose.py is empty: graded the letters of {graded[:40]!r} "
                  f"(your id here); the notebook shows them once STUDENT_ID = {graded[:40]!r}")
    elif not graded:
        _say(ctx, card, "no student id: graded the default instance (set STUDENT_ID in diagnose.py "
                  "to the id your course uses on Gradescope)")


class _Probed:
    """The submission's own diagnostics as attributes (probe calls), so that
    :func:`summary` can compute the statistics a student's code gives."""

    def __init__(self, ctx: Context):
        self._ctx = ctx

    def __getattr__(self, fn: str) -> Callable[..., Any]:
        if fn.startswith("_"):
            raise AttributeError(fn)
        return lambda *args: np.asarray(self._ctx.call(fn, *args), dtype=np.float64)


def _diagnosis(ctx: Context, log: Mapping[str, np.ndarray], what: str) -> tuple[str, Any]:
    """``diagnose(log)`` of the submission, checked for form: ``(fault,
    evidence)`` with ``fault`` one of ``params["faults"]`` (any case, blanks
    around it) and ``evidence`` a dict {statistic name: finite number}; an
    evidence of another form comes back as the :class:`Fail` saying so (it
    costs the evidence only, not the fault)."""
    p = ctx.params
    got = ctx.call("diagnose", dict(log))
    if not isinstance(got, (list, tuple)) or len(got) != 2:
        raise Fail(f"diagnose() on {what} must return (fault, evidence), got "
                   f"{type(got).__name__}", "shape")
    fault, evidence = got
    if not isinstance(fault, str):
        raise Fail(f"diagnose() on {what}: the fault must be a string, got "
                   f"{type(fault).__name__}", "shape")
    fault = fault.strip().lower()
    if fault not in p["faults"]:
        raise Fail(f"diagnose() on {what} names {fault[:40]!r}: not one of "
                   f"{', '.join(p['faults'])}")
    try:
        return fault, _evidence(evidence, family(log), what)
    except Fail as e:
        return fault, e


def _evidence(evidence: Any, fam: str, what: str) -> dict[str, float]:
    """``{statistic: value}`` of a returned evidence, or :class:`Fail`."""
    if isinstance(evidence, str):
        raise Fail(f"diagnose() on {what}: the evidence is a string; return a dict "
                   "{statistic: number}, e.g. {'early_entropy': 0.6124}", "shape")
    if not isinstance(evidence, dict):
        raise Fail(f"diagnose() on {what}: the evidence must be a dict {{statistic: number}}, "
                   f"got {type(evidence).__name__}", "shape")
    known = set(PPO_STATS if fam == "ppo" else DQN_STATS)
    out = {}
    for name, value in list(evidence.items())[:64]:
        name = str(name).strip().lower()
        if name not in known:
            raise Fail(f"diagnose() on {what} cites {name[:40]!r}: a {fam.upper()} log's "
                       f"statistics are {', '.join(sorted(known))}")
        value = np.asarray(value)
        if value.shape != () or value.dtype.kind not in "biuf" or not np.isfinite(value):
            raise Fail(f"diagnose() on {what}: {name} must be one finite number", "shape")
        out[name] = float(value)
    return out


def _cite(ctx: Context, log: Mapping[str, np.ndarray], fault: str, evidence: Mapping[str, float],
          truth: Mapping[str, float], what: str, numbers: bool = True) -> None:
    """The evidence of ``fault``: every statistic the fault must cite is there
    and every cited statistic is the log's own number (``truth``, the oracle's);
    else :class:`Fail`, naming the diagnostic of q1-q4 that gives the wrong
    number (the student's own function is run on the log; ``numbers``: the
    diagnosis may quote its value, not so for a hidden log)."""
    p = ctx.params
    tol = p["tolerance"]
    fam = family(log)
    required = p["cite"][fam].get(fault)
    if required is None:
        raise Fail(f"{fault} is not a fault a {fam.upper()} log can show")
    missing = [s for s in required if s not in evidence]
    if missing:
        raise Fail(f"diagnose() on {what} names {fault} but does not cite "
                   f"{', '.join(missing)} (for {fault} on a {fam.upper()} log cite "
                   f"{', '.join(required)})")
    wrong = [s for s, got in evidence.items()
             if not abs(got - truth[s]) <= tol["evidence_atol"] + tol["evidence_rtol"]
             * abs(truth[s])]
    if not wrong:
        return
    s = wrong[0]
    fn, q = STAT_FUNCTION[s]
    diagnosis = ""
    if fn:
        own = summary(log, _Probed(ctx), p)[s]
        shown = f" = {own:.6g}" if numbers else ""
        if not abs(own - truth[s]) <= tol["evidence_atol"] + tol["evidence_rtol"] * abs(truth[s]):
            diagnosis = (f"your {fn}() gives {s}{shown} on this log: {fn}() is wrong "
                         f"({q} shows where); the statistic follows once it is right")
        else:
            diagnosis = (f"your {fn}() gives the right {s}{f' ({own:.6g})' if numbers else ''}; "
                         "diagnose() cites another number: cite summary(log)'s value "
                         "(unrounded, or to 4 significant digits)")
    raise Fail(f"diagnose() on {what} cites {s} = {evidence[s]:.6g}: not this log's number",
               diagnosis=diagnosis)


def _truth(ctx: Context, run: int) -> dict[str, float]:
    """Run ``run``'s summary statistics, from the oracle (never the student's code)."""
    log_names = PPO_STATS if family(load_run(run, ctx.params)) == "ppo" else DQN_STATS
    values = np.atleast_1d(ctx.oracle(f"q6/summary/run_{run}", "c_diagnose.summary_of_run",
                                      run, ctx.params)).tolist()
    return dict(zip(log_names, values))


def _letters_diagnosed(ctx: Context, card: Scorecard
                       ) -> Optional[tuple[dict[str, int], dict[str, Any]]]:
    """``({letter: run}, {letter: (fault, evidence) or the Fail it raised})``
    for this student's letters, or None where no answer key is present."""
    _id_note(ctx, card)
    if not ctx.hidden.get("agent_faults"):
        return None
    letters = letters_for(ctx.student_id, ctx.params)
    out: dict[str, Any] = {}
    for letter, run in letters.items():
        try:
            out[letter] = _diagnosis(ctx, load_run(run, ctx.params), f"agent {letter}'s log")
        except (Fail, ProbeRaised) as e:
            out[letter] = e
    return letters, out


def _raise_first(diagnosed: Mapping[str, Any], letters: list[str]) -> None:
    """Re-raise the failure of the first of ``letters`` whose diagnose() failed."""
    for k in letters:
        if isinstance(diagnosed[k], Exception):
            raise diagnosed[k]


def _fault_sets(ctx: Context) -> list[str]:
    """The faults graded one part each: every fault of the key, healthy last."""
    key = ctx.hidden["agent_faults"]
    return sorted(set(key.values()) - {"healthy"}) + ["healthy"]


def _graded_on_gradescope() -> Outcome:
    return Outcome(0.0, ["graded on Gradescope only (the answer key is not in the handout)"])


def q5_faults(ctx: Context) -> Outcome:
    """diagnose() on each of the student's letters' logs, one part per fault
    (healthy included): the letters it names with a fault must be exactly the
    agents that have it. A diagnose() that calls everything healthy, or one
    that guesses, earns what a guess earns: about nothing."""
    card = Scorecard()
    got = _letters_diagnosed(ctx, card)
    if got is None:
        return _graded_on_gradescope()
    letters, diagnosed = got
    runs, key = ctx.hidden["runs"], ctx.hidden["agent_faults"]
    named = {k: v[0] for k, v in diagnosed.items() if not isinstance(v, Exception)}
    for fault in _fault_sets(ctx):
        truth = sorted(k for k, run in letters.items() if key[runs[run]] == fault)
        with card.part(f"the agent{'s' if len(truth) > 1 else ''} your diagnose() names "
                       f"{fault}", 1):
            _raise_first(diagnosed, truth)
            mine = sorted(k for k, v in named.items() if v == fault)
            if not mine:
                raise Fail(f"diagnose() names no letter {fault}")
            if mine != truth:
                raise Fail(f"the letters diagnose() names {fault} ({', '.join(mine)}) are not "
                           f"the agent{'s' if len(truth) > 1 else ''} with that fault")
    return card.outcome()


def q6_evidence(ctx: Context) -> Outcome:
    """One part per fault: for every letter diagnose() names with it, the
    statistics it cites are that log's own numbers (the oracle's, never the
    student's code) and include those the fault must cite (``[params.cite]``)."""
    card = Scorecard()
    got = _letters_diagnosed(ctx, card)
    if got is None:
        return _graded_on_gradescope()
    letters, diagnosed = got
    for fault in _fault_sets(ctx):
        with card.part(f"the evidence of the agent(s) your diagnose() names {fault}: their "
                       "own numbers", 1):
            mine = [k for k, v in diagnosed.items()
                    if not isinstance(v, Exception) and v[0] == fault]
            if not mine:
                _raise_first(diagnosed, list(diagnosed))
                raise Fail(f"diagnose() names no letter {fault}")
            for letter in mine:
                run = letters[letter]
                evidence = diagnosed[letter][1]
                if isinstance(evidence, Fail):
                    raise evidence
                _cite(ctx, load_run(run, ctx.params), fault, evidence,
                      _truth(ctx, run), f"agent {letter}'s log")
    return card.outcome()


# ----------------------------------------------------------------------------- q7
def pool_path(case: Any, hidden: Mapping[str, Any]) -> Path:
    """The stored log of hidden case ``case`` of q7 (Gradescope zip only)."""
    return ROOT / hidden["pool_dir"] / f"{case.name}.npz"


FOUND = "diagnose() finds the fault of at least one unseen faulty log"


def q7_unseen(ctx: Context) -> Outcome:
    """diagnose() on logs the student never saw (hidden cases: other seeds of
    every agent, each fault at two severities or more, healthy decoys of both
    algorithms whose returns suggest a fault). Per log: the fault must be the case's, and
    the evidence must cite what the fault asks, each the log's own number (the
    oracle's). A healthy log counts only beside a faulty one diagnosed right,
    so a diagnose() that calls everything healthy earns nothing."""
    card = Scorecard()
    if not any(c.hidden for c in ctx.declared()):
        return Outcome(0.0, ["graded on Gradescope only: diagnose() on logs of other seeds and "
                             "severities that the handout does not hold"])
    if ctx.phase == PUBLIC_PHASE:          # no public case: every part is the hidden phase's
        return card.outcome()
    results: list[tuple[Any, Optional[Exception]]] = []
    for case in ctx.cases():
        key = f"q7/{case.name}"
        try:
            with ctx.case(key, "diagnose()"):
                log = _load(pool_path(case, ctx.hidden))
                fault, evidence = _diagnosis(ctx, log, "this log")
                if fault != case.fault:
                    raise Fail(f"diagnose() names {fault}: not this log's fault")
                if isinstance(evidence, Fail):
                    raise evidence
                names = PPO_STATS if family(log) == "ppo" else DQN_STATS
                truth = dict(zip(names, np.atleast_1d(ctx.oracle(
                    f"{key}/summary", "c_diagnose.summary_of_file",
                    str(pool_path(case, ctx.hidden)), ctx.params)).tolist()))
                _cite(ctx, log, fault, evidence, truth, "this log", numbers=False)
            results.append((case, None))
        except (Fail, ProbeRaised) as e:
            results.append((case, e))
    for case, error in results:
        with card.part(f"{case.label}: its fault, and the statistics that show it", 1,
                       requires=FOUND if case.fault == "healthy" else None):
            if error is not None:
                raise error
    with card.part(FOUND, 0):
        if not any(e is None and c.fault != "healthy" for c, e in results):
            raise Fail("no unseen faulty log diagnosed right: healthy ones earn nothing alone")
    return card.outcome()


# ----------------------------------------------------------------------------- q8
def q8_mechanism(ctx: Context) -> Outcome:
    """A zero-point entry carrying the written mechanisms into results.json."""
    text = ctx.constant("MECHANISM")
    if not isinstance(text, str) or not text.strip():
        return Outcome(0.0, ["no written answer found: MECHANISM is empty or not a string. One "
                             "sentence per fault on why its statistic shows it is graded by hand "
                             "with the rubric."])
    lines = ["One sentence per fault: 0 points here, graded by hand with the rubric "
             "(assignments/c_diagnose/rubric.md). Your MECHANISM:", text.strip()]
    absent = [f for f in ctx.params["faults"] if f != "healthy"
              and f.replace("_", " ") not in text.lower().replace("_", " ")]
    if absent:
        lines.insert(0, f"note: MECHANISM does not name {', '.join(absent)}")
    return Outcome(1.0, lines)


QUESTIONS: dict[str, Callable[[Context], Outcome]] = {
    f.__name__: f for f in (q1_entropy, q2_kl_clip, q3_critic, q4_replay, q5_faults,
                            q6_evidence, q7_unseen, q8_mechanism)}
