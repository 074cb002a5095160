"""``make reproduce``: print every result section 15.7 prints, in its format,
using the reference solution of capstone D and the runtime's REINFORCE loop."""
from __future__ import annotations

import numpy as np

from rlkit import reinforce
from rlkit.verifier import (EXACT_REWARD, HEDGE, SLOPPY_REWARD, expected_success,
                            reference_logits, softmax_policy)

from autograder.grading.reference import load_reference
from autograder.oracles.grpo_math import exact_gradient, expected_group_update

K_SWEEP = (1, 2, 4, 8, 32)
SWEEP_BUDGET = 6400          # scored responses per prompt, matched across K
SWEEP_SEED = 1
BETAS = (0.0, 0.1, 0.2, 0.3, 0.5)
BETA_UPDATES, BETA_K, BETA_SEED = 400, 32, 2


def k_sweep_success(weight_fn) -> list[float]:
    """The section's K-sweep: success of a sampled response after training with
    ``weight_fn`` for SWEEP_BUDGET // K updates from default_rng(SWEEP_SEED), per K."""
    return [expected_success(softmax_policy(
        reinforce.train(weight_fn, K, SWEEP_BUDGET // K, np.random.default_rng(SWEEP_SEED))),
        EXACT_REWARD) for K in K_SWEEP]


def lines() -> list[str]:
    grpo = load_reference("d_grpo", "grpo.py")
    out = []
    pi_ref = softmax_policy(reference_logits())
    out.append(f"success of a response sampled from the reference: "
               f"{expected_success(pi_ref, EXACT_REWARD):.3f}")

    K = 2
    g = exact_gradient(pi_ref, EXACT_REWARD)
    centred = expected_group_update(pi_ref, EXACT_REWARD, K, grpo.centred_weight)
    loo = expected_group_update(pi_ref, EXACT_REWARD, K, grpo.leave_one_out_weight)
    out.append(f"E of the group-centered update is (K-1)/K of the gradient: "
               f"{np.allclose(centred, g * (K - 1) / K)}")
    out.append(f"rescaled by K/(K-1), leave-one-out, it is exact: {np.allclose(loo, g)}")

    for K, success in zip(K_SWEEP, k_sweep_success(grpo.group_standardised_weight)):
        out.append(f"K = {K:2d}: success of a sampled response {success:.3f}")

    for beta in BETAS:
        theta = reinforce.train(grpo.group_standardised_weight, BETA_K, BETA_UPDATES,
                                np.random.default_rng(BETA_SEED), rewards=SLOPPY_REWARD,
                                beta=beta)
        pi = softmax_policy(theta)
        out.append(f"beta = {beta:.1f}: sloppy {expected_success(pi, SLOPPY_REWARD):.2f}, "
                   f"gold {expected_success(pi, EXACT_REWARD):.2f}, hedge {pi[:, HEDGE].mean():.2f}")
    return out


def main() -> None:
    for line in lines():
        print(line, flush=True)


if __name__ == "__main__":
    main()
