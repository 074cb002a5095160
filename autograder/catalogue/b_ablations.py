"""Wrong submissions for capstone B, each losing points where it should, and
correct work in other styles that keeps full marks."""
import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import ROOT, Right, Wrong
from ..grading import config

F = "ablations.py"
J = "ablation_results.json"
STATS = """    m2 = var * count + batch_var * n + delta * delta * count * n / total
    return new_mean, m2 / total, float(total)"""
NORM = """    z = (np.asarray(obs, dtype=np.float64) - mean) / np.sqrt(var + OBS_EPS)
    return np.clip(z, -OBS_CLIP, OBS_CLIP)"""
TRUNK = """    trunk = [{k: pg[k] + vg[k] for k in ("W", "b")}
             for pg, vg in zip(policy_grads[:num_shared], value_grads[:num_shared])]
    return trunk + [policy_grads[num_shared], value_grads[num_shared]]"""
HP = "    hp = {**BASELINE, **(hp or {})}\n    rng = np.random.default_rng(seed)\n"
ADV = "        advantages, returns = advantages_and_returns(ro, hp)\n"
CHOSEN_OLD = '''    "no advantage normalisation",
    "no gradient clipping",'''
FACTORS_OLD = '''FACTORS = "; ".join([           # the chosen factors that matter by the criterion; "none" if none
    "one minibatch (full batch)",
    "shared network",
])'''

MENU_NAMES = [  # assignment.toml's [params.menu], in order (a test checks every one has an entry)
    "no advantage normalisation", "no learning-rate annealing", "no gradient clipping",
    "clipped value loss", "entropy bonus 0.01", "value-loss coefficient 1",
    "no bootstrap at truncation", "Monte Carlo returns (lambda = 1)",
    "TD(0) advantages (lambda = 0)", "one minibatch (full batch)", "4 epochs instead of 10",
    "shared network", "observation normalisation", "surrogate clip 0.05",
    "hidden-layer gain 1 (orthogonal init)"]
OTHERS = ["no advantage normalisation", "no gradient clipping", "clipped value loss",
          "value-loss coefficient 1", "entropy bonus 0.01", "4 epochs instead of 10"]


def _chosen_with(name: str) -> list[str]:
    """Five menu names: ``name`` and four others."""
    return [name] + [n for n in OTHERS if n != name][:4]


@dataclass(frozen=True)
class Chose(Wrong):
    """A mistake in ``train`` shown where the judge looks: the edit, with
    ``CHOSEN`` set to ``chosen`` (the switch the mistake concerns among them)."""
    chosen: tuple = ()

    def write(self, assignment: str, directory: Path, files: tuple[str, ...]) -> Path:
        out = super().write(assignment, directory, files)
        path = out / F
        text = path.read_text()
        names = "".join(f"    {n!r},\n".replace("'", '"') for n in self.chosen)
        text, count = re.subn(r'CHOSEN = "; ".join\(\[.*?\]\)', lambda m: 'CHOSEN = "; ".join([\n'
                              + names + "])", text, count=1, flags=re.S)
        assert count == 1, f"{self.name}: CHOSEN not found"
        path.write_text(text)
        return out


@dataclass(frozen=True)
class Table(Wrong):
    """A submission whose ``ablation_results.json`` is :meth:`table_text` (here
    ``text``; the other files the reference's); ``old``/``new`` edit
    ``ablations.py`` as usual (may be empty: no edit)."""
    text: str = "[]\n"

    def table_text(self, assignment: str, directory: Path) -> str:
        return self.text

    def write(self, assignment: str, directory: Path, files: tuple[str, ...]) -> Path:
        if self.old:
            super().write(assignment, directory, files)
        else:                                   # the reference's files as they are
            directory.mkdir(parents=True, exist_ok=True)
            a = config.load(assignment)
            for f in files:
                (directory / f).write_text(a.source(ROOT / "solutions", f).read_text())
        (directory / J).write_text(self.table_text(assignment, directory))
        return directory


@dataclass(frozen=True)
class MadeUp(Table):
    """A table made up rather than run: ``value`` for every number of the
    baseline and the CHOSEN entries on every seed."""
    value: float = 500.0

    def table_text(self, assignment: str, directory: Path) -> str:
        tree = ast.parse((directory / F).read_text())
        chosen = next(ast.literal_eval(n.value.args[0]) for n in tree.body
                      if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CHOSEN")
        seeds = config.load(assignment).params["seeds"]
        rows = [[c, s, self.value, self.value] for c in ["baseline", *chosen] for s in seeds]
        return json.dumps(rows, indent=1) + "\n"


@dataclass(frozen=True)
class Moved(Table):
    """The reference's table with one number moved: the per-seed number of
    ``config`` on ``seed`` set to ``value``."""
    config: str = ""
    seed: int = 0
    value: float = 0.0

    def table_text(self, assignment: str, directory: Path) -> str:
        rows = json.loads(config.load(assignment).source(ROOT / "solutions", J).read_text())
        hits = [r for r in rows if r[0] == self.config and r[1] == self.seed]
        assert len(hits) == 1, f"{self.name}: {len(hits)} rows of {self.config!r}, {self.seed}"
        hits[0][2] = self.value
        return json.dumps(rows, indent=1) + "\n"


# Where the switch checks' sizes (switch_hp) set a key too, a train() holding BASELINE's value
# departs from the check's baseline as well: caught, diagnosed as changing something else; with
# norm_obs off, train() returns no statistics: caught as a wrong shape.
NOT_THE_CHECKS_BASELINE = {"num_minibatches", "update_epochs", "norm_obs"}


@dataclass(frozen=True)
class NoCode(MadeUp):
    """The issue's case: the unedited stubs (no piece, no train), five harmless
    choices, FACTORS "none" and a made-up table of ``value`` (``old``/``new``
    unused)."""
    harmless: tuple = ("no gradient clipping", "no learning-rate annealing",
                       "entropy bonus 0.01", "value-loss coefficient 1",
                       "hidden-layer gain 1 (orthogonal init)")

    def write(self, assignment: str, directory: Path, files: tuple[str, ...]) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        a = config.load(assignment)
        for f in files:
            (directory / f).write_text(a.source(ROOT / "student_template", f).read_text())
        text = (directory / F).read_text()
        for name, value in (("CHOSEN", "; ".join(self.harmless)), ("FACTORS", "none")):
            text, count = re.subn(rf'^{name} = ""', f'{name} = {value!r}'.replace("'", '"'),
                                  text, count=1, flags=re.M)
            assert count == 1, f"{self.name}: {name} not found in the stub"
        (directory / F).write_text(text)
        (directory / J).write_text(self.table_text(assignment, directory))
        return directory

    def table_text(self, assignment: str, directory: Path) -> str:
        seeds = config.load(assignment).params["seeds"]
        return json.dumps([[c, s, self.value, self.value] for c in ["baseline", *self.harmless]
                           for s in seeds], indent=1) + "\n"


def _ignores(name: str, keys: tuple[str, ...]) -> Chose:
    """train() resets the switch's hyper-parameters to the baseline's: it ignores it."""
    reset = "".join(f'    hp[{k!r}] = BASELINE[{k!r}]\n'.replace("'", '"') for k in keys)
    diagnosis = "" if set(keys) & NOT_THE_CHECKS_BASELINE else "the switch does nothing"
    return Chose(f"train_ignores_{re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')}", F, HP,
                 HP + reset, ("q3_switches",), f"train() ignores '{name}'",
                 diagnosis=diagnosis, chosen=tuple(_chosen_with(name)))


SWITCH_KEYS = {  # menu name -> the hyper-parameters its switch sets
    "no advantage normalisation": ("norm_adv",), "no learning-rate annealing": ("anneal_lr",),
    "no gradient clipping": ("max_grad_norm",), "clipped value loss": ("clip_vloss",),
    "entropy bonus 0.01": ("ent_coef",), "value-loss coefficient 1": ("vf_coef",),
    "no bootstrap at truncation": ("bootstrap_truncation",),
    "Monte Carlo returns (lambda = 1)": ("gae_lambda",),
    "TD(0) advantages (lambda = 0)": ("gae_lambda",),
    "one minibatch (full batch)": ("num_minibatches",),
    "4 epochs instead of 10": ("update_epochs",), "shared network": ("shared_network",),
    "observation normalisation": ("norm_obs",), "surrogate clip 0.05": ("clip_eps",),
    "hidden-layer gain 1 (orthogonal init)": ("hidden_gain",)}

IGNORED = [_ignores(n, k) for n, k in SWITCH_KEYS.items()] + [
    # The issue's case: the advantages straight from compute_gae, so 'no bootstrap at
    # truncation' never reaches training (seen only since the switch runs meet truncations).
    Chose("train_calls_compute_gae_directly", F, ADV,
          '        advantages, returns = compute_gae(ro["rewards"], ro["values"], '
          'ro["final_values"],\n                                          ro["terminated"], '
          'ro["truncated"], hp["gamma"],\n                                          '
          'hp["gae_lambda"])\n',
          ("q3_switches",), "advantages from compute_gae() directly: the bootstrap switch is "
          "lost on the way", diagnosis="the switch does nothing",
          chosen=tuple(_chosen_with("no bootstrap at truncation")))]

CAUSES = [  # feedback names the cause first
    Wrong("baseline_never_anneals", F,
          '        lr = hp["lr"] * (1.0 - u / updates) if hp["anneal_lr"] else hp["lr"]',
          '        lr = hp["lr"]', ("q3_switches",),
          "train() never anneals the learning rate: the baseline itself is wrong",
          diagnosis="the baseline is wrong"),
    Chose("a_entropy_loss_unwritten", "ppo.py", "    p = np.exp(logp)\n",
          '    raise NotImplementedError("entropy_loss: later")\n    p = np.exp(logp)\n',
          ("q3_switches",), "capstone A's entropy_loss() never written (minibatch_update "
          "computes the entropy itself): it fails only inside the entropy switch",
          diagnosis="capstone A's entropy_loss() (your ppo.py) fails inside the judge's loop",
          chosen=tuple(_chosen_with("entropy bonus 0.01"))),
    Chose("a_gae_ignores_truncation_resets", "ppo.py",
          "    carry = gamma * lam * (~(terminated | truncated))",
          "    carry = gamma * lam * (~terminated)", ("q3_switches",),
          "capstone A's compute_gae() carries advantages across time-limit ends",
          diagnosis="capstone A's compute_gae() (your ppo.py) gives other advantages",
          chosen=tuple(_chosen_with("Monte Carlo returns (lambda = 1)"))),
]

EXPERIMENT = [
    Wrong("table_from_another_baseline", F, '    "norm_obs": False,            # running',
          '    "num_steps": 128,             # quicker runs\n'
          '    "norm_obs": False,            # running',
          ("q4_claim", "q5_table"), "the table was run with num_steps = 128 in BASELINE",
          diagnosis="restore BASELINE and MENU"),
    Wrong("menu_entry_edited", F, '"4 epochs instead of 10": dict(update_epochs=4),',
          '"4 epochs instead of 10": dict(num_minibatches=4),', ("q4_claim", "q5_table"),
          "'4 epochs' made to mean 4 minibatches", diagnosis="restore BASELINE and MENU"),
    Table("claim_without_experiment", F, "", "", ("q4_claim", "q5_table"),
          "a claim with no table behind it (ablation_results.json empty)"),
    NoCode("no_code_harmless_choices_made_up_table", F, "", "", ("q4_claim", "q5_table"),
           "the issue's 3/13: no code, five harmless choices, 'none' and a table of 500s (the "
           "re-run finds no pieces)"),
    # The re-run cells are drawn per student, so whether a re-run catches a made-up table
    # depends on the student's draw. A table of 500s is caught on 14 of the reference's 18
    # cells (not on 'no gradient clipping', whose band is 111, nor on 'observation
    # normalisation' seed 1: 500 - 456.8 < 47.7; measured with the reference's pieces, this
    # machine's kernels): q5, one cell, catches it for 78 % of students, q4's two cells for
    # 96 %. Its q4 is lost anyway (the claim 'none' is wrong in the judge's table). The
    # default instance (no id: these tests) draws cell 6 for q5, one it does not catch.
    MadeUp("table_made_up_500s", F, FACTORS_OLD, 'FACTORS = "none"', ("q4_claim",),
           "a made-up table of 500s and the claim it implies ('none'): consistent with itself; "
           "q5's re-run catches it on 14 of the 18 cells a student may draw"),
    # A table from code that did not learn yet, never run again after the fix: every cell lies
    # beyond the band of any draw (by 63 returns or more), so the re-run catches it for every
    # student; its claim ('none') follows from it.
    MadeUp("table_from_code_that_did_not_learn", F, FACTORS_OLD, 'FACTORS = "none"',
           ("q4_claim", "q5_table"), "a stale table of 20s (the experiment run before a bug "
           "fix, not again after): caught by the judge's re-run of any of its cells",
           diagnosis="a number of your table is not what your code gives", value=20.0),
]

WRONG = IGNORED + CAUSES + EXPERIMENT + [
    # ------------------------------------------------------------------ new pieces
    Wrong("obs_stats_unbiased_batch_variance", F,
          "batch_mean, batch_var = obs.mean(axis=0), obs.var(axis=0)",
          "batch_mean, batch_var = obs.mean(axis=0), obs.var(axis=0, ddof=1)",
          ("q1_obs_normalisation",), "ddof=1 where the running statistics are population ones"),
    Wrong("obs_stats_without_cross_term", F, STATS,
          "    m2 = var * count + batch_var * n\n    return new_mean, m2 / total, float(total)",
          ("q1_obs_normalisation",), "drops delta**2 * count * n / total: variance too small"),
    Wrong("obs_stats_count_not_advanced", F, STATS,
          STATS.replace("float(total)", "float(count)"), ("q1_obs_normalisation",),
          "the running count never grows, so new batches keep their full weight"),
    Wrong("normalise_obs_by_std_without_eps_or_clip", F, NORM,
          "    return (np.asarray(obs, dtype=np.float64) - mean) / np.sqrt(var)",
          ("q1_obs_normalisation",), "no clip at +-10: extreme observations pass unclipped"),
    Wrong("normalise_obs_divides_by_variance", F, NORM,
          NORM.replace("np.sqrt(var + OBS_EPS)", "(var + OBS_EPS)"), ("q1_obs_normalisation",)),
    Wrong("shared_trunk_gets_policy_gradient_only", F, TRUNK,
          TRUNK.replace("pg[k] + vg[k]", "pg[k] + 0.0 * vg[k]"),
          ("q2_shared_gradients",), "the value loss never reaches the trunk (q3's loop calls "
          "this piece too, so there only q2 can see it)"),
    Wrong("shared_trunk_gradient_averaged", F, TRUNK,
          TRUNK.replace("pg[k] + vg[k]", "0.5 * (pg[k] + vg[k])"), ("q2_shared_gradients",)),
    Wrong("shared_heads_swapped", F, TRUNK,
          TRUNK.replace("[policy_grads[num_shared], value_grads[num_shared]]",
                        "[value_grads[num_shared], policy_grads[num_shared]]"),
          ("q2_shared_gradients",), "the heads' gradients in the wrong order (and shapes)"),
    # ------------------------------------------------------------------ switches
    Wrong("norm_obs_switch_does_nothing", F,
          "        env = NormalisedObs(env, update_obs_stats, normalise_obs)",
          "        env = NormalisedObs(env, update_obs_stats, lambda obs, mean, var: obs)",
          ("q3_switches",), "statistics kept, observations never normalised"),
    Wrong("norm_obs_switch_crashes", F, '    if hp["norm_obs"]:\n        env = ',
          '    if False:  # TODO\n        env = ', ("q3_switches",),
          "never wrapped: train() then crashes reading the statistics"),
    Wrong("shared_network_switch_does_nothing", F, '    shared = hp["shared_network"]\n',
          "    shared = False\n", ("q3_switches",)),
    Wrong("no_adv_norm_also_stops_gradient_clipping", F, HP,
          HP + '    if not hp["norm_adv"]:\n        hp["max_grad_norm"] = None\n',
          ("q3_switches",), "the 'no advantage normalisation' switch changes two things"),
    Wrong("norm_obs_also_scales_rewards", F, ADV,
          '        if hp["norm_obs"]:\n            ro["rewards"] = ro["rewards"] / 10.0\n' + ADV,
          ("q3_switches",), "observation normalisation that also scales rewards"),
    Wrong("full_batch_also_changes_epochs", F, HP,
          HP + '    if hp["num_minibatches"] == 1:\n        hp["update_epochs"] = 4\n',
          ("q3_switches",), "switch 'one minibatch' also shortens training"),
    Wrong("no_grad_clip_switch_ignored", F, HP,
          HP + '    hp["max_grad_norm"] = BASELINE["max_grad_norm"]\n', ("q3_switches",),
          "max_grad_norm=None is overwritten: the switch does nothing"),
    Wrong("train_arrays_ignores_the_switches", F,
          "    run = train(seed, updates, hp)\n",
          "    run = train(seed, updates, {\"num_envs\": 2, \"num_steps\": 32, \"update_epochs\": 2,"
          " \"num_minibatches\": 2})  # tuned for the checker\n",
          ("q3_switches",), "the checker's sizes hard-coded: every switch does nothing"),
    # ------------------------------------------------------------------ the claim
    Wrong("chosen_names_four", F, CHOSEN_OLD, '    "no advantage normalisation",',
          ("q3_switches", "q4_claim", "q5_table"), "four entries where five are asked"),
    Wrong("chosen_names_unknown_entry", F, CHOSEN_OLD,
          '    "advantage normalization",\n    "no gradient clipping",',
          ("q3_switches", "q4_claim", "q5_table")),
    Wrong("factors_none_when_one_qualifies", F, FACTORS_OLD, 'FACTORS = "none"',
          ("q4_claim", "q5_table"), "'none qualifies' beside a robustly qualifying factor"),
    Wrong("factors_names_a_harmless_one", F, FACTORS_OLD,
          FACTORS_OLD.replace('    "shared network",', '    "shared network",\n'
                              '    "no gradient clipping",'),
          ("q4_claim", "q5_table"), "a claim the criterion rejects: a robustly harmless factor"),
    Wrong("factors_not_among_chosen", F, FACTORS_OLD,
          FACTORS_OLD.replace('    "shared network",', '    "shared network",\n    "4 epochs instead of 10",'),
          ("q4_claim", "q5_table"), "a factor that was not ablated"),
    Moved("table_contradicts_the_claim", J, "", "", ("q5_table",),
          "one run of the table moved: by the criterion the shared network no longer qualifies",
          config="shared network", seed=2, value=500.0),
]

RIGHT = [
    Right("obs_stats_by_sums_of_squares", F, STATS,
          "    second = (count * (var + mean * mean) + n * (batch_var + batch_mean * batch_mean))"
          " / total\n    return new_mean, second - new_mean * new_mean, float(total)",
          ("q1_obs_normalisation",), "E[x^2] - E[x]^2: another formula, other roundings"),
    Right("normalise_obs_by_reciprocal", F, NORM,
          "    scale = 1.0 / np.sqrt(var + OBS_EPS)\n"
          "    z = (np.asarray(obs, dtype=np.float64) - mean) * scale\n"
          "    return np.minimum(np.maximum(z, -OBS_CLIP), OBS_CLIP)", ("q1_obs_normalisation",)),
    Right("shared_gradients_by_loop", F, TRUNK,
          "    out = []\n    for i in range(num_shared):\n"
          "        out.append({\"W\": policy_grads[i][\"W\"] + value_grads[i][\"W\"],\n"
          "                    \"b\": value_grads[i][\"b\"] + policy_grads[i][\"b\"]})\n"
          "    out.append(policy_grads[-1])\n    out.append(value_grads[-1])\n    return out",
          ("q2_shared_gradients", "q3_switches"), "a loop, the sum in the other order"),
    Right("factors_in_another_order", F, FACTORS_OLD,
          'FACTORS = "shared network; one minibatch (full batch)"', ("q4_claim",),
          "the same factors, in another order, on one line"),
    Right("claim_in_other_spelling", F, FACTORS_OLD,
          'FACTORS = """\n  Shared   NETWORK ;\n ONE minibatch (full  batch)\n"""',
          ("q4_claim", "q5_table"), "case, spacing and newlines as separators"),
]
