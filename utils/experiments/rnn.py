"""Measurements on a vanilla tanh RNN: its recurrent weight over many initialisations, the gradient
that reaches position 0, and the factor by which that gradient shrinks at each step back."""

import torch
from torch import nn

from utils import validation


def _check_rnn(rnn):
    """Raise unless `rnn` is a one-layer, one-direction, batch_first tanh nn.RNN."""
    validation.instance("rnn", rnn, nn.RNN, "torch.nn.RNN")
    if rnn.nonlinearity != "tanh" or rnn.num_layers != 1 or rnn.bidirectional or not rnn.batch_first:
        raise ValueError(
            "rnn must be nn.RNN(..., nonlinearity='tanh', num_layers=1, bidirectional=False, "
            f"batch_first=True), got nonlinearity={rnn.nonlinearity!r}, num_layers={rnn.num_layers}, "
            f"bidirectional={rnn.bidirectional}, batch_first={rnn.batch_first}"
        )
    return rnn


def _check_batch(name, x, size=None):
    """Raise unless `x` is a floating (batch, seq, size) tensor."""
    validation.tensor(name, x, min_dim=3, floating=True)
    return validation.shape(name, x, ("batch", "seq", "d_model" if size is None else ("input_size", size)))


def _check_seeds(seeds):
    """Raise unless `seeds` is a non-empty list or range of ints."""
    validation.non_empty("seeds", seeds, (list, tuple, range), "list or range of ints")
    return [validation.seed(f"seeds[{i}]", s) for i, s in enumerate(seeds)]


def default_init_W_hh(d_hidden, seeds):
    """Spectral norm ||W_hh||_2 and spectral radius max|eigenvalue| of W_hh in nn.RNN(d_hidden, d_hidden)
    as PyTorch initialises it, one entry per seed: two float64 tensors of shape (len(seeds),)."""
    validation.positive_int("d_hidden", d_hidden)
    seeds = _check_seeds(seeds)
    norms, radii = [], []
    with torch.random.fork_rng():  # leave the caller's random state as it was
        for seed in seeds:
            torch.manual_seed(seed)
            W_hh = nn.RNN(d_hidden, d_hidden).weight_hh_l0.detach().double()  # (d_hidden, d_hidden)
            norms.append(torch.linalg.matrix_norm(W_hh, ord=2))
            radii.append(torch.linalg.eigvals(W_hh).abs().max())
    return torch.stack(norms), torch.stack(radii)


def grad_norm_to_first(model, x, n, ord=2, over="median"):
    """|| d (sum of the output at position n) / d x_0 ||_ord per sequence of x (batch, seq, d_model), reduced over the
    batch: over="median" (torch.median: for an even batch the lower of the two middle values) or "max".
    model(x) returns (batch, seq, d) or a tuple starting with it, like nn.RNN."""
    validation.instance("model", model, nn.Module, "torch.nn.Module")
    _check_batch("x", x)
    validation.index("n", n, x.shape[1], "seq")
    validation.choice("ord", ord, (2, float("inf")))  # Euclidean norm or largest |entry|
    validation.choice("over", over, ("median", "max"))
    x = x[:, : n + 1].detach().clone().requires_grad_(True)  # (batch, n+1, d_model)
    y = model(x)
    y = y[0] if isinstance(y, tuple) else y  # (batch, n+1, d)
    (grad,) = torch.autograd.grad(y[:, -1].sum(), x)  # the batch's sequences are independent
    norms = torch.linalg.vector_norm(grad[:, 0], ord=ord, dim=-1)  # (batch,)
    return (norms.median() if over == "median" else norms.max()).item()


def first_vanished(model, x, ns, threshold=0.0, ord=2, over="median"):
    """The first n in `ns` whose grad_norm_to_first(model, x, n, ord, over) is <= threshold (0.0: exactly zero), or
    None; over="max" asks it of every sequence in the batch."""
    validation.instance("ns", ns, (list, tuple, range), "list or range of ints")
    threshold = validation.real("threshold", threshold, minimum=0)
    validation.choice("over", over, ("median", "max"))
    for n in ns:
        if grad_norm_to_first(model, x, n, ord, over) <= threshold:
            return n
    return None


def step_factors(rnn, x, uniform_slope=False):
    """Backpropagate the loss sum(h_last) step by step through `rnn` on x (batch, seq, input_size).

    Returns a dict of (batch,) tensors, each a geometric mean over the seq - 1 steps back:
    "factor" = ||g_{t-1}|| / ||g_t|| for g_t = dL/dh_t, split exactly as "tanh_part" = ||g_t * (1 - h_t^2)|| / ||g_t||
    times "W_hh_part" = ||(g_t * (1 - h_t^2)) W_hh|| / ||g_t * (1 - h_t^2)||; "mean_tanh_prime", the plain mean
    of 1 - h_t^2 over those steps and units; and "slope_spread", the mean over the steps of the standard
    deviation of 1 - h_t^2 across the units divided by its mean (0 when every unit has the same slope).
    With uniform_slope=True each step uses the mean of 1 - h_t^2 over the units in every unit instead (a
    what-if, no longer the gradient): W_hh_part is then the gain of W_hh alone along the path the gradient
    would take if every unit had the step's mean slope.
    """
    _check_rnn(rnn)
    _check_batch("x", x, rnn.input_size)
    validation.integer("x.shape[1] (seq)", x.shape[1], minimum=2, why="one step back")
    validation.boolean("uniform_slope", uniform_slope)
    W_hh = rnn.weight_hh_l0.detach().to(x.dtype)  # (d_hidden, d_hidden)
    with torch.no_grad():
        h, _ = rnn(x)  # (batch, seq, d_hidden)
        g = torch.ones(h.shape[0], h.shape[2], dtype=x.dtype)  # (batch, d_hidden) dL/dh_last
        log_tanh, log_W, spread = [], [], []
        for t in range(h.shape[1] - 1, 0, -1):  # g_{t-1} = (g_t * (1 - h_t^2)) W_hh, row vectors
            slope = 1 - h[:, t] ** 2  # (batch, d_hidden)
            spread.append(slope.std(dim=1, correction=0) / slope.mean(dim=1))  # (batch,)
            if uniform_slope:
                slope = slope.mean(dim=1, keepdim=True).expand_as(slope)  # (batch, d_hidden), one value per row
            g_d = g * slope  # (batch, d_hidden)
            g_next = g_d @ W_hh  # (batch, d_hidden)
            log_tanh.append((g_d.norm(dim=1) / g.norm(dim=1)).log())
            log_W.append((g_next.norm(dim=1) / g_d.norm(dim=1)).log())
            g = g_next / g_next.norm(dim=1, keepdim=True)  # only the direction matters: no underflow
        tanh_part = torch.stack(log_tanh).mean(0).exp()  # (batch,)
        W_hh_part = torch.stack(log_W).mean(0).exp()  # (batch,)
        mean_tanh_prime = (1 - h[:, 1:] ** 2).mean(dim=(1, 2))  # (batch,)
    return {
        "factor": tanh_part * W_hh_part,
        "tanh_part": tanh_part,
        "W_hh_part": W_hh_part,
        "mean_tanh_prime": mean_tanh_prime,
        "slope_spread": torch.stack(spread).mean(0),
    }
