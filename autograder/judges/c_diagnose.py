"""Judge of capstone C: diagnose three faulty agents from their training logs.

The handout ships five raw training logs (``logs/run_<i>.npz``: three PPO
agents, two DQN agents; no code, no labels). Each student sees them under
letters of their own: :func:`letters_for` permutes them with the student id
(public, so the notebook shows the same letters the grader uses).

* q1-q4: the student's diagnostics on the judge's inputs (identities such as
  entropy([0, 0]) = ln 2, EV(y, y) = 1, EV(const, y) = 0, ratios on both sides
  of both clip edges, ...; random batches of other shapes) and on every shipped
  log, against the reference's answers.
* q5: ``FAULT_<letter>`` for the student's own letters, against the answer key
  in ``[hidden]`` (Gradescope only), one part per fault: the letters named
  with it must be exactly the agents that have it (so "all healthy" earns 0).
* q6: ``EVIDENCE_<letter>``, per fault, of the letters named with it: the
  summary statistics the notebook prints; each must be the log's own number
  (computed by an oracle, never taken from the student) and lie on the named
  side of every threshold of the fault's rules (``[params.rules]``,
  ``[params.thresholds]``).
"""
from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import numpy as np

from ..grading.judging import Context, Fail, Outcome, Scorecard, as_float_array
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
MAX_EVIDENCE = 4000      # characters of one EVIDENCE_<letter> the judge reads


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


def load_run(i: int, params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Run ``i``'s log: floats as float64, indices and steps as int64."""
    with np.load(logs_dir(params) / f"run_{int(i)}.npz", allow_pickle=False) as data:
        return {k: data[k].astype(np.int64 if k in INT_KEYS else np.float64)
                for k in data.files}


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
    """``"name = value, ..."`` with 6 significant digits: what EVIDENCE_<letter> holds."""
    return ", ".join(f"{k} = {v:.6g}" for k, v in stats.items())


_PAIR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(\S+)\s*$")


def parse_evidence(text: str) -> dict[str, float]:
    """``{name: value}`` from ``"name = value"`` pairs separated by commas,
    semicolons or new lines; raises :class:`Fail` on anything else."""
    out: dict[str, float] = {}
    for piece in re.split(r"[,;\n]", text[:MAX_EVIDENCE]):
        if not piece.strip():
            continue
        m = _PAIR.match(piece)
        if not m:
            raise Fail(f"cannot read {piece.strip()[:60]!r}: write name = number pairs")
        name, value = m.group(1).lower(), m.group(2)
        try:
            number = float(value)
        except ValueError:
            raise Fail(f"{name}: {value[:30]!r} is not a number") from None
        if name in out:
            raise Fail(f"{name} is given twice")
        out[name] = number
    return out


def rules_hold(fault: str, fam: str, stats: Mapping[str, float],
               params: Mapping[str, Any]) -> list[str]:
    """The rules of ``fault`` (for a ``fam`` log) that ``stats`` break, as text
    (empty: every rule holds). A fault without rules for ``fam`` breaks one."""
    rules = params["rules"][fam].get(fault)
    if rules is None:
        return [f"{fault} is not a fault a {fam.upper()} log can show"]
    broken = []
    for stat, side in rules:
        value, bar = stats.get(stat, math.nan), params["thresholds"][stat]
        ok = value < bar if side == "below" else value > bar
        if not ok:
            broken.append(f"{stat} = {value:.6g} is not {side} {bar:g}")
    return broken


# ----------------------------------------------------------------------------- helpers
def _tol(ctx: Context) -> tuple[float, float]:
    t = ctx.params["tolerance"]
    return t["diagnostic_rtol"], t["diagnostic_atol"]


def _ask(ctx: Context, fn: str, args: tuple, shape: tuple, what: str) -> np.ndarray:
    return as_float_array(f"{fn}() on {what}", ctx.call(fn, *args), shape)


def _expect(ctx: Context, key: str, fn: str, args: tuple, shape: tuple, what: str) -> None:
    """The student's ``fn(*args)`` against the reference's answer for case ``key``."""
    rtol, atol = _tol(ctx)
    label = f"{fn}() on {what}"
    ctx.expect(key, lambda: _ask(ctx, fn, args, shape, what), rtol=rtol, atol=atol,
               label=label)


def _check(ctx: Context, key: str, fn: str, args: tuple, want, what: str) -> None:
    """The student's ``fn(*args)`` against a value the judge knows."""
    rtol, atol = _tol(ctx)
    want = np.asarray(want, dtype=np.float64)
    ctx.check(key, f"{fn}() on {what}", lambda: _ask(ctx, fn, args, want.shape, what), want,
              rtol=rtol, atol=max(atol, 1e-12))


def _hidden_rng(ctx: Context, tag: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{ctx.hidden['case_seed']}/{tag}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _runs(ctx: Context, fam: str) -> list[tuple[int, dict[str, np.ndarray]]]:
    out = []
    for i in range(len(ctx.params["letters"])):
        log = load_run(i, ctx.params)
        if family(log) == fam:
            out.append((i, log))
    return out


def _logits(rng: np.random.Generator, shape: tuple, scale: float = 2.0) -> np.ndarray:
    return rng.normal(0.0, scale, shape)


# ----------------------------------------------------------------------------- q1
def q1_entropy(ctx: Context) -> Outcome:
    card = Scorecard()
    fn = "entropy"
    rng = ctx.public_rng("c_q1")
    general = "entropy() on random logits of several shapes, in nats over the last axis"
    with card.part(general, 2):
        _expect(ctx, "q1/random_3d", fn, (_logits(rng, (4, 5, 3)),), (4, 5),
                "random logits (4, 5, 3)")
        _expect(ctx, "q1/random_rows", fn, (_logits(rng, (7, 2)),), (7,),
                "7 rows of 2 logits (7, 2)")
        if not ctx.public_only:
            hr = _hidden_rng(ctx, "q1")
            _expect(ctx, "q1/hidden_5", fn, (_logits(hr, (3, 6, 5), 4.0),), (3, 6),
                    "random logits of 5 actions (hidden)")
            _expect(ctx, "q1/hidden_2", fn, (_logits(hr, (2, 9, 2), 6.0),), (2, 9),
                    "random peaked logits (hidden)")
    with card.part("entropy() at both ends: ln A for equal logits, 0 for a one-hot policy "
                   "(no overflow)", 1, requires=general):
        _check(ctx, "q1/uniform_pair", fn, (np.zeros(2),), math.log(2.0), "logits [0, 0]")
        _check(ctx, "q1/uniform_rows", fn, (np.full((3, 4), 1.5),), np.full(3, math.log(4.0)),
               "equal logits (3, 4)")
        _check(ctx, "q1/one_hot", fn, (np.array([[1e4, -1e4], [-800.0, 800.0]]),),
               np.zeros(2), "one-hot logits [[1e4, -1e4], [-800, 800]]")
        if not ctx.public_only:
            _check(ctx, "q1/hidden_uniform", fn, (np.full((2, 3, 3), -7.0),),
                   np.full((2, 3), math.log(3.0)), "equal logits (hidden)")
    with card.part("entropy() on every PPO log's logits_before [update, state]", 1,
                   requires=general):
        for i, log in _runs(ctx, "ppo"):
            _expect(ctx, f"q1/logs/run_{i}", fn, (log["logits_before"],),
                    log["logits_before"].shape[:-1], f"logs/run_{i}.npz logits_before")
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


def q2_kl_clip(ctx: Context) -> Outcome:
    card = Scorecard()
    rng = ctx.public_rng("c_q2")
    kl_ok = "approx_kl(): mean of (rho - 1) - log rho over the samples, rho = pi_new / pi_old"
    with card.part(kl_ok, 1.5):
        old, new = _logits(rng, (3, 16, 2)), _logits(rng, (3, 16, 2))
        acts = rng.integers(0, 2, (3, 16))
        _expect(ctx, "q2/kl_random", "approx_kl", (old, new, acts), (3,),
                "random policies (3 updates, 16 samples, 2 actions)")
        old, new = _logits(rng, (12, 4)), _logits(rng, (12, 4), 0.5)
        _expect(ctx, "q2/kl_one", "approx_kl", (old, new, rng.integers(0, 4, 12)), (),
                "one update of 12 samples and 4 actions")
        if not ctx.public_only:
            hr = _hidden_rng(ctx, "q2")
            _expect(ctx, "q2/kl_hidden", "approx_kl",
                    (_logits(hr, (2, 3, 20, 3)), _logits(hr, (2, 3, 20, 3)),
                     hr.integers(0, 3, (2, 3, 20))), (2, 3), "random policies (hidden)")
    with card.part("approx_kl() is 0 when the policy did not move", 0.5, requires=kl_ok):
        same = _logits(rng, (2, 10, 2))
        _check(ctx, "q2/kl_zero", "approx_kl", (same, same.copy(), rng.integers(0, 2, (2, 10))),
               np.zeros(2), "an unchanged policy")
    clip_ok = "clip_fraction(): the share of ratios strictly outside [1 - eps, 1 + eps], " \
              "on both sides of both edges"
    with card.part(clip_ok, 1):
        epsilons = [0.2, 0.1] + ([] if ctx.public_only else [0.3, 0.05])
        for j, eps in enumerate(epsilons):
            r = _clip_ratios(eps)
            old, new, acts = _ratio_case(rng if j < 2 else _hidden_rng(ctx, f"q2/{j}"), r)
            want = np.mean(np.abs(r - 1.0) > eps)
            where = "" if j < 2 else " (hidden)"
            _check(ctx, f"q2/clip/{eps:g}", "clip_fraction", (old[None], new[None], acts[None],
                                                              eps),
                   np.array([want]), f"ratios next to 1 +- {eps:g}{where}")
    with card.part("approx_kl() and clip_fraction() on every PPO log [update]", 1,
                   requires=kl_ok):
        for i, log in _runs(ctx, "ppo"):
            args = (log["logits_before"], log["logits_after"], log["actions"])
            U = args[0].shape[0]
            _expect(ctx, f"q2/logs/kl/run_{i}", "approx_kl", args, (U,),
                    f"logs/run_{i}.npz (before, after, actions)")
            _expect(ctx, f"q2/logs/clip/run_{i}", "clip_fraction",
                    args + (ctx.params["clip_eps"],), (U,),
                    f"logs/run_{i}.npz with clip_eps = {ctx.params['clip_eps']}")
    return card.outcome()


# ----------------------------------------------------------------------------- q3
def q3_critic(ctx: Context) -> Outcome:
    card = Scorecard()
    rng = ctx.public_rng("c_q3")
    ev_ok = "explained_variance(): 1 - Var(targets - values) / Var(targets) over the last axis"
    with card.part(ev_ok, 1.5):
        y = rng.normal(20.0, 8.0, (4, 50))
        v = 0.7 * y + rng.normal(0.0, 5.0, y.shape)           # Var(v) != Var(y)
        _expect(ctx, "q3/ev_random", "explained_variance", (v, y), (4,),
                "noisy predictions (4, 50)")
        bad = y[0] + rng.normal(0.0, 30.0, 50)                 # worse than a constant: EV < 0
        _expect(ctx, "q3/ev_negative", "explained_variance", (bad, y[0]), (),
                "predictions worse than a constant (50,)")
        if not ctx.public_only:
            hr = _hidden_rng(ctx, "q3")
            yh = hr.normal(-3.0, 2.0, (2, 3, 30))
            _expect(ctx, "q3/ev_hidden", "explained_variance",
                    (1.5 * yh + hr.normal(0.0, 1.0, yh.shape), yh), (2, 3),
                    "random predictions (hidden)")
    with card.part("explained_variance(y, y) = 1 and explained_variance(constant, y) = 0", 0.5,
                   requires=ev_ok):
        y = rng.normal(5.0, 3.0, (2, 40))
        _check(ctx, "q3/ev_perfect", "explained_variance", (y.copy(), y), np.ones(2),
               "perfect predictions")
        _check(ctx, "q3/ev_constant", "explained_variance", (np.full(y.shape, 7.0), y),
               np.zeros(2), "constant predictions")
    vl_ok = "value_loss(): 0.5 * mean((values - targets)^2) over the last axis"
    with card.part(vl_ok, 0.5):
        v, y = rng.normal(0.0, 3.0, (3, 25)), rng.normal(1.0, 3.0, (3, 25))
        _expect(ctx, "q3/vl_random", "value_loss", (v, y), (3,), "random (3, 25)")
        _check(ctx, "q3/vl_known", "value_loss", (np.zeros(4), np.array([2.0, -2.0, 2.0, -2.0])),
               2.0, "values 0, targets +-2 (0.5 * 4 = 2)")
        if not ctx.public_only:
            hr = _hidden_rng(ctx, "q3/vl")
            _expect(ctx, "q3/vl_hidden", "value_loss",
                    (hr.normal(0, 50, (5, 7)), hr.normal(0, 50, (5, 7))), (5,), "hidden")
    with card.part("explained_variance() and value_loss() on every PPO log [update]", 0.5,
                   requires=ev_ok):
        for i, log in _runs(ctx, "ppo"):
            args = (log["values"], log["value_targets"])
            U = args[0].shape[0]
            _expect(ctx, f"q3/logs/ev/run_{i}", "explained_variance", args, (U,),
                    f"logs/run_{i}.npz (values, value_targets)")
            _expect(ctx, f"q3/logs/vl/run_{i}", "value_loss", args, (U,),
                    f"logs/run_{i}.npz (values, value_targets)")
    return card.outcome()


# ----------------------------------------------------------------------------- q4
def q4_replay(ctx: Context) -> Outcome:
    card = Scorecard()
    rng = ctx.public_rng("c_q4")
    over_ok = "q_overestimation(): mean(q_pred - realised_returns), positive when Q is too high"
    with card.part(over_ok, 1):
        G = rng.uniform(0.0, 100.0, (3, 40))
        _expect(ctx, "q4/over_random", "q_overestimation", (G + rng.normal(5, 10, G.shape), G),
                (3,), "random (3, 40)")
        _check(ctx, "q4/over_signs", "q_overestimation",
               (np.stack([G[0] + 2.0, G[0] - 3.0]), np.stack([G[0], G[0]])),
               np.array([2.0, -3.0]), "Q 2 above, then 3 below the returns")
        if not ctx.public_only:
            hr = _hidden_rng(ctx, "q4/over")
            Gh = hr.uniform(0, 100, 33)
            _expect(ctx, "q4/over_hidden", "q_overestimation", (Gh * 1.7, Gh), (), "hidden")
    age_ok = "replay_sample_age(): mean of sample_step - inserted_step over the batch"
    with card.part(age_ok, 1):
        step = rng.integers(1000, 5000, 6)
        ins = step[:, None] - rng.integers(0, 900, (6, 32))
        _expect(ctx, "q4/age_random", "replay_sample_age", (step, ins), (6,),
                "6 batches of 32")
        _check(ctx, "q4/age_known", "replay_sample_age",
               (np.array([10, 500]), np.array([[10, 10, 10, 10], [0, 100, 200, 300]])),
               np.array([0.0, 350.0]), "ages 0 (sampled as inserted) and 350")
        if not ctx.public_only:
            hr = _hidden_rng(ctx, "q4/age")
            st = hr.integers(10_000, 20_000, (2, 3))
            _expect(ctx, "q4/age_hidden", "replay_sample_age",
                    (st, st[..., None] - hr.integers(0, 10_000, (2, 3, 64))), (2, 3), "hidden")
    div_ok = "batch_diversity(): the number of distinct episode ids per batch"
    with card.part(div_ok, 1):
        ids = rng.integers(0, 12, (5, 16))
        _expect(ctx, "q4/div_random", "batch_diversity", (ids,), (5,),
                "5 batches of 16 unsorted ids")
        _check(ctx, "q4/div_edges", "batch_diversity",
               (np.array([[7] * 6, [5, 4, 3, 2, 1, 0], [3, 9, 3, 9, 3, 9]]),),
               np.array([1.0, 6.0, 2.0]), "one episode, all different, two alternating")
        if not ctx.public_only:
            hr = _hidden_rng(ctx, "q4/div")
            _expect(ctx, "q4/div_hidden", "batch_diversity", (hr.integers(0, 400, (3, 2, 64)),),
                    (3, 2), "hidden")
    with card.part("the three on every DQN log", 1, requires=div_ok):
        for i, log in _runs(ctx, "dqn"):
            K = log["batch_step"].shape[0]
            _expect(ctx, f"q4/logs/age/run_{i}", "replay_sample_age",
                    (log["batch_step"], log["batch_inserted"]), (K,),
                    f"logs/run_{i}.npz (batch_step, batch_inserted)")
            _expect(ctx, f"q4/logs/div/run_{i}", "batch_diversity", (log["batch_episode"],),
                    (K,), f"logs/run_{i}.npz batch_episode")
            _expect(ctx, f"q4/logs/over/run_{i}", "q_overestimation",
                    (log["q_pred"], log["q_return"]), (), f"logs/run_{i}.npz (q_pred, q_return)")
    return card.outcome()


# ----------------------------------------------------------------------------- q5, q6
def _id_note(ctx: Context, card: Scorecard) -> None:
    declared = ctx.constant("STUDENT_ID")
    declared = declared.strip() if isinstance(declared, str) else ""
    graded = (ctx.student_id or "").strip()
    if graded and declared and declared != graded:
        card.note(f"STUDENT_ID = {declared[:40]!r} in diagnose.py is not the id this grading "
                  f"uses ({graded[:40]!r}): your letters are those of {graded[:40]!r}; "
                  "set STUDENT_ID to it and redo the notebook's diagnosis")
    elif graded and not declared:
        card.note(f"STUDENT_ID in diagnose.py is empty: graded the letters of {graded[:40]!r} "
                  f"(your id here); the notebook shows them once STUDENT_ID = {graded[:40]!r}")
    elif not graded:
        card.note("no student id: graded the default instance (set STUDENT_ID in diagnose.py "
                  "to the id your course uses on Gradescope)")


def _answer(ctx: Context, const: str) -> str:
    got = ctx.constant(const)
    if got is None or (isinstance(got, str) and not got.strip()):
        raise Fail(f"no answer yet: set {const}")
    if not isinstance(got, str):
        raise Fail(f"{const} must be a string, got {type(got).__name__}")
    return got.strip()


def _named(ctx: Context, letters: list[str]) -> dict[str, str]:
    """``{letter: the fault its FAULT_<letter> names}`` (lower case; "" when blank
    or not a string)."""
    out = {}
    for letter in letters:
        got = ctx.constant(f"FAULT_{letter}")
        out[letter] = got.strip().lower() if isinstance(got, str) else ""
    return out


def _fault_sets(ctx: Context) -> list[str]:
    """The faults graded one part each: every fault of the key, healthy last."""
    key = ctx.hidden["agent_faults"]
    return sorted(set(key.values()) - {"healthy"}) + ["healthy"]


def _note_unreadable(card: Scorecard, named: dict[str, str], faults: list[str]) -> None:
    """Say which FAULT_<letter> is blank or not one of ``faults`` (such a letter
    is in no fault's set, so only the part of its own agent's fault fails)."""
    blank = [f"FAULT_{k}" for k, v in named.items() if not v]
    if blank:
        card.note(f"no answer yet: set {', '.join(blank)}")
    bad = [f"FAULT_{k} = {v[:40]!r}" for k, v in named.items() if v and v not in faults]
    if bad:
        card.note(f"{', '.join(bad)}: not one of {', '.join(faults)}")


def q5_faults(ctx: Context) -> Outcome:
    """One part per fault (healthy included): the letters named with it must be
    exactly the agents that have it. Naming every letter "healthy", or copying
    a classmate's letters, earns what a guess earns: about nothing."""
    card = Scorecard()
    _id_note(ctx, card)
    p = ctx.params
    runs, key = ctx.hidden.get("runs"), ctx.hidden.get("agent_faults")
    if not runs or not key:
        return Outcome(0.0, ["graded on Gradescope only (the answer key is not in the "
                             "handout)"])
    letters = letters_for(ctx.student_id, p)
    named = _named(ctx, list(letters))
    _note_unreadable(card, named, p["faults"])
    for fault in _fault_sets(ctx):
        truth = sorted(k for k, run in letters.items() if key[runs[run]] == fault)
        with card.part(f"the agent{'s' if len(truth) > 1 else ''} you name {fault}", 1):
            mine = [k for k, v in named.items() if v == fault]
            if not mine:
                raise Fail(f"no letter is named {fault}")
            if sorted(mine) != truth:
                raise Fail(f"the letters you name {fault} ({', '.join(mine)}) are not the "
                           f"agent{'s' if len(truth) > 1 else ''} with that fault")
    return card.outcome()


def q6_evidence(ctx: Context) -> Outcome:
    """One part per fault: the EVIDENCE_<letter> of every letter named with it
    holds that letter's own numbers (checked against an oracle's, never the
    student's code) on the named side of each threshold of the fault's rules."""
    card = Scorecard()
    _id_note(ctx, card)
    p = ctx.params
    tol = p["tolerance"]
    if not ctx.hidden.get("agent_faults"):
        return Outcome(0.0, ["graded on Gradescope only"])
    letters = letters_for(ctx.student_id, p)
    named = _named(ctx, list(letters))
    _note_unreadable(card, named, p["faults"])
    for fault in _fault_sets(ctx):
        with card.part(f"the evidence of the agent(s) you name {fault}: their own numbers, "
                       "on the named side of every threshold", 1):
            mine = [k for k, v in named.items() if v == fault]
            if not mine:
                raise Fail(f"no letter is named {fault}")
            for letter in mine:
                run = letters[letter]
                log = load_run(run, p)
                fam = family(log)
                names = PPO_STATS if fam == "ppo" else DQN_STATS
                truth = dict(zip(names, np.atleast_1d(ctx.oracle(
                    f"q6/summary/run_{run}", "c_diagnose.summary_of_run", run, p)).tolist()))
                required = sorted({s for rules in p["rules"][fam].values() for s, _ in rules})
                stated = parse_evidence(_answer(ctx, f"EVIDENCE_{letter}"))
                missing = [s for s in required if s not in stated]
                if missing:
                    raise Fail(f"EVIDENCE_{letter} lacks {', '.join(missing)} (a "
                               f"{fam.upper()} log's evidence names {', '.join(required)})")
                for s in required:
                    want, got = truth[s], stated[s]
                    if not (abs(got - want) <= tol["evidence_atol"] + tol["evidence_rtol"]
                            * abs(want)):
                        raise Fail(f"EVIDENCE_{letter}: {s} = {got:.6g} is not agent "
                                   f"{letter}'s number (recompute it with the notebook's "
                                   "summary cell)")
                broken = rules_hold(fault, fam, stated, p)
                if broken:
                    raise Fail(f"EVIDENCE_{letter} does not show {fault}: " + "; ".join(broken))
    return card.outcome()


QUESTIONS: dict[str, Callable[[Context], Outcome]] = {
    f.__name__: f for f in (q1_entropy, q2_kl_clip, q3_critic, q4_replay, q5_faults,
                            q6_evidence)}
