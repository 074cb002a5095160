"""Backprop, initialisation, parameter helpers and Adam."""

import math

import numpy as np
import pytest

from rlkit.mlp import (
    backward,
    clip_grad_norm,
    flatten,
    forward,
    global_norm,
    init_mlp,
    leaves,
    orthogonal,
    tiled_buffer,
    unflatten,
)
from rlkit.optim import Adam

SIZES = [5, 16, 12, 3]  # two hidden layers
GAINS = [math.sqrt(2), math.sqrt(2), 1.0]


def make_net(seed=0):
    return init_mlp(SIZES, GAINS, np.random.default_rng(seed))


def squared_error_loss(params, x, target):
    """0.5 * sum((out - target)^2) and its gradient w.r.t. out."""
    out, cache = forward(params, x)
    diff = out - target
    return 0.5 * np.sum(diff * diff), diff, cache


def test_shapes_and_dtypes():
    params = make_net()
    assert [layer["W"].shape for layer in params] == [(5, 16), (16, 12), (12, 3)]
    assert [layer["b"].shape for layer in params] == [(16,), (12,), (3,)]
    assert all(a.dtype == np.float64 for a in leaves(params))
    assert all(not layer["b"].any() for layer in params)
    out, cache = forward(params, np.ones((7, 5)))
    assert out.shape == (7, 3) and out.dtype == np.float64
    assert len(cache) == len(params)


def test_backward_matches_central_differences():
    rng = np.random.default_rng(1)
    params = make_net()
    # Non-zero biases so their gradients are exercised away from init.
    for layer in params:
        layer["b"] += 0.1 * rng.standard_normal(layer["b"].shape)
    x = rng.standard_normal((9, 5))
    target = rng.standard_normal((9, 3))

    _, dout, cache = squared_error_loss(params, x, target)
    analytic = flatten(backward(params, cache, dout))

    theta = flatten(params)
    numeric = np.empty_like(theta)
    h = 1e-5
    for k in range(theta.size):  # fine in a test: ~400 parameters
        bump = np.zeros_like(theta)
        bump[k] = h
        loss_plus, _, _ = squared_error_loss(unflatten(theta + bump, params), x, target)
        loss_minus, _, _ = squared_error_loss(unflatten(theta - bump, params), x, target)
        numeric[k] = (loss_plus - loss_minus) / (2 * h)

    rel_error = np.abs(analytic - numeric) / np.maximum(
        np.abs(analytic) + np.abs(numeric), 1e-8
    )
    assert rel_error.max() < 1e-6
    assert np.linalg.norm(analytic - numeric) / np.linalg.norm(numeric) < 1e-8


@pytest.mark.parametrize("n_in,n_out", [(64, 64), (4, 64), (64, 1), (64, 2)])
def test_orthogonal_init(n_in, n_out):
    gain = 0.01 if n_out == 2 else math.sqrt(2)
    w = orthogonal(n_in, n_out, gain, np.random.default_rng(0))
    assert w.shape == (n_in, n_out)
    k = min(n_in, n_out)
    gram = w.T @ w if n_in >= n_out else w @ w.T  # the orthonormal side, (k, k)
    assert np.allclose(gram, gain**2 * np.eye(k), atol=1e-12)


def test_init_is_reproducible_and_gains_are_applied():
    a, b = make_net(seed=3), make_net(seed=3)
    assert np.array_equal(flatten(a), flatten(b))
    assert not np.array_equal(flatten(a), flatten(make_net(seed=4)))
    head = init_mlp([4, 64, 64, 2], [math.sqrt(2), math.sqrt(2), 0.01], np.random.default_rng(0))
    assert np.allclose(head[-1]["W"].T @ head[-1]["W"], 1e-4 * np.eye(2))
    with pytest.raises(ValueError):
        init_mlp([4, 64, 2], [1.0], np.random.default_rng(0))


def test_flatten_unflatten_round_trip():
    params = make_net()
    vector = flatten(params)
    assert vector.shape == (sum(a.size for a in leaves(params)),)
    rebuilt = unflatten(vector, params)
    for original, copy in zip(leaves(params), leaves(rebuilt)):
        assert np.array_equal(original, copy)
        assert not np.shares_memory(original, copy)
    assert np.array_equal(flatten(unflatten(vector * 2, params)), vector * 2)
    with pytest.raises(ValueError):
        unflatten(vector[:-1], params)


def test_clip_grad_norm():
    rng = np.random.default_rng(2)
    grads = unflatten(rng.standard_normal(flatten(make_net()).size), make_net())
    norm_before = global_norm(grads)
    assert np.isclose(norm_before, np.linalg.norm(flatten(grads)))
    direction = flatten(grads) / norm_before

    returned = clip_grad_norm(grads, max_norm=0.5)
    assert returned == norm_before
    assert np.isclose(global_norm(grads), 0.5, rtol=1e-5)
    assert np.allclose(flatten(grads) / global_norm(grads), direction)

    # Below the limit nothing changes.
    small = flatten(grads).copy()
    clip_grad_norm(grads, max_norm=10.0)
    assert np.array_equal(flatten(grads), small)


def test_adam_two_steps_by_hand():
    """One scalar parameter, lr=0.1, betas=(0.9, 0.999), eps=1e-8.

    step 1, g = 0.5:  m = 0.05,   v = 0.00025
        m_hat = 0.05 / 0.1 = 0.5,  v_hat = 0.00025 / 0.001 = 0.25
        p = 1 - 0.1 * 0.5 / (0.5 + 1e-8)                     = 0.900000002
    step 2, g = -1.0: m = 0.045 - 0.1 = -0.055,  v = 0.00024975 + 0.001 = 0.00124975
        m_hat = -0.055 / 0.19 = -0.28947368421,  v_hat = 0.00124975 / 0.001999 = 0.62518759380
        sqrt(v_hat) = 0.79068805088
        p = 0.900000002 + 0.1 * 0.28947368421 / (0.79068805088 + 1e-8) = 0.93661035424
    """
    params = [{"W": np.array([[1.0]]), "b": np.array([0.0])}]
    opt = Adam(params, lr=0.1, betas=(0.9, 0.999), eps=1e-8)

    opt.step(params, [{"W": np.array([[0.5]]), "b": np.array([0.0])}])
    assert params[0]["W"][0, 0] == pytest.approx(0.900000002, abs=1e-12)
    assert params[0]["b"][0] == 0.0  # zero gradient, zero moments: no move

    opt.step(params, [{"W": np.array([[-1.0]]), "b": np.array([0.0])}])
    assert params[0]["W"][0, 0] == pytest.approx(0.93661035424, abs=1e-10)
    assert opt.t == 2


def reference_adam(theta, grad_list, lrs, beta1, beta2, eps):
    """Textbook Adam on a flat vector (Kingma & Ba, eps outside the sqrt)."""
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for t, (g, lr) in enumerate(zip(grad_list, lrs), start=1):
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m_hat = m / (1 - beta1**t)
        v_hat = v / (1 - beta2**t)
        theta = theta - lr * m_hat / (np.sqrt(v_hat) + eps)
    return theta


def test_adam_matches_reference_with_annealed_lr():
    rng = np.random.default_rng(5)
    params = make_net()
    start = flatten(params)
    grad_list = [rng.standard_normal(start.size) for _ in range(20)]
    lrs = [2.5e-4 * (1 - k / 20) for k in range(20)]  # linear annealing

    opt = Adam(params, lr=lrs[0], eps=1e-5)
    for g, lr in zip(grad_list, lrs):
        opt.lr = lr
        opt.step(params, unflatten(g, params))

    expected = reference_adam(start, grad_list, lrs, 0.9, 0.999, 1e-5)
    assert np.allclose(flatten(params), expected, rtol=1e-12, atol=1e-15)


def test_init_mlp_params_are_views_into_one_flat_vector():
    params = make_net()
    flat = tiled_buffer(leaves(params))
    assert flat is not None and np.array_equal(flat, flatten(params))
    assert tiled_buffer(leaves(unflatten(flat, params))) is not None
    separate = [{k: a.copy() for k, a in layer.items()} for layer in params]
    assert tiled_buffer(leaves(separate)) is None
    reordered = [{"W": params[1]["W"], "b": params[1]["b"]}] + params[:1] + params[2:]
    assert tiled_buffer(leaves(reordered)) is None


@pytest.mark.parametrize("lr", [1e-3, 0.3])
def test_adam_whole_vector_and_array_by_array_give_the_same_bits(lr):
    """The flat fast path (views of one vector) and the fallback (separate
    arrays, e.g. params received as plain data) must agree exactly."""
    rng = np.random.default_rng(6)
    flat_params = make_net()
    plain_params = [{k: a.copy() for k, a in layer.items()} for layer in flat_params]
    opt_flat = Adam(flat_params, lr=lr, eps=1e-5)
    opt_plain = Adam(plain_params, lr=lr, eps=1e-5)
    for step in range(5):
        grads = unflatten(rng.standard_normal(flatten(flat_params).size), flat_params)
        opt_flat.lr = opt_plain.lr = lr * (1 - step / 5)
        opt_flat.step(flat_params, grads)
        opt_plain.step(plain_params, [{k: a.copy() for k, a in g.items()} for g in grads])
    assert opt_flat._params_flat is not None and opt_plain._params_flat is None
    assert np.array_equal(flatten(flat_params), flatten(plain_params))
    assert all(np.array_equal(a, b) for a, b in zip(opt_flat.m + opt_flat.v,
                                                    opt_plain.m + opt_plain.v))
    # A rebuilt optimiser continues identically, and replacing a moment array
    # (its list entry) is honoured by falling back to array by array.
    again = Adam.from_state(flat_params, opt_flat.state_dict())
    grads = unflatten(rng.standard_normal(flatten(flat_params).size), flat_params)
    copy_params = unflatten(flatten(flat_params), flat_params)
    again.step(copy_params, grads)
    opt_flat.step(flat_params, grads)
    assert np.array_equal(flatten(flat_params), flatten(copy_params))
    opt_flat.m[0] = np.zeros_like(opt_flat.m[0])
    before = flatten(flat_params)
    opt_flat.step(flat_params, grads)
    assert opt_flat._flat_params(leaves(flat_params)) is None
    assert not np.array_equal(before, flatten(flat_params))


def test_forward_backward_accept_separate_arrays_with_the_same_numbers():
    rng = np.random.default_rng(8)
    params = make_net()
    plain = [{k: a.copy() for k, a in layer.items()} for layer in params]
    x = rng.standard_normal((9, 5))
    out, cache = forward(params, x)
    out_plain, cache_plain = forward(plain, x)
    assert np.array_equal(out, out_plain)
    dout = rng.standard_normal(out.shape)
    assert np.array_equal(flatten(backward(params, cache, dout)),
                          flatten(backward(plain, cache_plain, dout)))
    # One-output head: the broadcast outer product equals the matrix product.
    head = init_mlp([5, 7, 1], [1.0, 1.0], rng)
    _, cache = forward(head, x)
    d = rng.standard_normal((9, 1))
    dz = (d @ head[1]["W"].T) * (1.0 - cache[1] ** 2)
    assert np.array_equal(backward(head, cache, d)[0]["W"], x.T @ dz)


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def test_backward_into_one_vector_gives_the_same_bits_and_checks_its_size():
    """``backward(..., out=v)`` writes the gradients into ``v`` in leaves order
    (views, as ``flatten`` lays them out), with the numbers of the plain call;
    a vector of the wrong size is refused."""
    rng = np.random.default_rng(9)
    for sizes, gains in ((SIZES, GAINS), ([5, 7, 1], [1.0, 1.0])):
        params = init_mlp(sizes, gains, rng)
        x = rng.standard_normal((11, 5))
        out, cache = forward(params, x)
        dout = rng.standard_normal(out.shape)
        vector = np.full(flatten(params).size, np.nan)
        grads = backward(params, cache, dout, out=vector)
        assert tiled_buffer(leaves(grads)) is vector
        assert np.array_equal(_bits(vector), _bits(flatten(backward(params, cache, dout))))
        for wrong in (vector.size - 1, vector.size + 1):
            with pytest.raises(ValueError, match="entries"):
                backward(params, cache, dout, out=np.empty(wrong))


def test_clip_grad_norm_on_the_vector_and_adam_step_vector_give_the_same_bits():
    """The one-vector paths the reference uses (clipping the vector that two
    networks' gradients tile, Adam.step_vector) equal the array-by-array ones."""
    rng = np.random.default_rng(10)
    nets = [make_net(1), make_net(2)]
    twins = [unflatten(flatten(net), net) for net in nets]
    opts = [Adam(net, lr=1e-3, eps=1e-5) for net in nets]
    twin_opts = [Adam(net, lr=1e-3, eps=1e-5) for net in twins]
    sizes = [opt.size for opt in opts]
    assert sizes == [flatten(net).size for net in nets]
    x = rng.standard_normal((13, 5))
    for _ in range(3):
        vector = np.empty(sum(sizes))
        parts = (vector[:sizes[0]], vector[sizes[0]:])
        grads, twin_grads = [], []
        for net, twin, part in zip(nets, twins, parts):
            out, cache = forward(net, x)
            dout = 30.0 * rng.standard_normal(out.shape)
            grads += backward(net, cache, dout, out=part)
            twin_grads += backward(twin, forward(twin, x)[1], dout)
        norm = clip_grad_norm(grads, 0.5, vector=vector)
        assert norm > 0.5 and norm == clip_grad_norm(twin_grads, 0.5)
        assert np.array_equal(_bits(vector), _bits(flatten(twin_grads)))
        for opt, twin_opt, net, twin, part, k in zip(opts, twin_opts, nets, twins, parts, (0, 3)):
            opt.step_vector(net, part)
            twin_opt.step(twin, twin_grads[k:k + 3])
            assert np.array_equal(_bits(flatten(net)), _bits(flatten(twin)))
    # Separate arrays (no flat vector behind them) take the array-by-array path.
    plain = [{k: a.copy() for k, a in layer.items()} for layer in nets[0]]
    plain_opt = Adam.from_state(plain, opts[0].state_dict())
    part = rng.standard_normal(sizes[0])
    plain_opt.step_vector(plain, part)
    opts[0].step_vector(nets[0], part)
    assert np.array_equal(_bits(flatten(plain)), _bits(flatten(nets[0])))
    with pytest.raises(ValueError, match="gradient vector"):
        opts[0].step_vector(nets[0], part[:-1])
