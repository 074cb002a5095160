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

Every operation is elementwise, so the optimiser may run it on one flat
vector holding all parameters (when they are views into one, as
``rlkit.mlp.init_mlp`` makes them) instead of array by array: the numbers
are the same either way, only the number of numpy calls differs.
"""

import math
import operator

import numpy as np

from rlkit.mlp import leaves, tiled_buffer


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
        shapes = [np.shape(p) for p in leaves(params)]
        size = sum(math.prod(s) for s in shapes)
        # m and v are views into two flat vectors (see the module doc).
        self._flat_m, self._flat_v = np.zeros(size), np.zeros(size)
        self.m = _split(self._flat_m, shapes)
        self.v = _split(self._flat_v, shapes)
        self._views = (tuple(self.m), tuple(self.v))
        self._params_seen = ()      # leaves of the last params, and their flat vector
        self._params_flat = None
        self._scratch = (np.empty(size), np.empty(size))

    def step(self, params, grads):
        """Apply one Adam update to ``params`` in place using ``grads``.

        Args:
            params: parameter structure (modified in place).
            grads: same structure and shapes as ``params``.
        """
        self.t += 1
        step_size = self.lr / (1.0 - self.beta1**self.t)
        bias_correction2_sqrt = math.sqrt(1.0 - self.beta2**self.t)
        ps, gs = leaves(params), leaves(grads)
        flat = self._flat_params(ps)
        if flat is not None and [np.shape(g) for g in gs] == [p.shape for p in ps]:
            g = np.concatenate([np.ravel(g) for g in gs]) if len(gs) > 1 else np.ravel(gs[0])
            self._update(flat, g, self._flat_m, self._flat_v, step_size, bias_correction2_sqrt,
                         self._scratch)
        else:
            for p, g, m, v in zip(ps, gs, self.m, self.v):
                self._update(p, g, m, v, step_size, bias_correction2_sqrt, None)

    @property
    def size(self):
        """Number of parameter entries this optimiser updates (int)."""
        return self._flat_m.size

    def step_vector(self, params, grad_vector):
        """``step`` with the gradients given as one ``(P,) float64`` vector in
        ``leaves`` order (e.g. the ``out`` vector of ``rlkit.mlp.backward``):
        the same numbers, without gathering the arrays into one first."""
        grad_vector = np.asarray(grad_vector, dtype=np.float64)
        if grad_vector.shape != self._flat_m.shape:
            raise ValueError(f"expected a gradient vector of {self._flat_m.size} values, "
                             f"got shape {grad_vector.shape}")
        ps = leaves(params)
        flat = self._flat_params(ps)
        self.t += 1
        step_size = self.lr / (1.0 - self.beta1**self.t)
        bias_correction2_sqrt = math.sqrt(1.0 - self.beta2**self.t)
        if flat is not None:
            self._update(flat, grad_vector, self._flat_m, self._flat_v, step_size,
                         bias_correction2_sqrt, self._scratch)
        else:
            gs = _split(grad_vector, [np.shape(p) for p in ps])
            for p, g, m, v in zip(ps, gs, self.m, self.v):
                self._update(p, g, m, v, step_size, bias_correction2_sqrt, None)

    def _flat_params(self, ps):
        """The flat vector behind ``ps`` if the whole update can run on it, else None."""
        if not (len(ps) == len(self.m) and all(map(operator.is_, self.m, self._views[0]))
                and all(map(operator.is_, self.v, self._views[1]))):
            return None                 # someone replaced a moment array: go array by array
        if len(ps) != len(self._params_seen) or not all(map(operator.is_, ps, self._params_seen)):
            self._params_seen = tuple(ps)
            self._params_flat = tiled_buffer(ps) if ps else None
            if self._params_flat is not None and self._params_flat.size != self._flat_m.size:
                self._params_flat = None
        return self._params_flat

    def _update(self, p, g, m, v, step_size, bias_correction2_sqrt, scratch):
        """The update of the module doc on one array (or one flat vector)."""
        a, b = scratch if scratch is not None else (np.empty_like(m), np.empty_like(m))
        np.multiply(1.0 - self.beta1, g, out=a)
        m *= self.beta1
        m += a                                              # beta1 * m + (1 - beta1) * g
        np.multiply(1.0 - self.beta2, g, out=a)
        a *= g
        v *= self.beta2
        v += a                                              # beta2 * v + (1 - beta2) * g * g
        np.sqrt(v, out=a)
        a /= bias_correction2_sqrt
        a += self.eps                                       # denom
        np.multiply(step_size, m, out=b)
        b /= a
        p -= b

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
                mine[k][...] = arr
        return opt


def _split(vector, shapes):
    """Views into ``vector`` with the given shapes, one after another."""
    out, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out.append(vector[start:start + size].reshape(shape))
        start += size
    return out

