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
  something else too. The baseline is judged first (a part of its own): a
  train() that matches the judge's loop with one of capstone A's recipe
  slips is named, and its switches are judged against the loop with that
  slip; any other baseline is located (the initial networks, the first
  update, a later one) and stops the switches with that one cause.
  Switches that act on the advantages are also checked on a rollout.
* Capstone A's pieces that the experiment reaches (the baseline's and the
  chosen switches') are checked on their own (q4: one part per piece; with
  the oracle on hidden cases drawn per student), at every parameter value of
  the menu: a bug behind one switch costs that piece, by name. So is the
  step the student's train() takes and the judge's loop does not
  (``ppo.minibatch_update``, its own part): steering hidden there is a
  wrong piece.
* The experiment (q5): the judge runs it itself, each run in a fresh worker
  with the student's pieces and switches: every cell of the student's table
  (the baseline and the five chosen entries on every seed) to the end. In
  every run each piece's answer is compared with the reference's answer to
  the same inputs, so pieces that steer a run are caught as the wrong pieces
  they are. The table is the code's when every cell's first
  ``prefix_updates`` updates, which no float order changes, are the table's
  learning curve exactly and every per-seed number lies within the band
  (measured by ``bench/ablations_table.py``) of the judge's run. The claim is
  graded on the judge's runs' numbers (a made-up number buys nothing there),
  where the robust verdicts (``[hidden.verdict]``) agree with them; where the
  runs cannot stand for the code (train() is not the judge's loop, a piece
  answered otherwise), on the judge's stored table.
* q6, q7: the written reasons and the paragraph on the literature, carried to
  the results for grading by hand; q7's feedback (shown after grading) sets
  the menu's verdicts beside the large-scale study of on-policy choices.
Every input is a declared case of assignment.toml (``[[questions.cases]]``).
"""
from __future__ import annotations

import json
import zlib
from typing import Optional

import numpy as np

from rlkit.agent import collect_rollout, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, flatten, forward
from rlkit.study import MEASURES, NONE_FINISHED, curve_row, mean_of_curve_row
from rlkit.variants import OBS_COUNT0, init_shared_networks, shared_layers

from ..grading.config import Case
from ..grading.gate import Anything, Floats, Network, Record, Rows, Seq, Table
from ..grading.judging import RUBRIC_WHERE, Context, Fail, Judge, ReferenceFailed, hand_graded
from ..grading.safe import one_line
from ..grading.status import Kind
from .ablation_pieces import AblationPieces
from .ppo_pieces import loss_answer

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


def config_hp(ctx: Context, config: str, base: Optional[dict] = None) -> dict:
    """The hyper-parameters of a table row: ``base`` (default the judge's
    configuration) with the menu entry ``config``'s change ("baseline": none)."""
    base = _hp(ctx) if base is None else base
    return {**base, **({} if config == "baseline" else menu(ctx)[config])}


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
               oracle=("b_ablations.obs_stats_flat", mean, var, count, obs),
               label=f"update_obs_stats() ({case.label}): mean (4), var (4) and count, "
                     "concatenated")


@judge.part("q1_obs_normalisation", "normalise")
def normalise(ctx: Context, case) -> None:
    """normalise_obs(): standardised, and clipped where rows lie beyond +-10."""
    mean, var, _, obs = _obs_batch(ctx.case_rng(case), case.B)
    obs[:len(OUTLIERS)] = mean + OUTLIERS * np.sqrt(var)
    got = AblationPieces(ctx).normalise_obs(obs, mean, var)
    ctx.expect(got, **_unit_tol(ctx), oracle=("b_ablations.normalise_obs", obs, mean, var),
               label=f"normalise_obs() ({case.label}; some observations beyond +-10 "
                     "standard deviations)")


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
    ctx.expect(got, **_unit_tol(ctx), oracle=("b_ablations.shared_gradients_flat", pg, vg, k),
               label=f"shared_gradients() ({case.label}), flattened "
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


def _loop(ctx: Context, seed: int, hp: dict, updates: int, where: str, *, slip: str = "",
          pieces: Optional[AblationPieces] = None, **kwargs):
    """The judge's loop (``oracles.ablation_loop``) with the submission's
    pieces (``pieces``, default plain ones), off the recipe by ``slip``. A
    piece whose answer fails there (it raised, or failed the gate) fails the
    current case naming that piece (its ``fn``) and where it lives
    (``_piece_diagnosis``). Returns ``(run, pieces)``."""
    pieces = AblationPieces(ctx) if pieces is None else pieces
    try:
        return ctx.oracle_fn("ablation_loop.train")(pieces, seed, hp, updates, slip=slip,
                                                    **kwargs), pieces
    except Fail as e:
        if not e.fn or e.diagnosis:
            raise
        raise ctx.fail(f"in the judge's loop {where}: {one_line(str(e))}", e.kind,
                       _piece_diagnosis(e.fn, where), e.fn) from None


# ----------------------------------------------------------------------------- q3: switches
# train()'s slips off the recipe that the judge recognises (``oracles.ppo_loop.RECIPE_SLIPS``:
# capstone A's), in the words of the diagnosis.
RECIPE_SLIPS = {
    "no_anneal": "your train() never anneals the learning rate (anneal_lr asks for lr * (1 - "
                 "u / updates) at update u = 0, 1, ...)",
    "lr_ahead": "your train()'s learning-rate schedule is one update ahead (lr * (1 - (u + 1) / "
                "updates))",
    "lr_behind": "your train()'s learning-rate schedule is one update late (the rate set after "
                 "the update's epochs instead of before its rollout)",
    "value_lr_fixed": "your train() anneals only the policy optimiser's learning rate (set it "
                      "on both)",
    "one_perm_per_update": "your train() draws one permutation per update and reuses it in "
                           "every epoch (draw a fresh rng.permutation(T*N) each epoch)",
    "no_shuffle": "your train() takes the minibatches in rollout order, without "
                  "rng.permutation",
    "norm_whole_batch": "your train() normalises the advantages once over the whole batch "
                        "instead of in each minibatch",
    "reset_each_update": "your train() resets the environments at every update (continue "
                         "from the rollout's next_obs)",
}


def _rollout(rng: np.random.Generator, seed: int, hp: dict, T: int, N: int,
             time_limit: int, both_ends: bool = True) -> dict:
    """A random-policy rollout (T steps in N CartPoles, networks from ``rng``,
    environments from ``seed``) with terminations and truncations (checked
    unless ``both_ends`` is False: a seed drawn per student may, rarely, give
    only one kind)."""
    policy, value = init_networks(dict(hp, policy_head_gain=1.0), rng)
    env = VecCartPole(N, seed=seed, max_episode_steps=time_limit)
    ro = collect_rollout(env, env.reset(), policy, value, T, rng)
    if both_ends and not (ro["terminated"].any() and ro["truncated"].any()):
        raise ReferenceFailed("a judge rollout lacks terminations or truncations")
    return ro


ROLLOUT_TRIES = 100       # a drawn rollout case: environment seeds tried for both episode ends


def _case_rollout(ctx: Context, case, hp: dict) -> dict:
    """The rollout of ``case``: of its seed, or for a case drawn per
    submission, of the first environment seed from its generator whose
    rollout has terminations and truncations."""
    if not case.per_student:
        return _rollout(ctx.case_rng(case), case.seed, hp, case.T, case.N, case.time_limit)
    rng = ctx.case_rng(case)
    for _ in range(ROLLOUT_TRIES):
        ro = _rollout(rng, int(rng.integers(2 ** 31)), hp, case.T, case.N, case.time_limit,
                      both_ends=False)
        if ro["terminated"].any() and ro["truncated"].any():
            return ro
    raise ReferenceFailed(f"{case.question}: no rollout of case {case.name!r} in "
                          f"{ROLLOUT_TRIES} draws has both episode ends")


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


def _trained(ctx: Context, seed: int, hp: dict, updates: Optional[int] = None
             ) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray], list]:
    """The student's ``train_arrays(seed, updates, hp)`` (default
    ``switch_updates``): (flat distinct parameters, flat ``policy_params +
    value_params`` as listed, obs stats or None, [flat policy, flat value])."""
    updates = ctx.params["switch_updates"] if updates is None else updates
    out = ctx.ask("train_arrays", seed, updates, hp, answer=train_answer(hp))
    stats = None
    if hp["norm_obs"]:                      # the gate made sure they are there
        stats = np.concatenate([out["obs_stats"]["mean"], out["obs_stats"]["var"]])
    return (flatten(_distinct(out["policy_params"], out["value_params"], hp["shared_network"])),
            flatten(out["policy_params"] + out["value_params"]), stats,
            [flatten(out["policy_params"]), flatten(out["value_params"])])


def _judged(run, hp: dict) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray], list]:
    """A judge's run as :func:`_trained` gives the student's."""
    stats = None if run.obs_stats is None else np.concatenate(
        [run.obs_stats["mean"], run.obs_stats["var"]])
    return (flatten(_distinct(run.policy_params, run.value_params, hp["shared_network"])),
            flatten(run.policy_params + run.value_params), stats,
            [flatten(run.policy_params), flatten(run.value_params)])


def _judge_run(ctx: Context, seed: int, hp: dict, where: str, slip: str = ""):
    """A switch-check run of the judge's loop (``switch_updates`` updates at
    switch sizes) with the submission's pieces, as :func:`_trained`. (A public
    seed's runs meet both episode ends at switch_hp's time limit; a seed drawn
    per submission's may miss one, about 1 draw in 60, and every switch still
    shows: ``tests/test_b_ablations.py``.)"""
    run, _ = _loop(ctx, seed, hp, ctx.params["switch_updates"], where, slip=slip)
    return _judged(run, hp)


def _close(a, b, rtol: float) -> bool:
    return bool(a is not None and b is not None and np.shape(a) == np.shape(b)
                and np.all(np.abs(np.asarray(a) - b) <= 1e-10 + rtol * np.abs(b)))


def _same_run(ctx: Context, got: tuple, want: tuple) -> bool:
    rtol = ctx.params["switch_rtol"]
    return _close(got[0], want[0], rtol) and (want[2] is None or _close(got[2], want[2], rtol))


def slip_of(ctx: Context, seed: int, hp: dict, got: tuple) -> str:
    """The recipe slip (a key of :data:`RECIPE_SLIPS`) whose run of the judge's
    loop gives the networks ``got`` (a :func:`_trained` answer) where the
    recipe's does not, or ""."""
    for slip in RECIPE_SLIPS:
        try:
            if _same_run(ctx, got, _judge_run(ctx, seed, hp, "", slip)):
                return slip
        except Fail:                        # a piece fails off the recipe: no diagnosis
            return ""
    return ""


def where_it_departs(ctx: Context, seed: int, hp: dict) -> str:
    """Where a train() that matches no slip leaves the judge's loop: its
    initial networks, its first update (which network), or a later one."""
    rtol = ctx.params["switch_rtol"]
    try:
        for updates in (0, 1):
            got = _trained(ctx, seed, hp, updates)
            run, _ = _loop(ctx, seed, hp, updates, "")
            want = _judged(run, hp)
            off = [name for name, g, w in zip(("policy", "value"), got[3], want[3])
                   if not _close(g, w, rtol)]
            if off:
                nets = " and ".join(off) + (" networks" if len(off) > 1 else " network")
                if updates == 0:
                    return (f"your train() departs from the judge's loop before any update: "
                            f"its initial {nets} differ (the init gains, the network kind, or "
                            "the draws from the run's Generator in another order)")
                return (f"your train() departs from the judge's loop in its first update: "
                        f"the {nets} differ after it (the rollout, the advantages or the "
                        "minibatch steps of update 0)")
    except Fail:
        return ""
    return ("your train()'s first update is the judge's loop's; a later one is not (the "
            "learning-rate schedule, the permutations across epochs, or what one update "
            "hands the next); it matches none of the recipe slips the judge tries "
            f"({len(RECIPE_SLIPS)})")


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


def _check_switch(ctx: Context, part, name: str, base_hp: dict, slip: str) -> None:
    """The switch ``name`` in the cases of ``part``: on the rollouts (an
    advantage switch), then in ``train`` against the judge's loop (off the
    recipe by the baseline's ``slip``) and the baseline's networks."""
    p = ctx.params
    change = menu(ctx)[name]
    hp = {**base_hp, **change}
    cases = part.case_list()
    if set(change) & set(ADVANTAGE_SWITCHES):
        for case in (c for c in cases if c.group == "rollout"):
            with part.at(case):
                _check_advantages(ctx, case, name, {**_hp(ctx), **change})
    against = "" if not slip else " (judged with your train()'s slip in the baseline)"
    for case in (c for c in cases if c.group == ""):
        label = f"train() with '{name}' on ({case.label})"
        with part.at(case):        # a hidden case's failure: its kind and the diagnosis
            # The judge's run first: a piece that fails in it is named as the cause.
            want = _judge_run(ctx, case.seed, hp, f"with '{name}' on", slip)
            got = _trained(ctx, case.seed, hp)
            if _same_run(ctx, got, want):
                continue
            off = _judge_run(ctx, case.seed, base_hp, "with no switch on", slip)[1]
            # The diagnosis names no input and no expected value: shown even for hidden cases.
            if _close(got[1], off, p["switch_rtol"]) and not _close(want[1], off,
                                                                      p["switch_rtol"]):
                raise ctx.fail(f"{label}: your networks are the baseline's{against}", diagnosis=(
                    f"the switch does nothing (it should set {change})"), fn="train_arrays")
            raise ctx.fail(f"{label}: your networks match neither the judge's loop with only "
                           f"this switch on nor the baseline{against}", diagnosis=(
                               f"the switch changes something besides {change} (or your loop "
                               "departs from the recipe with it on)"), fn="train_arrays")


@judge.question("q3_switches")
def q3_switches(ctx: Context) -> None:
    p = ctx.params
    base_hp = {**_hp(ctx), **p["switch_hp"]}
    # The baseline first: when train() with no switch departs from the judge's loop, that is
    # the cause. A slip of the recipe the judge recognises is named, and the switches are
    # judged against the judge's loop with it; any other departure is located and stops them.
    slip: Optional[str] = ""
    with ctx.part("baseline") as part:
        for case in part.cases():
            want = _judge_run(ctx, case.seed, base_hp, "with no switch on")
            got = _trained(ctx, case.seed, base_hp)
            if _same_run(ctx, got, want):
                continue
            found = slip_of(ctx, case.seed, base_hp, got)
            slip = found or None
            raise ctx.fail(f"train() baseline ({case.label}): your networks are not the "
                           "judge's loop's (no switch on)",
                           diagnosis=RECIPE_SLIPS[found] if found else where_it_departs(
                               ctx, case.seed, base_hp), fn="train_arrays")
    count = ctx.question.part("switch").count
    try:
        names = chosen(ctx)
    except Fail as e:                       # no switch to judge: each fails with this cause
        for i in range(count):
            ctx.record_failure("switch", e, item=f"choice {i + 1}")
        return
    if slip is None:
        cause = Fail("not judged: the baseline already differs from the judge's loop in a way "
                     "the judge cannot name (the baseline's FAIL line says where); fix train() "
                     "without a switch first", Kind.NOT_JUDGED,
                     diagnosis="the baseline is wrong, not (necessarily) this switch",
                     fn="train_arrays")
        for name in names:
            ctx.record_failure("switch", cause, item=name)
        return
    for name in names:
        with ctx.part("switch", item=name) as part:
            _check_switch(ctx, part, name, base_hp, slip)


# ----------------------------------------------------------------------------- q4: A's pieces
# Capstone A's pieces as q4's parts: part id -> the function. The baseline reaches the first
# five (normalise_advantages with norm_adv, value_loss without clip_vloss), the switches the
# rest.
A_PIECE_PARTS = {"log_prob": "categorical_log_prob", "gae": "compute_gae",
                 "normalise": "normalise_advantages", "policy_loss": "clipped_policy_loss",
                 "value_loss": "value_loss", "entropy": "entropy_loss",
                 "clipped_value": "clipped_value_loss"}
B_PIECE = 64              # a q4 batch: samples (the minibatch's first axis)
# Capstone A's minibatch step, which the student's train() calls (ppo.minibatch_update) and the
# judge's loop does not (it asks the pieces and steps itself): its own part of q4, asked
# through the function train() reaches (the module ppo as ablations.py imports it).
MINIBATCH_PART = "minibatch"
MINIBATCH_FN = "ppo.minibatch_update_arrays"
STEP_KEYS = ("clip_eps", "vf_coef", "ent_coef", "max_grad_norm", "norm_adv", "clip_vloss")


def reached(hps: list[dict]) -> set[str]:
    """Capstone A's functions the judge's loop calls in runs of ``hps``."""
    fns = {"categorical_log_prob", "compute_gae", "clipped_policy_loss"}
    for hp in hps:
        fns.add("normalise_advantages") if hp["norm_adv"] else None
        fns.add("clipped_value_loss" if hp["clip_vloss"] else "value_loss")
        fns.add("entropy_loss") if hp["ent_coef"] != 0.0 else None
    return fns


def menu_values(ctx: Context, key: str) -> list:
    """Every value of hyper-parameter ``key`` in the experiment: the
    configuration's and the menu entries' (sorted, distinct)."""
    values = {ctx.params["hp"][key]} | {c[key] for c in menu(ctx).values() if key in c}
    return sorted(values)


def _flat_answer(answer) -> np.ndarray:
    """A piece's answer as one array: (loss, gradient) -> [loss, *gradient];
    (advantages, returns) -> both, flattened; an array as it is."""
    if isinstance(answer, (list, tuple)):
        return np.concatenate([np.ravel(np.asarray(a, dtype=np.float64)) for a in answer])
    return np.ravel(np.asarray(answer, dtype=np.float64))


def _piece_check(ctx: Context, case, fn: str, args: tuple, answer, name: str,
                 what: str) -> None:
    """``fn(*args)`` through the gate, compared with the reference's (the oracle
    for a case drawn per student), one check named ``name``."""
    got = _flat_answer(ctx.ask(fn, *args, answer=answer))
    where = "" if case.hidden else f" ({case.label})"
    ctx.expect(got, oracle=("b_ablations.piece", fn, *args), name=name,
               label=f"{fn}(){where}, {what}", **_unit_tol(ctx))


def _policy_batch(ctx: Context, rng: np.random.Generator) -> dict:
    """A minibatch as the policy's pieces see it: logits (B, A), actions (B,),
    old log-probabilities (the oracle's, moved: ratios around 1, some beyond
    any clip band), advantages normalised and at a raw scale."""
    logits = rng.normal(0.0, 2.0, (B_PIECE, NUM_ACTIONS))
    actions = rng.integers(0, NUM_ACTIONS, B_PIECE)
    logp = ctx.oracle("logp", "a_ppo.log_prob", logits, actions)
    adv = rng.normal(0.0, 1.0, B_PIECE)
    return {"logits": logits, "actions": actions,
            "logp_old": logp + rng.normal(0.0, 0.2, B_PIECE), "adv": adv,
            "raw_adv": adv * 30.0 + 5.0}


def _value_batch(rng: np.random.Generator) -> dict:
    """Values (B,), the values when collected (some beyond any clip band) and returns."""
    values = rng.normal(20.0, 10.0, B_PIECE)
    return {"values": values, "values_old": values + rng.normal(0.0, 0.3, B_PIECE),
            "returns": values + rng.normal(0.0, 5.0, B_PIECE)}


def _check_a_piece(ctx: Context, part_id: str, case) -> None:
    """One case of q4's part ``part_id``: its function on judge data, at every
    value of the menu that reaches it."""
    fn = A_PIECE_PARTS[part_id]
    rng = ctx.case_rng(case)
    loss = loss_answer
    if part_id == "gae":
        ro = _rollout(rng, case.seed, _hp(ctx), case.T, case.N, case.time_limit,
                      both_ends=not case.per_student)
        shape = ro["rewards"].shape
        ends = {True: (ro["terminated"], ro["truncated"]),       # as collected
                False: (ro["terminated"] | ro["truncated"],         # time limits as ends
                        np.zeros(shape, dtype=bool))}
        for bootstrap, (ended, cut) in ends.items():
            for lam in menu_values(ctx, "gae_lambda"):
                args = (ro["rewards"], ro["values"], ro["final_values"], ended, cut,
                        ctx.params["hp"]["gamma"], lam)
                _piece_check(ctx, case, fn, args, Seq(Floats(shape), Floats(shape)),
                             f"lambda {lam:g}" + ("" if bootstrap else ", time limits as ends"),
                             f"advantages and returns with lambda {lam:g}" + (
                                 "" if bootstrap else " (time-limit ends as terminations)"))
        return
    if part_id in ("value_loss", "clipped_value"):
        b = _value_batch(rng)
        if part_id == "value_loss":
            _piece_check(ctx, case, fn, (b["values"], b["returns"]), loss((B_PIECE,)),
                         "loss", "the loss and its gradient")
            return
        for eps in menu_values(ctx, "clip_eps"):
            _piece_check(ctx, case, fn, (b["values"], b["values_old"], b["returns"], eps),
                         loss((B_PIECE,)), f"eps {eps:g}",
                         f"the loss and its gradient with clip_eps {eps:g}")
        return
    b = _policy_batch(ctx, rng)
    if part_id == "log_prob":
        _piece_check(ctx, case, fn, (b["logits"], b["actions"]), Floats((B_PIECE,)),
                     "log-probabilities", "the log-probabilities of the actions")
    elif part_id == "normalise":
        _piece_check(ctx, case, fn, (b["raw_adv"],), Floats((B_PIECE,)), "advantages",
                     "advantages at a raw scale")
    elif part_id == "entropy":
        _piece_check(ctx, case, fn, (b["logits"],), loss(b["logits"].shape), "loss",
                     "the loss and its gradient")
    elif part_id == "policy_loss":
        for eps in menu_values(ctx, "clip_eps"):
            for key, scale in (("adv", "normalised"), ("raw_adv", "raw")):
                _piece_check(ctx, case, fn, (b["logits"], b["actions"], b["logp_old"], b[key],
                                             eps), loss(b["logits"].shape),
                             f"eps {eps:g}, {scale}", f"the loss and its gradient with "
                             f"clip_eps {eps:g} and {scale} advantages")
    else:
        raise ReferenceFailed(f"q4: no check for part {part_id!r}")


def step_configs(ctx: Context, names: list[str]) -> list[tuple[str, int]]:
    """The minibatch steps q4 checks minibatch_update on: ``(config, minibatch
    size)`` for the baseline and each configuration of ``names`` that changes
    what one step sees (its hyper-parameters, or the minibatch's size)."""
    out = []
    for config in ["baseline", *names]:
        hp = config_hp(ctx, config)
        if config != "baseline" and (hp["shared_network"] or not (
                set(menu(ctx)[config]) & set(STEP_KEYS + ("num_minibatches",)))):
            continue                        # a shared network steps with its own update
        out.append((config, hp["num_envs"] * hp["num_steps"] // hp["num_minibatches"]))
    return out


def _minibatch_step(ctx: Context, rng: np.random.Generator, name: str, hp: dict,
                    size: int) -> tuple:
    """The arguments of ``minibatch_update_arrays`` for one step in the middle of
    a run of ``hp``: networks and Adam states (later moments, an annealed rate)
    drawn from ``rng``, and a minibatch of ``size`` samples of judge data
    (advantages at a raw scale, old log-probabilities and values moved so that
    some ratios and values leave any clip band)."""
    policy, value = init_networks(hp, rng)
    for layer in policy + value:
        for k in layer:
            layer[k] = layer[k] + rng.normal(0.0, 0.05, layer[k].shape)

    def adam(net: list) -> dict:
        return {"lr": float(hp["lr"] * rng.uniform(0.05, 1.0)), "beta1": 0.9, "beta2": 0.999,
                "eps": float(hp["adam_eps"]), "t": int(rng.integers(1, 500)),
                "m": [rng.normal(0.0, 1e-3, a.shape) for layer in net for a in layer.values()],
                "v": [rng.uniform(1e-7, 1e-4, a.shape) for layer in net
                      for a in layer.values()]}
    obs = rng.normal(0.0, 1.0, (size, OBS_DIM)) * OBS_SCALE
    logits, _ = forward(policy, obs)
    values = forward(value, obs)[0][:, 0]
    actions = rng.integers(0, NUM_ACTIONS, size)
    logp = ctx.oracle(f"{name} logp", "a_ppo.log_prob", logits, actions)
    batch = {"obs": obs, "actions": actions, "logp_old": logp + rng.normal(0.0, 0.2, size),
             "advantages": rng.normal(0.0, 1.0, size) * 30.0 + 5.0,
             "returns": values + rng.normal(0.0, 5.0, size),
             "values_old": values + rng.normal(0.0, 0.3, size)}
    return policy, value, adam(policy), adam(value), batch, hp


def _check_minibatch(ctx: Context, case, names: list[str]) -> None:
    """One case of q4's minibatch part: ``ppo.minibatch_update_arrays`` (the
    step train() takes) on judge data, one step per :func:`step_configs`
    entry, with the whole configuration as train() hands it; the updated
    networks against the reference's step (the oracle's for a drawn case)."""
    base = int(ctx.case_rng(case).integers(2 ** 62))
    where = "" if case.hidden else f" ({case.label})"
    for config, size in step_configs(ctx, names):
        hp = config_hp(ctx, config)
        # each step's data its own, whichever others a student's choice asks for
        rng = np.random.default_rng([base, zlib.crc32(config.encode())])
        step = _minibatch_step(ctx, rng, config, hp, size)
        policy, value = _layer_shapes(hp)
        out = ctx.ask(MINIBATCH_FN, *step, may_modify=(0, 1), answer=Record(
            {"policy_params": Network(tuple(policy)), "value_params": Network(tuple(value))}))
        for net in ("policy", "value"):
            ctx.expect(flatten(out[f"{net}_params"]), rtol=1e-9, atol=1e-12,
                       name=f"{config}, {net}", fn=MINIBATCH_FN,
                       oracle=("a_ppo.minibatch_params", *step, net),
                       label=f"minibatch_update(){where}, one step of '{config}' on a "
                             f"minibatch of {size}: the updated {net} parameters")


@judge.question("q4_pieces")
def q4_pieces(ctx: Context) -> None:
    """Capstone A's pieces that the baseline and the chosen switches reach,
    each a part of its own; the others are not judged (not met), unless this
    is the recording of the reference (every piece is). Then minibatch_update,
    the step train() takes (:func:`_check_minibatch`), in the configurations
    of the student's experiment (in the recording: of the whole menu)."""
    try:
        names = chosen(ctx)
    except Fail:
        names = []                          # CHOSEN unreadable: the baseline's pieces (q3 says)
    hps = [config_hp(ctx, n) for n in ["baseline", *names]]
    wanted = set(A_PIECE_PARTS.values()) if ctx.recording else reached(hps)
    unused = []
    for part_id, fn in A_PIECE_PARTS.items():
        with ctx.part(part_id) as part:
            if fn not in wanted:
                unused.append(f"{fn}()")
                continue
            for case in part.cases():
                _check_a_piece(ctx, part_id, case)
    # The recording of the reference steps every configuration of the menu, so that any
    # student's choice finds its public expected values.
    steps = list(menu(ctx)) if ctx.recording else names
    with ctx.part(MINIBATCH_PART) as part:
        for case in part.cases():
            _check_minibatch(ctx, case, steps)
    if unused:
        ctx.note(f"     not graded: {', '.join(unused)} (neither your baseline nor your five "
                 "switches call them)")


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


def _plain(value):
    """``value`` (plain data through the gate) with numpy's arrays and scalars
    as Python's lists and numbers, so that feedback prints ``4``, never
    ``array(4)`` or ``np.float64(4.0)``."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist() if np.size(value) < 100 else f"<array of shape {np.shape(value)}>"
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in list(value.items())[:100]}
    if isinstance(value, (list, tuple)):
        plain = [_plain(v) for v in list(value)[:100]]
        return tuple(plain) if isinstance(value, tuple) else plain
    return value


def _shown(value) -> str:
    return repr(_plain(value))[:60]


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


def rerun_band(params: dict, spreads: dict, config: str) -> float:
    """How far a full run of ``config`` may legitimately differ from the
    student's per-seed number: ``max(rerun_band_floor, rerun_band_spread *
    spread)``, ``spreads[config]`` the spread of ``config``'s per-seed numbers
    over the study's ``table_seeds`` (``[hidden.spread]``: float order and BLAS
    kernels move a chaotic config's runs more, and twelve seeds show how
    chaotic it is)."""
    return max(params["rerun_band_floor"], params["rerun_band_spread"] * float(spreads[config]))


def table_cells(names: list[str], seeds: list[int]) -> list[tuple[str, int]]:
    """The cells of a student's table in row order (baseline, then CHOSEN's
    order; seeds within): what the judge's runs go through."""
    return [(c, s) for c in ["baseline", *names] for s in seeds]


TABLE_WORDS = ("run the notebook's experiment cell (section 3) with the code you submit and "
               "submit the ablation_results.json it writes")
NOT_THE_CODES = ("your table is not what your code gives: " + TABLE_WORDS)


def read_table(ctx: Context) -> dict:
    """The student's table, ``results_table()``'s ``{config: [[seed, *numbers,
    *curve], ...]}`` (the numbers of ``rlkit.study.MEASURES`` in that order,
    then the learning curve of ``updates`` entries, ``rlkit.study.curve_row``),
    as {config: {seed: {"number": the per-seed number of ``[params] per_seed``,
    "final": the other, "curve": (updates,) array}}}; at most MAX_ROWS rows.
    Fail when it is no such table, or a number is not its curve's."""
    p = ctx.params
    width = 1 + len(MEASURES) + p["updates"]
    by_key = {_canonical(n): n for n in menu(ctx)}
    raw = ctx.ask("results_table", answer=Table(Anything(), MAX_ROWS))
    if not raw:
        raise ctx.fail("results_table() returned no rows: run the notebook's experiment, which "
                       "writes ablation_results.json, and submit that file", fn="results_table")
    out: dict = {}
    rows = 0
    column = MEASURES.index(p["per_seed"])
    for name, pairs in raw.items():
        try:
            pairs = Rows(width, MAX_ROWS).admit(pairs, f"results_table()['{name[:60]}']")
        except Exception as e:  # noqa: BLE001 - the gate's refusal, in words
            raise ctx.fail(f"{one_line(str(getattr(e, 'message', e)))}: each row holds the "
                           f"seed, the {len(MEASURES)} numbers and the learning curve of "
                           f"{p['updates']} updates", Kind.SHAPE,
                           diagnosis=f"a table of another shape (an older notebook?): "
                                     f"{TABLE_WORDS}", fn="results_table") from None
        numbers, curves = pairs[:, 1:1 + len(MEASURES)], pairs[:, 1 + len(MEASURES):]
        if np.any((numbers < 0.0) | (numbers > 500.0)) or np.any(
                ((curves < 0.0) & (curves != NONE_FINISHED)) | (curves > 500.0)):
            raise ctx.fail(f"'{name[:80]}': a return outside [0, 500] is not a CartPole return",
                           fn="results_table")
        config = "baseline" if _canonical(name) == "baseline" else \
            by_key.get(_canonical(name), name[:80])
        for row in pairs[:MAX_ROWS - rows]:
            numbers, curve = row[1:1 + len(MEASURES)], row[1 + len(MEASURES):]
            number, mean = float(numbers[column]), mean_of_curve_row(curve)
            if p["per_seed"] == "mean_training_return" and not (
                    abs(number - mean) <= 1e-9 * max(1.0, abs(mean))):
                raise ctx.fail(f"'{config}', seed {int(row[0])}: your table's number "
                               f"{number:.6g} is not the mean of its own learning curve "
                               f"({mean:.6g})", diagnosis=NOT_THE_CODES, fn="results_table")
            out.setdefault(config, {})[int(row[0])] = {
                "number": number, "final": float(numbers[1 - column]), "curve": curve}
        rows += len(pairs)
        if rows >= MAX_ROWS:
            break
    return out


def table_of_experiment(ctx: Context, names: list[str]) -> dict:
    """The student's table (:func:`read_table`) when it stands on an experiment
    of the assignment's configuration and menu, covering the baseline and
    every chosen entry on every seed; else Fail naming what is off."""
    diffs = experiment_differences(ctx)
    if diffs:
        raise ctx.fail(f"your BASELINE or MENU is not the assignment's, so your table is not "
                       f"this experiment's: {'; '.join(diffs[:4])}" + (
                           f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else ""),
                       diagnosis="restore BASELINE and MENU as given and run the experiment "
                                 "again", fn="experiment_config")
    table = read_table(ctx)
    for n in ["baseline"] + names:
        missing = [s for s in ctx.params["seeds"] if s not in table.get(n, {})]
        if missing:
            raise ctx.fail(f"your table lacks '{n}' on seeds {missing}: run the notebook's "
                           "experiment for every chosen entry", fn="results_table")
    return table


def numbers_of(table: dict, seeds: list[int]) -> dict[str, np.ndarray]:
    """{config: (seeds,) per-seed numbers} of a :func:`read_table` table."""
    return {c: np.array([cells[s]["number"] for s in seeds]) for c, cells in table.items()
            if all(s in cells for s in seeds)}


def judge_table(ctx: Context) -> tuple[dict, dict]:
    """The judge's stored table (the reference's per-seed numbers on the
    grading seeds, ``[hidden.table]``) and the robust verdicts."""
    table = {k: np.asarray(v, dtype=np.float64) for k, v in ctx.hidden["table"].items()}
    return table, dict(ctx.hidden["verdict"])


def graded_verdict(table: dict, verdict: Optional[dict], name: str) -> str:
    """"yes" / "no" where ``table`` and the robust class agree, else "either";
    with no classes (a handout), the criterion on ``table`` alone."""
    q = qualifies(table["baseline"], table[name])
    if verdict is None:
        return "yes" if q else "no"
    cls = verdict.get(name, "borderline")
    if cls == "yes" and q:
        return "yes"
    if cls == "no" and not q:
        return "no"
    return "either"


def loop_of_train(ctx: Context, names: list[str]) -> tuple[Optional[str], list[str]]:
    """Whether the judge's loop stands for the student's ``train()`` (q3's
    check, at its sizes, on the ``check`` case): ``(slip, departing)``, the
    recipe slip its baseline matches ("" none, None one the judge cannot
    name) and the chosen entries whose switch departs from the judge's loop
    (with that slip)."""
    seed = ctx.cases_in("check")[0].seed
    base_hp = {**_hp(ctx), **ctx.params["switch_hp"]}
    try:
        got = _trained(ctx, seed, base_hp)
        if _same_run(ctx, got, _judge_run(ctx, seed, base_hp, "", "")):
            slip: Optional[str] = ""
        else:
            slip = slip_of(ctx, seed, base_hp, got) or None
    except Fail:
        return None, []
    if slip is None:
        return None, []
    departing = []
    for name in names:
        hp = config_hp(ctx, name, base_hp)
        try:
            if not _same_run(ctx, _trained(ctx, seed, hp), _judge_run(ctx, seed, hp, "", slip)):
                departing.append(name)
        except Fail:
            departing.append(name)
    return slip, departing


class _Cell:
    """One run of the judge's: a cell of the student's table (``full``: to the
    end, else its first ``prefix_updates``), its curve and number."""

    def __init__(self, config: str, seed: int, full: bool):
        self.config, self.seed, self.full = config, seed, full
        self.curve: Optional[list] = None
        self.number: Optional[float] = None
        self.error: Optional[Fail] = None


# The constants that no piece reads: the claim (q5), the written answers (q6, q7) and the
# experiment's declaration (BASELINE and MENU: the judge's runs take the assignment's). The fast
# tier's memo of the judge's runs (tests only: ``Context.memoised``) may share a run between
# trusted submissions that differ in these alone.
UNREAD_BY_PIECES = ("CHOSEN", "FACTORS", "WHY", "LITERATURE", "BASELINE", "MENU")


def _run_cell(ctx: Context, cell: _Cell, slip: str) -> tuple:
    """The judge's run of ``cell`` in a fresh worker, the submission's pieces
    checked call by call: ``(curve or None, the Fail that stopped it or None,
    {fn: the first mismatch in words})``."""
    p = ctx.params
    pieces = ctx.oracle_fn("checked_pieces.checked")(
        ctx, share=p["spot_share"], rtol=p["spot_rtol"], atol=p["spot_atol"],
        prefix=p["prefix_updates"],
        rng=ctx.instance_rng(f"{ctx.question.name}/spot/{cell.config}/{cell.seed}"))

    def at(u: int) -> None:
        pieces.update = u
        pieces.where = f"'{cell.config}', seed {cell.seed}, update {u}"
    try:
        with ctx.fresh_worker():
            run, _ = _loop(ctx, cell.seed, config_hp(ctx, cell.config), p["updates"],
                           f"running '{cell.config}', seed {cell.seed}", slip=slip,
                           pieces=pieces, on_update=at,
                           stop_after=None if cell.full else p["prefix_updates"])
    except Fail as e:                      # a piece raised or failed the gate in this run
        return None, e, dict(pieces.mismatches)
    return curve_row(run.episode_returns), None, dict(pieces.mismatches)


def run_experiment(ctx: Context, names: list[str], slip: str, full: bool) -> tuple[list, dict]:
    """The judge's runs of the student's experiment, every cell of the table
    (baseline, then CHOSEN's order; seeds within), each in a fresh worker with
    the submission's pieces (checked against the reference's answers call by
    call, ``oracles.checked_pieces``) and switches (the judge's loop, off the
    recipe by ``slip``). With ``full`` every cell runs to the end while the
    runs can stand for the claim: once a piece answered otherwise or a run
    stopped, the cells left run their first ``prefix_updates`` updates only
    (they still check the pieces and the table's first updates), as every
    cell does without ``full`` (train() is not the judge's loop: q3). Returns
    the cells (:class:`_Cell`) and the pieces' mismatches ({fn: words})."""
    p = ctx.params
    cells = [_Cell(c, s, full) for c, s in table_cells(names, list(p["seeds"]))]
    mismatches: dict[str, str] = {}
    for done, cell in enumerate(cells):
        if mismatches or any(c.error is not None for c in cells):
            cell.full = False              # these runs no longer stand for the claim
        ctx.progress_line = (f"the judge's runs of your experiment: {done} of {len(cells)} "
                             f"done when it stopped")
        if ctx.on_case is not None:
            name = f"run '{cell.config}', seed {cell.seed}" + (" (in full)" if cell.full else "")
            ctx.on_case(Case(ctx.question.name, name, False, "run", "", name), done + 1,
                        len(cells))
        key = ("q5-run", cell.config, cell.seed, cell.full, slip, p["updates"],
               p["prefix_updates"], p["spot_share"], p["spot_rtol"], p["spot_atol"],
               json.dumps(config_hp(ctx, cell.config), sort_keys=True, default=str))
        # (The memo, tests only, may share a run between submissions of the same code whatever
        # their draws: a draw decides only which of the tail's answers are compared, and the
        # trusted code it serves answers alike on every call of a kind.)
        cell.curve, cell.error, found = ctx.memoised(
            key, lambda cell=cell: _run_cell(ctx, cell, slip), ignore=UNREAD_BY_PIECES)
        if cell.curve is not None and cell.full:
            cell.number = mean_of_curve_row(cell.curve)
        for fn, words in found.items():
            mismatches.setdefault(fn, words)
    ctx.progress_line = ""
    return cells, mismatches


def judged_numbers(cells: list) -> Optional[dict]:
    """{config: (seeds,) per-seed numbers} of the judge's runs, where every
    cell ran to the end (else None: no table of the judge's stands)."""
    if not cells or not all(c.full and c.number is not None for c in cells):
        return None
    out: dict = {}
    for c in cells:
        out.setdefault(c.config, []).append(c.number)
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def vouch(ctx: Context, cells: list, table: dict) -> tuple[list[str], float]:
    """How the student's table and the judge's runs differ, one line per cell
    (none: the runs vouch for the table), and the largest share of its band
    a full cell used."""
    p = ctx.params
    k, off, used = p["prefix_updates"], [], 0.0
    for cell in cells:
        mine = table[cell.config][cell.seed]
        where = f"'{cell.config}', seed {cell.seed}"
        if cell.error is not None:
            off.append(f"{where}: the judge's run stopped ({one_line(str(cell.error))[:160]})")
            continue
        ran = np.asarray(cell.curve)
        n = len(ran) if cell.full else k
        bad = np.flatnonzero(np.abs(mine["curve"][:n] - ran[:n]) > 1e-9 * np.maximum(
            1.0, np.abs(ran[:n])))
        if bad.size and bad[0] < k:
            u = int(bad[0])
            off.append(f"{where}: your learning curve at update {u} is {_curve_text(mine['curve'][u])}"
                       f", the judge's run gives {_curve_text(ran[u])} (no float order changes "
                       f"a run's first {k} updates)")
            continue
        if cell.full:
            band = rerun_band(p, ctx.hidden["spread"], cell.config)
            used = max(used, abs(mine["number"] - cell.number) / band)
            if abs(mine["number"] - cell.number) > band:
                off.append(f"{where}: your number {mine['number']:.1f}, the judge's full run "
                           f"{cell.number:.1f} (further apart than the band of "
                           f"{band:.1f} that float order and BLAS kernels can move it)")
    return off, used


def _curve_text(x: float) -> str:
    return "no finished episode" if x == NONE_FINISHED else f"{x:.4g}"


def _table_lines(ctx: Context, cells: Optional[list], table: Optional[dict],
                 names: list[str]) -> list[str]:
    """Feedback: the student's table beside the judge's runs, per row (a run to
    the end by its number, a shorter one by its first updates)."""
    seeds = list(ctx.params["seeds"])
    k = ctx.params["prefix_updates"]
    lines = []
    for config in ["baseline", *names]:
        mine = (table or {}).get(config, {})
        yours = "/".join(f"{mine[s]['number']:.1f}" if s in mine else "-" for s in seeds)
        judged, row = [], [c for c in cells or [] if c.config == config]
        for cell in row:
            if cell.error is not None:
                judged.append("stopped")
            elif cell.full:
                judged.append(f"{cell.number:.1f}")
            else:
                judged.append(f"first {k} updates " + "/".join(_curve_text(x)
                                                               for x in cell.curve[:k]))
        sep = "/" if all(c.full and c.error is None for c in row) else " | "
        lines.append(f"     '{config}': yours {yours}"
                     + (f"; the judge's runs {sep.join(judged)}" if judged else ""))
    return lines


@judge.question("q5_experiment")
def q5_experiment(ctx: Context) -> None:
    """The judge runs the student's experiment (Gradescope, PrairieLearn),
    grades whether the table is what the code gives, and grades the claim on
    the numbers of its own runs; in a handout, the table's own consistency and
    the bar on it."""
    p = ctx.params
    seeds = list(p["seeds"])
    try:
        names = chosen(ctx)
    except Fail as e:                       # nothing to run, nothing to grade: one cause
        for part_id in ("runs", "table", "bar", "verdicts"):
            ctx.record_failure(part_id, e)
        return
    # An unreadable FACTORS is the claim's cause alone: the runs and the table stand on CHOSEN.
    named: list[str] = []
    unreadable: Optional[Fail] = None
    try:
        named = factors(ctx, names)
    except Fail as e:
        unreadable = e
    table, problem = None, None
    try:
        table = table_of_experiment(ctx, names)
    except Fail as e:
        problem = e
    runs_here = ctx.has_oracles()           # the judge's loop and the oracles: not in a handout
    cells = mismatches = None
    slip: Optional[str] = ""
    departing: list[str] = []
    with ctx.part("runs") as part:
        if not runs_here:
            part.met = False
        else:
            slip, departing = loop_of_train(ctx, names)
            cells, mismatches = run_experiment(ctx, names, slip or "",
                                               slip is not None and not departing)
            ctx.measure("runs", len(cells))
            stopped = [c for c in cells if c.error is not None]
            if mismatches:
                fn, words = next(iter(mismatches.items()))
                others = [f"{f}()" for f in mismatches if f != fn]
                raise Fail(words + (f"; so do {', '.join(others)}" if others else ""),
                           diagnosis=f"{_piece_name(fn)} answers otherwise inside a run than "
                                     "the reference does to the same inputs (a piece must not "
                                     "depend on where it is called)", fn=fn)
            if stopped:
                raise Fail(f"the judge's run of '{stopped[0].config}', seed {stopped[0].seed} "
                           f"stopped: {one_line(str(stopped[0].error))}",
                           stopped[0].error.kind, stopped[0].error.diagnosis,
                           stopped[0].error.fn)
    with ctx.part("table"):
        if problem is not None:
            raise problem
        if runs_here:
            if slip is None:
                raise Fail("not judged: your train() is not the judge's loop (q3's baseline), "
                           "so the judge's runs cannot stand for what your code gives",
                           Kind.NOT_JUDGED, "fix train() without a switch first",
                           fn="train_arrays")
            if departing:
                raise Fail(f"not judged: your train() with {departing} on is not the judge's "
                           "loop with it (q3), so the judge's runs of those rows cannot stand "
                           "for your code's", Kind.NOT_JUDGED,
                           "fix the switch in train() first", fn="train_arrays")
            if cells is None:
                raise Fail("not judged: the judge's runs did not finish", Kind.NOT_JUDGED)
            off, used = vouch(ctx, cells, table)
            ctx.measure("max_band_share", used)
            if off:
                raise Fail("; ".join(off[:2]) + (f" (and {len(off) - 2} more cells)"
                                                 if len(off) > 2 else ""),
                           diagnosis=NOT_THE_CODES, fn="results_table")
    # The claim: on the numbers of the judge's own runs of the student's code, every cell to the
    # end, when they stand for it (train() is the judge's loop, every piece answered as the
    # reference's, every run finished); else on the judge's stored table. Never on a number
    # that only the student's table holds (in a handout, where nothing runs, on that table).
    verdicts = ctx.hidden.get("verdict")
    judged = judged_numbers(cells) if runs_here and cells is not None and not mismatches \
        else None
    if runs_here and cells is not None and all(c.error is not None for c in cells):
        # No run of the student's experiment finished: no experiment stands behind the claim
        # (the judge's stored table would grade a claim made without code).
        claim, whose = None, ""
        problem = Fail("no claim is graded: none of the judge's runs of your experiment "
                       "finished (see the runs above), so no experiment of your code stands "
                       "behind it", Kind.NOT_JUDGED,
                       "make your pieces and train() run first (q1-q4)", fn="train_arrays")
    elif judged is not None:
        claim, whose = judged, "the judge's runs of your code"
    elif runs_here:
        claim = judge_table(ctx)[0]
        why = ("your train() is not the judge's loop (q3)" if slip is None else
               f"your train() with {departing} on is not the judge's loop (q3)" if departing
               else "your pieces answered otherwise in its runs" if mismatches
               else "a run of your experiment stopped")
        whose = f"the judge's stored table (the reference on the same seeds: {why})"
    elif table is not None:
        claim, whose = numbers_of(table, seeds), "your table"
    else:
        claim, whose = None, ""
    if runs_here and cells is not None:
        full = sum(c.full for c in cells)
        k = p["prefix_updates"]
        done = ("every cell to the end" if full == len(cells) else
                f"{full} cells to the end, then the first {k} updates of the others (what "
                "they showed settles the claim)" if full else
                f"every cell's first {k} updates (your train() is not the judge's loop, so "
                "runs to the end would not be your experiment)")
        ctx.note(f"     the judge ran your experiment, each run in a fresh worker with your "
                 f"pieces (checked call by call): {done}. Your table beside the judge's runs:")
    for line in _table_lines(ctx, cells, table, names):
        ctx.note(line)
    judge_claim(ctx, names, named, claim, verdicts, whose, problem, unreadable)


def judge_claim(ctx: Context, names: list[str], named: list[str], claim: Optional[dict],
                verdicts: Optional[dict], whose: str, problem: Optional[Fail] = None,
                unreadable: Optional[Fail] = None) -> None:
    """q5's claim parts: the bar and the verdicts, on the table ``claim``
    ({config: per-seed numbers}, named ``whose`` in feedback), graded where the
    robust class (``verdicts``; None in a handout: not judged) agrees with it.
    With no table to grade on, both fail with ``problem``; with a FACTORS
    that does not read (``unreadable``), both fail with that (the table's
    lines are still shown)."""
    graded = {}
    if claim is not None:
        base = claim["baseline"]
        ctx.note(f"     the claim is graded on {whose}, per seed the "
                 f"{ctx.params['per_seed'].replace('_', ' ')}: baseline median "
                 f"{np.median(base):.1f}, spread {spread(base):.1f}")
        for n in names:
            graded[n] = graded_verdict(claim, verdicts, n)
            q = qualifies(base, claim[n])
            ctx.note(f"     '{n}': |{np.median(claim[n]):.1f} - {np.median(base):.1f}| "
                     f"{'>' if q else '<='} max({spread(base):.1f}, {spread(claim[n]):.1f}): "
                     f"{'qualifies' if q else 'does not'}"
                     + (f"; over many seed triples: {verdicts.get(n, 'borderline')}"
                        + (" (either answer accepted)" if graded[n] == "either" else "")
                        if verdicts is not None else ""))
    with ctx.part("bar"):
        if claim is None:
            raise problem or Fail("no table to grade the claim on")
        if unreadable is not None:
            raise unreadable
        if not named:
            raise Fail("you name no factor; " + _movers_text(claim, names, graded, whose))
        if not any(graded[n] != "no" for n in named):
            raise Fail(f"{named}: none qualifies in {whose}")
    with ctx.part("verdicts") as part:
        if verdicts is None:
            part.met = False
        elif claim is None:
            raise problem or Fail("no table to grade the claim on")
        elif unreadable is not None:
            raise unreadable
        else:
            missed = [n for n in names if graded[n] == "yes" and n not in named]
            wrong = [n for n in named if graded[n] == "no"]
            if missed or wrong:
                raise Fail("; ".join(
                    ([f"not named, but they qualify in {whose} and over many seed triples: "
                      f"{missed}"] if missed else []) +
                    ([f"named, but they qualify neither in {whose} nor over many seed "
                      f"triples: {wrong}"] if wrong else [])))


def _movers_text(claim: dict, names: list[str], graded: dict, whose: str) -> str:
    """The bar's words on what the student could have named: the choices that
    qualify in ``claim`` (by the criterion, on that table: no other), and,
    only where none does, those accepted either way (their verdict over many
    seed triples is not this table's), named as not qualifying."""
    movers = [n for n in names if qualifies(claim["baseline"], claim[n])]
    if movers:
        return f"in {whose} {movers} qualify"
    either = [n for n in names if graded[n] != "no"]
    if either:
        return (f"none of your five qualifies in {whose}, though naming {either} is accepted "
                "(over many seed triples their verdict is not this table's)")
    return f"none of your five qualifies in {whose}: choose other details"


def _piece_name(fn: str) -> str:
    return f"capstone A's {fn}() (your ppo.py)" if fn in A_PIECES else \
        f"your {fn}() (ablations.py)"


# ----------------------------------------------------------------------------- q6, q7: by hand
@judge.question("q6_why")
def q6_why(ctx: Context):
    """The written reasons, carried into results.json for grading by hand."""
    text = ctx.constant("WHY")
    if not isinstance(text, str) or not text.strip():
        return hand_graded(["no written answer found: WHY is empty or not a string. One "
                            "sentence of why per factor is graded by hand with the rubric."], answered=False)
    lines = ["One sentence of why per factor: 0 points here, graded by hand with the rubric "
             f"(its criteria: {RUBRIC_WHERE}). Your WHY:", text.strip()]
    try:
        named = factors(ctx, chosen(ctx))
        absent = [n for n in named if _canonical(n) not in _canonical(text)]
        if absent:
            lines.insert(0, f"note: WHY does not mention {absent} by name")
    except Fail as e:
        lines.insert(0, f"note: {e}")
    return hand_graded(lines)


def literature_section(ctx: Context) -> list[str]:
    """The handout's closing section: the menu's verdicts (``[hidden.verdict]``)
    beside the large-scale study of on-policy choices, row by row
    (``[hidden.literature]``); empty where ``[hidden]`` is not shipped."""
    rows, verdicts = ctx.hidden.get("literature"), ctx.hidden.get("verdict")
    if not rows or not verdicts:
        return []
    words = {"yes": "matters (robust)", "no": "does not matter (robust)",
             "borderline": "borderline (flips between seed triples)"}
    out = [" ".join(ctx.hidden.get("closing", {}).get("intro", "").split()), ""]
    for name in menu(ctx):
        row = rows.get(name)
        if row is None:
            continue
        out += [f"* {name}: CartPole, {words.get(verdicts.get(name), '?')}.",
                f"  The paper: {' '.join(row['paper'].split())}",
                f"  Here: {' '.join(row['here'].split())}"]
    return out


@judge.question("q7_literature")
def q7_literature(ctx: Context):
    """The paragraph comparing the student's five with the literature, carried
    to results.json for grading by hand, and (where the grader's [hidden]
    table is, i.e. after grading) the closing section it is compared with."""
    text = ctx.constant("LITERATURE")
    lines = []
    if not isinstance(text, str) or not text.strip():
        lines.append("no written answer found: LITERATURE is empty or not a string. One "
                     "paragraph comparing your five with the study of on-policy choices is "
                     "graded by hand with the rubric.")
    else:
        lines += ["One paragraph comparing your five with the literature: 0 points here, "
                  f"graded by hand with the rubric (its criteria: {RUBRIC_WHERE}). Your "
                  "LITERATURE:", text.strip()]
    closing = literature_section(ctx)
    if closing:
        lines += ["", "The closing section: what the study found, row by row, beside this "
                  "capstone's menu:", *closing]
    return hand_graded(lines, answered=isinstance(text, str) and bool(text.strip()))


QUESTIONS = judge.questions
