"""Judge of capstone B: which PPO implementation details matter.

* The new pieces (observation normalisation, a shared network's gradients)
  are unit-checked on judge-made data, like capstone A's.
* Each of the student's five chosen switches is checked to do what it names
  and nothing else: the student's ``train`` with that switch on, for a few
  updates at small sizes and a short time limit (terminations and
  truncations), must give the networks the judge's own loop
  (``oracles.ablation_loop``, with the student's pieces) gives with the
  switch on; matching the switch-off networks means it does nothing,
  matching neither means it changes something else too. The baseline is
  judged first (a wrong baseline is the cause, not the switches), and a
  piece that fails inside the judge's loop is named (capstone A's in
  ``ppo.py``, or this capstone's). Switches that act on the advantages are
  also checked on a rollout with time-limit ends.
* The experiment: ``BASELINE`` and ``MENU`` (read through a probe) must be
  assignment.toml's (``[params.hp]``, ``[params.menu]``), and the student's
  table must cover the baseline and the chosen entries on every seed; the
  per-seed number is ``[params] per_seed`` (``rlkit.study``).
* The claim is graded against the judge's table (``[hidden.table]``: the
  reference's per-seed numbers on the grading seeds, measured by
  ``bench/ablations_table.py`` and stored as numbers), only where the
  verdict is robust (``[hidden.verdict]``); the student's own table is
  compared with it in feedback.
Every input is a declared case of assignment.toml (``[[questions.cases]]``).
"""
from __future__ import annotations

import numpy as np

from rlkit.agent import collect_rollout, evaluate, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, flatten, forward
from rlkit.study import MEASURES, per_seed_numbers
from rlkit.variants import OBS_COUNT0, init_shared_networks, shared_layers

from ..grading.judging import (HIDDEN_PHASE, MODIFIED_INPUT, NOT_IMPLEMENTED, RAISED, Context,
                               Fail, Outcome, ProbeRaised, ReferenceFailed, Scorecard,
                               as_float_array, compare)
from ..harness.probe import MODIFIED
from .ablation_pieces import AblationPieces

# The menu lives in assignment.toml ([params.menu]); TOML has no null, so "none" there is None.
NONE = "none"
ADVANTAGE_SWITCHES = ("bootstrap_truncation", "gae_lambda")   # also unit-checked on a rollout
MAX_ROWS = 200            # rows of a student's table the judge reads


# ----------------------------------------------------------------------------- helpers
def _hp(ctx: Context) -> dict:
    hp = dict(ctx.params["hp"], target_kl=None)
    hp["hidden"] = tuple(hp["hidden"])
    return hp


def _pieces(ctx: Context) -> AblationPieces:
    return AblationPieces(ctx.call)


def menu_of(params: dict) -> dict[str, dict]:
    """``[params.menu]`` as hyper-parameter changes: name -> {key: value}, with
    the TOML spelling "none" read as None."""
    return {name: {k: (None if v == NONE else v) for k, v in change.items()}
            for name, change in params["menu"].items()}


def menu(ctx: Context) -> dict[str, dict]:
    return menu_of(ctx.params)


def _canonical(name: str) -> str:
    return " ".join(name.lower().split())


def parse_names(text, what: str, names_menu: dict, allow_none: bool = False) -> list[str]:
    """Menu names from a ``;``-separated string (case and spacing free), or Fail."""
    by_key = {_canonical(n): n for n in names_menu}
    if not isinstance(text, str) or not text.strip():
        raise Fail(f"{what} is empty or not a string: write menu names separated by ';'")
    parts = [_canonical(p) for p in text.replace("\n", ";").split(";") if p.strip()]
    if allow_none and parts == ["none"]:
        return []
    unknown = [p for p in parts if p not in by_key]
    if unknown:
        raise Fail(f"{what}: {unknown[:3]} not in the menu (MENU's names, separated by ';')")
    names = [by_key[p] for p in parts]
    if len(set(names)) != len(names):
        raise Fail(f"{what} names a menu entry twice")
    return names


def chosen(ctx: Context) -> list[str]:
    names = parse_names(ctx.constant("CHOSEN"), "CHOSEN", menu(ctx))
    want = ctx.params["chosen"]
    if len(names) != want:
        raise Fail(f"CHOSEN names {len(names)} menu entries; choose exactly {want}")
    return names


def factors(ctx: Context, picked: list[str]) -> list[str]:
    names = parse_names(ctx.constant("FACTORS"), "FACTORS", menu(ctx), allow_none=True)
    stray = [n for n in names if n not in picked]
    if stray:
        raise Fail(f"FACTORS names {stray}, which you did not ablate (not in CHOSEN)")
    return names


def spread(values) -> float:
    return float(np.max(values) - np.min(values))


def qualifies(base, abl) -> bool:
    """The criterion of assignment.toml on two sets of per-seed medians."""
    return bool(abs(np.median(abl) - np.median(base)) > max(spread(base), spread(abl)))


# ----------------------------------------------------------------------------- q1, q2: pieces
OBS_SCALE = np.array([1.0, 3.0, 0.1, 2.0])        # per-dimension scale of a judge batch
# normalise_obs cases: their first rows, in standard deviations from the mean (beyond +-10)
OUTLIERS = np.array([[40.0, -40.0, 0.0, 5.0], [-60.0, 60.0, 1.0, -1.0], [0.0, 0.0, 0.0, 0.0]])


def _obs_batch(rng: np.random.Generator, n: int):
    """Running statistics (mean, var, count) and a batch ``(n, OBS_DIM)`` of
    observations, drawn from ``rng``."""
    mean = rng.normal(0.0, 1.0, OBS_DIM)
    var = rng.uniform(0.05, 4.0, OBS_DIM)
    obs = rng.normal(0.5, 1.0, (n, OBS_DIM)) * OBS_SCALE
    return mean, var, float(rng.integers(3, 500)), obs


def _stats_case(ctx: Context, case) -> tuple:
    """A q1 case's (mean, var, count, obs): drawn (kind "batch"), or the
    wrapper's initial statistics before a drawn batch (kind "initial")."""
    mean, var, count, obs = _obs_batch(ctx.case_rng(case), case.B)
    if case.kind == "initial":
        return np.zeros(OBS_DIM), np.ones(OBS_DIM), OBS_COUNT0, obs
    if case.kind != "batch":
        raise ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind "
                              f"{case.kind!r}")
    return mean, var, count, obs


def q1_obs_normalisation(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    tol = dict(rtol=p["unit_rtol"], atol=p["unit_atol"])
    with card.part("update_obs_stats(): the merged mean, variance and count", 1):
        for case in ctx.cases():
            mean, var, count, obs = _stats_case(ctx, case)
            key = f"q1/stats/{case.name}"
            with ctx.case(key, f"update_obs_stats() ({case.name})"):
                m, v, c = _pieces(ctx).obs_stats(mean, var, count, obs)
            ctx.expect(key, np.concatenate([m, v, [c]]), label=f"update_obs_stats() "
                       f"({case.name}): mean (4), var (4) and count, concatenated", **tol)
    with card.part("normalise_obs(): standardised and clipped to [-10, 10]", 1):
        for case in ctx.cases("normalise"):
            mean, var, _, obs = _obs_batch(ctx.case_rng(case), case.B)
            obs[:len(OUTLIERS)] = mean + OUTLIERS * np.sqrt(var)
            key = f"q1/normalise/{case.name}"
            ctx.expect(key, lambda: _pieces(ctx).normalise_obs(obs, mean, var),
                       label=f"normalise_obs() ({case.name}; some observations beyond +-10 "
                             "standard deviations)", **tol)
    return card.outcome()


def _grad_halves(hidden: tuple, rng: np.random.Generator):
    """A shared network's two halves' gradients on judge data, and its trunk size."""
    hp = {"hidden": hidden, "hidden_gain": np.sqrt(2.0), "policy_head_gain": 1.0,
          "value_head_gain": 1.0}
    policy, value = init_shared_networks(hp, rng)
    obs = rng.normal(0.0, 1.0, (32, OBS_DIM))
    _, pc = forward(policy, obs)
    _, vc = forward(value, obs)
    pg = backward(policy, pc, rng.normal(0.0, 0.1, (32, NUM_ACTIONS)))
    vg = backward(value, vc, rng.normal(0.0, 1.0, (32, 1)))
    return pg, vg, len(hidden)


def q2_shared_gradients(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    with card.part("shared_gradients(): trunk = sum of both halves, heads their own", 1):
        for case in ctx.cases():
            widths = tuple(int(h) for h in case.get("values"))     # the hidden layers
            pg, vg, k = _grad_halves(widths, ctx.case_rng(case))
            key = f"q2/{case.name}"
            with ctx.case(key, f"shared_gradients() ({case.name})"):
                got = flatten(_pieces(ctx).shared_gradients(pg, vg, k))
            ctx.expect(key, got, rtol=p["unit_rtol"], atol=p["unit_atol"],
                       label=f"shared_gradients() ({case.name}), flattened trunk, policy head, "
                             "value head")
    return card.outcome()


# ----------------------------------------------------------------------------- q3: switches
def _rollout(rng: np.random.Generator, seed: int, hp: dict, T: int, N: int,
             time_limit: int) -> dict:
    """A random-policy rollout (T steps in N CartPoles, networks from ``rng``,
    environments from ``seed``) with terminations and truncations."""
    policy, value = init_networks(dict(hp, policy_head_gain=1.0), rng)
    env = VecCartPole(N, seed=seed, max_episode_steps=time_limit)
    ro = collect_rollout(env, env.reset(), policy, value, T, rng)
    if not (ro["terminated"].any() and ro["truncated"].any()):
        raise ReferenceFailed("a judge rollout of q3 lacks terminations or truncations")
    return ro


def _case_rollout(ctx: Context, case, hp: dict) -> dict:
    return _rollout(ctx.case_rng(case), case.seed, hp, case.T, case.N, case.time_limit)


def _distinct(params: list, value: list, shared: bool) -> list:
    return shared_layers(params, value) if shared else params + value


def _layer_shapes(hp: dict) -> tuple[list, list]:
    """The ``{'W', 'b'}`` shapes of the policy's and the value network's layers
    (the same, layer by layer, for a shared network: trunk + its head)."""
    def mlp(out: int) -> list:
        sizes = [OBS_DIM, *hp["hidden"], out]
        return [{"W": (n_in, n_out), "b": (n_out,)} for n_in, n_out in zip(sizes, sizes[1:])]
    return mlp(NUM_ACTIONS), mlp(1)


def _train_result(out, hp: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A student's ``train_arrays`` result: (flat distinct parameters, flat
    ``policy_params + value_params`` as listed, obs stats or None)."""
    nets = _layer_shapes(hp)
    if not isinstance(out, dict) or not {"policy_params", "value_params"} <= set(out):
        raise Fail("train_arrays() must return the dict it builds; do not change that given "
                   "function", "shape")
    got = []
    for which, like in zip(("policy_params", "value_params"), nets):
        params = out[which]
        if not isinstance(params, list) or len(params) != len(like) or not all(
                isinstance(layer, dict) and {"W", "b"} <= set(layer) for layer in params):
            raise Fail(f"train() must return '{which}' as the network's list of {{'W', 'b'}} "
                       f"layers ({len(like)} of them here)", "shape")
        got.append([{k: as_float_array(f"{which}[{i}]['{k}']", layer[k], like[i][k])
                     for k in ("W", "b")} for i, layer in enumerate(params)])
    stats = None
    if hp["norm_obs"]:
        s = out.get("obs_stats")
        if not isinstance(s, dict) or not {"mean", "var"} <= set(s):
            raise Fail("with norm_obs, train() must return 'obs_stats' = {'mean', 'var', "
                       "'count'}", "shape")
        stats = np.concatenate([as_float_array("obs_stats['mean']", s["mean"], (OBS_DIM,)),
                                as_float_array("obs_stats['var']", s["var"], (OBS_DIM,))])
    return (flatten(_distinct(got[0], got[1], hp["shared_network"])),
            flatten(got[0] + got[1]), stats)


# Capstone A's pieces (ppo.py) among those the judge's loop calls; the rest are this capstone's.
A_PIECES = frozenset({"categorical_log_prob", "compute_gae", "normalise_advantages",
                      "clipped_policy_loss", "value_loss", "entropy_loss",
                      "clipped_value_loss"})


def _piece_diagnosis(fn: str, where: str) -> str:
    if fn in A_PIECES:
        return (f"capstone A's {fn}() (your ppo.py) fails inside the judge's loop {where}: "
                "fix it in ppo.py (capstone A's checks test it)")
    return f"your {fn}() (ablations.py) fails inside the judge's loop {where}"


def _named_pieces(ctx: Context, where: str) -> tuple[AblationPieces, list]:
    """The submission's pieces for the judge's loop, and a one-item list that
    holds the name of the piece called last (for :func:`_loop`)."""
    last: list = []

    def call(fn: str, *args):
        last[:] = [fn]
        try:
            return ctx.call(fn, *args)
        except ProbeRaised as e:
            kind = (MODIFIED_INPUT if e.type == MODIFIED else
                    NOT_IMPLEMENTED if e.type == "NotImplementedError" else RAISED)
            raise Fail(f"{fn}() raised in the judge's loop: {e}", kind,
                       diagnosis=_piece_diagnosis(fn, where)) from None
    return AblationPieces(call), last


def _loop(ctx: Context, seed: int, hp: dict, updates: int, where: str):
    """The judge's loop (``oracles.ablation_loop``) with the submission's
    pieces; a piece failing in it is named (``_piece_diagnosis``). Returns
    ``(run, pieces)``."""
    pieces, last = _named_pieces(ctx, where)
    try:
        return ctx.oracle_fn("ablation_loop.train")(pieces, seed, hp, updates), pieces
    except Fail as e:           # a wrong type or shape, found right after the piece answered
        if e.diagnosis or not last:
            raise
        raise Fail(str(e), e.kind, diagnosis=_piece_diagnosis(last[0], where)) from None


def _judge_run(ctx: Context, seed: int, hp: dict, where: str = ""):
    """A q3 switch run of the judge's loop with the submission's pieces: (flat
    distinct parameters, flat ``policy_params + value_params``, obs stats or None)."""
    run, _ = _loop(ctx, seed, hp, ctx.params["switch_updates"], where)
    if not (run.ends["terminated"] and run.ends["truncated"]):
        raise ReferenceFailed("a q3 switch run met no termination or no truncation: shorten "
                              "switch_hp's time_limit")
    flat = flatten(_distinct(run.policy_params, run.value_params, hp["shared_network"]))
    stats = None if run.obs_stats is None else np.concatenate(
        [run.obs_stats["mean"], run.obs_stats["var"]])
    return flat, flatten(run.policy_params + run.value_params), stats


def _close(a, b, rtol: float) -> bool:
    if np.shape(a) != np.shape(b):
        return False
    try:
        compare("", a, b, rtol, 1e-10)
        return True
    except Fail:
        return False


def _check_advantages(ctx: Context, name: str, hp: dict) -> None:
    """An advantage switch on a rollout with terminations and truncations."""
    for case in ctx.cases("rollout"):
        ro = _case_rollout(ctx, case, hp)
        key = f"q3/{name}/advantages/{case.name}"
        label = f"advantages_and_returns() with '{name}' on (rollout {case.name})"
        with ctx.case(key, label):
            out = ctx.call("advantages_and_returns", ro, hp)
            if not isinstance(out, list) or len(out) != 2:
                raise Fail("advantages_and_returns() must return (advantages, returns)", "shape")
            got = np.stack([as_float_array(f"{label}: advantages", out[0], ro["rewards"].shape),
                            as_float_array(f"{label}: returns", out[1], ro["rewards"].shape)])
        want = ctx.oracle(key, "b_ablations.advantages_and_returns", ro, hp["gamma"],
                          hp["gae_lambda"], hp["bootstrap_truncation"])
        if _close(got, want, 1e-10):
            ctx.check(key, label, got, want, rtol=1e-10, atol=1e-10)
            continue
        with ctx.case(key, label):
            gae_ok = _compute_gae_agrees(ctx, ro, hp, want)
        try:
            ctx.check(key, label, got, want, rtol=1e-10, atol=1e-10)
        except Fail as e:
            if gae_ok or e.diagnosis:
                raise
            e.diagnosis = ("capstone A's compute_gae() (your ppo.py) gives other advantages on "
                           "this rollout's switched episode ends, and advantages_and_returns() "
                           "builds on it: fix compute_gae() in ppo.py first")
            raise


def _compute_gae_agrees(ctx: Context, ro: dict, hp: dict, want: np.ndarray) -> bool:
    """Whether the submission's own compute_gae(), given the episode ends as
    the switch sets them, gives the judge's advantages and returns."""
    ends = ctx.oracle_fn("b_ablations.switched_ends")(ro, hp["bootstrap_truncation"])
    try:
        adv, ret = AblationPieces(ctx.call).gae(ro["rewards"], ro["values"], ro["final_values"],
                                                ends["terminated"], ends["truncated"],
                                                hp["gamma"], hp["gae_lambda"])
    except (Fail, ProbeRaised):
        return False
    return _close(np.stack([adv, ret]), want, 1e-10)


def _check_switch(ctx: Context, name: str, base_hp: dict, baseline: dict) -> None:
    p = ctx.params
    change = menu(ctx)[name]
    hp = {**base_hp, **change}
    if set(change) & set(ADVANTAGE_SWITCHES):
        _check_advantages(ctx, name, {**_hp(ctx), **change})
    for case in ctx.cases():
        key = f"q3/{name}/train/{case.name}"
        label = f"train() with '{name}' on ({case.name})"
        with ctx.case(key, label):            # a hidden case's failure: its kind + diagnosis
            # The judge's run first: a piece that fails in it is named as the cause.
            want, want_all, want_stats = _judge_run(ctx, case.seed, hp,
                                                    f"with '{name}' on")
            got, got_all, got_stats = _train_result(
                ctx.call("train_arrays", case.seed, p["switch_updates"], hp), hp)
            off = baseline.get(case.name)
            if _close(got, want, p["switch_rtol"]) and (
                    want_stats is None or _close(got_stats, want_stats, p["switch_rtol"])):
                continue
            # The diagnosis names no input and no expected value: shown even for hidden cases.
            if off is not None and _close(got_all, off, p["switch_rtol"]) \
                    and not _close(want_all, off, p["switch_rtol"]):
                raise Fail(f"{label}: your networks are the baseline's", diagnosis=(
                    f"the switch does nothing (it should set {change})"))
            raise Fail(f"{label}: your networks match neither the judge's loop with only this "
                       "switch on nor the baseline", diagnosis=(
                           f"the switch changes something besides {change} (or your loop "
                           "departs from the recipe)"))


def q3_switches(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    base_hp = {**_hp(ctx), **p["switch_hp"]}
    try:
        names = chosen(ctx)
    except Fail as e:
        with card.part("CHOSEN names five menu entries", 5):
            raise e
        return card.outcome()
    # The baseline first: when train() with no switch already departs from the judge's loop,
    # that is the cause, and no switch can be judged (each says so instead of a diagnosis).
    baseline, base_label = {}, "the baseline: train() with no switch matches the judge's loop"
    with card.part(base_label, 0):
        for case in ctx.cases():
            key, label = f"q3/baseline/{case.name}", f"train() baseline ({case.name})"
            with ctx.case(key, label):
                want, baseline[case.name], _ = _judge_run(ctx, case.seed, base_hp,
                                                          "with no switch on")
                got, _, _ = _train_result(ctx.call("train_arrays", case.seed,
                                                   p["switch_updates"], base_hp), base_hp)
            ctx.check(key, label, got, want, rtol=p["switch_rtol"], atol=1e-10)
    base_ok = card.passed(base_label)
    for name in names:
        change = menu(ctx)[name]
        with card.part(f"switch '{name}' ({change}) does that and nothing else", 1):
            if not base_ok:
                raise Fail("not judged: the baseline already differs from the judge's loop "
                           "(the first FAIL line); fix train() without a switch first",
                           diagnosis="the baseline is wrong, not (necessarily) this switch")
            _check_switch(ctx, name, base_hp, baseline)
    return card.outcome()


# ----------------------------------------------------------------------------- the experiment
def _same(got, want) -> bool:
    """``got`` (through the probe: numbers may arrive as numpy scalars or
    0-d arrays) is ``want`` (from assignment.toml): lists for tuples, numbers
    by value, a bool only as a bool."""
    if isinstance(got, (np.ndarray, np.generic)) and np.ndim(got) <= 1 and np.size(got) < 100:
        got = np.asarray(got).tolist()
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(
            _same(g, w) for g, w in zip(got, want))
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if want is None or isinstance(want, str):
        return got == want
    return isinstance(got, (int, float)) and float(got) == float(want)


def _shown(value) -> str:
    return repr(value)[:60]


def experiment_differences(ctx: Context) -> list[str]:
    """How the submission's ``BASELINE`` and ``MENU`` (read through
    ``experiment_config()``) differ from assignment.toml's, one line each."""
    got = ctx.call("experiment_config")
    if not (isinstance(got, dict) and isinstance(got.get("baseline"), dict)
            and isinstance(got.get("menu"), dict)):
        raise Fail("experiment_config() must return {'baseline': BASELINE, 'menu': MENU}: do "
                   "not change that given function", "shape")
    diffs = []
    want_base, base = dict(ctx.params["hp"], target_kl=None), got["baseline"]
    for k in sorted(set(want_base) | set(base), key=str)[:200]:
        if k not in base:
            diffs.append(f"BASELINE lacks {k!r}")
        elif k not in want_base:
            diffs.append(f"BASELINE has {_shown(k)}, which the configuration has not")
        elif not _same(base[k], want_base[k]):
            diffs.append(f"BASELINE[{k!r}] is {_shown(base[k])}, not {want_base[k]!r}")
    want_menu, got_menu = menu(ctx), got["menu"]
    for n, change in want_menu.items():
        mine = got_menu.get(n)
        if mine is None:
            diffs.append(f"MENU lacks {n!r}")
        elif not (isinstance(mine, dict) and set(mine) == set(change)
                  and all(_same(mine[k], v) for k, v in change.items())):
            diffs.append(f"MENU[{n!r}] is {_shown(mine)}, not {change}")
    diffs += [f"MENU has {_shown(n)}, which the menu has not"
              for n in list(got_menu)[:200] if n not in want_menu]
    return diffs


def _judge_number(ctx: Context, config: str, seed: int) -> float:
    """The per-seed number (``[params] per_seed``) of one cell, by the judge's
    loop with the submission's pieces and switches for the full budget: the
    judge's own, never one the submission reports."""
    p = ctx.params
    hp = {**_hp(ctx), **({} if config == "baseline" else menu(ctx)[config])}
    run, pieces = _loop(ctx, seed, hp, p["updates"], "re-running a cell of your table")
    eval_returns = [np.nan]
    if p["per_seed"] == "final_eval_median":       # only then is the evaluation needed
        stats = run.obs_stats
        normalise = None if stats is None else (
            lambda obs: pieces.normalise_obs(obs, np.asarray(stats["mean"]),
                                             np.asarray(stats["var"])))
        eval_returns = evaluate(run.policy_params, episodes=p["eval_episodes"],
                                seed=seed + p["eval_seed_offset"], normalise=normalise)
    return per_seed_numbers(run.episode_returns, eval_returns)[p["per_seed"]]


def rerun_band(params: dict, spreads: dict, config: str) -> float:
    """How far a re-run cell of ``config`` may legitimately differ from the
    student's number: ``max(rerun_band_floor, rerun_band_spread * spread)``,
    ``spreads[config]`` the spread of ``config``'s per-seed numbers over the
    study's ``table_seeds`` (``[hidden.spread]``: float order and BLAS kernels
    move a chaotic config's runs more, and twelve seeds show how chaotic it is)."""
    return max(params["rerun_band_floor"], params["rerun_band_spread"] * float(spreads[config]))


def experiment(ctx: Context, names: list[str]) -> dict:
    """:func:`table_of_experiment`, and in the hidden phase the re-run of the
    cells its ``rerun`` cases draw (per student): the student's number must
    lie within :func:`rerun_band` of the judge's. Fail names what is off (a hidden
    case's failure names no cell)."""
    table = None if ctx.phase == HIDDEN_PHASE else table_of_experiment(ctx, names)
    cells = [(c, s) for c in ["baseline", *names] for s in ctx.params["seeds"]]
    for case in ctx.cases("rerun"):
        with ctx.case(f"{case.question}/rerun/{case.name}",
                      f"a cell of your table, re-run ({case.label})"):
            if table is None:              # the hidden phase calls only inside its cases
                table = table_of_experiment(ctx, names)
            config, seed = cells[case.cell % len(cells)]
            judged = _judge_number(ctx, config, seed)
            yours = table[config][seed]
            band = rerun_band(ctx.params, ctx.hidden["spread"], config)
            if not abs(yours - judged) <= band:
                raise Fail(f"your table says {yours:.1f} for '{config}', seed {seed}; the judge's "
                           f"loop with your pieces gives {judged:.1f} (band {band:.1f})",
                           diagnosis=(
                               "a number of your table is not what your code gives: run the "
                               "notebook's experiment again with the code you submit"))
    return table


def table_of_experiment(ctx: Context, names: list[str]) -> dict:
    """The student's table ({config: {seed: per-seed number}}) when it stands
    on an experiment of the assignment's configuration and menu, covering the
    baseline and every chosen entry on every seed; else Fail naming what is off."""
    diffs = experiment_differences(ctx)
    if diffs:
        raise Fail(f"your BASELINE or MENU is not the assignment's, so your table is not this "
                   f"experiment's: {'; '.join(diffs[:4])}" + (
                       f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else ""),
                   diagnosis="restore BASELINE and MENU as given and run the experiment again")
    table = read_table(ctx)
    for n in ["baseline"] + names:
        missing = [s for s in ctx.params["seeds"] if s not in table.get(n, {})]
        if missing:
            raise Fail(f"your table lacks '{n}' on seeds {missing}: run the notebook's "
                       "experiment for every chosen entry")
    return table


# ----------------------------------------------------------------------------- q4: the claim
def judge_table(ctx: Context) -> tuple[dict, dict]:
    table = {k: np.asarray(v, dtype=np.float64) for k, v in ctx.hidden["table"].items()}
    return table, dict(ctx.hidden["verdict"])


def graded_verdict(table: dict, verdict: dict, name: str) -> str:
    """"yes" / "no" where the judge's table and the robust class agree, else "either"."""
    q = qualifies(table["baseline"], table[name])
    cls = verdict.get(name, "borderline")
    if cls == "yes" and q:
        return "yes"
    if cls == "no" and not q:
        return "no"
    return "either"


BAR = "the bar: a factor you name moves the median beyond the spread in the judge's table"
VERDICTS = ("the verdicts: every robustly qualifying choice named, no robustly harmless one "
            "named")


def q4_claim(ctx: Context) -> Outcome:
    card = Scorecard()
    ctx.nothing_to_record("q4/claim")
    table, verdict = judge_table(ctx)
    try:
        names = chosen(ctx)
        named = factors(ctx, names)
        mine = experiment(ctx, names)       # a claim stands on an experiment of the menu's
    except (Fail, ProbeRaised) as e:
        for label in (BAR, VERDICTS):       # the same parts as below: the phases merge by label
            with card.part(label, 2):
                raise e
        return card.outcome()
    base = table["baseline"]
    what = ctx.params["per_seed"].replace("_", " ")
    card.note(f"     the judge's table (the reference on seeds {ctx.params['seeds']}, per seed "
              f"the {what}): baseline {base.tolist()}, median {np.median(base):.1f}, spread "
              f"{spread(base):.1f}")
    graded = {}
    for n in names:
        abl = table[n]
        graded[n] = graded_verdict(table, verdict, n)
        card.note(f"     '{n}': {abl.tolist()}, median {np.median(abl):.1f}, spread "
                  f"{spread(abl):.1f}: {'qualifies' if qualifies(base, abl) else 'does not'}"
                  f" here; over many seed triples: {verdict.get(n, 'borderline')}"
                  + ("  (borderline: either answer accepted)" if graded[n] == "either" else ""))
    if mine:
        for n in ["baseline"] + names:
            if n in mine:
                card.note(f"     your table, '{n}': {sorted(mine[n].items())} vs the judge's "
                          f"{table[n].tolist()} (feedback only: float order changes runs)")
    with card.part(BAR, 2):
        if not named:
            movers = [n for n in names if graded[n] != "no"]
            raise Fail("you name no factor" + (
                f"; in the judge's table {movers} qualify (or are borderline)" if movers else
                "; none of your five qualifies in the judge's table: choose other details"))
        if not any(graded[n] != "no" for n in named):
            raise Fail(f"{named}: none qualifies in the judge's table")
    with card.part(VERDICTS, 2):
        missed = [n for n in names if graded[n] == "yes" and n not in named]
        wrong = [n for n in named if graded[n] == "no"]
        if missed or wrong:
            raise Fail("; ".join(
                ([f"not named, but they qualify robustly: {missed}"] if missed else []) +
                ([f"named, but robustly harmless: {wrong}"] if wrong else [])))
    return card.outcome()


# ----------------------------------------------------------------------------- q5: the table
def read_table(ctx: Context) -> dict:
    """The student's table, ``results_table()``'s ``{config: [[seed, *numbers],
    ...]}`` (the numbers of ``rlkit.study.MEASURES``, in that order), as
    {config: {seed: the per-seed number of ``[params] per_seed``}}; at most
    MAX_ROWS rows are read."""
    column = 1 + MEASURES.index(ctx.params["per_seed"])
    by_key = {_canonical(n): n for n in menu(ctx)}
    raw = ctx.call("results_table")
    if not isinstance(raw, dict) or not raw:
        raise Fail("results_table() returned no rows: run the notebook's experiment, which "
                   "writes ablation_results.json, and submit that file")
    out: dict = {}
    rows = 0
    for name, pairs in list(raw.items())[:MAX_ROWS]:
        pairs = as_float_array(f"your table's rows of '{name[:80]}'", pairs,
                               (np.shape(pairs)[0] if np.ndim(pairs) == 2 else -1,
                                1 + len(MEASURES)))
        if np.any((pairs[:, 1:] < 0.0) | (pairs[:, 1:] > 500.0)):
            raise Fail(f"'{name[:80]}': a return outside [0, 500] is not a CartPole return")
        config = "baseline" if _canonical(name) == "baseline" else \
            by_key.get(_canonical(name), name[:80])
        for row in pairs[:MAX_ROWS - rows]:
            out.setdefault(config, {})[int(row[0])] = float(row[column])
        rows += len(pairs)
        if rows >= MAX_ROWS:
            break
    return out


def q5_table(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    ctx.nothing_to_record("q5/table")
    seeds = list(p["seeds"])
    with card.part("your table: the baseline and your five ablations on every seed, and "
                   "FACTORS as the criterion reads it", 1):
        names = chosen(ctx)
        named = factors(ctx, names)
        table = experiment(ctx, names)
        base = np.array([table["baseline"][s] for s in seeds])
        follows = []
        for n in names:
            abl = np.array([table[n][s] for s in seeds])
            q = qualifies(base, abl)
            card.note(f"     '{n}': |{np.median(abl):.1f} - {np.median(base):.1f}| "
                      f"{'>' if q else '<='} max({spread(base):.1f}, {spread(abl):.1f})")
            if q:
                follows.append(n)
        if sorted(follows) != sorted(named):
            raise Fail(f"by the criterion your table makes {follows or 'none'} qualify, but "
                       f"FACTORS says {named or 'none'}")
    return card.outcome()


def q6_why(ctx: Context) -> Outcome:
    """A zero-point entry carrying the written reasons into results.json."""
    text = ctx.constant("WHY")
    if not isinstance(text, str) or not text.strip():
        return Outcome(0.0, ["no written answer found: WHY is empty or not a string. One "
                             "sentence of why per factor is graded by hand with the rubric."])
    lines = ["One sentence of why per factor: 0 points here, graded by hand with the rubric "
             "(assignments/b_ablations/rubric.md). Your WHY:", text.strip()]
    try:
        named = factors(ctx, chosen(ctx))
        absent = [n for n in named if _canonical(n) not in _canonical(text)]
        if absent:
            lines.insert(0, f"note: WHY does not mention {absent} by name")
    except Fail as e:
        lines.insert(0, f"note: {e}")
    return Outcome(1.0, lines)


QUESTIONS = {f.__name__: f for f in (q1_obs_normalisation, q2_shared_gradients, q3_switches,
                                     q4_claim, q5_table, q6_why)}
