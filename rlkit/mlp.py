"""A small tanh multilayer perceptron with hand-written backprop, float64.

Parameters are a plain list with one dict per layer::

    params = [{"W": (D, H1), "b": (H1,)}, {"W": (H1, H2), "b": (H2,)}, ...]

Every hidden layer applies ``tanh``; the last layer is linear. Inputs are
batches of row vectors, so a layer computes ``x @ W + b``.

Gradients produced by ``backward`` have exactly the same structure, which
lets ``flatten``, ``clip_grad_norm`` and the Adam optimiser treat parameters
and gradients alike.

Memory layout (an implementation detail, invisible in the structure): the
arrays made by ``init_mlp`` and ``unflatten`` are views into ONE flat
float64 vector, in ``leaves`` order, so ``rlkit.optim.Adam`` can update the
whole network with a dozen whole-vector operations. Any other list of layer
dicts (separate arrays, other dtypes) works everywhere too, a little slower.
"""

import math

import numpy as np

PARAM_KEYS = ("W", "b")  # fixed order used by leaves/flatten/unflatten


def orthogonal(n_in, n_out, gain, rng):
    """``(n_in, n_out) float64`` orthogonal matrix scaled by ``gain``.

    Like ``torch.nn.init.orthogonal_``: QR of a Gaussian matrix, with signs
    fixed so the result is uniformly distributed. The columns are
    orthonormal (times ``gain``) when ``n_in >= n_out``, otherwise the rows.
    """
    tall = n_in >= n_out
    shape = (n_in, n_out) if tall else (n_out, n_in)
    q, r = np.linalg.qr(rng.standard_normal(shape))  # q: shape, orthonormal columns
    q *= np.where(np.diag(r) < 0, -1.0, 1.0)
    return gain * (q if tall else q.T)


def init_mlp(sizes, gains, rng):
    """Create parameters for a tanh MLP.

    Args:
        sizes: layer widths ``[D, H1, ..., O]`` (input first, output last).
        gains: one orthogonal-init gain per layer (``len(sizes) - 1``),
            e.g. CleanRL PPO uses ``sqrt(2)`` for hidden layers, ``0.01`` for
            the policy head and ``1.0`` for the value head.
        rng: ``numpy.random.Generator``.

    Returns:
        list of ``{"W": (n_in, n_out) float64, "b": (n_out,) float64}``
        with zero biases.
    """
    if len(gains) != len(sizes) - 1:
        raise ValueError(f"need {len(sizes) - 1} gains, got {len(gains)}")
    layers = [
        {"W": orthogonal(n_in, n_out, gain, rng), "b": np.zeros(n_out)}
        for n_in, n_out, gain in zip(sizes[:-1], sizes[1:], gains)
    ]
    return _views(flatten(layers), layers)  # one flat buffer, see the module doc


def _views(vector, like):
    """Layer dicts shaped like ``like`` whose arrays are views into ``vector (P,)``."""
    out, start = [], 0
    for layer in like:
        new_layer = {}
        for key in PARAM_KEYS:
            shape = np.shape(layer[key])
            size = math.prod(shape)
            new_layer[key] = vector[start : start + size].reshape(shape)
            start += size
        out.append(new_layer)
    return out


def tiled_buffer(arrays):
    """The flat vector that ``arrays`` tile, or None.

    Returns ``v`` when ``arrays`` are C-contiguous float64 views that lie one
    after another in ``v``, in order, and cover all of it (as the parameters
    made by ``init_mlp`` do); then an elementwise operation on ``v`` is the
    same operation on every array.
    """
    base = arrays[0].base if arrays else None
    if not isinstance(base, np.ndarray) or base.ndim != 1 or base.dtype != np.float64 \
            or not base.flags.c_contiguous:
        return None
    address = start = base.__array_interface__["data"][0]
    for a in arrays:
        if a.base is not base or not a.flags.c_contiguous \
                or a.__array_interface__["data"][0] != address:
            return None
        address += a.nbytes
    return base if address == start + base.nbytes else None


def forward(params, x):
    """Run the network.

    Args:
        params: list of layer dicts (see ``init_mlp``).
        x: ``(B, D) float64`` input batch.

    Returns:
        out: ``(B, O) float64`` output of the last (linear) layer.
        cache: list of each layer's input, ``(B, n_in)``; hidden layer
            inputs are tanh outputs, which is all ``backward`` needs.
    """
    cache = []
    h = x
    last = len(params) - 1
    for i, layer in enumerate(params):
        cache.append(h)
        z = h @ layer["W"]
        z += layer["b"]                         # in place: the same numbers as h @ W + b
        h = z if i == last else np.tanh(z, out=z)
    return h, cache


def backward(params, cache, dout, out=None):
    """Backpropagate ``dout = dLoss/dout`` through the network.

    Args:
        params: the parameters used in ``forward``.
        cache: the cache returned by that ``forward`` call.
        dout: ``(B, O) float64`` gradient of a scalar loss w.r.t. ``out``.
        out: optional ``(P,) float64`` C-contiguous vector, P = the number of
            parameters: the gradients are written into it in ``leaves``
            order (as ``flatten`` would lay them out), so one operation on
            ``out`` acts on every gradient (see ``clip_grad_norm`` and
            ``rlkit.optim.Adam.step_vector``). The numbers are the same.

    Returns:
        grads with the same structure and shapes as ``params`` (views into
        ``out`` when given). (The gradient w.r.t. the input ``x`` is not
        returned.)
    """
    grads = [None] * len(params)
    dz = dout  # gradient w.r.t. the pre-activation of the current layer
    ones = _ones(len(dz))
    end = None if out is None else out.size     # out is filled from its end
    slope = None
    for i in reversed(range(len(params))):
        h_in = cache[i]
        W = params[i]["W"]
        # The bias gradient sums dz over the batch: as a product with a vector
        # of ones it is one BLAS call, several times faster than dz.sum(axis=0).
        if end is None:
            grads[i] = {"W": h_in.T @ dz, "b": ones @ dz}
        else:
            b_start = end - dz.shape[1]
            W_start = b_start - W.size
            if W_start < 0:
                raise ValueError(f"out has {out.size} entries, fewer than the parameters")
            grads[i] = {"W": np.matmul(h_in.T, dz, out=out[W_start:b_start].reshape(W.shape)),
                        "b": np.matmul(ones, dz, out=out[b_start:end])}
            end = W_start
        if i > 0:
            # h_in = tanh(z_prev), and tanh' = 1 - tanh^2:
            # dz = (dz @ W.T) * (1 - h_in * h_in), with one temporary reused.
            # A one-column layer (a value head) makes dz @ W.T an outer product:
            # a broadcast multiply gives the same numbers without a slow BLAS call.
            dh = dz * W.T if W.shape[1] == 1 else dz @ W.T
            if slope is None or slope.shape != h_in.shape:
                slope = np.empty_like(h_in)
            np.multiply(h_in, h_in, out=slope)
            np.subtract(1.0, slope, out=slope)
            dh *= slope
            dz = dh
    if end:
        raise ValueError(f"out has {out.size} entries, more than the parameters")
    return grads


_ONES = {}


def _ones(n):
    """A read-only ``(n,)`` vector of ones (cached)."""
    ones = _ONES.get(n)
    if ones is None:
        ones = _ONES[n] = np.ones(n)
        ones.flags.writeable = False
    return ones


def leaves(params):
    """All arrays of a parameter (or gradient) list, in a fixed order."""
    return [layer[key] for layer in params for key in PARAM_KEYS]


def flatten(params):
    """Concatenate all parameters into one ``(P,) float64`` vector (a copy)."""
    return np.concatenate([a.ravel() for a in leaves(params)])


def unflatten(vector, like):
    """Inverse of ``flatten``: split ``vector (P,)`` into arrays shaped like ``like``."""
    vector = np.array(vector, dtype=np.float64)  # a copy; the result's arrays are views into it
    sizes = [np.size(a) for a in leaves(like)]
    if vector.shape != (sum(sizes),):
        raise ValueError(f"expected a vector of {sum(sizes)} values, got {vector.shape}")
    return _views(vector, like)


def global_norm(grads):
    """L2 norm of all gradient entries together (a Python float).

    The sum of squares is one BLAS dot product per array (``np.vdot``
    reads an array of any shape as one vector), added up in ``leaves`` order.
    """
    total = 0.0
    for g in leaves(grads):
        total += float(np.vdot(g, g))
    return math.sqrt(total)


def clip_grad_norm(grads, max_norm, vector=None):
    """Scale ``grads`` in place so their global L2 norm is at most ``max_norm``.

    Same rule as ``torch.nn.utils.clip_grad_norm_``: multiply by
    ``min(1, max_norm / (norm + 1e-6))``.

    Args:
        grads: gradient structure (see ``backward``), scaled in place.
        max_norm: float.
        vector: optional flat vector that the arrays of ``grads`` tile
            exactly (e.g. the ``out`` given to ``backward``, or one vector
            holding several such ``out``); it is then scaled in one operation
            instead of array by array (the same numbers).

    Returns:
        the global norm *before* clipping (float), handy for logging.
    """
    norm = global_norm(grads)
    scale = min(1.0, max_norm / (norm + 1e-6))
    if scale < 1.0:
        if vector is not None:
            vector *= scale
        else:
            for g in leaves(grads):
                g *= scale
    return norm
