"""One 60-update capstone A PPO run: ours vs its floor, today's code, SB3 and CleanRL.

Run from the repository root, on one core:

    taskset -c 1 .venv/bin/python bench/bench_ppo.py [--seeds 1 2 3] [--updates 60]
        [--today 54f24e3] [--repeats 3] [--torch-python /path/to/venv/bin/python]
        [--breakdown]

Without ``taskset`` the script pins itself to the first CPU it may use; every
run is a fresh child process on that CPU, and the contenders take turns seed
by seed (interleaved), so every ratio printed is measured in this one run.

Rows of the table (seconds per run, env steps per second, ratios):

* floor: the run's matrix products and tanh calls timed alone. A first,
  untimed run of ours records the networks and the observations of every
  20th minibatch and 16 steps of every rollout; the floor replays, on those
  real numbers, only the products a tanh MLP cannot avoid (per minibatch
  and network: 3 forward products, 3 weight-gradient products, 2 input-
  gradient products -- the one-column value head's as the faster of a
  product and a broadcast multiply -- and 2 tanh; per rollout step the
  policy's 3 products and 2 tanh; per update the value pass over the
  rollout), each with preallocated outputs, best of 5 in each of the
  ``--repeats`` passes, fastest over the passes, and scales them to the
  whole run. Bias adds, losses, Adam, the environment: all overhead.
* ours: ``solutions/a_ppo/ppo.py`` with this tree's ``rlkit``.
* today: the same files at git revision ``--today`` (the code before the
  runtime work), loaded from git into the child process.
* Stable-Baselines3 / CleanRL-style PyTorch: ``bench/torch_ppo.py`` run by
  ``--torch-python`` (an interpreter with the optional ``bench`` extra:
  torch, stable-baselines3); "not installed" when there is none.

Each run's policy is then evaluated (untimed): the median return of 20
sampled-action episodes, as capstone A's bar does.

Noise: on this fleet's virtual machines the same run's time moves by 20 %
from one minute to the next (measured: 1671-2806 us for the same minibatch
in two runs of one seed; the same floor 7.4 s and 9.0 s in two bench runs an
hour apart), so a single run charges the host's bad minute to whichever
contender it happened to. The floor is a best-of timing, and every contender
is timed the same way: ``--repeats R`` (default 3) rounds per seed, each
round a floor pass and then one run of every contender (ours, today, SB3,
CleanRL); the table takes each seed's fastest run and each floor piece's
fastest pass, and prints the mean over all runs below it. A 10-second run
still meets bursts that a best-of of 1-millisecond pieces avoids, so ours
and today's code are also timed the floor's way, piece by piece: the rows
"update by update" add, for every update, the fastest of the R runs' logged
wall times of that update (its rollout and its epochs; the runs are
deterministic, so it is the same work every time), plus the fastest time
spent outside the updates.

``--breakdown`` also times the overhead that every numpy PPO with these
semantics pays (``required_overhead``) and the parts of one minibatch update.
"""

import argparse
import copy
import functools
import importlib.abc
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TODAY = "54f24e3"  # main before the runtime work of this benchmark
RUNTIME_MODULES = ("__init__", "agent", "cartpole", "mlp", "optim", "progress", "threads")


# ------------------------------------------------------------------ loading code
def load_reference(root=ROOT):
    """Import ``solutions/a_ppo/ppo.py`` (not a package) under a private name."""
    sys.path.insert(0, root)
    path = os.path.join(root, "solutions", "a_ppo", "ppo.py")
    spec = importlib.util.spec_from_file_location("_bench_a_ppo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _GitFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``rlkit`` and its modules from one git revision (no files written)."""

    def __init__(self, rev):
        self.rev = rev

    def source(self, path):
        return subprocess.run(["git", "-C", ROOT, "show", f"{self.rev}:{path}"], check=True,
                              capture_output=True, text=True).stdout

    def find_spec(self, name, path=None, target=None):
        parts = name.split(".")
        if parts[0] != "rlkit" or len(parts) > 2:
            return None
        is_package = len(parts) == 1
        return importlib.util.spec_from_loader(name, self, is_package=is_package)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        path = "rlkit/__init__.py" if name == "rlkit" else f"rlkit/{name.split('.')[1]}.py"
        exec(compile(self.source(path), f"{self.rev}:{path}", "exec"), module.__dict__)


def load_reference_at(rev):
    """The reference and the runtime as they were at git revision ``rev``."""
    sys.modules.pop("rlkit", None)
    finder = _GitFinder(rev)
    sys.meta_path.insert(0, finder)
    module = type(sys)("_bench_a_ppo_" + rev)
    module.__file__ = f"{rev}:solutions/a_ppo/ppo.py"
    exec(compile(finder.source("solutions/a_ppo/ppo.py"), module.__file__, "exec"),
         module.__dict__)
    return module


# ------------------------------------------------------------------ child: one timed run
def child(which, seed, updates):
    """Run one timed training in this (fresh) process; print a JSON line."""
    ppo = load_reference() if which == "ours" else load_reference_at(which)
    start, cpu_start = time.perf_counter(), time.process_time()
    out = ppo.train(seed, updates=updates)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    hp = out["hp"]
    returns = ppo.evaluate(out["policy_params"], episodes=20, seed=seed + 777)
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds,
                      "steps": updates * hp["num_envs"] * hp["num_steps"],
                      "rollout_seconds": float(out["log"]["rollout_seconds"].sum()),
                      "update_seconds": float(out["log"]["update_seconds"].sum()),
                      # wall seconds of each update (its rollout and its epochs), as logged
                      "per_update": (out["log"]["rollout_seconds"]
                                     + out["log"]["update_seconds"]).tolist(),
                      "median_return": float(np.median(returns)),
                      "rlkit": getattr(sys.modules["rlkit"], "__file__", None) or which}))


def run_child(argv, python=sys.executable):
    """Start a child process, return its JSON (or {"error": ...})."""
    proc = subprocess.run([python, *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}


# ------------------------------------------------------------------ the floor
def capture(ppo, seed, updates, every=20, steps_per_rollout=16):
    """Run ours once (untimed) recording what the floor replays."""
    minibatches, rollouts = [], []
    count = [0]
    real_update, real_rollout = ppo.minibatch_update, ppo.collect_rollout

    def minibatch_update(policy, value, *args):
        batch = args[2]
        if count[0] % every == 0:
            minibatches.append((copy.deepcopy(policy), copy.deepcopy(value), batch["obs"].copy()))
        count[0] += 1
        return real_update(policy, value, *args)

    def collect_rollout(env, obs, policy, value, num_steps, rng):
        before = copy.deepcopy(policy), copy.deepcopy(value)
        ro = real_rollout(env, obs, policy, value, num_steps, rng)
        picks = np.linspace(0, num_steps - 1, steps_per_rollout).astype(int)
        ended = ro["terminated"] | ro["truncated"]
        rollouts.append((*before, ro["obs"][picks].copy(),
                         np.concatenate([ro["obs"], ro["next_obs"][None]]).reshape(-1, 4),
                         int(ended.sum())))
        return ro

    ppo.minibatch_update, ppo.collect_rollout = minibatch_update, collect_rollout
    try:
        out = ppo.train(seed, updates=updates)
    finally:
        ppo.minibatch_update, ppo.collect_rollout = real_update, real_rollout
    return out["hp"], count[0], minibatches, rollouts


def _best(ops, repeats=5):
    """Best wall time of running the zero-argument callables ``ops`` in turn."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for op in ops:
            op()
        best = min(best, time.perf_counter() - start)
    return best


def _forward_ops(params, x):
    """Floor ops of one forward pass on real inputs; returns (ops, layer inputs)."""
    ops, inputs, h = [], [], x
    for i, layer in enumerate(params):
        W, b = layer["W"], layer["b"]
        inputs.append(h)
        z = h @ W + b
        ops.append(functools.partial(np.matmul, h, W, out=np.empty_like(z)))
        if i < len(params) - 1:
            ops.append(functools.partial(np.tanh, z, out=np.empty_like(z)))
            h = np.tanh(z)
    return ops, inputs


def _backward_ops(params, inputs, rng):
    """Floor ops of one backward pass (weight and input gradients)."""
    ops = []
    dz = 0.01 * rng.standard_normal((inputs[0].shape[0], params[-1]["W"].shape[1]))
    for i in reversed(range(len(params))):
        h, W = inputs[i], params[i]["W"]
        ops.append(functools.partial(np.matmul, h.T, dz, out=np.empty(W.shape)))
        if i > 0:
            out = np.empty((dz.shape[0], W.shape[0]))
            as_product = functools.partial(np.matmul, dz, W.T, out=out)
            if W.shape[1] == 1:   # an outer product: take its cheaper form
                as_multiply = functools.partial(np.multiply, dz, W.T, out=out)
                as_product = min((as_product, as_multiply), key=lambda op: _best([op] * 20))
            ops.append(as_product)
            dz = (dz @ W.T) * (1.0 - h * h)
    return ops


def floor_pieces(hp, minibatches, rollouts, seed=0):
    """The floor's pieces, each timed best of 5 (see the module doc).

    Returns ``(per_minibatch, per_rollout)``: seconds of each recorded
    minibatch's products and tanh, ``(len(minibatches),)``, and of each
    rollout's (its policy steps scaled to ``num_steps``, plus its value pass),
    ``(len(rollouts),)``.
    """
    rng = np.random.default_rng(seed)
    per_minibatch = []
    for policy, value, obs in minibatches:
        ops = []
        for params in (policy, value):
            fwd, inputs = _forward_ops(params, obs)
            ops += fwd + _backward_ops(params, inputs, rng)
        per_minibatch.append(_best(ops))
    per_rollout = []
    for policy, value, step_obs, all_obs, num_ended in rollouts:
        steps = [_best(_forward_ops(policy, o)[0]) for o in step_obs]
        value_pass = _forward_ops(value, all_obs)[0] + _forward_ops(value, all_obs[:num_ended])[0]
        per_rollout.append(np.mean(steps) * hp["num_steps"] + _best(value_pass))
    return np.array(per_minibatch), np.array(per_rollout)


def floor_seconds(num_minibatches, per_minibatch, per_rollout):
    """``(update_floor, rollout_floor)`` seconds of the whole run from its pieces
    (the recorded minibatches stand for all ``num_minibatches``)."""
    return float(np.mean(per_minibatch)) * num_minibatches, float(np.sum(per_rollout))


def required_overhead(hp, num_minibatches, minibatches, rollouts, seed=0):
    """Seconds of the overhead that any numpy PPO with this run's semantics pays.

    Not in the floor, and not removable by any change the issue allows (the
    environment bit-identical to gymnasium, Adam with torch's update, a tanh
    MLP), each timed at its least cost, best of 5, on the run's own numbers
    and scaled to the whole run like the floor:

    * the CartPole step: gymnasium's float operations, one rounding each, as
      ``cartpole_dynamics`` and ``is_terminal`` do them for N environments
      (no bookkeeping, no resets, no copies);
    * Adam: torch's update as ONE whole-vector step over both networks
      (12 elementwise operations; ours takes two, one per network);
    * the tanh derivative ``g * (1 - h*h)``: 3 elementwise passes per hidden
      layer and network in every minibatch;
    * the bias adds of every forward pass (minibatches, rollout steps and the
      rollout's value pass), in place (folding the bias into the products
      instead was measured slower here: tanh then writes a strided view);
    * sampling: ``argmax(logits + noise)`` per rollout step.

    Returns ``{item: seconds}``.
    """
    from rlkit.cartpole import cartpole_dynamics, is_terminal
    from rlkit.mlp import flatten, forward
    from rlkit.optim import Adam
    rng = np.random.default_rng(seed)
    vector_steps = hp["num_steps"] * len(rollouts)
    env, adam, slope, bias, sample = REQUIRED_ITEMS
    per_minibatch = {adam: [], slope: [], bias: []}
    for policy, value, obs in minibatches:
        params = flatten(policy + value)
        P = params.size
        args = (params, 1e-3 * rng.standard_normal(P), np.zeros(P), np.zeros(P), 1.0, 1.0,
                (np.empty(P), np.empty(P)))
        per_minibatch[adam].append(_best([functools.partial(
            Adam(policy + value, lr=1e-3, eps=1e-5)._update, *args)]))
        slope_ops, bias_ops = [], []
        for net in (policy, value):
            bias_ops += _bias_add_ops(net, obs)
            for h in forward(net, obs)[1][1:]:              # the hidden layers' tanh outputs
                g, s = rng.standard_normal(h.shape), np.empty_like(h)
                slope_ops += [functools.partial(np.multiply, h, h, out=s),
                              functools.partial(np.subtract, 1.0, s, out=s),
                              functools.partial(np.multiply, g, s, out=g)]
        per_minibatch[slope].append(_best(slope_ops))
        per_minibatch[bias].append(_best(bias_ops))
    out = {item: float(np.mean(times)) * num_minibatches for item, times in per_minibatch.items()}
    per_step = {env: [], bias: [], sample: []}
    for policy, value, step_obs, all_obs, num_ended in rollouts:
        out[bias] += _best(_bias_add_ops(value, all_obs))          # the rollout's value pass
        for state in step_obs[::4]:
            actions = rng.integers(0, 2, len(state))
            per_step[env].append(_best([functools.partial(
                lambda s, a: is_terminal(cartpole_dynamics(s, a)), state, actions)] * 20) / 20)
            per_step[bias].append(_best(_bias_add_ops(policy, state) * 20) / 20)
            logits = forward(policy, state)[0]
            noise = rng.gumbel(size=logits.shape)
            per_step[sample].append(_best([functools.partial(
                lambda l, n: np.argmax(l + n, axis=1), logits, noise)] * 20) / 20)
    for item, times in per_step.items():
        out[item] = out.get(item, 0.0) + float(np.mean(times)) * vector_steps
    return {item: out[item] for item in REQUIRED_ITEMS}


REQUIRED_ITEMS = ("CartPole step (gymnasium's operations)", "Adam, one whole-vector step",
                  "tanh derivative g * (1 - h*h)", "bias adds (forward passes)",
                  "action sampling argmax(logits + noise)")


def _bias_add_ops(params, x):
    """One in-place bias add per layer of a forward pass on ``x``, on real numbers."""
    from rlkit.mlp import forward
    ops = []
    for h, layer in zip(forward(params, x)[1], params):      # each layer's input
        z = h @ layer["W"]
        ops.append(functools.partial(np.add, z, layer["b"], out=np.empty_like(z)))
    return ops


# ------------------------------------------------------------------ report
def cpu_kind():
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:
        features = {}
    simd = "AVX-512F" if features.get("AVX512F") else ("AVX2" if features.get("AVX2") else "?")
    return f"{model}, numpy {np.__version__} SIMD up to {simd}"


def find_torch_python(given):
    candidates = [given, os.environ.get("RLCAP_BENCH_PYTHON"), sys.executable,
                  os.path.join(ROOT, "..", "bench-venv", "bin", "python")]
    for python in filter(None, candidates):
        probe = subprocess.run([python, "-c", "import torch, stable_baselines3"],
                               capture_output=True) if os.path.exists(python) else None
        if probe is not None and probe.returncode == 0:
            return python
    return None


def minibatch_breakdown(ppo):
    """Microseconds per call of ``minibatch_update`` and its parts, each called
    as the reference calls it (both networks' gradients in one vector)."""
    from rlkit.mlp import backward, clip_grad_norm, forward
    from rlkit.optim import Adam
    rng = np.random.default_rng(0)
    hp = dict(ppo.DEFAULT_HP)
    policy, value = ppo.init_networks(hp, rng)
    policy_opt = Adam(policy, lr=hp["lr"], eps=hp["adam_eps"])
    value_opt = Adam(value, lr=hp["lr"], eps=hp["adam_eps"])
    B = hp["num_envs"] * hp["num_steps"] // hp["num_minibatches"]
    batch = {"obs": rng.normal(0.0, 0.1, (B, 4)), "actions": rng.integers(0, 2, B),
             "logp_old": np.full(B, np.log(0.5)), "advantages": rng.standard_normal(B),
             "returns": rng.standard_normal(B)}
    obs = batch["obs"]
    logits, pcache = forward(policy, obs)
    vout, vcache = forward(value, obs)
    n_policy = policy_opt.size
    vector = np.empty(n_policy + value_opt.size)
    pgrads = backward(policy, pcache, logits, out=vector[:n_policy])
    vgrads = backward(value, vcache, vout, out=vector[n_policy:])
    adv = ppo._normalised(batch["advantages"])

    def losses():
        ppo._policy_terms(logits, batch["actions"], batch["logp_old"], adv, hp["clip_eps"],
                          hp["ent_coef"])
        ppo._value_terms(vout[:, 0], batch["returns"])

    parts = {
        "minibatch_update (whole)": lambda: ppo.minibatch_update(
            policy, value, policy_opt, value_opt, batch, hp),
        "  rlkit forward, both nets": lambda: (forward(policy, obs), forward(value, obs)),
        "  rlkit backward, both nets": lambda: (
            backward(policy, pcache, logits, out=vector[:n_policy]),
            backward(value, vcache, vout, out=vector[n_policy:])),
        "  losses (policy terms, value loss)": losses,
        "  clip_grad_norm (joint, one vector)": lambda: clip_grad_norm(pgrads + vgrads, 1e30,
                                                                       vector=vector),
        "  Adam step_vector, both nets": lambda: (
            policy_opt.step_vector(policy, vector[:n_policy]),
            value_opt.step_vector(value, vector[n_policy:])),
    }
    out = {}
    for name, fn in parts.items():
        out[name] = 1e6 * _best([fn] * 50) / 50
    return B, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--updates", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs per contender and seed; the fastest counts")
    parser.add_argument("--today", default=TODAY, help="git revision of 'today's code'")
    parser.add_argument("--torch-python", default=None)
    parser.add_argument("--no-torch", action="store_true", help="skip SB3 and CleanRL")
    parser.add_argument("--breakdown", action="store_true", help="also time minibatch parts")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.seed, args.updates)
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    torch_python = None if args.no_torch else find_torch_python(args.torch_python)

    ppo = load_reference()
    me = [os.path.join("bench", "bench_ppo.py"), "--updates", str(args.updates)]
    rows = {"floor": [], "ours": [], f"today ({args.today})": [],
            "Stable-Baselines3": [], "CleanRL-style PyTorch": []}
    evals = {k: [] for k in rows}
    split = {"floor": [], "ours": []}   # (rollout, update) seconds
    walls = {k: [] for k in rows}
    every_run = {k: [] for k in rows}                 # CPU s of every timed run
    required = {}                                     # item -> seconds per seed (--breakdown)
    by_update = {k: [] for k in rows}                 # wall s, each update's best run
    steps = None
    for seed in args.seeds:
        hp, n_mb, minibatches, rollouts = capture(ppo, seed, args.updates)
        runs = [("ours", me + ["--child", "ours", "--seed", str(seed)], sys.executable),
                (f"today ({args.today})", me + ["--child", args.today, "--seed", str(seed)],
                 sys.executable)]
        if torch_python:
            runs += [("Stable-Baselines3", ["bench/torch_ppo.py", "sb3", "--seed", str(seed),
                                            "--updates", str(args.updates)], torch_python),
                     ("CleanRL-style PyTorch", ["bench/torch_ppo.py", "cleanrl", "--seed",
                                                str(seed), "--updates", str(args.updates)],
                      torch_python)]
        results = {name: [] for name, _, _ in runs}
        floor_passes, required_passes = [], []
        for _ in range(args.repeats):              # interleaved: the floor, then each contender
            floor_passes.append(floor_pieces(hp, minibatches, rollouts, seed))
            if args.breakdown:
                required_passes.append(required_overhead(hp, n_mb, minibatches, rollouts, seed))
            for name, argv, python in runs:
                res = run_child(argv, python)
                if "error" in res:
                    print(f"{name}, seed {seed}: failed: {res['error']}", file=sys.stderr)
                    continue
                results[name].append(res)
                steps = res["steps"]
        # The floor piece by piece: each piece's fastest over all passes.
        update_floor, rollout_floor = floor_seconds(
            n_mb, *(np.min([p[k] for p in floor_passes], axis=0) for k in (0, 1)))
        rows["floor"].append(update_floor + rollout_floor)
        split["floor"].append((rollout_floor, update_floor))
        for item in required_passes[0] if required_passes else ():
            required.setdefault(item, []).append(min(p[item] for p in required_passes))
        for name, done in results.items():
            every_run[name] += [res["cpu_seconds"] for res in done]
            if not done:
                continue
            if "per_update" in done[0]:
                # Update by update: each update's fastest of the R runs (the same
                # work every run: the runs are deterministic), plus the fastest
                # time spent outside the logged updates (setup, logging).
                per_update = np.min([res["per_update"] for res in done], axis=0)
                outside = min(res["seconds"] - sum(res["per_update"]) for res in done)
                by_update[name].append(float(per_update.sum()) + outside)
            best = min(done, key=lambda res: res["cpu_seconds"])
            rows[name].append(best["cpu_seconds"])
            walls[name].append(best["seconds"])
            if name == "ours":
                split["ours"].append((best["rollout_seconds"], best["update_seconds"]))
            evals[name].append(best["median_return"])
        print(f"seed {seed} done (CPU s): " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in rows.items()
                                                 if len(v) == len(evals["ours"]) and v),
              file=sys.stderr, flush=True)

    steps = steps or args.updates * 2048
    floor, ours = np.mean(rows["floor"]), np.mean(rows["ours"])
    print(f"\nPPO on CartPole, {args.updates} updates ({steps:,} env steps) per run, seeds "
          f"{' '.join(map(str, args.seeds))}, one core (CPU {cpus}), BLAS/torch at one thread")
    print(f"CPU: {cpu_kind()}")
    print("Times are CPU seconds of the run's process (wall seconds in brackets): on a shared\n"
          "machine they leave out the time another process held the core. The floor is the\n"
          f"best of 5 x {args.repeats} wall timings of each replayed minibatch and rollout step, "
          "in\npasses interleaved with the runs; every other row is each seed's fastest of "
          f"{args.repeats} runs.")
    print(f"\n{'':26s} {'seconds per run (mean)':>24s} {'steps/s':>9s} {'x floor':>8s} "
          f"{'x ours':>7s}  median eval return")
    for name, secs in rows.items():
        if not secs:
            torch_row = name in ("Stable-Baselines3", "CleanRL-style PyTorch")
            note = ("skipped (--no-torch)" if args.no_torch else
                    "not installed (optional extra 'bench')" if torch_python is None else
                    "failed") if torch_row else "failed"
            print(f"{name:26s} {note}")
            continue
        mean = float(np.mean(secs))
        per = " ".join(f"{s:.2f}" for s in (walls[name] or secs))
        ev = " ".join(f"{e:.0f}" for e in evals[name]) if evals[name] else "-"
        print(f"{name:26s} {mean:7.2f} ({per:>14s}) {steps / mean:9,.0f} {mean / floor:8.2f} "
              f"{mean / ours:7.2f}  {ev}")
    for name, secs in by_update.items():
        if secs:
            mean = float(np.mean(secs))
            print(f"{name + ', update by update':38s} {mean:7.2f} wall s per run "
                  f"({' '.join(f'{x:.2f}' for x in secs)}) {mean / floor:6.2f} x floor")
    today = rows[f"today ({args.today})"]
    ours_by_update = float(np.mean(by_update["ours"])) if by_update["ours"] else ours
    print(f"\nours is {ours_by_update / floor:.2f}x its floor update by update "
          f"({ours / floor:.2f}x as whole runs)" + (
              f"; today's code is {np.mean(today) / ours:.2f}x slower than ours" if today else ""))

    if args.repeats > 1:
        print(f"mean of all {args.repeats} runs per seed, x floor: " + ", ".join(
            f"{name} {np.mean(secs) / floor:.2f}" for name, secs in every_run.items() if secs))

    for name, parts in split.items():
        if parts:
            rollout, update = np.mean(parts, axis=0)
            print(f"  {name:5s} (wall): rollouts {rollout:5.2f} s ({1e6 * rollout / (steps / ppo.DEFAULT_HP['num_envs']):5.1f} us per "
                  f"vector step), updates {update:5.2f} s ({1e6 * update / (args.updates * ppo.DEFAULT_HP['update_epochs'] * ppo.DEFAULT_HP['num_minibatches']):6.1f} "
                  "us per minibatch)")

    if required:
        total = sum(np.mean(v) for v in required.values())
        print("\noverhead that every numpy PPO with these semantics pays (see required_overhead;\n"
              "least cost, best of 5 on each run's own numbers, scaled to the run, mean of seeds):")
        for item, secs in required.items():
            print(f"  {item:42s} {np.mean(secs):5.2f} s  {100 * np.mean(secs) / floor:5.1f} % of the floor")
        print(f"  {'sum':42s} {total:5.2f} s  {100 * total / floor:5.1f} %")
        gap = ours_by_update - floor
        print(f"  ours (update by update) - floor: {gap:.2f} s ({100 * gap / floor:.1f} %), of "
              f"which {gap - total:.2f} s beyond these items; 1.25x allows 25 %")

    if args.breakdown:
        B, parts = minibatch_breakdown(ppo)
        print(f"\none minibatch_update, B = {B}, best of 5 x 50 calls (synthetic data):")
        for name, us in parts.items():
            print(f"  {name:36s} {us:8.1f} us")


if __name__ == "__main__":
    main()
