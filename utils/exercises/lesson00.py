"""Exercises of lesson 00 (why attention): an RNN by hand, and the gradient that reaches position 0."""

import math

import torch
from torch import nn

from utils.exercises import compare_arrays, exercise


def _rnn(input_size=3, hidden_size=4, seed=0):
    with torch.random.fork_rng():  # a fixed RNN without disturbing the learner's random state
        torch.manual_seed(seed)
        return nn.RNN(input_size, hidden_size, nonlinearity="tanh").double()


def _inputs(seq, input_size=3, seed=1):
    return torch.randn(seq, input_size, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _rnn_forward_solution(x, W_ih, W_hh, b_ih, b_hh):
    h = torch.zeros(W_hh.shape[0], dtype=x.dtype)  # (hidden,) the zero state before step 0
    states = []
    for t in range(x.shape[0]):  # one step after the other: step t needs h from step t - 1
        h = torch.tanh(x[t] @ W_ih.T + b_ih + h @ W_hh.T + b_hh)  # (hidden,)
        states.append(h)
    return torch.stack(states)  # (seq, hidden)


def _rnn_forward_no_tanh(x, W_ih, W_hh, b_ih, b_hh):  # a linear recurrence
    h = torch.zeros(W_hh.shape[0], dtype=x.dtype)
    states = []
    for t in range(x.shape[0]):
        h = x[t] @ W_ih.T + b_ih + h @ W_hh.T + b_hh
        states.append(h)
    return torch.stack(states)


def _rnn_forward_no_memory(x, W_ih, W_hh, b_ih, b_hh):  # forgets h: every step starts from the zero state
    return torch.tanh(x @ W_ih.T + b_ih + b_hh)


def _rnn_forward_untransposed(x, W_ih, W_hh, b_ih, b_hh):  # h @ W_hh instead of h @ W_hh.T
    h = torch.zeros(W_hh.shape[0], dtype=x.dtype)
    states = []
    for t in range(x.shape[0]):
        h = torch.tanh(x[t] @ W_ih.T + b_ih + h @ W_hh + b_hh)
        states.append(h)
    return torch.stack(states)


@exercise(
    hint="""
    Start from h = zeros(hidden). For t = 0, 1, ..., seq-1:
    h = tanh(x[t] @ W_ih.T + b_ih + h @ W_hh.T + b_hh), and keep every h. Stack them: (seq, hidden).
    """,
    reference=_rnn_forward_solution,
    wrong=[_rnn_forward_no_tanh, _rnn_forward_no_memory, _rnn_forward_untransposed],
)
def rnn_forward(answer):
    """answer(x, W_ih, W_hh, b_ih, b_hh) must return every hidden state (seq, hidden) of nn.RNN(tanh)."""
    for seq, input_size, hidden_size in [(1, 3, 4), (5, 3, 4), (12, 2, 6)]:
        rnn = _rnn(input_size, hidden_size)
        x = _inputs(seq, input_size)  # (seq, input_size)
        expected, _ = rnn(x)  # (seq, hidden)
        with torch.no_grad():
            got = answer(x.clone(), rnn.weight_ih_l0.detach().clone(), rnn.weight_hh_l0.detach().clone(),
                         rnn.bias_ih_l0.detach().clone(), rnn.bias_hh_l0.detach().clone())
        got = got.detach() if isinstance(got, torch.Tensor) else got
        miss = compare_arrays(got, expected.detach(), what=f"hidden states for seq={seq} (row = step t)",
                              atol=1e-6)
        if miss:
            return miss
    return None


def _grad_to_first_solution(rnn, x):
    x = x.clone().requires_grad_(True)  # (seq, input_size)
    out, _ = rnn(x)  # (seq, hidden)
    out[-1].sum().backward()  # the loss at the last position
    return x.grad[0].norm().item()  # how much of it reaches position 0


def _grad_to_last(rnn, x):  # the gradient at the last input, one step away, not the first
    x = x.clone().requires_grad_(True)
    out, _ = rnn(x)
    out[-1].sum().backward()
    return x.grad[-1].norm().item()


def _grad_of_every_position(rnn, x):  # the loss summed over all positions: position 0 is 0 steps away
    x = x.clone().requires_grad_(True)
    out, _ = rnn(x)
    out.sum().backward()
    return x.grad[0].norm().item()


@exercise(
    hint="""
    x = x.clone().requires_grad_(True); out, _ = rnn(x); take the loss out[-1].sum() (the last position
    only), call .backward(), and return the norm of x.grad[0] as a float.
    """,
    reference=_grad_to_first_solution,
    wrong=[_grad_to_last, _grad_of_every_position],
)
def grad_to_first(answer):
    """answer(rnn, x) must return || d out[-1].sum() / d x[0] || for an unbatched x (seq, input_size)."""
    for seq in [1, 4, 10, 30]:
        rnn, x = _rnn(), _inputs(seq)
        expected = _grad_to_first_solution(rnn, x)
        got = float(answer(rnn, x.clone()))
        if not math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-300):
            return f"grad_to_first for a sequence of length {seq}: expected {expected:.4e}, got {got:.4e}"
    return None
