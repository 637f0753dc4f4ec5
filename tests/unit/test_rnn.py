"""utils.experiments.rnn: W_hh at initialisation, the gradient probe, and the per-step factor against autograd."""

import math

import pytest
import torch
from torch import nn

from utils.experiments.layer_costs import CausalConv
from utils.experiments.rnn import default_init_W_hh, first_vanished, grad_norm_to_first, step_factors


def _rnn(d_in=4, d_hidden=5, seed=0, **kwargs):
    torch.manual_seed(seed)
    options = dict(nonlinearity="tanh", batch_first=True) | kwargs
    return nn.RNN(d_in, d_hidden, **options).double()


def _x(batch=3, seq=7, d=4, seed=1):
    return torch.randn(batch, seq, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --- default_init_W_hh ---


@pytest.mark.parametrize("d_hidden", [1, 3, 16])
def test_init_norms_match_the_weights_torch_makes(d_hidden):
    norms, radii = default_init_W_hh(d_hidden, [0, 7])
    assert norms.shape == radii.shape == (2,)
    for i, seed in enumerate([0, 7]):
        torch.manual_seed(seed)
        W = nn.RNN(d_hidden, d_hidden).weight_hh_l0.detach().double()
        assert norms[i].item() == pytest.approx(torch.linalg.svdvals(W).max().item(), rel=1e-12)
        assert radii[i].item() == pytest.approx(torch.linalg.eigvals(W).abs().max().item(), rel=1e-12)
    assert (radii <= norms + 1e-12).all()  # |eigenvalue| never exceeds the largest singular value


def test_init_norms_leave_the_random_state_alone():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    default_init_W_hh(8, range(4))
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    "d_hidden, seeds, error, words",
    [
        (0, [0], ValueError, "d_hidden"),
        (2.5, [0], TypeError, "d_hidden"),
        (4, [], ValueError, "seeds"),
        (4, "012", TypeError, "seeds"),
        (4, [0, 1.5], TypeError, "seeds"),
        (4, [True], TypeError, "seeds"),
    ],
)
def test_init_norms_bad_input(d_hidden, seeds, error, words):
    with pytest.raises(error, match=words):
        default_init_W_hh(d_hidden, seeds)


# --- grad_norm_to_first ---


@pytest.mark.parametrize("n", [0, 1, 5])
@pytest.mark.parametrize("ord", [2, math.inf])
def test_grad_probe_equals_autograd_by_hand(n, ord):
    rnn, x = _rnn(), _x()
    got = grad_norm_to_first(rnn, x, n, ord=ord)
    norms = []
    for b in range(x.shape[0]):  # one sequence at a time, unbatched
        xb = x[b, : n + 1].clone().requires_grad_(True)  # (n+1, d)
        out, _ = rnn(xb)
        out[-1].sum().backward()
        norms.append(torch.linalg.vector_norm(xb.grad[0], ord=ord))
    assert got == pytest.approx(torch.stack(norms).median().item(), rel=1e-12)
    assert grad_norm_to_first(rnn, x, n, ord=ord, over="max") == pytest.approx(max(norms).item(), rel=1e-12)


def test_grad_probe_median_is_the_lower_middle_of_an_even_batch():
    rnn, x = _rnn(), _x(batch=4)
    norms = sorted(grad_norm_to_first(rnn, x[b : b + 1], 3) for b in range(4))
    assert norms[1] < norms[2]  # two different middle values
    assert grad_norm_to_first(rnn, x, 3) == pytest.approx(norms[1], rel=1e-12)
    assert grad_norm_to_first(rnn, x, 3, over="max") == pytest.approx(norms[3], rel=1e-12)


def test_grad_probe_takes_a_model_without_a_tuple_output():
    conv = CausalConv(4, kernel_size=2).double()
    x = _x()
    assert grad_norm_to_first(conv, x, 1) > 0
    assert grad_norm_to_first(conv, x, 2) == 0.0  # output 2 reads inputs 1 and 2 only


@pytest.mark.parametrize(
    "args, error, words",
    [
        ((lambda x: x, _x(), 1), TypeError, "model"),
        ((_rnn(), _x()[0], 1), ValueError, "x"),
        ((_rnn(), torch.zeros(2, 3, 4, dtype=torch.long), 1), ValueError, "x"),
        ((_rnn(), [[1.0]], 1), TypeError, "x"),
        ((_rnn(), _x(seq=4), 4), ValueError, "n"),
        ((_rnn(), _x(seq=4), -1), ValueError, "n"),
        ((_rnn(), _x(seq=4), 1.0), TypeError, "n"),
        ((_rnn(), _x(), 1, 1), ValueError, "ord"),
        ((_rnn(), _x(), 1, 2, "mean"), ValueError, "over"),
        ((_rnn(), _x(), 1, 2, None), TypeError, "over"),
    ],
)
def test_grad_probe_bad_input(args, error, words):
    with pytest.raises(error, match=words):
        grad_norm_to_first(*args)


# --- first_vanished ---


def test_first_vanished_finds_the_first_exact_zero():
    conv = CausalConv(4, kernel_size=3).double()  # output n reads x_0 only while n <= 2
    x = _x(seq=8)
    assert first_vanished(conv, x, range(1, 8)) == 3
    assert first_vanished(conv, x, [0, 1, 2]) is None


def test_first_vanished_with_a_threshold_matches_the_probe():
    rnn, x = _rnn(), _x(seq=30)
    values = [grad_norm_to_first(rnn, x, n) for n in range(30)]
    threshold = values[10]
    expected = next(n for n, v in enumerate(values) if v <= threshold)
    assert first_vanished(rnn, x, range(30), threshold=threshold) == expected
    assert first_vanished(rnn, x, range(30), threshold=0.0) is None  # float64 does not reach 0 in 30 steps
    largest = [grad_norm_to_first(rnn, x, n, over="max") for n in range(30)]
    expected = next(n for n, v in enumerate(largest) if v <= threshold)
    assert first_vanished(rnn, x, range(30), threshold=threshold, over="max") == expected


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(ns=5), TypeError, "ns"),
        (dict(ns=[1], threshold=-1.0), ValueError, "threshold"),
        (dict(ns=[1], threshold="0"), TypeError, "threshold"),
        (dict(ns=[1], threshold=math.nan), ValueError, "threshold"),
        (dict(ns=[1], over="min"), ValueError, "over"),
    ],
)
def test_first_vanished_bad_input(kwargs, error, words):
    with pytest.raises(error, match=words):
        first_vanished(_rnn(), _x(), **kwargs)


# --- step_factors ---


@pytest.mark.parametrize("d_hidden, seq", [(5, 2), (5, 9), (16, 40)])
def test_step_factors_multiply_to_the_autograd_ratio(d_hidden, seq):
    rnn, x = _rnn(4, d_hidden), _x(seq=seq)
    parts = step_factors(rnn, x)
    assert torch.allclose(parts["factor"], parts["tanh_part"] * parts["W_hh_part"], rtol=1e-12)
    W_ih, W_hh = rnn.weight_ih_l0, rnn.weight_hh_l0
    for b in range(x.shape[0]):  # the recurrence by hand, keeping dL/dh_t
        h, states = torch.zeros(d_hidden, dtype=torch.float64), []
        for t in range(seq):
            h = torch.tanh(x[b, t] @ W_ih.T + rnn.bias_ih_l0 + h @ W_hh.T + rnn.bias_hh_l0)
            h.retain_grad()
            states.append(h)
        states[-1].sum().backward()
        ratio = states[0].grad.norm() / math.sqrt(d_hidden)  # ||g_0|| / ||g_last||
        assert parts["factor"][b].item() ** (seq - 1) == pytest.approx(ratio.item(), rel=1e-9)
        mean_tanh_prime = torch.stack([1 - s.detach() ** 2 for s in states[1:]]).mean()
        assert parts["mean_tanh_prime"][b].item() == pytest.approx(mean_tanh_prime.item(), rel=1e-12)
    assert (parts["tanh_part"] <= 1).all() and (parts["tanh_part"] > 0).all()
    assert (parts["W_hh_part"] <= torch.linalg.svdvals(W_hh.detach()).max() + 1e-12).all()


def test_step_factors_slope_spread_by_hand():
    rnn, x = _rnn(4, 6), _x(seq=9)
    parts = step_factors(rnn, x)
    h, _ = rnn(x)  # (batch, seq, d_hidden)
    slope = 1 - h.detach()[:, 1:] ** 2  # (batch, seq - 1, d_hidden)
    expected = (slope.std(dim=2, correction=0) / slope.mean(dim=2)).mean(dim=1)  # (batch,)
    assert torch.allclose(parts["slope_spread"], expected, rtol=1e-12)
    assert (parts["slope_spread"] > 0).all()


def test_step_factors_uniform_slope_is_the_gain_of_W_hh_alone():
    rnn, x = _rnn(4, 6), _x(seq=12)
    real, uniform = step_factors(rnn, x), step_factors(rnn, x, uniform_slope=True)
    W_hh = rnn.weight_hh_l0.detach()  # (d_hidden, d_hidden)
    u, logs = torch.ones(6, dtype=torch.float64), []
    for _ in range(11):  # a scalar slope per step leaves only the direction u W_hh^k
        logs.append(((u @ W_hh).norm() / u.norm()).log())
        u = u @ W_hh
    gain = torch.stack(logs).mean().exp()
    assert torch.allclose(uniform["W_hh_part"], gain.expand(3), rtol=1e-12)  # the same for every sequence
    h, _ = rnn(x)
    mean_slope = (1 - h.detach()[:, 1:] ** 2).mean(dim=2)  # (batch, seq - 1)
    assert torch.allclose(uniform["tanh_part"], mean_slope.log().mean(dim=1).exp(), rtol=1e-12)
    assert torch.equal(uniform["slope_spread"], real["slope_spread"])  # measured on the real slope
    assert not torch.allclose(uniform["W_hh_part"], real["W_hh_part"], rtol=1e-3)


def test_step_factors_uniform_slope_follows_the_gradient_with_each_steps_mean_slope():
    rnn, x = _rnn(4, 6), _x(seq=12)
    uniform = step_factors(rnn, x, uniform_slope=True)
    W_hh, (h, _) = rnn.weight_hh_l0.detach(), rnn(x)  # (d_hidden, d_hidden), (batch, seq, d_hidden)
    h = h.detach()
    g, logs = torch.ones(3, 6, dtype=torch.float64), []  # (batch, d_hidden) dL/dh_last
    for t in range(11, 0, -1):  # the what-if gradient: g_{t-1} = (g_t * mean slope of step t) W_hh
        g_d = g * (1 - h[:, t] ** 2).mean(dim=1, keepdim=True)  # (batch, d_hidden)
        g = g_d @ W_hh  # (batch, d_hidden), small enough here not to underflow
        logs.append((g.norm(dim=1) / g_d.norm(dim=1)).log())
    assert torch.allclose(uniform["W_hh_part"], torch.stack(logs).mean(0).exp(), rtol=1e-12)


def test_step_factors_uniform_slope_gain_tends_to_the_spectral_radius():
    torch.manual_seed(0)
    A = torch.randn(6, 6, dtype=torch.float64)
    rnn = _rnn(4, 6)
    with torch.no_grad():
        rnn.weight_hh_l0.copy_((A + A.T) / 8)  # symmetric: a real dominant eigenvalue
    radius = torch.linalg.eigvalsh(rnn.weight_hh_l0.detach()).abs().max().item()
    gain = step_factors(rnn, _x(seq=400), uniform_slope=True)["W_hh_part"]
    assert torch.allclose(gain, torch.full_like(gain, radius), rtol=0.02)


def test_step_factors_do_not_underflow_on_long_sequences():
    parts = step_factors(_rnn(), _x(seq=2000))
    assert torch.isfinite(parts["factor"]).all() and (parts["factor"] > 0).all()


@pytest.mark.parametrize(
    "rnn, x, error, words",
    [
        (nn.LSTM(4, 5, batch_first=True).double(), _x(), TypeError, "rnn"),
        (_rnn(nonlinearity="relu"), _x(), ValueError, "rnn"),
        (_rnn(bidirectional=True), _x(), ValueError, "rnn"),
        (_rnn(num_layers=2), _x(), ValueError, "rnn"),
        (_rnn(batch_first=False), _x(), ValueError, "rnn"),
        (_rnn(), _x(d=3), ValueError, "x"),
        (_rnn(), _x(seq=1), ValueError, "x"),
        (_rnn(), _x()[0], ValueError, "x"),
        (_rnn(), "x", TypeError, "x"),
    ],
)
def test_step_factors_bad_input(rnn, x, error, words):
    with pytest.raises(error, match=words):
        step_factors(rnn, x)


@pytest.mark.parametrize("uniform_slope", [1, "yes", None])
def test_step_factors_uniform_slope_must_be_a_bool(uniform_slope):
    with pytest.raises(TypeError, match="uniform_slope must be a bool"):
        step_factors(_rnn(), _x(), uniform_slope=uniform_slope)
