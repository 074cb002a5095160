"""Capstone B through the real harness: reference, template, the judge's loop
switch by switch, the menu, the judge's table, the handout."""
from __future__ import annotations

import ast
import json
import zipfile

import numpy as np
import pytest

from autograder.commands.shipping import IDIOMS, significant_lines
from autograder.grading import config, judging
from autograder.grading.judging import PUBLIC_PHASE, Context
from autograder.grading.reference import load_reference
from autograder.grading.status import Kind
from autograder.harness.probe import InProcessCaller
from autograder.judges import b_ablations as judge
from autograder.judges.ablation_pieces import AblationPieces
from autograder.oracles.checked_pieces import CheckedPieces
from autograder.oracles import ablation_loop
from instructor import numerics
from conftest import ROOT, built, graded
from rlkit.mlp import flatten
from rlkit.study import MEASURES, curve_row, mean_of_curve_row, per_seed_numbers

B = config.load("b_ablations")
P = B.params
MENU = judge.menu_of(P)
FAST = tuple(q.name for q in B.questions)


def _hp(**extra) -> dict:
    return dict(P["hp"], hidden=tuple(P["hp"]["hidden"]), target_kl=None, **extra)


def _reference():
    return load_reference("b_ablations", "ablations.py")


def _ctx(module, question: str, *, call=None, constants=None, phase: str = PUBLIC_PHASE,
         student_id=None, hidden=None, draw_key: str = "") -> Context:
    """A judging context of ``question`` asking ``module`` in this process
    (``call``: instead, a fake submission; ``constants``: overriding the
    module's)."""
    caller = InProcessCaller(module)
    consts = dict(constants or {})
    return Context(call or caller.call, P, public_only=phase == PUBLIC_PHASE, expected={},
                   public_keys=set(), student_id=student_id,
                   constant=lambda name: consts[name] if name in consts else caller.constant(name),
                   hidden=B.hidden if hidden is None else hidden, question=B.question(question),
                   phase=phase, call_many=caller.call_many, draw_key=draw_key)


def _pieces(module) -> AblationPieces:
    """``module``'s pieces as the judge asks them (through the gate)."""
    return AblationPieces(_ctx(module, "q3_switches"))


def test_reference_gets_full_marks():
    """Sandboxed, every question but the experiment's (q5 runs eighteen full
    trainings: graded on the reference's code in the fast tier by the
    catalogue's correct styles, whose runs the session's memo shares; its
    sandboxed time is bench/bench_grading.py's)."""
    report = graded("b_ablations", "solutions", tuple(q for q in FAST if q != "q5_experiment"))
    assert report.score == report.graded_max_score, report.table()


def test_blank_template_gets_zero():
    report = graded("b_ablations", "student_template")
    assert report.score == 0, report.table()


def test_menu_and_baseline_are_the_judges_and_the_toml():
    """One menu: assignment.toml's, given verbatim in the stub and the
    reference; the baseline is assignment.toml's configuration."""
    menus = []
    for where in ("solutions", "student_template"):
        tree = ast.parse((ROOT / where / "b_ablations" / "ablations.py").read_text())
        menus.append(next(ast.unparse(n) for n in tree.body if isinstance(n, ast.Assign)
                          and n.targets[0].id == "MENU"))
    assert menus[0] == menus[1]
    ref = _reference()
    assert ref.MENU == MENU
    assert {k: v for k, v in ref.BASELINE.items() if k != "target_kl"} == \
        dict(P["hp"], hidden=tuple(P["hp"]["hidden"]))
    assert len(MENU) >= 14


@pytest.mark.parametrize("name", ["baseline", *MENU])
def test_judge_loop_with_reference_pieces_is_the_reference_train(name):
    """Switch by switch, the judge's loop is the reference's train bit for bit
    (small sizes, a few updates): what the switch check compares with."""
    ab = _reference()
    hp = {**_hp(**P["switch_hp"]), **MENU.get(name, {})}
    ref = ab.train(5, P["switch_updates"], hp)
    run = ablation_loop.train(_pieces(ab), 5, hp, P["switch_updates"])
    assert np.array_equal(flatten(ref["policy_params"] + ref["value_params"]),
                          flatten(run.policy_params + run.value_params))
    if hp["norm_obs"]:
        assert np.array_equal(ref["obs_stats"]["var"], run.obs_stats["var"])


def test_every_switch_is_visible_to_the_switch_check():
    """On every switch-check run (public and hidden seeds, the latter as
    three submissions draw them) every menu entry changes the networks, and
    every public run meets terminations and truncations (switch_hp's time
    limit): so a train() that ignores a switch,
    or takes the advantages some other way than advantages_and_returns()
    (no bootstrap at truncation never reaching training), cannot pass. The
    switches acting on advantages are also visible on the rollout cases."""
    ab = _reference()
    pieces = _pieces(ab)
    base = _hp(**P["switch_hp"])

    def run(hp, seed, vetted=True):
        r = ablation_loop.train(pieces, seed, hp, P["switch_updates"])
        # a public seed's runs meet both episode ends; a drawn one's may miss one (1 of 60
        # draws measured), yet every switch still shows (all 60)
        assert not vetted or (r.ends["terminated"] > 0 and r.ends["truncated"] > 0), \
            (hp, seed, r.ends)
        return flatten(r.policy_params + r.value_params)

    # the public cases, and the hidden ones as three submissions draw them
    cases = {(c.group, c.name, c.get("seed")): c for draw in ("", "d1", "d2", "d3")
             for c in _ctx(ab, "q3_switches", phase=judging.ALL_PHASES, student_id="s",
                           draw_key=draw).cases_in("")
             + _ctx(ab, "q3_switches", phase=judging.ALL_PHASES, student_id="s",
                    draw_key=draw).cases_in("rollout")}
    for case in (c for c in cases.values() if c.group == ""):
        off = run(base, case.seed, not case.hidden)
        for name, change in MENU.items():
            on = run({**base, **change}, case.seed, not case.hidden)
            assert not np.allclose(on, off, rtol=1e-5, atol=1e-8), (name, case.name)
    for draw in ("", "d1", "d2", "d3"):
        ctx = _ctx(ab, "q3_switches", phase=judging.ALL_PHASES, student_id="s", draw_key=draw)
        for case in ctx.cases_in("rollout"):
            ro = judge._case_rollout(ctx, case, _hp())
            for name, change in MENU.items():
                if set(change) & set(judge.ADVANTAGE_SWITCHES):
                    on_adv = ab.advantages_and_returns(ro, {**_hp(), **change})
                    off_adv = ab.advantages_and_returns(ro, _hp())
                    assert not np.allclose(on_adv[1], off_adv[1], rtol=1e-6), name


def _judge_table() -> dict:
    return {k: list(v) for k, v in B.hidden["table"].items()}


def _stored_runs() -> dict:
    """{(variant, config, seed): run} of the measured runs the table was written from."""
    out = {}
    for line in (ROOT / "bench" / "data" / "b_ablations_runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["updates"] == P["updates"]:
            out[(r["variant"], r["config"], r["seed"])] = r
    return out


def test_judge_table_covers_the_menu_and_matches_the_measured_runs():
    """The stored table is the measured runs' grading-seed cells of the declared
    per-seed number, every menu entry has a table row and a verdict, and the
    reference's own table is the judge's on its chosen configurations."""
    table = _judge_table()
    assert set(table) == {"baseline", *MENU}
    assert set(B.hidden["verdict"]) == set(MENU)
    runs = _stored_runs()
    for name, values in table.items():
        want = [runs[("reference", name, s)][P["per_seed"]] for s in P["seeds"]]
        assert values == pytest.approx(want, rel=1e-5), name     # stored with 6 digits
    rows = json.loads((ROOT / "solutions" / "b_ablations" / "ablation_results.json").read_text())
    for name, seed, *numbers, curve in rows:
        run = runs[("reference", name, seed)]
        assert numbers == [run[m] for m in MEASURES] and curve == run["curve"]
        assert mean_of_curve_row(curve) == run["mean_training_return"]


def _cell(name: str, seed: int) -> float:
    ab = _reference()
    run = ab.train(seed, P["updates"], MENU[name])
    returns = ab.evaluate_run(run, P["eval_episodes"], seed + P["eval_seed_offset"])
    return per_seed_numbers(run["log"]["episode_returns"], returns)[P["per_seed"]]


@pytest.mark.slow
@pytest.mark.parametrize("name,seed", [("4 epochs instead of 10", 1),
                                       ("one minibatch (full batch)", 2)])
def test_judge_table_cells_recompute_exactly(name, seed):
    """Two cheap cells of the judge's table, recomputed from the reference
    under the stated numerics of ``instructor/numerics.py`` (the table's own):
    to the bit on the kind of CPU that measured them, else within the re-run
    band measured over float orders and BLAS kernels (training is chaotic: this
    machine's AVX-512 kernels move "4 epochs", seed 1, by 23)."""
    out = numerics.run_python(f"import test_b_ablations as t; print(repr(t._cell({name!r}, "
                              f"{seed})))")
    run = _stored_runs()[("reference", name, seed)]
    got, stored = float(out.strip().splitlines()[-1]), run[P["per_seed"]]
    if run["cpu"] == numerics.cpu_name():          # the CPU that stored it: to the bit
        assert got == stored
    else:                                          # another CPU: within the measured band
        assert abs(got - stored) <= judge.rerun_band(P, B.hidden["spread"], name), (got, stored)


def test_handout_holds_no_line_of_capstone_a_solution():
    """B's handout asks the student to bring capstone A: no line of A's
    reference that A's own stub does not give is in it."""
    a_solution = significant_lines((ROOT / "solutions" / "a_ppo" / "ppo.py").read_text())
    a_stub = significant_lines((ROOT / "student_template" / "a_ppo" / "ppo.py").read_text())
    forbidden = a_solution - a_stub - IDIOMS
    with zipfile.ZipFile(built("b_ablations")[0]) as zf:
        for name in zf.namelist():
            if name.endswith((".py", ".ipynb", ".md", ".toml")):
                text = zf.read(name).decode(errors="replace")
                assert not significant_lines(text) & forbidden, name
        assert "b_ablations/assignments/b_ablations/assignment.toml" in zf.namelist()
        toml = zf.read("b_ablations/assignments/b_ablations/assignment.toml").decode()
        assert "[hidden" not in toml and '"shared network" = [' not in toml \
            and '= "yes"' not in toml and "INTERIM" not in toml


def test_verdicts_graded_only_where_robust():
    table = {k: np.array(v) for k, v in _judge_table().items()}
    verdict = B.hidden["verdict"]
    for name in MENU:
        graded_as = judge.graded_verdict(table, verdict, name)
        assert graded_as in ("yes", "no", "either")
        if verdict[name] == "borderline":
            assert graded_as == "either"


# ----------------------------------------------------------------------------- the claim's logic
FIVE = ["shared network", "one minibatch (full batch)", "no gradient clipping",
        "clipped value loss", "entropy bonus 0.01"]
SYNTHETIC = {"baseline": [500.0, 500.0, 500.0], "shared network": [190.0, 160.0, 150.0],
             "one minibatch (full batch)": [476.0, 280.0, 361.5],
             "no gradient clipping": [500.0, 500.0, 500.0],
             "clipped value loss": [500.0, 383.0, 500.0], "entropy bonus 0.01": [300.0] * 3}
CLASSES = {"shared network": "yes", "one minibatch (full batch)": "borderline",
           "no gradient clipping": "no", "clipped value loss": "no",
           "entropy bonus 0.01": "yes"}


def _table_rows(names, number=400.0) -> dict:
    """results_table()'s answer for a complete table: every cell ``number``,
    with a learning curve whose mean it is."""
    curve = [number] * P["updates"]
    return {n: np.array([[s, number, 500.0, *curve] for s in P["seeds"]], dtype=np.float64)
            for n in ["baseline", *names]}


def _experiment_call(names, table=None):
    """A submission's probe answers for q5's reading of the experiment: the
    given configuration and a complete table (by default all 400.0)."""
    ref = _reference()
    rows = _table_rows(names)

    def call(fn, *args, **kwargs):
        if fn == "experiment_config":
            return json.loads(json.dumps({"baseline": ref.BASELINE, "menu": ref.MENU}))
        if fn == "results_table":
            return table if table is not None else rows
        raise AssertionError(fn)
    return call


def _claim(factors: str, classes=None, table=None):
    """q5's claim parts on a table (default SYNTHETIC) and robust classes."""
    named = judge.parse_names(factors, "FACTORS", MENU, allow_none=True)
    ctx = Context(_experiment_call(FIVE), P, public_only=False, expected={},
                  public_keys=set(), question=B.question("q5_experiment"), hidden=B.hidden)
    claim = {k: np.array(v) for k, v in (table or SYNTHETIC).items()}
    judge.judge_claim(ctx, FIVE, named, claim, classes or CLASSES, "the test's table")
    parts = [r for r in ctx.outcome().parts if r.id in ("bar", "verdicts")]
    return sum(r.points for r in parts if r.passed) / sum(r.points for r in parts), parts


@pytest.mark.parametrize("factors,fraction", [
    ("shared network; entropy bonus 0.01", 1.0),                              # exactly right
    ("shared network; entropy bonus 0.01; one minibatch (full batch)", 1.0),  # + borderline
    ("SHARED network;\n entropy bonus 0.01", 1.0),                            # spelling
    ("shared network", 0.5),                              # a robust yes missed
    ("shared network; entropy bonus 0.01; no gradient clipping", 0.5),   # a robust no named
    ("one minibatch (full batch)", 0.5),                  # borderline only: bar ok, yes missed
    ("none", 0.0),                                        # 'none' beside robust yeses
    ("no gradient clipping", 0.0),                        # only a harmless one
])
def test_claim_is_graded_only_where_the_verdict_is_robust(factors, fraction):
    assert _claim(factors)[0] == pytest.approx(fraction)


def test_claim_where_robust_class_and_the_table_disagree_accepts_either():
    """A factor robust 'yes' over many triples that does not qualify in the
    table graded on (and vice versa) is accepted either way."""
    classes = dict(CLASSES, **{"clipped value loss": "yes", "entropy bonus 0.01": "no"})
    assert _claim("shared network")[0] == 0.5
    assert _claim("shared network", classes=classes)[0] == 1.0
    assert _claim("shared network; entropy bonus 0.01", classes=classes)[0] == 1.0


def test_claim_with_no_qualifying_choice_fails_the_bar_but_not_the_verdicts():
    table = {n: [500.0] * 3 for n in ["baseline", *FIVE]}
    classes = {n: "no" for n in FIVE}
    fraction, parts = _claim("none", classes=classes, table=table)
    assert fraction == 0.5
    assert [(r.id, r.passed) for r in parts] == [("bar", False), ("verdicts", True)]
    assert "choose other details" in parts[0].message


def test_the_bar_names_only_the_factors_that_qualify():
    """With FACTORS "none", the bar's line names the choices that qualify in
    the table graded on, never a borderline one that does not (accepted either
    way, it is named as such only where nothing qualifies)."""
    _, parts = _claim("none")
    assert parts[0].message == ("you name no factor; in the test's table ['shared network', "
                                "'entropy bonus 0.01'] qualify")
    table = dict(SYNTHETIC, **{"shared network": [500.0] * 3, "entropy bonus 0.01": [500.0] * 3})
    _, parts = _claim("none", table=table)
    assert parts[0].message == ("you name no factor; none of your five qualifies in the test's "
                                "table, though naming ['shared network', 'one minibatch (full "
                                "batch)', 'entropy bonus 0.01'] is accepted (over many seed "
                                "triples their verdict is not this table's)")


def test_an_unreadable_factors_costs_the_claims_parts_only():
    """A FACTORS that does not read (commas for ';', a name not in CHOSEN)
    fails the bar and the verdicts with that one cause; the table (and, on
    submission, the runs) are graded as ever."""
    for factors, words in (("shared network, entropy bonus 0.01", "not in the menu"),
                           ("shared network; TD(0) advantages (lambda = 0)",
                            "which you did not ablate")):
        out = _handout_q5(_experiment_call(FIVE), {"CHOSEN": "; ".join(FIVE),
                                                   "FACTORS": factors})
        parts = {r.id: r for r in out.parts}
        assert parts["table"].passed and not parts["bar"].passed, out.lines
        assert words in parts["bar"].message and parts["bar"].fn == "FACTORS"
    ctx = Context(_experiment_call(FIVE), P, public_only=False, expected={}, public_keys=set(),
                  question=B.question("q5_experiment"), hidden=B.hidden)
    unreadable = judge.Fail("FACTORS: ['x'] not in the menu", fn="FACTORS")
    judge.judge_claim(ctx, FIVE, [], {k: np.array(v) for k, v in SYNTHETIC.items()}, CLASSES,
                      "the test's table", unreadable=unreadable)
    claim = [r for r in ctx.outcome().parts if r.id in ("bar", "verdicts")]
    assert [(r.id, r.passed, r.message) for r in claim] == \
        [("bar", False, str(unreadable)), ("verdicts", False, str(unreadable))]


def test_menu_differences_print_numbers_as_numbers():
    """BASELINE and MENU arrive through the gate (numbers as 0-d arrays): the
    differences print them as numbers, never array(4) or np.float64(...)."""
    ref = _reference()
    fake = type(ref)("ablations_menu_edited")
    fake.__dict__.update({k: v for k, v in vars(ref).items() if not k.startswith("__")})
    fake.__file__ = ref.__file__
    menu = dict(ref.MENU, **{"4 epochs instead of 10": dict(num_minibatches=4),
                             "surrogate clip 0.05": dict(clip_eps=np.float64(0.07))})
    baseline = dict(ref.BASELINE, lr=np.float64(0.002), num_envs=np.int64(4))
    fake.experiment_config = lambda: {"baseline": baseline, "menu": menu}
    diffs = judge.experiment_differences(_ctx(fake, "q5_experiment"))
    assert diffs == ["BASELINE['lr'] is 0.002, not 0.001", "BASELINE['num_envs'] is 4, not 8",
                     "MENU['4 epochs instead of 10'] is {'num_minibatches': 4}, not "
                     "{'update_epochs': 4}",
                     "MENU['surrogate clip 0.05'] is {'clip_eps': 0.07}, not {'clip_eps': 0.05}"]


def test_b_ppo_is_capstone_a_s_file_kept_once():
    """B's ppo.py is capstone A's, kept once: B's folders hold no copy (only a
    symlink to A's, so that copying ``solutions/b_ablations/``'s submission
    files still gives the reference, as the contract says), the reference is
    graded with A's reference, and the handout ``make dist`` builds holds A's
    stub byte for byte."""
    assert B.borrowed == {"ppo.py": "a_ppo"}
    for where in ("solutions", "student_template"):
        link = ROOT / where / "b_ablations" / "ppo.py"
        assert link.is_symlink() and link.resolve() == (ROOT / where / "a_ppo" / "ppo.py")
        assert B.source(ROOT / where, "ppo.py") == ROOT / where / "a_ppo" / "ppo.py"
    with zipfile.ZipFile(built("b_ablations")[0]) as zf:
        assert zf.read("b_ablations/ppo.py") == \
            (ROOT / "student_template" / "a_ppo" / "ppo.py").read_bytes()


def test_every_menu_switch_has_a_catalogue_entry_ignoring_it():
    """Each menu switch is shown caught when train() ignores it: the catalogue
    holds, per menu entry, a train() that resets exactly that entry's
    hyper-parameters (tests/test_catalogues.py grades each on q3)."""
    from autograder.catalogue import b_ablations as cat
    assert cat.MENU_NAMES == list(MENU)
    assert {n: set(k) for n, k in cat.SWITCH_KEYS.items()} == \
        {n: set(change) for n, change in MENU.items()}
    names = {w.name for w in cat.WRONG}
    for name in MENU:
        entry = next(w for w in cat.IGNORED if w.chosen[0] == name)
        assert entry.name in names and entry.loses == ("q3_switches",)


# ----------------------------------------------------------------------------- parts and causes
def test_parts_are_declared_with_their_causes_apart():
    """q3: the baseline a part of its own, one switch part per chosen entry; q4:
    one part per capstone-A piece; q5: the runs, the table and the claim
    apart, so that a wrong piece, a wrong table and a wrong claim cost
    different points."""
    q3 = B.question("q3_switches")
    switch = q3.part("switch")
    assert switch.each == "item" and switch.count == P["chosen"]
    assert {p.id: p.points for p in q3.parts} == {"baseline": 1, "switch": 5}
    q4 = B.question("q4_pieces")
    assert {p.id for p in q4.parts} == set(judge.A_PIECE_PARTS) | {judge.MINIBATCH_PART}
    assert set(q4.functions) == set(judge.A_PIECE_PARTS.values()) | {judge.MINIBATCH_FN}
    assert set(judge.A_PIECE_PARTS.values()) == judge.A_PIECES
    assert {p.id: p.points for p in B.question("q5_experiment").parts} == \
        {"runs": 1, "table": 1, "bar": 2, "verdicts": 2}
    assert not B.question("q5_experiment").record
    assert B.question("q6_why").hand and B.question("q7_literature").hand
    assert B.question("q7_literature").visibility == "after_published"


def test_every_answer_of_the_first_updates_is_compared_and_a_share_after_them():
    """The judge's runs compare each piece's answer with the reference's on every
    call of the first prefix_updates updates and on about spot_share of the
    calls after them, drawn from a generator the worker never sees."""
    pieces = CheckedPieces(_ctx(_reference(), "q5_experiment"), _oracle, share=P["spot_share"],
                           rng=np.random.default_rng(7), prefix=P["prefix_updates"])
    picked = []
    for u in range(P["updates"]):
        pieces.update = u
        picked.append([pieces._picked() for _ in range(400)])
    picked = np.array(picked)
    assert picked[:P["prefix_updates"]].all()
    tail = picked[P["prefix_updates"]:].mean()
    assert 0 < P["spot_share"] < 1 and abs(tail - P["spot_share"]) < 0.01, tail


def test_q4_draws_rollouts_with_both_episode_ends():
    """q4's GAE cases drawn per student meet terminations and truncations on
    the seeds tried (its sizes and time limit); the fixed case does."""
    q4 = B.question("q4_pieces")
    case = next(c for c in q4.cases if c.draw)
    for seed in range(1000, 1300):
        judge._rollout(np.random.default_rng(seed), seed, _hp(), case.T, case.N,
                       case.time_limit)
    fixed = next(c for c in q4.cases if not c.draw)
    judge._rollout(np.random.default_rng(fixed.seed), fixed.seed, _hp(), fixed.T, fixed.N,
                   fixed.time_limit)


def test_unreadable_chosen_fails_every_switch_with_one_cause_and_still_judges_the_baseline():
    out = judge.QUESTIONS["q3_switches"](_ctx(_reference(), "q3_switches",
                                              constants={"CHOSEN": "shared network"}))
    parts = {r.instance: r for r in out.parts}
    assert parts["baseline"].passed
    switches = [r for r in out.parts if r.id == "switch"]
    assert len(switches) == P["chosen"] and not any(r.passed for r in switches)
    assert len({(r.kind, r.message) for r in switches}) == 1 and "CHOSEN" in switches[0].message
    assert out.fraction == pytest.approx(1 / 6)


def _handout_q5(call, constants) -> object:
    """q5 as a handout grades it (public only: no runs, no verdicts)."""
    ctx = Context(call, P, public_only=True, expected={}, public_keys=set(),
                  constant=constants.get, question=B.question("q5_experiment"), hidden={})
    ctx.has_oracles = lambda: False             # a handout ships none
    return judge.QUESTIONS["q5_experiment"](ctx)


def test_an_unreadable_table_fails_the_table_and_the_bar_with_one_cause():
    names = "; ".join(FIVE)
    out = _handout_q5(_experiment_call(FIVE, table={}),
                      {"CHOSEN": names, "FACTORS": "shared network"})
    failed = [r for r in out.parts if not r.passed]
    assert [r.id for r in failed] == ["table", "bar"] and out.fraction == 0
    assert len({(r.kind, r.message, r.fn) for r in failed}) == 1
    assert failed[0].fn == "results_table" and "no rows" in failed[0].message


def test_a_number_that_is_not_its_curves_mean_is_not_the_codes():
    rows = _table_rows(FIVE)
    rows["shared network"][1, 1] += 100.0          # the number, not its curve
    out = _handout_q5(_experiment_call(FIVE, table=rows),
                      {"CHOSEN": "; ".join(FIVE), "FACTORS": "none"})
    table = next(r for r in out.parts if r.id == "table")
    assert not table.passed and table.diagnosis == judge.NOT_THE_CODES


def test_a_table_without_curves_says_so():
    rows = {n: a[:, :3] for n, a in _table_rows(FIVE).items()}
    out = _handout_q5(_experiment_call(FIVE, table=rows),
                      {"CHOSEN": "; ".join(FIVE), "FACTORS": "none"})
    table = next(r for r in out.parts if r.id == "table")
    assert not table.passed and table.kind == Kind.SHAPE and "another shape" in table.diagnosis


def test_an_empty_claim_is_not_implemented():
    """The stub's empty CHOSEN is work not written yet, not a wrong answer."""
    out = _handout_q5(_experiment_call(FIVE), {"CHOSEN": "", "FACTORS": ""})
    assert out.parts[0].kind == Kind.NOT_IMPLEMENTED and out.status == "not_implemented"


def test_a_piece_failing_in_the_judges_loop_is_named_in_its_switch_only():
    """Capstone A's entropy_loss() raising inside the judge's loop (train()
    computes the entropy itself) fails the entropy switch, naming the piece
    and capstone A; the other switches pass."""
    ref = _reference()
    fake = type(ref)("ablations_entropy_raises")
    fake.__dict__.update({k: v for k, v in vars(ref).items() if not k.startswith("__")})
    fake.__file__ = ref.__file__

    def entropy_loss(logits):
        raise NotImplementedError("entropy_loss: later")
    fake.entropy_loss = entropy_loss
    five = ["entropy bonus 0.01", "no gradient clipping", "clipped value loss",
            "value-loss coefficient 1", "no advantage normalisation"]
    out = judge.QUESTIONS["q3_switches"](_ctx(fake, "q3_switches",
                                              constants={"CHOSEN": "; ".join(five)}))
    failed = [r for r in out.parts if not r.passed]
    assert [r.instance for r in failed] == ["switch[entropy bonus 0.01]"]
    assert failed[0].fn == "entropy_loss" and failed[0].kind == Kind.NOT_IMPLEMENTED
    assert "capstone A's entropy_loss() (your ppo.py)" in failed[0].diagnosis
    assert out.fraction == pytest.approx(5 / 6)


# ----------------------------------------------------------------------------- the judge's runs
def _oracle(name: str):
    import importlib
    module, _, fn = name.rpartition(".")
    return getattr(importlib.import_module(f"autograder.oracles.{module}"), fn)


@pytest.mark.parametrize("name,seed", [("baseline", 2), ("observation normalisation", 1),
                                       ("shared network", 3)])
def test_a_runs_first_updates_are_the_stored_curves_to_the_bit(name, seed):
    """The prefix q5 compares exactly: the judge's loop with the reference's
    pieces, on this machine's own kernels, gives the first prefix_updates
    entries of the learning curve stored under the stated numerics (float
    order and kernels first change a curve at update 10 or later: the study's
    report)."""
    ab = _reference()
    run = ablation_loop.train(CheckedPieces(_ctx(ab, "q5_experiment"), _oracle), seed,
                              {**_hp(), **MENU.get(name, {})}, P["updates"],
                              stop_after=P["prefix_updates"])
    stored = _stored_runs()[("reference", name, seed)]["curve"]
    assert curve_row(run.episode_returns) == stored[:P["prefix_updates"]]


def test_checked_pieces_record_a_steering_piece_and_let_the_run_go_on():
    """A piece that answers otherwise in a full-size minibatch than the
    reference does is recorded (where, which function); the run goes on with
    its answers, so that the table is judged on what the code gives."""
    ref = _reference()
    fake = type(ref)("ablations_steering")
    fake.__dict__.update({k: v for k, v in vars(ref).items() if not k.startswith("__")})
    fake.__file__ = ref.__file__

    def clipped_policy_loss(logits, actions, logp_old, advantages, clip_eps):
        loss, grad = ref.clipped_policy_loss(logits, actions, logp_old, advantages, clip_eps)
        return (loss, 0.0 * grad) if len(actions) == 256 else (loss, grad)
    fake.clipped_policy_loss = clipped_policy_loss
    pieces = CheckedPieces(_ctx(fake, "q5_experiment"), _oracle)
    run = ablation_loop.train(pieces, 1, _hp(), P["updates"], stop_after=2,
                              on_update=lambda u: setattr(pieces, "where", f"update {u}"))
    assert list(pieces.mismatches) == ["clipped_policy_loss"]
    assert "update 0" in pieces.mismatches["clipped_policy_loss"]
    assert len(run.episode_returns) == 2 and pieces.checked >= pieces.calls > 100


def test_a_fresh_worker_serves_the_calls_inside_and_only_them():
    calls = []

    class Session:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            calls.append((self.name, "closed"))

        def import_module(self):
            calls.append((self.name, "import"))

        def call(self, fn, *args, may_modify=()):
            calls.append((self.name, fn))
            return np.zeros(2)

        call_many = constant = None
    question = Session("question")
    ctx = Context(question.call, P, public_only=True, question=B.question("q5_experiment"))
    ctx.new_session = lambda: Session(f"fresh {len(calls)}")
    with ctx.fresh_worker():
        ctx.ask("normalise_advantages", np.zeros(2), answer=judge.Floats((2,)))
    ctx.ask("normalise_advantages", np.zeros(2), answer=judge.Floats((2,)))
    assert calls == [("fresh 0", "import"), ("fresh 0", "normalise_advantages"),
                     ("fresh 0", "closed"), ("question", "normalise_advantages")]


def test_the_closing_section_covers_the_menu_and_stays_hidden():
    """q7's feedback (after grading) sets every menu entry beside the paper;
    a handout (no [hidden]) shows only the student's paragraph."""
    rows = B.hidden["literature"]
    assert set(rows) == set(MENU)
    assert all(row["paper"].strip() and row["here"].strip() for row in rows.values())
    full = judge.QUESTIONS["q7_literature"](_ctx(_reference(), "q7_literature"))
    assert full.status == "hand_graded"
    assert sum(line.startswith("* ") for line in full.lines) == len(MENU)
    local = judge.QUESTIONS["q7_literature"](_ctx(_reference(), "q7_literature", hidden={}))
    assert not any(line.startswith("* ") for line in local.lines)


@pytest.mark.slow
def test_a_deadline_in_the_middle_of_the_runs_is_the_graders_with_how_far_it_got(tmp_path):
    """The grading's deadline cutting q5's runs ends q5 as 'deadline' (the
    grader's limit, never 'broke the protocol' or a time-out of the student's),
    saying how many of the judge's runs were done."""
    import shutil
    from autograder.grading.grade import grade
    from autograder.grading.status import Status
    (tmp_path / "assignments" / "b_ablations").mkdir(parents=True)
    text = (ROOT / "assignments" / "b_ablations" / "assignment.toml").read_text()
    (tmp_path / "assignments" / "b_ablations" / "assignment.toml").write_text(
        text.replace("deadline_s = 480", "deadline_s = 20", 1))
    sub = tmp_path / "sub"
    sub.mkdir()
    for src in B.sources(ROOT / "solutions"):
        shutil.copy(src, sub / src.name)
    report = grade("b_ablations", sub, questions=["q5_experiment"], echo=False,
                   assignments_dir=tmp_path / "assignments")
    q5 = report.questions[0]
    assert q5.status == Status.DEADLINE, q5.output
    assert "the judge's runs of your experiment:" in q5.output and "of 18 done" in q5.output
    assert "protocol" not in q5.output


def test_oracles_count_only_beside_the_running_autograder(tmp_path):
    """q5 runs the experiment only where the oracles ship (Gradescope): a
    handout's own autograder package, run by a Python that has the repository
    installed in editable mode (this venv), must not borrow the repository's
    oracles through that install's finder (its q5 check then failed in the
    notebook's full run)."""
    import shutil
    import subprocess
    import sys
    shutil.copytree(ROOT / "autograder", tmp_path / "autograder",
                    ignore=shutil.ignore_patterns("oracles", "__pycache__"))
    probe = ("from autograder.grading.judging import Context; import autograder; "
             "print(autograder.__file__, Context.has_oracles(None))")
    here = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert here.stdout.split() == [str(tmp_path / "autograder" / "__init__.py"), "False"], \
        here.stdout + here.stderr
    repo = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert repo.stdout.split()[-1] == "True", repo.stdout + repo.stderr


def test_the_written_answers_say_where_their_criteria_are():
    """q6's and q7's lines say where a student finds the rubric's criteria: the
    handout's README (section 5, from [handout] rubric), not a path of this
    repository."""
    from autograder.commands import handout_readme
    for name in ("q6_why", "q7_literature"):
        out = judge.QUESTIONS[name](_ctx(_reference(), name))
        text = "\n".join(out.lines)
        assert "graded by hand with the rubric" in text and judge.RUBRIC_WHERE in text, text
        assert "rubric.md" not in text
    readme = handout_readme.readme(B, config.handout_facts(B))
    section = readme.split("\n## 5. ", 1)[1].split("\n## ", 1)[0]
    assert "**How the written answers are read**" in section
    assert "`WHY` (q6_why)" in section and "`LITERATURE` (q7_literature)" in section
