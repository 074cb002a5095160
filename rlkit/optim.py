"""Adam optimiser with PyTorch semantics, updating parameters in place.

Works on the parameter structure of ``rlkit.mlp`` (a list of layer dicts),
and on anything else ``rlkit.mlp.leaves`` understands.

Update for step ``t`` (starting at 1), per parameter array ``p`` with
gradient ``g``::

    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p -= (lr / (1 - beta1**t)) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

i.e. bias-corrected moments with ``eps`` added *after* the square root,
exactly as ``torch.optim.Adam`` (no weight decay, no amsgrad).
"""

import math

import numpy as np

from rlkit.mlp import leaves


class Adam:
    """Adam over a parameter list; call ``step(params, grads)`` each update.

    ``lr`` is a plain attribute, so linear annealing is just
    ``opt.lr = frac * initial_lr`` before calling ``step``.

    Attributes:
        lr, beta1, beta2, eps: hyper-parameters (floats).
        t: number of steps taken so far (int).
        m, v: first/second moment estimates, lists of float64 arrays matching
            ``leaves(params)``.
    """

    def __init__(self, params, lr=3e-4, betas=(0.9, 0.999), eps=1e-8):
        self.lr = float(lr)
        self.beta1, self.beta2 = (float(b) for b in betas)
        self.eps = float(eps)
        self.t = 0
        self.m = [np.zeros_like(p) for p in leaves(params)]
        self.v = [np.zeros_like(p) for p in leaves(params)]

    def step(self, params, grads):
        """Apply one Adam update to ``params`` in place using ``grads``.

        Args:
            params: parameter structure (modified in place).
            grads: same structure and shapes as ``params``.
        """
        self.t += 1
        step_size = self.lr / (1.0 - self.beta1**self.t)
        bias_correction2_sqrt = math.sqrt(1.0 - self.beta2**self.t)
        for p, g, m, v in zip(leaves(params), leaves(grads), self.m, self.v):
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * g * g
            denom = np.sqrt(v) / bias_correction2_sqrt + self.eps
            p -= step_size * m / denom

    def state_dict(self):
        """The optimiser's state as plain data: ``{"lr", "beta1", "beta2",
        "eps", "t", "m", "v"}`` with ``m``/``v`` lists of float64 arrays."""
        return {"lr": self.lr, "beta1": self.beta1, "beta2": self.beta2, "eps": self.eps,
                "t": self.t, "m": [a.copy() for a in self.m], "v": [a.copy() for a in self.v]}

    @classmethod
    def from_state(cls, params, state):
        """Rebuild an optimiser for ``params`` from :meth:`state_dict` data."""
        opt = cls(params, lr=state["lr"], betas=(state["beta1"], state["beta2"]),
                  eps=state["eps"])
        opt.t = int(state["t"])
        for mine, given in ((opt.m, state["m"]), (opt.v, state["v"])):
            for k, arr in enumerate(given):
                arr = np.asarray(arr, dtype=np.float64)
                if arr.shape != mine[k].shape:
                    raise ValueError(f"Adam state shape {arr.shape} != parameter {mine[k].shape}")
                mine[k] = arr.copy()
        return opt
