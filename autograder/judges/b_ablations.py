"""Judge of capstone B: which PPO implementation details matter.

* The new pieces (observation normalisation, a shared network's gradients)
  are unit-checked on judge-made data, like capstone A's.
* Each of the student's five chosen switches is checked to do what it names
  and nothing else: the student's ``train`` with that switch on, for a few
  updates at small sizes, must give the networks the judge's own loop
  (``oracles.ablation_loop``, with the student's pieces) gives with the
  switch on; matching the switch-off networks means it does nothing,
  matching neither means it changes something else too. Switches that act
  on the advantages are also checked on a rollout with time-limit ends.
* The claim is graded against the judge's table (``[hidden.table]``: the
  reference's median returns on the grading seeds, measured by
  ``bench/ablations_table.py`` and stored as numbers), only where the
  verdict is robust (``[hidden.verdict]``); the student's own table is
  compared with it in feedback.
No training runs at grade time beyond the few small updates of the switch
checks. Every input is a declared case of assignment.toml (``[[questions.cases]]``).
"""
from __future__ import annotations

import numpy as np

from rlkit.agent import collect_rollout, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, flatten, forward
from rlkit.variants import OBS_COUNT0, init_shared_networks, shared_layers

from ..grading.judging import (Context, Fail, Outcome, ProbeRaised, ReferenceFailed,
                               Scorecard, as_float_array, compare)
from .ablation_pieces import AblationPieces

# The menu: name -> the ONE hyper-parameter change that ablates the detail. The
# handout's ``ablations.MENU`` is this table (a test checks).
MENU = {
    "no advantage normalisation": {"norm_adv": False},
    "no learning-rate annealing": {"anneal_lr": False},
    "no gradient clipping": {"max_grad_norm": None},
    "clipped value loss": {"clip_vloss": True},
    "entropy bonus 0.01": {"ent_coef": 0.01},
    "Adam epsilon 1e-8": {"adam_eps": 1e-8},
    "no bootstrap at truncation": {"bootstrap_truncation": False},
    "Monte Carlo returns (lambda = 1)": {"gae_lambda": 1.0},
    "one minibatch (full batch)": {"num_minibatches": 1},
    "4 epochs instead of 10": {"update_epochs": 4},
    "shared network": {"shared_network": True},
    "observation normalisation": {"norm_obs": True},
}
ADVANTAGE_SWITCHES = ("bootstrap_truncation", "gae_lambda")   # also unit-checked on a rollout
MAX_ROWS = 200            # rows of a student's table the judge reads


# ----------------------------------------------------------------------------- helpers
def _hp(ctx: Context) -> dict:
    hp = dict(ctx.params["hp"], target_kl=None)
    hp["hidden"] = tuple(hp["hidden"])
    return hp


def _pieces(ctx: Context) -> AblationPieces:
    return AblationPieces(ctx.call)


def _canonical(name: str) -> str:
    return " ".join(name.lower().split())


MENU_BY_KEY = {_canonical(n): n for n in MENU}


def parse_names(text, what: str, allow_none: bool = False) -> list[str]:
    """Menu names from a ``;``-separated string (case and spacing free), or Fail."""
    if not isinstance(text, str) or not text.strip():
        raise Fail(f"{what} is empty or not a string: write menu names separated by ';'")
    parts = [_canonical(p) for p in text.replace("\n", ";").split(";") if p.strip()]
    if allow_none and parts == ["none"]:
        return []
    unknown = [p for p in parts if p not in MENU_BY_KEY]
    if unknown:
        raise Fail(f"{what}: {unknown[:3]} not in the menu (MENU's names, separated by ';')")
    names = [MENU_BY_KEY[p] for p in parts]
    if len(set(names)) != len(names):
        raise Fail(f"{what} names a menu entry twice")
    return names


def chosen(ctx: Context) -> list[str]:
    names = parse_names(ctx.constant("CHOSEN"), "CHOSEN")
    want = ctx.params["chosen"]
    if len(names) != want:
        raise Fail(f"CHOSEN names {len(names)} menu entries; choose exactly {want}")
    return names


def factors(ctx: Context, picked: list[str]) -> list[str]:
    names = parse_names(ctx.constant("FACTORS"), "FACTORS", allow_none=True)
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


def _judge_run(ctx: Context, seed: int, hp: dict):
    """The judge's loop with the submission's pieces: (flat distinct parameters,
    flat ``policy_params + value_params``, obs stats or None)."""
    run = ctx.oracle_fn("ablation_loop.train")(_pieces(ctx), seed, hp,
                                               ctx.params["switch_updates"])
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
        ctx.check(key, label, got, want, rtol=1e-10, atol=1e-10)


def _check_switch(ctx: Context, name: str, base_hp: dict, baseline: dict) -> None:
    p = ctx.params
    hp = {**base_hp, **MENU[name]}
    if set(MENU[name]) & set(ADVANTAGE_SWITCHES):
        _check_advantages(ctx, name, {**_hp(ctx), **MENU[name]})
    for case in ctx.cases():
        key = f"q3/{name}/train/{case.name}"
        label = f"train() with '{name}' on ({case.name})"
        with ctx.case(key, label):            # a hidden case's failure: its kind + diagnosis
            got, got_all, got_stats = _train_result(
                ctx.call("train_arrays", case.seed, p["switch_updates"], hp), hp)
            want, want_all, want_stats = _judge_run(ctx, case.seed, hp)
            off = baseline.get(case.name)
            if _close(got, want, p["switch_rtol"]) and (
                    want_stats is None or _close(got_stats, want_stats, p["switch_rtol"])):
                continue
            # The diagnosis names no input and no expected value: shown even for hidden cases.
            if off is not None and _close(got_all, off, p["switch_rtol"]) \
                    and not _close(want_all, off, p["switch_rtol"]):
                raise Fail(f"{label}: your networks are the baseline's", diagnosis=(
                    f"the switch does nothing (it should set {MENU[name]})"))
            raise Fail(f"{label}: your networks match neither the judge's loop with only this "
                       "switch on nor the baseline", diagnosis=(
                           f"the switch changes something besides {MENU[name]} (or your loop "
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
    baseline, base_label = {}, "train() with no switch matches the judge's loop (the baseline)"
    with card.part(base_label, 0):
        for case in ctx.cases():
            key, label = f"q3/baseline/{case.name}", f"train() baseline ({case.name})"
            with ctx.case(key, label):
                want, baseline[case.name], _ = _judge_run(ctx, case.seed, base_hp)
                got, _, _ = _train_result(ctx.call("train_arrays", case.seed,
                                                   p["switch_updates"], base_hp), base_hp)
            ctx.check(key, label, got, want, rtol=p["switch_rtol"], atol=1e-10)
    for name in names:
        with card.part(f"switch '{name}' ({MENU[name]}) does that and nothing else", 1):
            _check_switch(ctx, name, base_hp, baseline)
    return card.outcome()


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


def q4_claim(ctx: Context) -> Outcome:
    card = Scorecard()
    ctx.nothing_to_record("q4/claim")
    table, verdict = judge_table(ctx)
    try:
        names = chosen(ctx)
        named = factors(ctx, names)
    except Fail as e:
        for label, w in (("the bar", 2), ("the verdicts", 2)):
            with card.part(label, w):
                raise e
        return card.outcome()
    base = table["baseline"]
    card.note(f"     the judge's table (the reference on seeds {ctx.params['seeds']}): "
              f"baseline medians {base.tolist()}, median {np.median(base):.1f}, spread "
              f"{spread(base):.1f}")
    graded = {}
    for n in names:
        abl = table[n]
        graded[n] = graded_verdict(table, verdict, n)
        card.note(f"     '{n}': medians {abl.tolist()}, median {np.median(abl):.1f}, spread "
                  f"{spread(abl):.1f}: {'qualifies' if qualifies(base, abl) else 'does not'}"
                  f" here; over many seed triples: {verdict.get(n, 'borderline')}"
                  + ("  (borderline: either answer accepted)" if graded[n] == "either" else ""))
    mine = _student_table(ctx)
    if mine:
        for n in ["baseline"] + names:
            if n in mine:
                card.note(f"     your table, '{n}': {sorted(mine[n].items())} vs the judge's "
                          f"{table[n].tolist()} (feedback only: float order changes runs)")
    with card.part("the bar: a factor you name moves the median beyond the spread in the "
                   "judge's table", 2):
        if not named:
            movers = [n for n in names if graded[n] != "no"]
            raise Fail("you name no factor" + (
                f"; in the judge's table {movers} qualify (or are borderline)" if movers else
                "; none of your five qualifies in the judge's table: choose other details"))
        if not any(graded[n] != "no" for n in named):
            raise Fail(f"{named}: none qualifies in the judge's table")
    with card.part("the verdicts: every robustly qualifying choice named, no robustly harmless "
                   "one named", 2):
        missed = [n for n in names if graded[n] == "yes" and n not in named]
        wrong = [n for n in named if graded[n] == "no"]
        if missed or wrong:
            raise Fail("; ".join(
                ([f"not named, but they qualify robustly: {missed}"] if missed else []) +
                ([f"named, but robustly harmless: {wrong}"] if wrong else [])))
    return card.outcome()


def _student_table(ctx: Context) -> dict:
    """The student's table as {config: {seed: median}}, or {} (feedback only)."""
    try:
        return read_table(ctx)
    except (Fail, ProbeRaised):
        return {}


# ----------------------------------------------------------------------------- q5: the table
def read_table(ctx: Context) -> dict:
    """The student's table, ``results_table()``'s ``{config: [[seed, median], ...]}``,
    as {config: {seed: median}}; at most MAX_ROWS rows are read."""
    raw = ctx.call("results_table")
    if not isinstance(raw, dict) or not raw:
        raise Fail("results_table() returned no rows: run the notebook's experiment, which "
                   "writes ablation_results.json, and submit that file")
    out: dict = {}
    rows = 0
    for name, pairs in list(raw.items())[:MAX_ROWS]:
        pairs = as_float_array(f"your table's rows of '{name[:80]}'", pairs,
                               (np.shape(pairs)[0] if np.ndim(pairs) == 2 else -1, 2))
        if np.any((pairs[:, 1] < 0.0) | (pairs[:, 1] > 500.0)):
            raise Fail(f"'{name[:80]}': a median return outside [0, 500] is not a CartPole "
                       "return")
        config = "baseline" if _canonical(name) == "baseline" else \
            MENU_BY_KEY.get(_canonical(name), name[:80])
        for seed, value in pairs[:MAX_ROWS - rows]:
            out.setdefault(config, {})[int(seed)] = float(value)
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
        table = read_table(ctx)
        for n in ["baseline"] + names:
            missing = [s for s in seeds if s not in table.get(n, {})]
            if missing:
                raise Fail(f"your table lacks '{n}' on seeds {missing}")
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
