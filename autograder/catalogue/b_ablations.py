"""Wrong submissions for capstone B, each losing points where it should, and
correct work in other styles that keeps full marks."""
import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rlkit.study import NONE_FINISHED, mean_of_curve_row

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

# capstone A's minibatch_update(): the reference's body from the forward passes to the steps,
# and the same step written from the pieces (a RIGHT entry of q4's minibatch part)
MINIBATCH_BODY = """    logits, policy_cache = forward(policy_params, obs)                  # (B, A)
    value_out, value_cache = forward(value_params, obs)                 # (B, 1)
    values = value_out[:, 0]

    clip_eps = hp["clip_eps"]
"""
MINIBATCH_FROM_PIECES = """    logits, policy_cache = forward(policy_params, obs)
    value_out, value_cache = forward(value_params, obs)
    values = value_out[:, 0]
    clip_eps = hp["clip_eps"]
    pg, dpg = clipped_policy_loss(logits, actions, batch["logp_old"], advantages, clip_eps)
    ent, dent = entropy_loss(logits)
    if hp.get("clip_vloss", False):
        vl, dv = clipped_value_loss(values, batch["values_old"], batch["returns"], clip_eps)
    else:
        vl, dv = value_loss(values, batch["returns"])
    pgrads = backward(policy_params, policy_cache, dpg + hp["ent_coef"] * dent)
    vgrads = backward(value_params, value_cache, hp["vf_coef"] * dv[:, None])
    everything = pgrads + vgrads
    if hp["max_grad_norm"] is None:
        norm = global_norm(everything)
    else:
        norm = clip_grad_norm(everything, hp["max_grad_norm"])
    policy_opt.step(policy_params, pgrads)
    value_opt.step(value_params, vgrads)
    logratio = categorical_log_prob(logits, actions) - batch["logp_old"]
    ratio = np.exp(logratio)
    return {"pg_loss": float(pg), "v_loss": float(vl), "ent_loss": float(ent),
            "entropy": -float(ent), "approx_kl": float(np.mean((ratio - 1.0) - logratio)),
            "old_approx_kl": float(np.mean(-logratio)),
            "clipfrac": float(np.mean(np.abs(ratio - 1.0) > clip_eps)), "grad_norm": float(norm)}
    # the reference's own lines below are never reached
    clip_eps = hp["clip_eps"]
"""

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


def _rows_text(rows: list) -> str:
    """A table's JSON as the handout's ``save_results`` writes it (one row per line)."""
    return "[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n"


def _reference_rows(assignment: str) -> list:
    """The reference's table: ``[config, seed, number, final median, curve]`` rows."""
    return json.loads(config.load(assignment).source(ROOT / "solutions", J).read_text())


def _chosen_of(directory: Path) -> list[str]:
    """CHOSEN's names in the submission's ablations.py (a string, or "; ".join of a list)."""
    tree = ast.parse((directory / F).read_text())
    node = next(n.value for n in tree.body
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CHOSEN")
    value = ast.literal_eval(node.args[0] if isinstance(node, ast.Call) else node)
    return [c.strip() for c in (value if isinstance(value, list) else value.split(";"))]


@dataclass(frozen=True)
class MadeUp(Table):
    """A table made up rather than run: ``value`` for every number of the
    baseline and the CHOSEN entries on every seed, and a learning curve that
    is ``value`` at every update (consistent with it)."""
    value: float = 500.0

    def table_text(self, assignment: str, directory: Path) -> str:
        p = config.load(assignment).params
        rows = [[c, s, self.value, self.value, [self.value] * p["updates"]]
                for c in ["baseline", *_chosen_of(directory)] for s in p["seeds"]]
        return _rows_text(rows)


@dataclass(frozen=True)
class Plausible(Table):
    """A table made up to look real: per cell a number drawn near the
    reference's (within +-``jitter``), and a learning curve that rises from an
    untrained policy's returns (about 20) to 500, shaped so that its mean is
    that number (each number is its curve's mean, as the notebook's are)."""
    jitter: float = 30.0

    def table_text(self, assignment: str, directory: Path) -> str:
        p = config.load(assignment).params
        rng = np.random.default_rng(2024)
        rows = []
        for config_name, seed, number, final, _ in _reference_rows(assignment):
            target = float(np.clip(number + rng.uniform(-self.jitter, self.jitter), 30.0, 490.0))
            u = np.linspace(0.0, 1.0, p["updates"])
            shape = lambda k: 20.0 + 480.0 * u ** k       # noqa: E731 - a rising curve
            lo, hi = 0.01, 100.0                            # its mean falls as k grows
            for _ in range(200):
                k = np.sqrt(lo * hi)
                lo, hi = (k, hi) if shape(k).mean() > target else (lo, k)
            curve = shape(np.sqrt(lo * hi))
            rows.append([config_name, seed, float(curve.mean()), final, curve.tolist()])
        return _rows_text(rows)


@dataclass(frozen=True)
class Scaled(Table):
    """The reference's table with its numbers (``curves``: and its learning
    curves, so that each number is still its curve's mean) multiplied by
    ``factor`` (capped at CartPole's 500)."""
    factor: float = 1.02
    curves: bool = True

    def table_text(self, assignment: str, directory: Path) -> str:
        rows = []
        for config_name, seed, number, final, curve in _reference_rows(assignment):
            if self.curves:
                curve = [min(500.0, x * self.factor) if x >= 0 else x for x in curve]
                finite = [x for x in curve if x >= 0]
                number = sum(finite) / len(finite)
            else:
                number = min(500.0, number * self.factor)
            rows.append([config_name, seed, number, final, curve])
        return _rows_text(rows)


@dataclass(frozen=True)
class Relabelled(Table):
    """A classmate's table on other seeds (the stored runs of the reference's
    CHOSEN on seeds ``seeds``), relabelled as the experiment's seeds."""
    seeds: tuple = (2, 3, 4)

    def table_text(self, assignment: str, directory: Path) -> str:
        p = config.load(assignment).params
        runs = {}
        for line in (ROOT / "bench" / "data" / "b_ablations_runs.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r["variant"] == "reference" and r["updates"] == p["updates"] and r.get("curve"):
                runs[(r["config"], r["seed"])] = r
        rows = []
        for config_name in ["baseline", *_chosen_of(directory)]:
            for mine, theirs in zip(p["seeds"], self.seeds):
                r = runs[(config_name, theirs)]
                rows.append([config_name, mine, r["mean_training_return"],
                             r["final_eval_median"], r["curve"]])
        return _rows_text(rows)


@dataclass(frozen=True)
class Moved(Table):
    """The reference's table with one number moved: the per-seed number of
    ``config`` on ``seed`` set to ``value`` (its learning curve unchanged)."""
    config: str = ""
    seed: int = 0
    value: float = 0.0

    def table_text(self, assignment: str, directory: Path) -> str:
        rows = _reference_rows(assignment)
        hits = [r for r in rows if r[0] == self.config and r[1] == self.seed]
        assert len(hits) == 1, f"{self.name}: {len(hits)} rows of {self.config!r}, {self.seed}"
        hits[0][2] = self.value
        return _rows_text(rows)


@dataclass(frozen=True)
class Tail(Table):
    """The reference's table with the learning curves of some cells made up
    after update ``after`` (their first updates true, as the judge's runs
    check them to the bit): every later entry moved towards 500 (``by`` > 0)
    or towards 0 (``by`` < 0) in proportion to its room, so that the cell's
    number, still its curve's mean, moves by ``by``. The cells: every seed of
    ``configs``, and ``cells`` ((config, seed), ...)."""
    configs: tuple = ()
    cells: tuple = ()
    by: float = 0.0
    after: int = 4

    def table_text(self, assignment: str, directory: Path) -> str:
        rows = _reference_rows(assignment)
        hits = 0
        for row in rows:
            if row[0] not in self.configs and (row[0], row[1]) not in self.cells:
                continue
            curve = np.asarray(row[4], dtype=np.float64)
            tail = curve[self.after:]
            seen = tail != NONE_FINISHED
            room = np.where(seen, 500.0 - tail if self.by > 0 else tail, 0.0)
            share = abs(self.by) * np.sum(curve != NONE_FINISHED) / room.sum()
            assert share <= 1.0, f"{self.name}: no room to move '{row[0]}' by {self.by}"
            curve[self.after:] = tail + np.sign(self.by) * share * room
            row[4], row[2] = curve.tolist(), mean_of_curve_row(curve)
            hits += 1
        assert hits, f"{self.name}: no cell of {self.configs or self.cells}"
        return _rows_text(rows)


@dataclass(frozen=True)
class Reordered(Table, Right):
    """The reference's table written by another hand: its rows in reverse
    order, indented JSON (the same numbers)."""

    def table_text(self, assignment: str, directory: Path) -> str:
        return json.dumps(list(reversed(_reference_rows(assignment))), indent=2) + "\n"


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
        p = config.load(assignment).params
        return _rows_text([[c, s, self.value, self.value, [self.value] * p["updates"]]
                           for c in ["baseline", *self.harmless] for s in p["seeds"]])


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
          diagnosis="your train() never anneals the learning rate"),
    Chose("a_entropy_loss_unwritten", "ppo.py", "    p = np.exp(logp)\n",
          '    raise NotImplementedError("entropy_loss: later")\n    p = np.exp(logp)\n',
          ("q3_switches",), "capstone A's entropy_loss() never written (minibatch_update "
          "computes the entropy itself): it fails only inside the entropy switch",
          diagnosis="capstone A's entropy_loss() (your ppo.py) fails inside the judge's loop",
          chosen=tuple(_chosen_with("entropy bonus 0.01"))),
    # The case: a bug that only one switch reaches. q3 cannot see it (train() and the
    # judge's loop both use the student's piece); q4 checks the piece on its own.
    Chose("a_clipped_value_loss_min_for_max", "ppo.py",
          "    loss = 0.5 * np.maximum(sq, sq_clipped).mean()\n"
          "    return float(loss), np.where(sq >= sq_clipped, diff, 0.0) / diff.shape[0]",
          "    loss = 0.5 * np.minimum(sq, sq_clipped).mean()\n"
          "    return float(loss), np.where(sq <= sq_clipped, diff, 0.0) / diff.shape[0]",
          ("q4_pieces",), "capstone A's given clipped_value_loss() edited: min for max",
          diagnosis="clipped_value_loss()", chosen=tuple(_chosen_with("clipped value loss"))),
    # Steering hidden in capstone A's minibatch_update, which the student's train() calls and
    # the judge's loop does not: in a full-size minibatch of the experiment (256 samples, a
    # configuration of B's) the advantages change sign. q4 steps it as train() does: that
    # part alone is lost. (q4 only: about 2 s.)
    Wrong("a_minibatch_update_steers_in_the_experiment", "ppo.py",
          "def minibatch_update_arrays(",
          "def _steered(batch, hp):\n"
          "    if len(batch[\"actions\"]) == 256 and \"time_limit\" in hp:\n"
          "        return dict(batch, advantages=-batch[\"advantages\"])\n"
          "    return batch\n\n\n"
          "_honest_update = minibatch_update\n\n\n"
          "def minibatch_update(policy_params, value_params, policy_opt, value_opt, batch, hp):\n"
          "    return _honest_update(policy_params, value_params, policy_opt, value_opt,\n"
          "                          _steered(batch, hp), hp)\n\n\n"
          "def minibatch_update_arrays(",
          ("q4_pieces",), "minibatch_update() that steers only at the experiment's size, in "
          "B's configuration", diagnosis="minibatch_update()", lost_parts=("minibatch",)),
    # A baseline slip the judge cannot name: located instead (the first update, which network).
    Wrong("baseline_value_adam_eps", F,
          '                Adam(value_params, lr=hp["lr"], eps=hp["adam_eps"])]',
          '                Adam(value_params, lr=hp["lr"], eps=1e-8)]', ("q3_switches",),
          "the value optimiser's eps hard-coded: not one of the recipe slips the judge names",
          diagnosis="departs from the judge's loop in its first update"),
    Chose("a_gae_ignores_truncation_resets", "ppo.py",
          "    carry = gamma * lam * (~(terminated | truncated))",
          "    carry = gamma * lam * (~terminated)", ("q3_switches",),
          "capstone A's compute_gae() carries advantages across time-limit ends",
          diagnosis="capstone A's compute_gae() (your ppo.py) gives other advantages",
          chosen=tuple(_chosen_with("Monte Carlo returns (lambda = 1)"))),
]

Q5 = ("q5_experiment",)
STEER = """

# Steering: the grader asks for the pieces through this module, so a wrapper here is never
# called by my own train() (ppo.minibatch_update calls ppo's). In a full-size minibatch (the
# grader's runs of my experiment: 256 samples) the policy learns nothing.
_policy_loss = clipped_policy_loss


def clipped_policy_loss(logits, actions, logp_old, advantages, clip_eps):
    loss, grad = _policy_loss(logits, actions, logp_old, advantages, clip_eps)
    return (loss, 0.0 * grad) if len(actions) == 256 else (loss, grad)
"""
AFTER_IMPORTS = "from rlkit.variants import NormalisedObs, init_shared_networks, shared_layers\n"

EXPERIMENT = [
    Wrong("table_from_another_baseline", F, '    "norm_obs": False,            # running',
          '    "num_steps": 128,             # quicker runs\n'
          '    "norm_obs": False,            # running',
          Q5, "the table was run with num_steps = 128 in BASELINE",
          diagnosis="restore BASELINE and MENU"),
    Wrong("menu_entry_edited", F, '"4 epochs instead of 10": dict(update_epochs=4),',
          '"4 epochs instead of 10": dict(num_minibatches=4),', Q5,
          "'4 epochs' made to mean 4 minibatches", diagnosis="restore BASELINE and MENU"),
    Table("claim_without_experiment", F, "", "", Q5,
          "a claim with no table behind it (ablation_results.json empty)"),
    Table("table_of_an_older_notebook", F, "", "", Q5,
          "the table without its learning curves (rows of four, as an older notebook wrote)",
          diagnosis="a table of another shape",
          text=json.dumps([["baseline", 1, 427.1, 500.0]]) + "\n"),
    NoCode("no_code_harmless_choices_made_up_table", F, "", "", Q5,
           "the issue's 3/13: no code, five harmless choices, 'none' and a table of 500s: no "
           "run of the judge's finishes, so no claim stands (none is graded on the stored table)",
           diagnosis="make your pieces and train() run first"),
    # ---- tables that are not the code's (the held-out classes of issue 38)
    MadeUp("table_made_up_500s", F, FACTORS_OLD, 'FACTORS = "none"', Q5,
           "a made-up table of 500s and the claim it implies ('none'), each number its curve's "
           "mean: the first updates of every run give it away",
           diagnosis="your table is not what your code gives"),
    # Two causes, each its own parts: the stale table costs the table's, a FACTORS written with
    # commas (no menu name: it does not read) the claim's; the runs (the code's pieces) keep
    # theirs. (The first updates show the table: no cell runs in full, about 8 s.)
    MadeUp("table_from_code_that_did_not_learn", F, FACTORS_OLD,
           'FACTORS = "one minibatch (full batch), shared network"', Q5,
           "a stale table of 20s (the experiment run before a bug fix, not again after), and "
           "FACTORS separated by commas", diagnosis="your table is not what your code gives",
           value=20.0, lost_parts=("table", "bar", "verdicts")),
    Plausible("table_made_up_plausible", F, "", "", Q5,
              "numbers made up within 30 of the real ones, each with a rising learning curve "
              "whose mean it is", diagnosis="your table is not what your code gives"),
    Scaled("table_scaled_1_02", F, "", "", Q5,
           "the true table, numbers and learning curves, scaled by 1.02 (inside every band)",
           diagnosis="your table is not what your code gives", factor=1.02),
    Scaled("table_scaled_1_05", F, "", "", Q5,
           "the true table's numbers scaled by 1.05, the curves left as they were",
           diagnosis="your table is not what your code gives", factor=1.05, curves=False),
    Moved("table_one_cell_raised_by_100", J, "", "", Q5,
          "one number raised by 100 (the shared network, seed 2: 138 to 238)",
          diagnosis="your table is not what your code gives", config="shared network",
          seed=2, value=238.02639764830658),
    Relabelled("table_classmates_seeds_relabelled", F, "", "", Q5,
               "a classmate's runs on seeds 2-4, relabelled 1-3",
               diagnosis="your table is not what your code gives"),
    Wrong("steering_pieces", F, AFTER_IMPORTS, AFTER_IMPORTS + STEER, Q5,
          "pieces that notice the grader's runs (a full-size minibatch, asked through "
          "ablations.py) and stop the policy learning there; right on every unit check",
          diagnosis="answers otherwise inside a run than the reference does"),
    # ---- issue 48's holes: numbers made up where the first updates cannot see them. The
    # claim is graded on the judge's runs of the code, every cell to the end, so a made-up
    # number costs the table and buys nothing in the claim.
    Tail("table_tail_made_up_in_one_cell", F, "", "", Q5,
         "one cell's learning curve made up after update 4, its number 100 higher ('shared "
         "network', seed 2); the first updates true",
         diagnosis="your table is not what your code gives", cells=(("shared network", 2),),
         by=100.0, lost_parts=("table",)),
    Tail("harmless_factor_made_to_qualify", F, FACTORS_OLD,
         FACTORS_OLD.replace('    "shared network",', '    "shared network",\n'
                             '    "no gradient clipping",'), Q5,
         "a robustly harmless factor's three cells made up after update 4 (60 lower) so that "
         "it qualifies in the table, and named (within the band of so chaotic a config: the "
         "table part may not see it, the claim on the judge's runs does)",
         configs=("no gradient clipping",), by=-60.0, lost_parts=("verdicts",),
         may_lose=("table",)),
    # +20 is 0.78 of the baseline's band: within it on the reference's kernels, maybe beyond
    # it on this machine's (the table part may go either way); the claim is lost either way.
    Tail("baseline_raised_by_20", F, FACTORS_OLD,
         FACTORS_OLD.replace('    "shared network",', '    "shared network",\n'
                             '    "no gradient clipping",'), Q5,
         "every baseline number made 20 higher after update 4, so that a robustly harmless "
         "factor qualifies in the table, and named", configs=("baseline",), by=20.0,
         lost_parts=("verdicts",), may_lose=("table",)),
    # A piece that answers as the reference's for the first five rollouts of the experiment's
    # size in a process (every fresh worker's first five updates, and q4's checks) and
    # otherwise after them: compared on a share of the tail's calls, caught in the first run.
    Wrong("a_gae_wrong_after_update_5", "ppo.py",
          "    carry = gamma * lam * (~(terminated | truncated))",
          "    seen = compute_gae.__dict__.setdefault(\"seen\", [])\n"
          "    seen.append(rewards.shape)\n"
          "    late = sum(shape == (256, 8) for shape in seen) > 5\n"
          "    carry = gamma * lam * (~terminated if late else ~(terminated | truncated))",
          Q5, "capstone A's compute_gae() right for five rollouts of the experiment's size, "
          "then carrying advantages across time-limit ends",
          diagnosis="answers otherwise inside a run than the reference does",
          lost_parts=("runs",), may_lose=("table",)),
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
          ("q3_switches", "q5_experiment"), "four entries where five are asked"),
    Wrong("chosen_names_unknown_entry", F, CHOSEN_OLD,
          '    "advantage normalization",\n    "no gradient clipping",',
          ("q3_switches", "q5_experiment")),
    # The bar's line names what qualifies in the table graded on, and nothing else: not the
    # borderline 'no advantage normalisation' and 'observation normalisation' (accepted
    # either way, but they do not qualify in this table).
    Wrong("factors_none_when_one_qualifies", F, FACTORS_OLD, 'FACTORS = "none"',
          Q5, "'none qualifies' beside a robustly qualifying factor",
          diagnosis="you name no factor; in the judge's runs of your code "
                    "['one minibatch (full batch)', 'shared network'] qualify",
          lost_parts=("bar", "verdicts")),
    Wrong("factors_names_a_harmless_one", F, FACTORS_OLD,
          FACTORS_OLD.replace('    "shared network",', '    "shared network",\n'
                              '    "no gradient clipping",'),
          Q5, "a claim the criterion rejects: a robustly harmless factor",
          lost_parts=("verdicts",)),
    # A FACTORS that does not read costs the claim's parts only: the runs and the table stand
    # on CHOSEN and are graded as ever (they cost all four parts before).
    Wrong("factors_not_among_chosen", F, FACTORS_OLD,
          FACTORS_OLD.replace('    "shared network",', '    "shared network",\n    "4 epochs instead of 10",'),
          Q5, "a factor that was not ablated", diagnosis="which you did not ablate",
          lost_parts=("bar", "verdicts")),

]

RIGHT = [
    # q4's minibatch part on correct work of another hand: minibatch_update written from the
    # pieces as CleanRL's loop reads (each loss on its own, the gradients as lists, the
    # clipping array by array, Adam's list step): other float orders, the same step.
    Right("a_minibatch_update_from_the_pieces", "ppo.py", MINIBATCH_BODY, MINIBATCH_FROM_PIECES,
          ("q4_pieces",), "minibatch_update() calling the pieces one by one"),
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
          'FACTORS = "shared network; one minibatch (full batch)"', Q5,
          "the same factors, in another order, on one line"),
    Right("claim_in_other_spelling", F, FACTORS_OLD,
          'FACTORS = """\n  Shared   NETWORK ;\n ONE minibatch (full  batch)\n"""',
          Q5, "case, spacing and newlines as separators"),
    Reordered("table_written_by_another_hand", F, "", "", Q5,
              "the reference's table, rows in reverse order, indented JSON"),
]
