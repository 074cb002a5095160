"""Judge of capstone B: which PPO implementation details matter.

* The new pieces (observation normalisation, a shared network's gradients)
  are unit-checked on judge-made data, like capstone A's (q1, q2: one part
  per piece, run once per declared case).
* Each of the student's five chosen switches is checked to do what it names
  and nothing else (q3: one part per chosen switch, ``each = "item"``): the
  student's ``train`` with that switch on, for a few updates at small sizes
  and a short time limit (terminations and truncations), must give the
  networks the judge's own loop (``oracles.ablation_loop``, with the
  student's pieces) gives with the switch on; matching the switch-off
  networks means it does nothing, matching neither means it changes
  something else too. The baseline is judged first (a part of 0 points: a
  wrong baseline is the cause, and the switches say so instead of being
  judged). A piece that fails inside the judge's loop is named, as capstone
  A's (``ppo.py``) or this capstone's. Switches that act on the advantages
  are also checked on a rollout with time-limit ends.
* The experiment (q4, q5): ``BASELINE`` and ``MENU`` (read through
  ``experiment_config()``) must be assignment.toml's (``[params.hp]``,
  ``[params.menu]``), and the student's table must cover the baseline and
  the chosen entries on every seed; the per-seed number is ``[params]
  per_seed`` (``rlkit.study``). In the hidden phase the judge re-runs cells
  of that table, drawn per student (the ``rerun`` cases' ``cell``), with its
  own loop and the student's pieces and switches.
* The claim is graded against the judge's table (``[hidden.table]``: the
  reference's per-seed numbers on the grading seeds, measured by
  ``bench/ablations_table.py`` and stored as numbers), only where the
  verdict is robust (``[hidden.verdict]``); the student's own table is
  compared with it in feedback. When CHOSEN, FACTORS or the table cannot be
  read, or a re-run cell is off, every part resting on them fails with that
  one cause.
* q6: the written reasons, carried to the results for grading by hand.
Every input is a declared case of assignment.toml (``[[questions.cases]]``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from rlkit.agent import collect_rollout, evaluate, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, flatten, forward
from rlkit.study import MEASURES, per_seed_numbers
from rlkit.variants import OBS_COUNT0, init_shared_networks, shared_layers

from ..grading.gate import Anything, Floats, Network, Record, Rows, Seq, Table
from ..grading.judging import Context, Fail, Judge, ReferenceFailed, hand_graded
from ..grading.safe import one_line
from ..grading.status import Kind
from .ablation_pieces import AblationPieces

judge = Judge()

# The menu lives in assignment.toml ([params.menu]); TOML has no null, so "none" there is None.
NONE = "none"
ADVANTAGE_SWITCHES = ("bootstrap_truncation", "gae_lambda")   # also unit-checked on a rollout
MAX_ROWS = 200            # rows of a student's table the judge reads


# ----------------------------------------------------------------------------- helpers
def _hp(ctx: Context) -> dict:
    hp = dict(ctx.params["hp"], target_kl=None)
    hp["hidden"] = tuple(hp["hidden"])
    return hp


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
    """Menu names from a ``;``-separated string (case and spacing free), or
    Fail: not implemented for an empty (or missing) constant, the stub's
    state; a wrong type or an unknown or repeated name otherwise."""
    by_key = {_canonical(n): n for n in names_menu}
    if text is None or (isinstance(text, str) and not text.strip()):
        raise Fail(f"{what} is empty: write menu names separated by ';'",
                   Kind.NOT_IMPLEMENTED, fn=what)
    if not isinstance(text, str):
        raise Fail(f"{what} is not a string: write menu names separated by ';'", Kind.SHAPE,
                   fn=what)
    parts = [_canonical(p) for p in text.replace("\n", ";").split(";") if p.strip()]
    if allow_none and parts == ["none"]:
        return []
    unknown = [p for p in parts if p not in by_key]
    if unknown:
        raise Fail(f"{what}: {unknown[:3]} not in the menu (MENU's names, separated by ';')",
                   fn=what)
    names = [by_key[p] for p in parts]
    if len(set(names)) != len(names):
        raise Fail(f"{what} names a menu entry twice", fn=what)
    return names


def chosen(ctx: Context) -> list[str]:
    names = parse_names(ctx.constant("CHOSEN"), "CHOSEN", menu(ctx))
    want = ctx.params["chosen"]
    if len(names) != want:
        raise Fail(f"CHOSEN names {len(names)} menu entries; choose exactly {want}", fn="CHOSEN")
    return names


def factors(ctx: Context, picked: list[str]) -> list[str]:
    names = parse_names(ctx.constant("FACTORS"), "FACTORS", menu(ctx), allow_none=True)
    stray = [n for n in names if n not in picked]
    if stray:
        raise Fail(f"FACTORS names {stray}, which you did not ablate (not in CHOSEN)",
                   fn="FACTORS")
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


def _unit_tol(ctx: Context) -> dict:
    return dict(rtol=ctx.params["unit_rtol"], atol=ctx.params["unit_atol"])


@judge.part("q1_obs_normalisation", "stats")
def obs_stats(ctx: Context, case) -> None:
    """update_obs_stats(): the merged mean (4), variance (4) and count."""
    mean, var, count, obs = _stats_case(ctx, case)
    m, v, c = AblationPieces(ctx).obs_stats(mean, var, count, obs)
    ctx.expect(np.concatenate([m, v, [c]]), **_unit_tol(ctx),
               label=f"update_obs_stats() ({case.label}): mean (4), var (4) and count, "
                     "concatenated")


@judge.part("q1_obs_normalisation", "normalise")
def normalise(ctx: Context, case) -> None:
    """normalise_obs(): standardised, and clipped where rows lie beyond +-10."""
    mean, var, _, obs = _obs_batch(ctx.case_rng(case), case.B)
    obs[:len(OUTLIERS)] = mean + OUTLIERS * np.sqrt(var)
    got = AblationPieces(ctx).normalise_obs(obs, mean, var)
    ctx.expect(got, **_unit_tol(ctx), label=f"normalise_obs() ({case.label}; some observations "
                                            "beyond +-10 standard deviations)")


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


@judge.part("q2_shared_gradients", "trunk")
def trunk(ctx: Context, case) -> None:
    """shared_gradients(): the trunk's the sum of both halves, the heads their own."""
    widths = tuple(int(h) for h in case.get("values"))     # the hidden layers
    pg, vg, k = _grad_halves(widths, ctx.case_rng(case))
    got = flatten(AblationPieces(ctx).shared_gradients(pg, vg, k))
    ctx.expect(got, **_unit_tol(ctx), label=f"shared_gradients() ({case.label}), flattened "
                                            "trunk, policy head, value head")


# ----------------------------------------------------------------------------- the judge's loop
# Capstone A's pieces (ppo.py) among those the judge's loop calls; the rest are this capstone's.
A_PIECES = frozenset({"categorical_log_prob", "compute_gae", "normalise_advantages",
                      "clipped_policy_loss", "value_loss", "entropy_loss",
                      "clipped_value_loss"})


def _piece_diagnosis(fn: str, where: str) -> str:
    if fn in A_PIECES:
        return (f"capstone A's {fn}() (your ppo.py) fails inside the judge's loop {where}: "
                "fix it in ppo.py (capstone A's checks test it)")
    return f"your {fn}() (ablations.py) fails inside the judge's loop {where}"


def _loop(ctx: Context, seed: int, hp: dict, updates: int, where: str):
    """The judge's loop (``oracles.ablation_loop``) with the submission's
    pieces. A piece whose answer fails there (it raised, or failed the gate)
    fails the current case naming that piece (its ``fn``) and where it
    lives (``_piece_diagnosis``). Returns ``(run, pieces)``."""
    pieces = AblationPieces(ctx)
    try:
        return ctx.oracle_fn("ablation_loop.train")(pieces, seed, hp, updates), pieces
    except Fail as e:
        if not e.fn or e.diagnosis:
            raise
        raise ctx.fail(f"in the judge's loop {where}: {one_line(str(e))}", e.kind,
                       _piece_diagnosis(e.fn, where), e.fn) from None


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


def train_answer(hp: dict) -> Record:
    """The gate spec of ``train_arrays(seed, updates, hp)``'s answer: both
    networks' layers of ``hp``'s shapes, and with ``norm_obs`` the observation
    statistics (mean and var of OBS_DIM)."""
    policy, value = _layer_shapes(hp)
    nets = {"policy_params": Network(tuple(policy)), "value_params": Network(tuple(value))}
    if not hp["norm_obs"]:
        return Record(nets)
    return Record({**nets, "obs_stats": Record({"mean": Floats((OBS_DIM,)),
                                                "var": Floats((OBS_DIM,))})})


def _train_result(ctx: Context, seed: int, hp: dict
                  ) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """The student's ``train_arrays(seed, switch_updates, hp)``: (flat distinct
    parameters, flat ``policy_params + value_params`` as listed, obs stats or
    None)."""
    out = ctx.ask("train_arrays", seed, ctx.params["switch_updates"], hp, answer=train_answer(hp))
    stats = None
    if hp["norm_obs"]:                      # the gate made sure they are there
        stats = np.concatenate([out["obs_stats"]["mean"], out["obs_stats"]["var"]])
    return (flatten(_distinct(out["policy_params"], out["value_params"], hp["shared_network"])),
            flatten(out["policy_params"] + out["value_params"]), stats)


def _judge_run(ctx: Context, seed: int, hp: dict, where: str):
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
    return bool(np.shape(a) == np.shape(b)
                and np.all(np.abs(np.asarray(a) - b) <= 1e-10 + rtol * np.abs(b)))


A_GAE = ("capstone A's compute_gae() (your ppo.py) gives other advantages on this rollout's "
         "switched episode ends, and advantages_and_returns() builds on it: fix compute_gae() "
         "in ppo.py first")


def _check_advantages(ctx: Context, case, name: str, hp: dict) -> None:
    """An advantage switch on a rollout with terminations and truncations:
    ``advantages_and_returns(ro, hp)`` against the oracle's; a wrong answer
    is put down to capstone A's ``compute_gae`` when that, given the
    switched episode ends, is wrong (or raises) too."""
    ro = _case_rollout(ctx, case, hp)
    shape = ro["rewards"].shape
    got = np.stack(ctx.ask("advantages_and_returns", ro, hp,
                           answer=Seq(Floats(shape), Floats(shape))))
    want = ctx.oracle_fn("b_ablations.advantages_and_returns")(
        ro, hp["gamma"], hp["gae_lambda"], hp["bootstrap_truncation"])

    def diagnose(_) -> str:
        ends = ctx.oracle_fn("b_ablations.switched_ends")(ro, hp["bootstrap_truncation"])
        try:
            adv, ret = AblationPieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"],
                                               ends["terminated"], ends["truncated"],
                                               hp["gamma"], hp["gae_lambda"])
        except Fail:
            return A_GAE
        return "" if _close(np.stack([adv, ret]), want, 1e-10) else A_GAE

    ctx.check(got, want, rtol=1e-10, atol=1e-10, name="advantages", diagnose=diagnose,
              label=f"advantages_and_returns() with '{name}' on (rollout {case.label}): "
                    "advantages and returns, stacked")


def _check_switch(ctx: Context, part, name: str, base_hp: dict, baseline: dict) -> None:
    """The switch ``name`` in the cases of ``part``: on the rollouts (an
    advantage switch), then in ``train`` against the judge's loop and the
    baseline's networks (``baseline``: by case name)."""
    p = ctx.params
    change = menu(ctx)[name]
    hp = {**base_hp, **change}
    cases = part.case_list()
    if set(change) & set(ADVANTAGE_SWITCHES):
        for case in (c for c in cases if c.group == "rollout"):
            with part.at(case):
                _check_advantages(ctx, case, name, {**_hp(ctx), **change})
    for case in (c for c in cases if c.group == ""):
        label = f"train() with '{name}' on ({case.label})"
        with part.at(case):        # a hidden case's failure: its kind and the diagnosis
            # The judge's run first: a piece that fails in it is named as the cause.
            want, want_all, want_stats = _judge_run(ctx, case.seed, hp, f"with '{name}' on")
            got, got_all, got_stats = _train_result(ctx, case.seed, hp)
            off = baseline.get(case.name)
            if _close(got, want, p["switch_rtol"]) and (
                    want_stats is None or _close(got_stats, want_stats, p["switch_rtol"])):
                continue
            # The diagnosis names no input and no expected value: shown even for hidden cases.
            if off is not None and _close(got_all, off, p["switch_rtol"]) \
                    and not _close(want_all, off, p["switch_rtol"]):
                raise ctx.fail(f"{label}: your networks are the baseline's", diagnosis=(
                    f"the switch does nothing (it should set {change})"), fn="train_arrays")
            raise ctx.fail(f"{label}: your networks match neither the judge's loop with only "
                           "this switch on nor the baseline", diagnosis=(
                               f"the switch changes something besides {change} (or your loop "
                               "departs from the recipe)"), fn="train_arrays")


@judge.question("q3_switches")
def q3_switches(ctx: Context) -> None:
    p = ctx.params
    base_hp = {**_hp(ctx), **p["switch_hp"]}
    # The baseline first (0 points): when train() with no switch already departs from the
    # judge's loop, that is the cause, and no switch can be judged (each says so instead).
    baseline: dict = {}
    with ctx.part("baseline") as part:
        for case in part.cases():
            want, baseline[case.name], _ = _judge_run(ctx, case.seed, base_hp,
                                                      "with no switch on")
            got, _, _ = _train_result(ctx, case.seed, base_hp)
            ctx.check(got, want, rtol=p["switch_rtol"], atol=1e-10,
                      label=f"train() baseline ({case.label})")
    count = ctx.question.part("switch").count
    try:
        names = chosen(ctx)
    except Fail as e:                       # no switch to judge: each fails with this cause
        for i in range(count):
            ctx.record_failure("switch", e, item=f"choice {i + 1}")
        return
    if not ctx.passed("baseline"):
        cause = Fail("not judged: the baseline already differs from the judge's loop (the "
                     "baseline's FAIL line); fix train() without a switch first",
                     Kind.NOT_JUDGED, diagnosis="the baseline is wrong, not (necessarily) "
                                                "this switch", fn="train_arrays")
        for name in names:
            ctx.record_failure("switch", cause, item=name)
        return
    for name in names:
        with ctx.part("switch", item=name) as part:
            _check_switch(ctx, part, name, base_hp, baseline)


# ----------------------------------------------------------------------------- the experiment
def _same(got, want) -> bool:
    """``got`` (plain data through the gate: numbers may arrive as 0-d arrays)
    is ``want`` (from assignment.toml): lists for tuples, numbers by value, a
    bool only as a bool."""
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


# experiment_config()'s answer: BASELINE and MENU as plain data (compared, never computed with)
CONFIG_ANSWER = Record({"baseline": Table(Anything(), MAX_ROWS),
                        "menu": Table(Anything(), MAX_ROWS)})


def experiment_differences(ctx: Context) -> list[str]:
    """How the submission's ``BASELINE`` and ``MENU`` (read through
    ``experiment_config()``) differ from assignment.toml's, one line each."""
    got = ctx.ask("experiment_config", answer=CONFIG_ANSWER)
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


def table_cells(names: list[str], seeds: list[int]) -> list[tuple[str, int]]:
    """The cells of a student's table in row order (baseline, then CHOSEN's
    order; seeds within): what a ``rerun`` case's ``cell`` indexes."""
    return [(c, s) for c in ["baseline", *names] for s in seeds]


def _rerun(ctx: Context, case, names: list[str], table: dict) -> None:
    """Re-run the cell ``case.cell`` (drawn per student) of the student's table:
    the student's number must lie within :func:`rerun_band` of the judge's."""
    cells = table_cells(names, list(ctx.params["seeds"]))
    config, seed = cells[case.cell % len(cells)]
    judged = _judge_number(ctx, config, seed)
    yours = table[config][seed]
    band = rerun_band(ctx.params, ctx.hidden["spread"], config)
    if not abs(yours - judged) <= band:
        raise ctx.fail(f"your table says {yours:.1f} for '{config}', seed {seed}; the judge's "
                       f"loop with your pieces gives {judged:.1f} (band {band:.1f})",
                       diagnosis=("a number of your table is not what your code gives: run the "
                                  "notebook's experiment again with the code you submit"),
                       fn="results_table")


def experiment(ctx: Context) -> tuple[list[str], list[str], dict]:
    """What the claim and the table stand on: CHOSEN's names, FACTORS' names and
    the student's table (:func:`table_of_experiment`), and in the hidden phase
    the re-runs of the cells the ``rerun`` cases draw (the table is read in
    their scope: the hidden phase asks nothing outside a hidden case). Fail
    naming what is off (a hidden case's failure names no cell)."""
    names = chosen(ctx)
    named = factors(ctx, names)
    runs = ctx.cases_in("rerun")
    with ctx.within(runs):
        table = table_of_experiment(ctx, names)
    for case in ctx.cases("rerun"):
        _rerun(ctx, case, names, table)
    return names, named, table


def table_of_experiment(ctx: Context, names: list[str]) -> dict:
    """The student's table ({config: {seed: per-seed number}}) when it stands
    on an experiment of the assignment's configuration and menu, covering the
    baseline and every chosen entry on every seed; else Fail naming what is off."""
    diffs = experiment_differences(ctx)
    if diffs:
        raise ctx.fail(f"your BASELINE or MENU is not the assignment's, so your table is not "
                       f"this experiment's: {'; '.join(diffs[:4])}" + (
                           f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else ""),
                       diagnosis="restore BASELINE and MENU as given and run the experiment "
                                 "again")
    table = read_table(ctx)
    for n in ["baseline"] + names:
        missing = [s for s in ctx.params["seeds"] if s not in table.get(n, {})]
        if missing:
            raise ctx.fail(f"your table lacks '{n}' on seeds {missing}: run the notebook's "
                           "experiment for every chosen entry")
    return table


def read_table(ctx: Context) -> dict:
    """The student's table, ``results_table()``'s ``{config: [[seed, *numbers],
    ...]}`` (the numbers of ``rlkit.study.MEASURES``, in that order), as
    {config: {seed: the per-seed number of ``[params] per_seed``}}; at most
    MAX_ROWS rows are read."""
    column = 1 + MEASURES.index(ctx.params["per_seed"])
    by_key = {_canonical(n): n for n in menu(ctx)}
    raw = ctx.ask("results_table", answer=Table(Rows(1 + len(MEASURES), MAX_ROWS), MAX_ROWS))
    if not raw:
        raise ctx.fail("results_table() returned no rows: run the notebook's experiment, which "
                       "writes ablation_results.json, and submit that file")
    out: dict = {}
    rows = 0
    for name, pairs in raw.items():
        if np.any((pairs[:, 1:] < 0.0) | (pairs[:, 1:] > 500.0)):
            raise ctx.fail(f"'{name[:80]}': a return outside [0, 500] is not a CartPole return")
        config = "baseline" if _canonical(name) == "baseline" else \
            by_key.get(_canonical(name), name[:80])
        for row in pairs[:MAX_ROWS - rows]:
            out.setdefault(config, {})[int(row[0])] = float(row[column])
        rows += len(pairs)
        if rows >= MAX_ROWS:
            break
    return out


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


@judge.question("q4_claim")
def q4_claim(ctx: Context) -> None:
    table, verdict = judge_table(ctx)
    try:
        names, named, mine = experiment(ctx)    # a claim stands on an experiment of the menu's
    except Fail as e:                           # nothing to grade the claim on: one cause
        for part_id in ("bar", "verdicts"):
            ctx.record_failure(part_id, e)
        return
    base = table["baseline"]
    what = ctx.params["per_seed"].replace("_", " ")
    ctx.note(f"     the judge's table (the reference on seeds {ctx.params['seeds']}, per seed "
             f"the {what}): baseline {base.tolist()}, median {np.median(base):.1f}, spread "
             f"{spread(base):.1f}")
    graded = {}
    for n in names:
        abl = table[n]
        graded[n] = graded_verdict(table, verdict, n)
        ctx.note(f"     '{n}': {abl.tolist()}, median {np.median(abl):.1f}, spread "
                 f"{spread(abl):.1f}: {'qualifies' if qualifies(base, abl) else 'does not'}"
                 f" here; over many seed triples: {verdict.get(n, 'borderline')}"
                 + ("  (borderline: either answer accepted)" if graded[n] == "either" else ""))
    for n in ["baseline"] + names:
        if n in mine:
            ctx.note(f"     your table, '{n}': {sorted(mine[n].items())} vs the judge's "
                     f"{table[n].tolist()} (feedback only: float order changes runs)")
    with ctx.part("bar"):
        if not named:
            movers = [n for n in names if graded[n] != "no"]
            raise Fail("you name no factor" + (
                f"; in the judge's table {movers} qualify (or are borderline)" if movers else
                "; none of your five qualifies in the judge's table: choose other details"))
        if not any(graded[n] != "no" for n in named):
            raise Fail(f"{named}: none qualifies in the judge's table")
    with ctx.part("verdicts"):
        missed = [n for n in names if graded[n] == "yes" and n not in named]
        wrong = [n for n in named if graded[n] == "no"]
        if missed or wrong:
            raise Fail("; ".join(
                ([f"not named, but they qualify robustly: {missed}"] if missed else []) +
                ([f"named, but robustly harmless: {wrong}"] if wrong else [])))


# ----------------------------------------------------------------------------- q5: the table
@judge.question("q5_table")
def q5_table(ctx: Context) -> None:
    seeds = list(ctx.params["seeds"])
    with ctx.part("table"):
        names, named, table = experiment(ctx)
        base = np.array([table["baseline"][s] for s in seeds])
        follows = []
        for n in names:
            abl = np.array([table[n][s] for s in seeds])
            q = qualifies(base, abl)
            ctx.note(f"     '{n}': |{np.median(abl):.1f} - {np.median(base):.1f}| "
                     f"{'>' if q else '<='} max({spread(base):.1f}, {spread(abl):.1f})")
            if q:
                follows.append(n)
        if sorted(follows) != sorted(named):
            raise Fail(f"by the criterion your table makes {follows or 'none'} qualify, but "
                       f"FACTORS says {named or 'none'}")


# ----------------------------------------------------------------------------- q6: by hand
@judge.question("q6_why")
def q6_why(ctx: Context):
    """The written reasons, carried into results.json for grading by hand."""
    text = ctx.constant("WHY")
    if not isinstance(text, str) or not text.strip():
        return hand_graded(["no written answer found: WHY is empty or not a string. One "
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
    return hand_graded(lines)


QUESTIONS = judge.questions
