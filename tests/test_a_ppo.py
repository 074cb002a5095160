"""Capstone A through the real harness: reference, template, catalogue, the judge's loop."""
from __future__ import annotations

import sys
import zipfile

import numpy as np
import pytest

from autograder.grading import config
from autograder.grading.status import Kind, Status
from autograder.judges.ppo_pieces import Pieces
from autograder.oracles import ppo_loop
from autograder.grading.reference import load_reference
from conftest import ROOT, built, graded, zip_graded
from rlkit.mlp import flatten

A = config.load("a_ppo")
FAST = [q.name for q in A.questions if q.name != "q7_bar"]


def _judge_hp() -> dict:
    hp = dict(A.params["hp"])
    hp["hidden"] = tuple(hp["hidden"])
    return hp


@pytest.mark.slow
def test_reference_gets_full_marks_through_the_gradescope_zip():
    res = zip_graded("a_ppo", "solutions")
    assert res["extra_data"]["expected_source"] == "stored"
    assert res["score"] == A.total_points, [(t["name"], t["score"], t["output"][:300])
                                            for t in res["tests"]]
    bar = next(t for t in res["tests"] if t["name"].startswith("q7_bar"))
    runs = A.question("q7_bar").cases
    assert len(runs) == 3
    # the public runs' medians are shown; every run (hidden ones by their label) passes each tier
    assert bar["output"].count("median 500.0") == len([c for c in runs if not c.hidden])
    parts = bar["extra_data"]["parts"]
    for tier in ("bar", "half", "quarter"):
        mine = [p for p in parts if p["id"] == tier]
        assert len(mine) == len(runs) and all(p["credited"] for p in mine), mine
    assert bar["extra_data"]["measurements"]["min_median"] == 500.0


@pytest.mark.slow
def test_regrade_gives_the_same_scores():
    direct = graded("a_ppo", "solutions", tuple(FAST))
    via_zip = {t["name"].split(":")[0]: t["score"] for t in zip_graded("a_ppo", "solutions")["tests"]}
    assert {q.name: q.score for q in direct.questions} == {n: via_zip[n] for n in FAST}


def test_blank_template_gets_zero():
    report = graded("a_ppo", "student_template")
    assert report.score == 0, report.table()
    # every question not implemented yet (q6's cases are all hidden: it says so by its kind)
    assert all(q.status == Status.NOT_IMPLEMENTED for q in report.questions), report.table()
    assert report.status == Status.NOTHING_IMPLEMENTED


def _pieces(ppo, batched: bool) -> Pieces:
    """The reference's pieces, the minibatch in single calls or as one batch."""
    return Pieces.in_process(ppo, batched)


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
def test_judge_loop_with_reference_pieces_is_the_reference_train(batched):
    """The judge's loop is the reference's train, bit for bit: so the reference's
    measured pass rate carries over to grading (the minibatch's pieces called
    one by one, or as one batch: what a probe sends in one round trip)."""
    ppo = load_reference("a_ppo", "ppo.py")
    ref = ppo.train(3, updates=2)
    run = ppo_loop.train(_pieces(ppo, batched), 3, _judge_hp(), 2)
    assert np.array_equal(flatten(ref["policy_params"]), flatten(run.policy_params))
    assert np.array_equal(flatten(ref["value_params"]), flatten(run.value_params))


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
def test_judge_loop_is_the_reference_train_with_an_entropy_bonus_too(batched):
    ppo = load_reference("a_ppo", "ppo.py")
    ref = ppo.train(4, updates=1, hp={"ent_coef": 0.01})
    hp = {**_judge_hp(), "ent_coef": 0.01}
    run = ppo_loop.train(_pieces(ppo, batched), 4, hp, 1)
    assert np.array_equal(flatten(ref["policy_params"]), flatten(run.policy_params))
    assert np.array_equal(flatten(ref["value_params"]), flatten(run.value_params))


def test_the_diagnosing_oracle_is_the_reference_step_and_every_slip_shows_somewhere():
    """q6's diagnosis re-runs the step with one slip: its unslipped step must be
    the reference's (parameters and statistics), and each slip must change the
    result on at least one of q6's cases (else it could never be named)."""
    from autograder.grading.judging import Context
    from autograder.judges import a_ppo as judge
    from autograder.oracles.a_ppo import minibatch_params, minibatch_stats, minibatch_step
    ppo = load_reference("a_ppo", "ppo.py")
    ctx = Context(lambda *a: None, A.params, public_only=False, recording=True,
                  hidden=A.hidden, question=A.question("q6_minibatch_update"))
    hp = judge._hp(ctx)
    shown = set()
    cases = list(ctx.cases())
    assert len(cases) == 6
    for case in cases:
        args = judge._update_step(ctx, case, hp)
        policy, value = args[0], args[1]
        exact, before, _ = minibatch_step(*args)
        copies = [[{k: a.copy() for k, a in layer.items()} for layer in net]
                  for net in (policy, value)]
        out = ppo.minibatch_update_arrays(*copies, *args[2:])
        ref = np.concatenate([flatten(out["policy_params"]),
                              flatten(out["value_params"])])[::judge.FINGERPRINT_STRIDE]
        np.testing.assert_allclose(exact, ref, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(before, [out["stats"][k] for k in judge.STATS],
                                   rtol=1e-12, atol=1e-15)
        # the oracles a case drawn per student would be checked against: the same step
        for net in ("policy", "value"):
            np.testing.assert_allclose(minibatch_params(*args, net),
                                       flatten(out[f"{net}_params"]), rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(minibatch_stats(*args), before)
        shown |= {slip for slip in judge.STEP_SLIPS
                  if not judge._close(minibatch_step(*args, slip)[0], exact)}
    assert shown == set(judge.STEP_SLIPS)


@pytest.mark.parametrize("num_actions,ent_coef", [(2, 0.0), (2, 0.01), (3, 0.05), (9, 0.01)])
def test_reference_fused_policy_terms_are_the_pieces_bit_for_bit(num_actions, ent_coef):
    """minibatch_update's one-pass _policy_terms gives the numbers of the pieces
    the judge's loop calls one by one (incl. huge logits and clipped ratios)."""
    ppo = load_reference("a_ppo", "ppo.py")
    rng = np.random.default_rng(num_actions)
    B = 300
    logits = rng.normal(0.0, 2.0, (B, num_actions))
    logits[:3] *= 500.0
    actions = rng.integers(0, num_actions, B)
    logp_old = ppo.categorical_log_prob(logits + rng.normal(0.0, 0.3, logits.shape), actions)
    adv = rng.standard_normal(B)
    pg, grad, ent, logratio, ratio = ppo._policy_terms(logits, actions, logp_old, adv, 0.2,
                                                       ent_coef)
    assert np.array_equal(ratio, ppo.policy_ratio(logratio, 0.0))
    assert np.array_equal(ppo._normalised(adv * 7.0 + 3.0), ppo.normalise_advantages(adv * 7.0 + 3.0))
    v_loss, dvalues = ppo._value_terms(adv * 30.0, logp_old)
    v_loss_ref, dvalues_ref = ppo.value_loss(adv * 30.0, logp_old)
    assert v_loss == v_loss_ref and np.array_equal(dvalues.view(np.uint64), dvalues_ref.view(np.uint64))
    pg_ref, grad_ref = ppo.clipped_policy_loss(logits, actions, logp_old, adv, 0.2)
    ent_ref, dent = ppo.entropy_loss(logits)
    if ent_coef != 0.0:
        grad_ref += ent_coef * dent
    assert pg == pg_ref and ent == ent_ref
    assert np.array_equal(grad, grad_ref)
    assert np.array_equal(logratio, ppo.categorical_log_prob(logits, actions) - logp_old)


def test_handout_defaults_match_the_judge_configuration():
    for which in ("solutions", "student_template"):
        sys.path.insert(0, str(ROOT / which / "a_ppo"))
        try:
            sys.modules.pop("ppo", None)
            import ppo
            for k, v in _judge_hp().items():
                assert ppo.DEFAULT_HP[k] == v, (which, k)
        finally:
            sys.path.pop(0)
            sys.modules.pop("ppo", None)


def test_student_zip_holds_no_solution():
    student_zip, gs_zip = built("a_ppo")
    shipped = "\n".join(p.read_text() for d in ("rlkit", "autograder/grading", "autograder/harness",
                                                 "autograder/judges")
                         for p in (ROOT / d).rglob("*.py"))
    shipped += (ROOT / "student_template" / "a_ppo" / "ppo.py").read_text()
    ref = (ROOT / "solutions" / "a_ppo" / "ppo.py").read_text()
    canaries = [l.strip() for l in ref.splitlines() if len(l.strip()) > 20
                and l.strip() not in shipped and not l.strip().startswith("#")]
    assert len(canaries) > 20
    # the judge's own loop (an oracle, Gradescope zip only) mirrors the reference's train
    loop = (ROOT / "autograder" / "oracles" / "ppo_loop.py").read_text()
    for z, lines in ((student_zip, canaries), (gs_zip, [c for c in canaries if c not in loop])):
        zf = zipfile.ZipFile(z)
        blob = b"".join(zf.read(n) for n in zf.namelist()).decode("utf-8", "replace")
        assert not [c for c in lines if c in blob]
    names = zipfile.ZipFile(student_zip).namelist()
    assert "a_ppo/a_ppo.ipynb" in names and "a_ppo/rlkit/agent.py" in names
    assert not any(n.endswith("a_ppo.npz") for n in names)


def test_hidden_rollouts_are_drawn_per_student_with_both_episode_ends():
    """q2's hidden rollouts draw their shape per student; each must hold
    terminations and truncations (the judge's generator makes sure), and each
    phase an episode terminated and one truncated on a rollout's last step."""
    from autograder.grading.judging import HIDDEN_PHASE, PUBLIC_PHASE, Context
    from autograder.judges import a_ppo as judge
    shapes = set()
    for student in range(30):
        for phase in (PUBLIC_PHASE, HIDDEN_PHASE) if student == 0 else (HIDDEN_PHASE,):
            ctx = Context(lambda *a, **k: None, A.params, public_only=False, hidden=A.hidden,
                          question=A.question("q2_gae"), phase=phase,
                          student_id=f"student {student}")
            on_last = set()
            for case in ctx.cases():
                assert case.per_student == (phase == HIDDEN_PHASE) == case.hidden
                ro = judge._case_rollout(ctx, case)
                assert ro["terminated"].any() and ro["truncated"].any()
                assert ro["rewards"].shape == (case.T, case.N)
                on_last |= {end for end in ("terminated", "truncated") if ro[end][-1].any()}
                if case.hidden:
                    shapes.add((case.name, case.T, case.N, case.time_limit))
            assert on_last == {"terminated", "truncated"}, (phase, on_last)
    assert len(shapes) > 40


@pytest.mark.parametrize("where", ["solutions/a_ppo", "student_template/a_ppo"])
def test_given_clipped_value_loss_is_exact_inside_the_clip_band(where):
    """Inside the band the gradient is (v - R) / B to the bit (the old
    ``values_old + clip(...)`` lost ~9 % of samples to rounding at |v| ~ 0.1),
    outside it CleanRL's: 0 where the clipped term is strictly larger."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"ppo_{where.replace('/', '_')}",
                                                  ROOT / where / "ppo.py")
    ppo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ppo)
    rng = np.random.default_rng(0)
    eps = 0.2
    for scale in (0.01, 0.1, 1.0, 10.0):
        old, v, R = (rng.normal(0.0, scale, 20000) for _ in range(3))
        loss, grad = ppo.clipped_value_loss(v, old, R, eps)
        inside = np.abs(v - old) <= eps
        assert inside.any()
        assert np.array_equal(grad[inside], (v - R)[inside] / v.size)
        v_clip = old + np.clip(v - old, -eps, eps)
        held = (v_clip - R) ** 2 > (v - R) ** 2
        assert np.array_equal(grad[~inside & held], np.zeros(np.count_nonzero(~inside & held)))
        assert np.array_equal(grad[~inside & ~held], (v - R)[~inside & ~held] / v.size)
        sq = np.where(inside, (v - R) ** 2, np.maximum((v - R) ** 2, (v_clip - R) ** 2))
        assert loss == pytest.approx(0.5 * sq.mean(), rel=1e-12)


def test_a_wrong_piece_costs_its_question_not_also_q8(tmp_path):
    """Where the judge's loop is (a checkout, Gradescope), q8's public case
    compares train() with that loop run with the submission's own pieces, like
    its hidden case: a GAE that bootstraps at terminations loses q2, and q8
    (train() follows the recipe) keeps its point."""
    from autograder.catalogue.a_ppo import NEXT_V
    from autograder.grading.grade import grade
    text = (ROOT / "solutions" / "a_ppo" / "ppo.py").read_text()
    assert NEXT_V in text
    (tmp_path / "ppo.py").write_text(text.replace(
        NEXT_V, "next_values = np.where(terminated | truncated, final_values, values[1:])"))
    report = grade("a_ppo", tmp_path, questions=["q2_gae", "q8_train"], echo=False)
    scores = {q.name: q.score for q in report.questions}
    assert scores["q2_gae"] < A.question("q2_gae").points and scores["q8_train"] == 1, scores


def _ctx(question: str, student: str = "", phase: str = "all"):
    from autograder.grading.judging import Context
    return Context(lambda *a, **k: None, A.params, public_only=False, hidden=A.hidden,
                   question=A.question(question), phase=phase, student_id=student or None)


def test_the_bars_tier_parts_are_the_tiers():
    """q7's tiers live in params.tiers; its parts (one per tier, one instance per
    run) must give each tier its share of the points and name its threshold."""
    import dataclasses
    from autograder.grading.judging import JudgeBug
    from autograder.judges import a_ppo as judge
    assert judge._tiers(_ctx("q7_bar")) == [("bar", 450), ("half", 300), ("quarter", 150)]
    q = A.question("q7_bar")
    for changed in ({"points": 2.0}, {"title": "partial credit: median return > 301 on {case}"},
                    {"each": ""}):
        parts = tuple(dataclasses.replace(p, **changed) if p.id == "half" else p
                      for p in q.parts)
        ctx = _ctx("q7_bar")
        ctx.question = dataclasses.replace(q, parts=parts)
        with pytest.raises(JudgeBug):
            judge._tiers(ctx)


def test_the_reference_keeps_full_marks_on_another_students_hidden_instances(tmp_path):
    """A student's own hidden instances are checked against the oracles (a case
    drawn per student has no recorded answer): the reference must pass them for
    any id, i.e. the oracles agree with it (in-process: the judge logic only)."""
    from autograder.grading.grade import grade
    for f in A.sources(ROOT / "solutions"):
        (tmp_path / f.name).write_text(f.read_text())
    for student in ("s-1001", "s-2002"):
        report = grade("a_ppo", tmp_path, questions=FAST, echo=False, in_process=True,
                       student_id=student)
        assert report.student_id == student
        assert all(q.score == q.max_score for q in report.questions), report.table()


GAE_RETURN = "    return advantages, advantages + values[:-1]"


def test_a_piece_failing_in_the_judges_loop_is_named_with_its_question_first(tmp_path):
    """A compute_gae() whose answer the gate refuses (its arrays transposed)
    loses q2, and stops every training run of the bar at its first update:
    each of the bar's parts fails naming compute_gae, and the cascade names q2
    first (the bar is charged again on purpose: it exists to combine the
    pieces). In-process: the runs stop before any training."""
    from autograder.grading.grade import grade
    text = (ROOT / "solutions" / "a_ppo" / "ppo.py").read_text()
    assert text.count(GAE_RETURN) == 1
    (tmp_path / "ppo.py").write_text(text.replace(
        GAE_RETURN, "    return advantages.T, (advantages + values[:-1]).T"))
    report = grade("a_ppo", tmp_path, questions=["q2_gae", "q7_bar"], echo=False,
                   in_process=True)
    q2, q7 = report.questions
    assert q2.score == 0 and q2.status == Status.FAILED
    assert q7.score == 0 and q7.status == Status.FAILED
    runs = len(A.question("q7_bar").cases)
    assert sorted(p["id"] for p in q7.parts) == sorted(
        ["runs"] + [t for t in ("bar", "half", "quarter") for _ in range(runs)])
    for part in q7.parts:
        assert not part["passed"] and part["kind"] == Kind.SHAPE, part
        assert part["fn"] == "compute_gae" and "q2_gae" in part["cause"], part


def test_a_slip_of_train_is_blamed_on_train_even_when_a_piece_fails_elsewhere(tmp_path):
    """q8 runs the judge's loop with the submission's pieces before it asks
    train(): a wrong train() (no lr annealing) beside a wrong piece that
    train() uses too (GAE with float32 masks, which loses q2) fails q8 as
    train()'s own slip, diagnosed, and not as a cascade from q2 (the loop
    used the same pieces)."""
    from autograder.catalogue.a_ppo import WRONG
    from autograder.grading.grade import grade
    both = [w for w in WRONG if w.name in ("train_without_lr_annealing", "gae_float32_masks")]
    text = (ROOT / "solutions" / "a_ppo" / "ppo.py").read_text()
    for w in both:
        assert text.count(w.old) == 1
        text = text.replace(w.old, w.new)
    (tmp_path / "ppo.py").write_text(text)
    report = grade("a_ppo", tmp_path, questions=["q2_gae", "q8_train"], echo=False,
                   in_process=True)
    q2, q8 = report.questions
    assert q2.score < q2.max_score and q8.score == 0
    (part,) = [p for p in q8.parts if not p["passed"]]
    assert part["fn"] == "train" and part["cause"] == "", part
    assert "learning rate not annealed" in part["diagnosis"]
