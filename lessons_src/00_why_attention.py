# %% [markdown]
# # 00 · Why attention
#
# Before the Transformer, sequence models were recurrent: a recurrent neural network (RNN) reads
# a sentence one word at a time and carries everything it knows in a hidden state. Seed 001 names
# the cost: "possibly many, O(N), steps before *yesterday* and *seemed* interact", and "the longer
# the path, the smaller the gradient signal". Seed 003 lists the RNN's problems: slow for long
# sequences, vanishing or exploding gradients, difficulty reaching information from long ago.
# Seed 004 sums up the alternative: attention "has constant length between any two positions".
# This lesson measures all of that on a small RNN and a single self-attention layer.
#
# **Goals.** By the end you can
# - count the steps an RNN needs before position 0 can affect position $n$ (it is $n$), and the
#   steps one self-attention layer needs (one), from the models themselves;
# - measure the gradient that reaches position 0 from a loss at position $n$: exponentially small
#   for a vanilla RNN, only diluted like $1/n$ for attention;
# - tell *sequential steps* (which no hardware can parallelise) from *work* (which it can), and time
#   both models on this CPU.
#
# **Prerequisites.** Python and a little PyTorch (`nn.Linear`, `backward()`). Nothing from the
# other lessons; `utils.attention.scaled_dot_product_attention` is used here and built in lesson 03.

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    get_ipython().run_line_magic(
        "pip", "install -q 'attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand'"
    )

# %%
import math
import time
from collections import deque

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode

from utils.attention import scaled_dot_product_attention

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. Two small models
#
# **The RNN.** A vanilla (Elman) RNN with a tanh non-linearity: starting from a zero state
# $h_{-1} = 0$, step $t = 0, 1, \dots$ reads the input $x_t$ and the previous state,
#
# $$h_t = \tanh(x_t W_{ih}^\top + b_{ih} + h_{t-1} W_{hh}^\top + b_{hh}).$$
#
# We use `torch.nn.RNN` with PyTorch's standard initialisation (every weight uniform in
# $[-1/\sqrt{d_{hidden}}, 1/\sqrt{d_{hidden}}]$), fixed seed, $d_{model} = d_{hidden} = 16$.
# First the recurrence written out by hand, checked against `nn.RNN`:

# %%
d_model = 16
torch.manual_seed(0)
rnn = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True)  # reads (batch, seq, d_model)


def rnn_by_hand(x, rnn):
    """All hidden states of a one-layer tanh RNN, one step at a time; x is (seq, d_model)."""
    W_ih, W_hh, b_ih, b_hh = rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0
    h = torch.zeros(W_hh.shape[0])  # (d_hidden,) the zero state h_{-1}
    states = []
    for t in range(x.shape[0]):  # step t cannot start before step t-1 has finished
        h = torch.tanh(x[t] @ W_ih.T + b_ih + h @ W_hh.T + b_hh)  # (d_hidden,)
        states.append(h)
    return torch.stack(states)  # (seq, d_hidden)


x = torch.randn(1, 10, d_model, generator=torch.Generator().manual_seed(1))  # (batch, seq, d_model)
out, h_last = rnn(x)  # (batch, seq, d_hidden), (layers, batch, d_hidden)
assert torch.allclose(rnn_by_hand(x[0], rnn), out[0], atol=1e-6)
print("PASS: the hand-written recurrence equals nn.RNN; output shape", tuple(out.shape))

# %% [markdown]
# To see each step as a separate operation we drive a `nn.RNNCell` (one step) in a Python loop,
# with the RNN's weights copied in, and check that the loop equals `nn.RNN` too.

# %%
cell = nn.RNNCell(d_model, d_model, nonlinearity="tanh")
with torch.no_grad():
    for name in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]:
        getattr(cell, name).copy_(getattr(rnn, name + "_l0"))


def run_cell_loop(xs, cell):
    """Apply the cell once per position; xs is a list of (d_model,) inputs; returns the last state."""
    h = torch.zeros(cell.hidden_size, dtype=xs[0].dtype)  # (d_hidden,)
    for x_t in xs:
        h = cell(x_t, h)  # (d_hidden,)
    return h


assert torch.allclose(run_cell_loop(list(x[0]), cell), out[0, -1], atol=1e-6)
print("PASS: a loop over nn.RNNCell equals nn.RNN")

# %% [markdown]
# **The self-attention layer.** Every position $t$ makes a query $q_t = x_t W_q$, a key
# $k_t = x_t W_k$ and a value $v_t = x_t W_v$; output $t$ is a weighted average of **all** values,
# with weights $\mathrm{softmax}_s(q_t \cdot k_s / \sqrt{d_k})$. First naively, one query at a time,
# then in one batched call to `utils.attention.scaled_dot_product_attention`.

# %%
class SelfAttention(nn.Module):
    """One single-head self-attention layer: softmax(Q K^T / sqrt(d_k)) V with Q, K, V = x W_q, x W_k, x W_v."""

    def __init__(self, d_model):
        super().__init__()
        self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model) for _ in range(3))

    def forward(self, x):  # x: (batch, seq, d_model)
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (batch, seq, d_k) each
        return scaled_dot_product_attention(q, k, v)[0]  # (batch, seq, d_v)


torch.manual_seed(0)
attention = SelfAttention(d_model)

with torch.no_grad():
    q, k, v = attention.W_q(x[0]), attention.W_k(x[0]), attention.W_v(x[0])  # (seq, d_model) each
    naive = torch.stack([torch.softmax(q[t] @ k.T / math.sqrt(d_model), dim=0) @ v
                         for t in range(x.shape[1])])  # (seq, d_model), one query at a time
    assert torch.allclose(naive, attention(x)[0], atol=1e-6)
print("PASS: the one-query-at-a-time loop equals the batched self-attention layer")

# %% [markdown]
# ## 2. Path length: O(n) steps against one
#
# How many operations lie between input $x_0$ and the output at the last position? We let the
# models answer. PyTorch records every operation of a forward pass in the autograd graph; the
# **path length** from $x_0$ to the output is the number of graph nodes on the shortest route
# between them (a breadth-first search over `grad_fn.next_functions`). Each position is its own
# leaf tensor, so $x_0$ can be found in the graph.

# %%
def path_length(output, leaf):
    """Fewest autograd-graph nodes from `output` back to the leaf tensor `leaf` (None if unreachable)."""
    depth, queue = {output.grad_fn: 0}, deque([output.grad_fn])
    while queue:
        node = queue.popleft()
        if getattr(node, "variable", None) is leaf:  # the AccumulateGrad node of our input
            return depth[node]
        for parent, _ in node.next_functions:
            if parent is not None and parent not in depth:
                depth[parent] = depth[node] + 1
                queue.append(parent)
    return None


def leaves(n, seed=2):
    """n separate (d_model,) input vectors that require grad."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(d_model, generator=gen).requires_grad_(True) for _ in range(n)]


ns = [1, 2, 4, 8, 16, 32, 64, 128]
rnn_path, attention_path = [], []
for n in ns:
    xs = leaves(n)
    rnn_path.append(path_length(run_cell_loop(xs, cell), xs[0]))
    attention_path.append(path_length(attention(torch.stack(xs)[None])[0, -1], xs[0]))  # (d_model,) last output
print("n              ", ns)
print("RNN path       ", rnn_path)
print("attention path ", attention_path)
assert all(p == rnn_path[0] * n for p, n in zip(rnn_path, ns))  # grows exactly linearly with n
assert len(set(attention_path)) == 1  # the same for every n

# %% [markdown]
# Each RNN step adds the same few nodes (the cell's matrix products, additions and tanh), so the
# RNN's path is exactly proportional to $n$; attention's path does not depend on $n$ at all: every
# output reads every input directly.
#
# **Sequential operations.** We also count them, two ways. A forward hook on the cell counts how
# often it runs: once per position, and each run needs the previous one's result. A
# `TorchFunctionMode` counts every PyTorch call a forward pass makes, which bounds its longest chain
# of dependent operations: for the RNN loop it grows with $n$; for attention it is a fixed number
# of (batched) calls, whatever $n$ is.

# %%
class CountCalls(TorchFunctionMode):
    """Counts the top-level PyTorch function calls made inside a `with` block."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


cell_runs = []
hook = cell.register_forward_hook(lambda module, inputs, output: cell_runs.append(1))
rnn_steps, rnn_calls, attention_calls, attention_runs = [], [], [], []
with torch.no_grad():
    for n in ns:
        xs = [x_t.detach() for x_t in leaves(n)]
        cell_runs.clear()
        with CountCalls() as counter:
            run_cell_loop(xs, cell)
        rnn_steps.append(len(cell_runs))
        rnn_calls.append(counter.calls)
        x_n = torch.stack(xs)[None]  # (1, n, d_model)
        with CountCalls() as counter:
            attention(x_n)
        attention_calls.append(counter.calls)
hook.remove()
print("n                      ", ns)
print("RNN cell runs          ", rnn_steps)
print("RNN PyTorch calls      ", rnn_calls)
print("attention PyTorch calls", attention_calls)
assert rnn_steps == ns  # one cell run per position, each waiting for the previous one
assert all(c == rnn_calls[0] + (rnn_calls[1] - rnn_calls[0]) * (n - 1) for c, n in zip(rnn_calls, ns))
assert len(set(attention_calls)) == 1  # a fixed number of calls, whatever n

# %%
fig, (ax_path, ax_ops) = plt.subplots(1, 2, figsize=(10, 3.5), layout="constrained")
ax_path.plot(ns, rnn_path, "o-", label="RNN")
ax_path.plot(ns, attention_path, "s-", label="self-attention")
ax_path.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="autograd nodes from x_0 to output",
            title="Path length between two positions")
ax_ops.plot(ns, rnn_calls, "o-", label="RNN (cell loop)")
ax_ops.plot(ns, attention_calls, "s-", label="self-attention")
ax_ops.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="PyTorch calls per forward pass",
           title="Operations, one call after another")
for ax in (ax_path, ax_ops):
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.legend()
plt.show()

# %% [markdown]
# Fewer sequential steps is not less **work**. Attention compares every pair of positions, so its
# arithmetic grows like $n^2$; the RNN's grows like $n$. PyTorch's `FlopCounterMode` counts the
# floating-point operations of the matrix products: attention's quadruple when $n$ doubles (once
# $n \gg d_{model}$), the RNN's double. Attention trades more total work for work that runs in
# parallel.

# %%
flops = {}
with torch.no_grad():
    for n in [64, 128, 256, 512]:
        x_n = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(3))  # (1, n, d_model)
        with FlopCounterMode(display=False) as rnn_flops:
            rnn(x_n)
        with FlopCounterMode(display=False) as attention_flops:
            attention(x_n)
        flops[n] = (rnn_flops.get_total_flops(), attention_flops.get_total_flops())
        print(f"n={n:4d}: RNN {flops[n][0]:>10,d} FLOPs   attention {flops[n][1]:>10,d} FLOPs")
assert flops[512][0] == 2 * flops[256][0] == 8 * flops[64][0]  # the RNN: linear in n
assert 3.5 < flops[512][1] / flops[256][1] < 4.0  # attention: close to quadratic in n

# %% [markdown]
# ## 3. Vanishing gradients
#
# Training needs the gradient of a loss at position $n$ with respect to an early input. Through
# the RNN it is a product of $n$ Jacobians, one per step:
#
# $$\frac{\partial h_n}{\partial x_0} = D_n W_{hh}\, D_{n-1} W_{hh} \cdots D_1 W_{hh}\, D_0 W_{ih},
#   \qquad D_t = \mathrm{diag}(1 - h_t^2),$$
#
# and since $|1 - h^2| \le 1$, its size is at most $\|W_{hh}\|_2^{\,n} \|W_{ih}\|_2$. With the
# standard initialisation $\|W_{hh}\|_2 < 1$, so the gradient must shrink exponentially with $n$.
# Attention has no such product: output $n$ depends on $x_0$ through one softmax-weighted sum.
#
# We measure $\|\partial L_n / \partial x_0\|$ with $L_n = \sum_j (\text{output at position } n)_j$,
# for sequences $x_0, \dots, x_n$, in float64 (in float32 the RNN's gradient underflows to exactly
# 0 by $n = 64$), as the median over 8 random sequences.

# %%
rnn64, attention64 = rnn.double(), attention.double()  # the same weights, in float64
grad_ns = [1] + list(range(8, 129, 8))  # distances 1, 8, 16, ..., 128
X = torch.randn(8, grad_ns[-1] + 1, d_model, generator=torch.Generator().manual_seed(4), dtype=torch.float64)  # (8, 129, d_model)


def grad_to_first(model, n):
    """Median over the 8 sequences of || d (sum of output at position n) / d x_0 ||."""
    x = X[:, : n + 1].clone().requires_grad_(True)  # (8, n+1, d_model)
    y = model(x)  # (8, n+1, d_model)
    y = y[0] if isinstance(y, tuple) else y  # nn.RNN returns (output, h_n)
    y[:, -1].sum().backward()  # L_n, summed over the 8 independent sequences
    return x.grad[:, 0].norm(dim=-1).median().item()  # (8,) -> median


rnn_grad = [grad_to_first(rnn64, n) for n in grad_ns]
attention_grad = [grad_to_first(attention64, n) for n in grad_ns]
W_hh_norm = torch.linalg.matrix_norm(rnn64.weight_hh_l0.detach(), ord=2).item()
W_ih_norm = torch.linalg.matrix_norm(rnn64.weight_ih_l0.detach(), ord=2).item()
bound = [math.sqrt(d_model) * W_hh_norm ** n * W_ih_norm for n in grad_ns]  # ||1|| ||W_hh||^n ||W_ih||
for n, g_r, g_a, b in zip(grad_ns, rnn_grad, attention_grad, bound):
    print(f"n={n:4d}: RNN {g_r:.2e} (bound {b:.2e})   attention {g_a:.2e}   attention x (n+1) = {g_a * (n + 1):.2f}")
print(f"||W_hh||_2 = {W_hh_norm:.4f}")

# %% [markdown]
# The numbers say what the formula predicts: the RNN's gradient falls by more than 40 orders of
# magnitude over 128 steps and stays under its bound; attention's falls only like $1/(n+1)$,
# because position 0 is one of $n+1$ positions sharing the softmax weight (its gradient times
# $n+1$ stays between 1.5 and 4). That is dilution, not vanishing: no path gets longer.

# %%
assert W_hh_norm < 1
assert all(g <= b for g, b in zip(rnn_grad, bound))
assert rnn_grad[-1] / rnn_grad[0] < 1e-40  # falls by more than 40 orders of magnitude
assert all(later < earlier for earlier, later in zip(rnn_grad, rnn_grad[1:]))
assert attention_grad[-1] / attention_grad[0] > 1e-2  # falls by less than 2 orders of magnitude
scaled = [g * (n + 1) for g, n in zip(attention_grad, grad_ns)]
assert max(scaled) / min(scaled) < 2  # attention's gradient is c / (n + 1), c within a factor 2
assert all(1.5 < s < 4 for s in scaled)

# %%
fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
ax.plot(grad_ns, rnn_grad, "o-", label="vanilla RNN (tanh)")
ax.plot(grad_ns, bound, ":", color="C0", label="bound sqrt(d) ||W_hh||^n ||W_ih||")
ax.plot(grad_ns, attention_grad, "s-", label="one self-attention layer")
ax.set(yscale="log", xlabel="distance n", ylabel="|| d L_n / d x_0 || (log scale)",
       title="Gradient reaching position 0 from the loss at position n")
ax.legend()
plt.show()

# %% [markdown]
# (With larger recurrent weights, $\|W_{hh}\|_2 > 1$, the same product can instead *explode*,
# seed 003's other failure; gradient clipping and gated cells such as the LSTM were the usual
# repairs.)
#
# ## 4. Sequential against parallel, on this CPU
#
# Timing the two forward passes for growing $n$: the cell loop (one Python-level step per
# position), `nn.RNN` (the same loop, in C++), and one batched attention call. We time on one
# thread: on a shared two-core machine, PyTorch's worker threads wait on each other and swamp the
# measurement. Even on one core, one batched call beats $n$ small dependent steps until attention's
# $n^2$ work takes over. Timings vary from run to run and machine to machine, so this cell's
# output is not compared by the tests; the claim it illustrates, sequential steps growing like $n$
# against a constant, is asserted above on the counts.

# %%
# NBVAL_IGNORE_OUTPUT
def median_time(fn, repeats=5):
    """Median wall-clock seconds of fn() over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


rnn, attention, cell = rnn.float(), attention.float(), cell.float()
threads = torch.get_num_threads()
torch.set_num_threads(1)
time_ns = [32, 128, 512, 2048]
timings = {"RNNCell loop": [], "nn.RNN": [], "self-attention": []}
with torch.no_grad():
    for n in time_ns:
        x_n = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(5))  # (1, n, d_model)
        timings["RNNCell loop"].append(median_time(lambda: run_cell_loop(list(x_n[0]), cell)))
        timings["nn.RNN"].append(median_time(lambda: rnn(x_n)))
        timings["self-attention"].append(median_time(lambda: attention(x_n)))
        print(f"n={n:5d}: " + "   ".join(f"{k} {v[-1] * 1e3:8.3f} ms" for k, v in timings.items()))
torch.set_num_threads(threads)

fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
for name, ts in timings.items():
    ax.plot(time_ns, [t * 1e3 for t in ts], "o-", label=name)
ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="ms (median of 5)",
       title="Forward time on one CPU thread")
ax.set_xticks(time_ns, [str(n) for n in time_ns])
ax.legend()
plt.show()

# %% [markdown]
# On one CPU thread, attention's $n^2$ work (the FLOP counts of section 2) must eventually cost more
# than the RNN's $n$ steps of small work, whatever the timings show for small $n$; on a GPU, which runs thousands of multiply-adds at once, the $n^2$ comparisons happen
# in parallel and the RNN's $n$ dependent steps become the bottleneck ("GPU loves parallel
# computing blocks", seed 001). Training adds one more advantage (seed 004): with teacher forcing
# every target position of a Transformer is a training example computed in the same pass, while an
# RNN must still step through the sequence.
#
# ## Summary
#
# - An RNN needs $n$ dependent steps before position 0 reaches position $n$: its autograd path and
#   its count of sequential calls grow linearly with $n$. One self-attention layer connects any two
#   positions in a constant number of operations.
# - The gradient through a vanilla tanh RNN is a product of $n$ Jacobians and, with the standard
#   initialisation, shrinks exponentially (here by over 40 orders of magnitude in 128 steps).
#   Through attention it is only shared among the $n+1$ positions ($\propto 1/(n+1)$).
# - Attention does $O(n^2)$ work but in $O(1)$ sequential steps; an RNN does $O(n)$ work in $O(n)$
#   sequential steps. Parallel hardware rewards the first.
#
# ## Exercises
#
# Replace `raise NotImplementedError` with your code and run the cell. Stuck?
# `check.rnn_forward.hint()` prints a hint and `check.rnn_forward.solution()` a solution (likewise
# for `check.grad_to_first`).

# %%
from utils.exercises import lesson00 as check  # noqa: E402

# %% [markdown]
# **Exercise 1.** Write the RNN forward pass: given `x` (seq, input_size) and the weights
# `W_ih` (hidden, input_size), `W_hh` (hidden, hidden) and biases `b_ih`, `b_hh` (hidden,), return
# every hidden state, a (seq, hidden) tensor, starting from a zero state. The checker compares it with
# `nn.RNN`.

# %%
def rnn_forward(x, W_ih, W_hh, b_ih, b_hh):
    raise NotImplementedError


check.rnn_forward(rnn_forward)

# %% [markdown]
# **Exercise 2.** Given an `nn.RNN` and one unbatched sequence `x` (seq, input_size), return (as a
# float) the norm of the gradient of the loss $L = \sum_j (\text{output at the last position})_j$
# with respect to the **first** input $x_0$. Try it on longer and longer sequences afterwards.

# %%
def grad_to_first(rnn, x):
    raise NotImplementedError


check.grad_to_first(grad_to_first)
