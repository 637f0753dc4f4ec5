# %% [markdown]
# # 00 · Why attention
#
# Before the Transformer, sequence models were recurrent: a recurrent neural network (RNN) reads
# a sentence one word at a time and carries everything it knows in a hidden state. The COMP7607
# slides name the cost: "Possibly many steps [O(N)] steps before 'yesterday' and 'seemed'
# interact", and "In general, the longer the path, the smaller the gradient signal." The YOUR CAT
# slide deck lists the RNN's problems: slow computation for long sequences, vanishing or exploding
# gradients, difficulty in accessing information from long ago. The reading notes sum up the
# alternative: attention "has constant length between any two positions". The paper itself
# compares the layer types in its Table 1 (section 4, "Why Self-Attention"). This lesson measures
# all of that on small models.
#
# **Goals.** By the end you can
# - count the steps an RNN needs before position 0 can affect position $n - 1$ (it is $n$), and the
#   layers self-attention needs (one), from the models themselves; say what a bidirectional RNN
#   fixes and what it does not;
# - rebuild the paper's Table 1 by counting: complexity per layer, sequential operations and maximum
#   path length of self-attention, recurrent, convolutional and dilated convolutional layers;
# - measure the gradient that reaches position 0 from a loss at position $n$, and explain its
#   exponential decay from the Jacobians: the rate is the slope of tanh times a gain of $W_{hh}$
#   that stays near its spectral radius while tanh's slope is about the same in every unit, not
#   $\|W_{hh}\|_2$ (which PyTorch's initialisation usually puts above 1, from $d_{hidden} = 16$ up);
# - tell *sequential steps* (which, computed as written, cannot run side by side) from *work* (which
#   can).
#
# **Prerequisites.** Python and a little PyTorch (`nn.Linear`, `backward()`). Nothing from the
# other lessons; `utils.attention.scaled_dot_product_attention` is used here and built in lesson 03.

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` (v0.2.0) first; elsewhere this cell does nothing.
import subprocess
import sys

if "google.colab" in sys.modules:
    requirement = "attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand@v0.2.0"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", requirement], capture_output=True, text=True)
    if pip.returncode != 0:
        reason = (pip.stderr.strip().splitlines() or ["pip gave no message"])[-1]
        raise SystemExit(
            f"Setup failed: pip could not install {requirement} ({reason}). "
            "Check that this runtime is online, then run this cell again."
        )

# %%
import math
import statistics

import matplotlib.pyplot as plt
import torch
from torch import nn

from utils.attention import scaled_dot_product_attention
from utils.course.exercises import lesson00 as check
from utils.experiments.layer_costs import (
    CausalConv,
    count_calls,
    count_flops,
    layers_to_connect,
    median_time,
    path_length,
)
from utils.experiments.rnn import default_init_W_hh, first_vanished, grad_norm_to_first, step_factors

torch.set_printoptions(precision=4, sci_mode=False)
COLOR = {"RNN": "C0", "self-attention": "C1", "convolution": "C2", "dilated convolution": "C3"}  # in every figure

# %% [markdown]
# ## 1. Two small models
#
# **The RNN.** A vanilla (Elman) RNN with a tanh non-linearity: starting from a zero state
# $h_{-1} = 0$, step $t = 0, 1, \dots$ reads the input $x_t$ (a row vector) and the previous state,
#
# $$h_t = \tanh(x_t W_{ih}^\top + b_{ih} + h_{t-1} W_{hh}^\top + b_{hh}).$$
#
# We use `torch.nn.RNN` with PyTorch's default initialisation (every weight uniform in
# $[-1/\sqrt{d_{hidden}}, 1/\sqrt{d_{hidden}}]$), seed 0, $d_{model} = d_{hidden} = 16$.
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
print("PASS: the hand-written recurrence equals nn.RNN (max |diff| < 1e-6); output shape", tuple(out.shape))

# %% [markdown]
# To see each step as a separate operation we drive a `nn.RNNCell` (one step) in a Python loop,
# with the RNN's weights copied in, and check that the loop equals `nn.RNN` too.


# %%
def copy_cell(rnn, suffix="_l0"):
    """An nn.RNNCell holding one direction's weights of a one-layer nn.RNN."""
    cell = nn.RNNCell(rnn.input_size, rnn.hidden_size, nonlinearity="tanh")
    with torch.no_grad():
        for name in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]:
            getattr(cell, name).copy_(getattr(rnn, name + suffix))
    return cell


def cell_states(xs, cell):
    """Apply the cell once per position from the zero state; xs is a list of (d_model,) inputs; returns every state."""
    h = torch.zeros(cell.hidden_size, dtype=xs[0].dtype)  # (d_hidden,)
    states = []
    for x_t in xs:
        h = cell(x_t, h)  # (d_hidden,)
        states.append(h)
    return states


cell = copy_cell(rnn)
assert torch.allclose(torch.stack(cell_states(list(x[0]), cell)), out[0], atol=1e-6)
print("PASS: a loop over nn.RNNCell equals nn.RNN (max |diff| < 1e-6)")

# %% [markdown]
# **The self-attention layer.** Every position $t$ makes a query $q_t = x_t W_q + b_q$, a key
# $k_t = x_t W_k + b_k$ and a value $v_t = x_t W_v + b_v$ (`nn.Linear` adds the biases $b$; the
# paper's projections have none); output $t$ is a weighted average of **all** values,
# with weights $\mathrm{softmax}_s(q_t \cdot k_s / \sqrt{d_k})$. First naively, one query at a time,
# then in one batched call to `utils.attention.scaled_dot_product_attention`.


# %%
class SelfAttention(nn.Module):
    """One single-head self-attention layer: softmax(Q K^T / sqrt(d_k)) V with Q, K, V = x W_q + b_q, x W_k + b_k, x W_v + b_v."""

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
    naive = torch.stack(
        [torch.softmax(q[t] @ k.T / math.sqrt(d_model), dim=0) @ v for t in range(x.shape[1])]
    )  # (seq, d_model), one query at a time
    assert torch.allclose(naive, attention(x)[0], atol=1e-6)
print("PASS: the one-query-at-a-time loop equals the batched self-attention layer (max |diff| < 1e-6)")

# %% [markdown]
# ## 2. Path length: $n$ steps against one
#
# How many steps lie between input $x_0$ and the output at the last position $n - 1$? We let the
# models answer. PyTorch records every operation of a forward pass in the autograd graph. Give each
# position its own leaf tensor, so $x_0$ can be found in the graph, and mark the results of every
# cell application (for the RNN) or of the layer (for attention); the **path length** is the
# fewest marked results on any route from the output back to $x_0$ (a breadth-first search over
# `grad_fn.next_functions`, in `utils.experiments.layer_costs.path_length`).
#
# The graph records tensors, not positions, so it would also give 1 for a layer that never mixes
# positions, such as one `nn.Linear` applied to every position, whose output $n - 1$ does not
# depend on $x_0$ at all. So for attention we also check that the gradient of output $n - 1$ with
# respect to $x_0$ is not zero, and that the position-wise layer, with the same graph, has a zero
# gradient.


# %%
def leaves(n, seed=2):
    """n separate (d_model,) input vectors that require grad."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(d_model, generator=gen).requires_grad_(True) for _ in range(n)]


ns = [2, 4, 8, 16, 32, 64]
position_wise = nn.Linear(d_model, d_model)  # the same map at every position, mixes nothing across them
rnn_path, path, reaches = [], {"attention": [], "position-wise": []}, {"attention": [], "position-wise": []}
for n in ns:
    xs = leaves(n)
    states = cell_states(xs, cell)  # n states, one per cell application
    rnn_path.append(path_length(states[-1], xs[0], hops=states))
    for name, layer in (("attention", attention), ("position-wise", position_wise)):
        y = layer(torch.stack(xs)[None])  # (1, n, d_model)
        path[name].append(path_length(y[0, -1], xs[0], hops=[y]))
        (grad,) = torch.autograd.grad(y[0, -1].sum(), xs[0])  # (d_model,) d (output n-1) / d x_0
        reaches[name].append(bool(grad.abs().max() > 0))
attention_path = path["attention"]
print("n                          ", ns)
print("RNN: cell applications     ", rnn_path)
print("attention: layers          ", attention_path, " gradient not zero:", reaches["attention"])
print("position-wise: layers      ", path["position-wise"], " gradient not zero:", reaches["position-wise"])
assert rnn_path == ns  # x_0 passes through every one of the n cell applications
assert attention_path == [1] * len(ns) and all(reaches["attention"])  # one layer, and x_0 really reaches it
assert path["position-wise"] == [1] * len(ns) and not any(reaches["position-wise"])  # the graph alone cannot tell
print("PASS: path from x_0 to the last output = n cell applications for the RNN, 1 layer for attention")
print("PASS: attention's output n-1 depends on x_0 (gradient not zero); a position-wise layer's does not")

# %% [markdown]
# **Sequential operations.** We also count the operations a forward pass makes, two ways. A
# forward hook on the cell counts how often it runs: once per position, and each run needs the
# previous one's result. `utils.experiments.layer_costs.count_calls` counts every PyTorch call a forward pass
# makes, which bounds its longest chain of dependent operations: for the RNN loop it grows with
# $n$; for attention it is a fixed number of batched calls, whatever $n$ is.

# %%
cell_runs = []
hook = cell.register_forward_hook(lambda module, inputs, output: cell_runs.append(1))
rnn_runs, rnn_calls, attention_calls = [], [], []
for n in ns:
    xs = [x_t.detach() for x_t in leaves(n)]
    cell_runs.clear()
    rnn_calls.append(count_calls(cell_states, xs, cell))
    rnn_runs.append(len(cell_runs))
    attention_calls.append(count_calls(attention, torch.stack(xs)[None]))  # (1, n, d_model) input
hook.remove()
print("n                      ", ns)
print("RNN cell runs          ", rnn_runs)
print("RNN PyTorch calls      ", rnn_calls)
print("attention PyTorch calls", attention_calls)
calls_per_step = (rnn_calls[-1] - rnn_calls[0]) // (ns[-1] - ns[0])
assert rnn_runs == ns  # one cell run per position, each waiting for the previous one
assert all(c == rnn_calls[0] + calls_per_step * (n - ns[0]) for c, n in zip(rnn_calls, ns))
assert len(set(attention_calls)) == 1  # a fixed number of calls, whatever n
print(
    f"PASS: the RNN makes {calls_per_step} more calls per position; attention makes "
    f"{attention_calls[0]} calls at every n"
)

# %%
fig, (ax_path, ax_ops) = plt.subplots(1, 2, figsize=(10, 3.5), layout="constrained")
ax_path.plot(ns, rnn_path, "o-", color=COLOR["RNN"], label="RNN (cell applications)")
ax_path.plot(ns, attention_path, "s-", color=COLOR["self-attention"], label="self-attention (layers)")
ax_path.set(
    xscale="log",
    yscale="log",
    xlabel="sequence length n",
    ylabel="steps from x_0 to the last output",
    title="Path length grows with n only for the RNN",
)
ax_ops.plot(ns, rnn_calls, "o-", color=COLOR["RNN"], label="RNN (cell loop)")
ax_ops.plot(ns, attention_calls, "s-", color=COLOR["self-attention"], label="self-attention")
ax_ops.set(
    xscale="log",
    yscale="log",
    xlabel="sequence length n",
    ylabel="PyTorch calls per forward pass",
    title="Operations, one call after another",
)
for ax in (ax_path, ax_ops):
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())  # only the chosen n are labelled
    ax.legend()
plt.show()

# %% [markdown]
# ## 3. A bidirectional RNN
#
# The COMP7607 slides also show a **bidirectional RNN**: one RNN reads left to right, a second one
# (its own weights) right to left, and output $t$ is the two states side by side,
# $[\overrightarrow{h}_t, \overleftarrow{h}_t]$, of size $2 d_{hidden}$. By hand, checked against
# `nn.RNN(..., bidirectional=True)`:

# %%
torch.manual_seed(0)
birnn = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True, bidirectional=True)
cell_fw, cell_bw = copy_cell(birnn, "_l0"), copy_cell(birnn, "_l0_reverse")


def birnn_states(xs, cell_fw, cell_bw):
    """Outputs [forward h_t, backward h_t] (2 d_hidden,) per position, and every state of both directions."""
    fw = cell_states(xs, cell_fw)  # reads x_0, x_1, ..., x_{n-1}
    bw = cell_states(xs[::-1], cell_bw)[::-1]  # reads x_{n-1}, ..., x_0, then put back in position order
    return [torch.cat([f, b]) for f, b in zip(fw, bw)], fw + bw


out_bi, _ = birnn(x)  # (batch, seq, 2 d_hidden)
assert torch.allclose(torch.stack(birnn_states(list(x[0]), cell_fw, cell_bw)[0]), out_bi[0], atol=1e-6)
print(
    "PASS: two cell loops, one each way, equal nn.RNN(bidirectional=True) (max |diff| < 1e-6); output shape",
    tuple(out_bi.shape),
)

# %% [markdown]
# What it fixes: the output at position 0 now depends on the **last** input (context from both
# sides); in the one-way RNN it cannot, there is no route at all. What it does not fix: it runs the
# cell $2n$ times, in two chains of $n$ that can run side by side but each one step after another,
# and the route between the two ends is still $n$ cell applications long, so the signal from far
# away must still cross $n$ steps.

# %%
bi_runs, uni_first_from_last, bi_first_from_last, bi_last_from_first = [], [], [], []
hooks = [c.register_forward_hook(lambda module, inputs, output: cell_runs.append(1)) for c in (cell_fw, cell_bw)]
for n in ns:
    xs = leaves(n)
    cell_runs.clear()
    outputs, all_states = birnn_states(xs, cell_fw, cell_bw)
    bi_runs.append(len(cell_runs))
    bi_first_from_last.append(path_length(outputs[0], xs[-1], hops=all_states))
    bi_last_from_first.append(path_length(outputs[-1], xs[0], hops=all_states))
    states = cell_states(xs, cell)
    uni_first_from_last.append(path_length(states[0], xs[-1], hops=states))
for h in hooks:
    h.remove()
print("n                                        ", ns)
print("one-way RNN: x_{n-1} -> output 0         ", uni_first_from_last)
print("bidirectional: x_{n-1} -> output 0       ", bi_first_from_last)
print("bidirectional: x_0 -> output n-1         ", bi_last_from_first)
print("bidirectional: cell runs                 ", bi_runs)
assert uni_first_from_last == [None] * len(ns)  # no route: the one-way RNN never sees the future
assert bi_first_from_last == ns and bi_last_from_first == ns  # both directions: n cell applications
assert bi_runs == [2 * n for n in ns]
print("PASS: the bidirectional RNN reaches both ways, but through n cell applications, with 2n cell runs")

# %% [markdown]
# And the gradient across those $n$ steps (section 5 explains it) still vanishes: from the loss at
# output 64 back to $x_0$, against output 1 back to $x_0$, in float64, median over 8 sequences, for
# 10 initialisations (seeds 0 to 9; seed 0 is the one above):

# %%
X_bi = torch.randn(8, 65, d_model, generator=torch.Generator().manual_seed(6), dtype=torch.float64)  # (8, 65, d_model)
bi_falls = []
for seed in range(10):
    torch.manual_seed(seed)
    birnn64 = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True, bidirectional=True).double()
    bi_falls.append(grad_norm_to_first(birnn64, X_bi, 64) / grad_norm_to_first(birnn64, X_bi, 1))

# %% tags=["nbval-ignore-output"]
print(
    f"bidirectional RNN, 10 seeds: ||d L_64 / d x_0|| / ||d L_1 / d x_0|| from {min(bi_falls):.0e} to {max(bi_falls):.0e}"
)

# %%
assert all(fall < 1e-10 for fall in bi_falls)
print(
    "PASS: in 10 of 10 seeds, across 64 steps the bidirectional RNN's gradient falls by more than 10 orders of magnitude"
)

# %% [markdown]
# ## 4. The paper's Table 1, counted
#
# Table 1 of the paper compares four kinds of layer by three costs, for a sequence of length $n$,
# representation dimension $d$ and kernel size $k$ (headings and rows as the paper prints them):
#
# | Layer Type | Complexity per Layer | Sequential Operations | Maximum Path Length |
# |---|---|---|---|
# | Self-Attention | $O(n^2 \cdot d)$ | $O(1)$ | $O(1)$ |
# | Recurrent | $O(n \cdot d^2)$ | $O(n)$ | $O(n)$ |
# | Convolutional | $O(k \cdot n \cdot d^2)$ | $O(1)$ | $O(\log_k(n))$ |
# | Self-Attention (restricted) | $O(r \cdot n \cdot d)$ | $O(1)$ | $O(n/r)$ |
#
# We count the first three rows from small layers (the fourth, attention restricted to a
# neighbourhood of $r$ positions, is left out). The paper's section 4 explains the
# convolutional entry: a layer of width $k < n$ connects each output to only $k$ inputs, so
# connecting the two ends needs a stack of $O(n/k)$ layers with contiguous kernels, or
# $O(\log_k(n))$ with **dilated** ones (the paper cites ByteNet, Kalchbrenner et al., 2017), where
# layer $l$ skips $k^l - 1$ positions between the inputs it reads (the COMP7607 slides list such
# "Convolution Style Models" too). Our convolutions are causal, like the RNN:
# output $t$ reads inputs $t, t - \text{dilation}, \dots$.
#
# The autograd graph records tensors, not positions: a convolution over the whole sequence is one
# node, so the graph would show one step from $x_0$ to every output, even where output $n - 1$
# does not read $x_0$ at all. So for layers we count the path in **layers**: `layers_to_connect`
# stacks layers until the gradient of output $n - 1$ with respect to $x_0$ is not exactly zero.
# The complexity counts are the floating-point operations of the matrix products and convolutions
# (`torch.utils.flop_counter`, 2 per multiply-add); the sequential operations are the PyTorch calls
# of one forward pass.

# %%
kernel = 3
layer_kinds = {  # layer index -> a fresh layer
    "self-attention": lambda depth: SelfAttention(d_model),
    "convolution": lambda depth: CausalConv(d_model, kernel),
    "dilated convolution": lambda depth: CausalConv(d_model, kernel, dilation=kernel**depth),
}
rnn_layer = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True)
costs = {kind: {"flops": [], "calls": [], "path": []} for kind in ["RNN", *layer_kinds]}
for n in ns:
    x_n = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(3))  # (1, n, d_model)
    costs["RNN"]["flops"].append(count_flops(rnn_layer, x_n))
    costs["RNN"]["calls"].append(count_calls(cell_states, list(x_n[0]), cell))
    costs["RNN"]["path"].append(rnn_path[ns.index(n)])  # measured in section 2
    for kind, make_layer in layer_kinds.items():
        costs[kind]["flops"].append(count_flops(make_layer(0), x_n))
        costs[kind]["calls"].append(count_calls(make_layer(0), x_n))
        costs[kind]["path"].append(layers_to_connect(make_layer, n, d_model))
for what in ["flops", "calls", "path"]:
    print(
        {
            "flops": "complexity per layer (FLOPs)",
            "calls": "sequential operations (PyTorch calls)",
            "path": "maximum path length (steps or layers)",
        }[what],
        "at n =",
        ns,
    )
    for kind, c in costs.items():
        print(f"  {kind:20s}", c[what])

# %% [markdown]
# Each count against its exact formula, at every $n$ (with $d = d_{model} = 16$, $k = 3$):
# self-attention's projections cost $3 \cdot 2 n d^2$ and its two $n \times n$ products
# $2 \cdot 2 n^2 d$ (the paper's $O(n^2 \cdot d)$ counts only these); the RNN's two matrices
# $2 \cdot 2 n d^2$; a convolution $2 k n d^2$, dilated or not. The paths: $n$ steps; 1 layer;
# $\lceil (n-1)/(k-1) \rceil$ contiguous layers, since each reaches $k - 1$ positions further back;
# the fewest $L$ with $k^L \ge n$ dilated layers.


# %%
def fewest_dilated_layers(n, k):
    """Smallest L with k**L >= n: L dilated layers of width k see k**L positions."""
    L = 1
    while k**L < n:
        L += 1
    return L


d = d_model
assert costs["self-attention"]["flops"] == [3 * 2 * n * d * d + 2 * 2 * n * n * d for n in ns]
assert costs["RNN"]["flops"] == [2 * 2 * n * d * d for n in ns]
assert costs["convolution"]["flops"] == costs["dilated convolution"]["flops"] == [2 * kernel * n * d * d for n in ns]
print(
    "PASS: complexity per layer = 6nd^2 + 4n^2d (self-attention), 4nd^2 (RNN), 2knd^2 (convolutions), "
    "exactly, at every n"
)
assert all(c == costs["RNN"]["calls"][0] + calls_per_step * (n - ns[0]) for c, n in zip(costs["RNN"]["calls"], ns))
for kind in layer_kinds:
    assert len(set(costs[kind]["calls"])) == 1, kind
print("PASS: sequential operations grow with n for the RNN only; a fixed number of calls for each other layer")
assert costs["RNN"]["path"] == ns
assert costs["self-attention"]["path"] == [1] * len(ns)
assert costs["convolution"]["path"] == [math.ceil((n - 1) / (kernel - 1)) for n in ns]
assert costs["dilated convolution"]["path"] == [fewest_dilated_layers(n, kernel) for n in ns]
print(
    "PASS: path length = n (RNN), 1 (self-attention), ceil((n-1)/(k-1)) (convolution), "
    "ceil(log_k n) (dilated convolution), at every n"
)
print(
    f"so a convolution costs k/2 = {kernel / 2} x an RNN layer here (the RNN has two d x d matrices per step; "
    "the paper's 'more expensive than recurrent layers, by a factor of k' counts one)"
)

# %% [markdown]
# By these counts one self-attention layer does **more** arithmetic than the RNN layer at every $n$,
# $6nd^2 + 4n^2d$ against $4nd^2$, and the gap grows like $n^2$. The paper's section 4 says that
# "self-attention layers are faster than recurrent layers when the sequence length $n$ is smaller
# than the representation dimensionality $d$": that compares only attention's two $n \times n$
# products, $4n^2d$, with the RNN's $4nd^2$, and leaves the projections out. Counted that way (the
# products alone, measured on `scaled_dot_product_attention`), attention is cheaper exactly when
# $n < d$:

# %%
extra = [a - r for a, r in zip(costs["self-attention"]["flops"], costs["RNN"]["flops"])]
assert all(e > 0 for e in extra) and all(a < b for a, b in zip(extra, extra[1:]))
print("PASS: at every n one self-attention layer does more FLOPs than the RNN layer, and the gap widens with n")
products_cheaper = []
for n in range(1, 2 * d + 1):
    x_n = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(3))  # (1, n, d_model)
    products = count_flops(scaled_dot_product_attention, x_n, x_n, x_n)  # the two n x n products only
    products_cheaper.append(products < count_flops(rnn_layer, x_n))
assert products_cheaper == [n < d for n in range(1, 2 * d + 1)]
print(
    f"PASS: attention's n x n products alone cost fewer FLOPs than the RNN layer exactly when n < d = {d} "
    f"(n = 1 to {2 * d})"
)

# %% [markdown]
# The table's columns, as figures. The convolutions buy parallel work with depth: the printed
# paths are the layers a stack needs before its two ends are connected, growing with $n$ (slowly
# when dilated); only attention connects them in one layer.

# %%
fig, (ax_path, ax_flops) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
markers = {"RNN": "o-", "self-attention": "s-", "convolution": "^--", "dilated convolution": "v:"}
for kind, c in costs.items():
    ax_path.plot(ns, c["path"], markers[kind], color=COLOR[kind], label=kind)
    ax_flops.plot(ns, c["flops"], markers[kind], color=COLOR[kind], label=kind)
ax_path.set(
    xscale="log",
    yscale="log",
    xlabel="sequence length n",
    ylabel="steps (RNN) or layers",
    title="Maximum path length: only attention stays at 1",
)
ax_flops.set(
    xscale="log",
    yscale="log",
    xlabel="sequence length n",
    ylabel="FLOPs of one layer",
    title="Complexity per layer: attention's grows like n^2\n(the two convolutions coincide)",
)
for ax in (ax_path, ax_flops):
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())  # only the chosen n are labelled
    ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 5. Vanishing gradients
#
# Training needs the gradient of a loss at position $n$ with respect to an early input. Through
# the RNN it is a product of $n$ Jacobians, one per step. With row vectors, $g_t = \partial L /
# \partial h_t$ goes back one step as
#
# $$g_{t-1} = \big(g_t \odot (1 - h_t^2)\big)\, W_{hh},$$
#
# since $\tanh'(a) = 1 - \tanh(a)^2$. As $0 < 1 - h^2 \le 1$, each step can at most multiply
# $\|g\|$ by $\|W_{hh}\|_2$, the largest singular value, which bounds the whole gradient by
# $\sqrt{d}\,\|W_{hh}\|_2^{\,n}\,\|W_{ih}\|_2$ (the $\sqrt{d}$ is $\|\partial L / \partial h_n\|$ for
# $L$ = the sum of the last output). That bound shrinks only if $\|W_{hh}\|_2 < 1$. Is it, at
# initialisation?
#
# ### 5.1 $\|W_{hh}\|_2$ at initialisation, over 50 seeds
#
# `default_init_W_hh` builds `nn.RNN(d, d)` under seeds 0 to 49 and returns, for each,
# $\|W_{hh}\|_2$ and the **spectral radius** $\rho(W_{hh})$, the largest $|\text{eigenvalue}|$.

# %%
init_seeds = range(50)
init = {d_hidden: default_init_W_hh(d_hidden, init_seeds) for d_hidden in [16, 32, 64, 256]}
print("d_hidden   ||W_hh||_2: median [min, max]  below 1     rho(W_hh): median [min, max]")
for d_hidden, (norms, radii) in init.items():
    print(
        f"{d_hidden:8d}   {norms.median():.2f} [{norms.min():.2f}, {norms.max():.2f}]"
        f"          {int((norms < 1).sum()):2d} of {len(norms)}    "
        f"{radii.median():.2f} [{radii.min():.2f}, {radii.max():.2f}]"
    )

# %% [markdown]
# So the common assumption "$\|W_{hh}\|_2 < 1$ at initialisation" is false in general: the column
# "below 1" counts the seeds where it held, fewer than half at $d_{hidden} = 16$ (seed 0, ours, is
# one of them) and none from $d_{hidden} = 64$ on, while the median norm grows with the width.
# Random matrix theory says why: a $d \times d$ matrix with independent entries of variance
# $\sigma^2$ has, for large $d$, largest singular value near $2\sigma\sqrt{d}$ (Geman, 1980) and
# eigenvalues filling the disc of radius $\sigma\sqrt{d}$ (the circular law; Tao and Vu, 2010), with
# the largest $|\text{eigenvalue}|$ tending to $\sigma\sqrt{d}$ (Geman, 1986).
# Uniform weights in $[-1/\sqrt{d}, 1/\sqrt{d}]$ have $\sigma^2 = 1/(3d)$: $\|W_{hh}\|_2 \to 2/\sqrt{3}
# \approx 1.15$, while $\rho(W_{hh}) \to 1/\sqrt{3} \approx 0.58$.

# %%
for norms, radii in init.values():
    assert (norms - 1).abs().min() > 1e-3  # no norm so close to 1 that rounding could flip the count
    assert radii.max() < 1  # every spectral radius is below 1
medians = [norms.median() for norms, _ in init.values()]
assert all(a < b for a, b in zip(medians, medians[1:]))  # the median norm grows with the width
assert 0 < int((init[16][0] < 1).sum()) < 25 and init[16][0][0] < 1  # seed 0 is among those below 1
assert int((init[64][0] < 1).sum()) == int((init[256][0] < 1).sum()) == 0
assert abs(init[256][0].median() / (2 / math.sqrt(3)) - 1) < 0.05
assert abs(init[256][1].median() / (1 / math.sqrt(3)) - 1) < 0.06
print(
    "PASS: ||W_hh||_2 < 1 in fewer than half of 50 seeds at d_hidden = 16 (seed 0 among them), in none at 64 "
    "or 256; the median grows with d_hidden, within 5% of 2/sqrt(3) at 256"
)
print("PASS: rho(W_hh) < 1 in all 50 seeds at every width shown; median within 6% of 1/sqrt(3) at 256")

# %% [markdown]
# The limits are for large $d$. At the narrowest widths the picture changes. Over 2000 seeds at
# each even width from 2 to 14: at $d_{hidden}$ = 2 and 4 the norm is below 1 in most seeds and more
# than 10 seeds have a spectral radius of 1 or more; at 6 and 8 only a few seeds do (at most 5 of the
# 2000, listed below); at 10, 12 and 14 none of the 2000 does. The share of norms below 1 falls at
# each wider width, to fewer than half at 12 and 14.

# %%
narrow_seeds = range(2000)
narrow = {d_hidden: default_init_W_hh(d_hidden, narrow_seeds) for d_hidden in range(2, 15, 2)}
norm_below_1, radius_1_or_more = {}, {}  # per width: how many seeds
for d_hidden, (norms, radii) in narrow.items():
    assert (norms - 1).abs().min() > 1e-6 and (radii - 1).abs().min() > 1e-6  # no count on a knife-edge
    norm_below_1[d_hidden], radius_1_or_more[d_hidden] = int((norms < 1).sum()), int((radii >= 1).sum())
    which = (radii >= 1).nonzero().flatten().tolist()  # the seeds with rho(W_hh) >= 1
    print(
        f"d_hidden = {d_hidden:2d}: ||W_hh||_2 < 1 in {norm_below_1[d_hidden]:4d} of {len(narrow_seeds)} seeds, "
        f"rho(W_hh) >= 1 in {radius_1_or_more[d_hidden]:2d}"
        + (f" (seed{'s' * (len(which) > 1)} {', '.join(map(str, which))})" if 0 < len(which) <= 5 else "")
    )
half = len(narrow_seeds) / 2
assert all(norm_below_1[d] > half and radius_1_or_more[d] > 10 for d in (2, 4))
assert all(0 < radius_1_or_more[d] <= 5 for d in (6, 8))
assert all(radius_1_or_more[d] == 0 for d in (10, 12, 14))
counts = list(norm_below_1.values())  # d_hidden = 2, 4, ..., 14
assert all(a > b for a, b in zip(counts, counts[1:])) and norm_below_1[12] < half and norm_below_1[14] < half
print("PASS: at d_hidden = 2 and 4 the norm is below 1 in most of 2000 seeds, and rho(W_hh) >= 1 in more than 10")
print("PASS: at d_hidden = 6 and 8 rho(W_hh) >= 1 in a few of 2000 seeds (1 to 5); at 10, 12 and 14 in none of them")
print("PASS: the seeds with a norm below 1 get fewer at each wider width, fewer than half of 2000 at 12 and 14")

# %%
fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
for i, (norms, radii) in enumerate(init.values()):
    jitter = torch.linspace(-0.15, 0.15, len(norms))
    ax.plot(i + jitter, norms, "o", ms=3, color="C9", label="||W_hh||_2 (largest singular value)" if i == 0 else None)
    ax.plot(i + jitter, radii, "s", ms=3, color="C5", label="rho(W_hh) (largest |eigenvalue|)" if i == 0 else None)
ax.axhline(1, color="black", lw=1)
ax.axhline(2 / math.sqrt(3), color="C9", ls=":", lw=1, label="2/sqrt(3), large-d limit")
ax.axhline(1 / math.sqrt(3), color="C5", ls=":", lw=1, label="1/sqrt(3), large-d limit")
ax.set_xticks(range(len(init)), [f"d_hidden={d}" for d in init])
ax.set(
    ylabel="value, one dot per seed",
    title="PyTorch's default W_hh: norm mostly above 1, radius below 1 at every width shown",
)
ax.legend(fontsize=8, loc="center right")
plt.show()

# %% [markdown]
# ### 5.2 The gradient against distance, and the factor per step
#
# We measure $\|\partial L_n / \partial x_0\|$ with $L_n = \sum_j (\text{output at position } n)_j$,
# for sequences $x_0, \dots, x_n$, in float64, as the median over 8 random sequences
# (`grad_norm_to_first`; with 8 values PyTorch's median is the lower middle one, the 4th smallest),
# for our RNN and our attention layer. These numbers come out of up to 128
# steps of arithmetic, so on another processor their last digits may differ; the checks after them
# hold with a margin.

# %%
rnn64, attention64 = rnn.double(), attention.double()  # the same weights, in float64
grad_ns = [1] + list(range(8, 129, 8))  # distances 1, 8, 16, ..., 128
X = torch.randn(8, 161, d_model, generator=torch.Generator().manual_seed(4), dtype=torch.float64)  # (8, 161, d_model)
rnn_grad = [grad_norm_to_first(rnn64, X, n) for n in grad_ns]
attention_grad = [grad_norm_to_first(attention64, X, n) for n in grad_ns]
W_hh, W_ih = rnn64.weight_hh_l0.detach(), rnn64.weight_ih_l0.detach()  # (d_hidden, d_hidden), (d_hidden, d_model)
W_hh_norm, W_ih_norm = torch.linalg.matrix_norm(W_hh, ord=2).item(), torch.linalg.matrix_norm(W_ih, ord=2).item()
W_hh_radius = torch.linalg.eigvals(W_hh).abs().max().item()
bound = [math.sqrt(d_model) * W_hh_norm**n * W_ih_norm for n in grad_ns]  # ||1|| ||W_hh||^n ||W_ih||
orders = math.log10(rnn_grad[0] / rnn_grad[-1])
measured_rate = (rnn_grad[-1] / rnn_grad[1]) ** (1 / (grad_ns[-1] - grad_ns[1]))  # per step, from n=8 to 128

# %% tags=["nbval-ignore-output"]
for n, g_r, b, g_a in zip(grad_ns, rnn_grad, bound, attention_grad):
    print(f"n={n:4d}: RNN {g_r:.1e} (bound {b:.1e})   attention {g_a:.2e}")
print(f"||W_hh||_2 = {W_hh_norm:.2f}: the bound falls by x{W_hh_norm:.2f} per step")
print(f"the RNN's gradient falls by x{measured_rate:.2f} per step, {orders:.0f} orders of magnitude from n=1 to 128")

# %% [markdown]
# The bound holds, but it is far too loose to explain the decay. Follow the gradient back through
# the Jacobians instead. `step_factors` runs $g_{t-1} = (g_t \odot (1 - h_t^2)) W_{hh}$ step by step
# from the loss at the last of 129 positions and splits each step's shrink factor exactly in two:
#
# $$\frac{\|g_{t-1}\|}{\|g_t\|} = \underbrace{\frac{\|g_t \odot (1 - h_t^2)\|}{\|g_t\|}}_{\text{the slope of tanh}}
#   \times \underbrace{\frac{\|(g_t \odot (1 - h_t^2)) W_{hh}\|}{\|g_t \odot (1 - h_t^2)\|}}_{\text{the gain of } W_{hh}},$$
#
# each averaged geometrically over the 128 steps (medians over the 8 sequences). The first part is
# close to the plain mean of $1 - h^2$ along the path. The second is the gain of $W_{hh}$ on the
# directions the gradient actually takes. If tanh's slope were the same number in every unit, each
# step back would multiply $g$ by that number times $W_{hh}$, and repeated products of one matrix
# grow like its largest $|\text{eigenvalue}|$, $\rho(W_{hh})$, not like its one-step worst case
# $\|W_{hh}\|_2$: the gain would be $\rho(W_{hh})$. The slopes differ from unit to unit, so the gain
# is only near $\rho(W_{hh})$; section 5.3 measures how near, and when it strays.

# %%
parts = {name: value.median().item() for name, value in step_factors(rnn64, X[:, :129]).items()}

# %% tags=["nbval-ignore-output"]
print(f"per-step factor, from the Jacobians  {parts['factor']:.3f}   (from the gradient curve: {measured_rate:.3f})")
print(
    f"  slope of tanh                      {parts['tanh_part']:.3f}   (mean of 1 - h^2: {parts['mean_tanh_prime']:.3f})"
)
print(
    f"  gain of W_hh                       {parts['W_hh_part']:.3f}   (rho(W_hh) = {W_hh_radius:.3f}, "
    f"||W_hh||_2 = {W_hh_norm:.3f})"
)
print(f"rho(W_hh) x mean(1 - h^2) = {W_hh_radius * parts['mean_tanh_prime']:.3f}")

# %% [markdown]
# The Jacobians explain the curve: the per-step factor they give matches the slope of the measured
# gradient, and it is a gain of $W_{hh}$ near $\rho(W_{hh})$ times a tanh slope near the mean of
# $1 - h^2$, where the bound only promised $\|W_{hh}\|_2$ per step.

# %%
assert all(g <= b for g, b in zip(rnn_grad, bound))
assert rnn_grad[-1] / rnn_grad[0] < 1e-40  # falls by more than 40 orders of magnitude
assert all(later < earlier for earlier, later in zip(rnn_grad, rnn_grad[1:]))
assert abs(parts["factor"] / measured_rate - 1) < 0.05
assert abs(parts["tanh_part"] / parts["mean_tanh_prime"] - 1) < 0.1
assert 0.85 < parts["W_hh_part"] / W_hh_radius < 1.05 and parts["W_hh_part"] < W_hh_norm
print("PASS: RNN gradient under its bound at every n, falling by more than 40 orders of magnitude from n=1 to 128")
print(
    "PASS: the per-step factor from the Jacobians is within 5% of the gradient curve's; its tanh part within "
    "10% of mean(1 - h^2), its W_hh part within [0.85, 1.05] x rho(W_hh) and below ||W_hh||_2"
)

# %%
fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
ax.plot(grad_ns, rnn_grad, "o-", color=COLOR["RNN"], label="vanilla RNN (tanh), measured")
ax.plot(grad_ns, bound, ":", color="black", label="bound sqrt(d) ||W_hh||^n ||W_ih||")
ax.plot(
    grad_ns,
    [rnn_grad[0] * parts["factor"] ** (n - 1) for n in grad_ns],
    "--",
    color="gray",
    label="(per-step factor from the Jacobians)^(n-1),\nalmost hidden under the measured curve",
)
ax.plot(grad_ns, attention_grad, "s-", color=COLOR["self-attention"], label="one self-attention layer")
ax.set(
    yscale="log",
    xlabel="distance n",
    ylabel="|| d L_n / d x_0 || (log scale)",
    title="Gradient reaching position 0: the bound is loose, the Jacobians' factor is not",
)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ### 5.3 Twenty initialisations
#
# One seed proves little. For seeds 0 to 19 (the same 8 sequences), the per-step factor and its
# parts, next to $\|W_{hh}\|_2$ and $\rho(W_{hh})$:

# %%
seeds_20 = range(20)
rows = []
for seed in seeds_20:
    torch.manual_seed(seed)
    rnn_s = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True).double()
    W = rnn_s.weight_hh_l0.detach()  # (d_hidden, d_hidden)
    p = {name: value.median().item() for name, value in step_factors(rnn_s, X[:, :129]).items()}
    rows.append(
        dict(
            seed=seed,
            norm=torch.linalg.matrix_norm(W, ord=2).item(),
            radius=torch.linalg.eigvals(W).abs().max().item(),
            **p,
        )
    )
factors = [r["factor"] for r in rows]
above_one = sum(r["norm"] > 1 for r in rows)

# %% tags=["nbval-ignore-output"]
print("seed  ||W_hh||_2  rho(W_hh)   factor = tanh part x W_hh part   mean(1-h^2)")
for r in rows:
    print(
        f"{r['seed']:4d}     {r['norm']:.2f}       {r['radius']:.2f}      {r['factor']:.2f} = "
        f"{r['tanh_part']:.2f} x {r['W_hh_part']:.2f}          {r['mean_tanh_prime']:.2f}"
    )
print(
    f"per-step factor over 20 seeds: median {statistics.median(factors):.2f}, "
    f"range [{min(factors):.2f}, {max(factors):.2f}]; ||W_hh||_2 > 1 in {above_one} of 20"
)
print(
    f"orders of magnitude lost over 128 steps: {-128 * math.log10(max(factors)):.0f} to "
    f"{-128 * math.log10(min(factors)):.0f}"
)

# %% [markdown]
# In every one of the 20 initialisations the gradient shrinks by a factor well below 1 per step,
# including the ones where $\|W_{hh}\|_2 > 1$: the vanishing comes from $\rho(W_{hh}) < 1$ and tanh's
# slope, not from the norm.

# %%
assert all(r["factor"] < 0.6 for r in rows)
assert above_one >= 5  # the claim is tested where the norm bound says nothing
assert all(0.85 < r["W_hh_part"] / r["radius"] < 1.05 and r["W_hh_part"] < r["norm"] for r in rows)
assert all(abs(r["tanh_part"] / r["mean_tanh_prime"] - 1) < 0.1 for r in rows)
assert all(abs(r["factor"] / (r["radius"] * r["mean_tanh_prime"]) - 1) < 0.15 for r in rows)
print(
    f"PASS: over 20 seeds ({above_one} with ||W_hh||_2 > 1) the per-step factor is below 0.6; "
    "W_hh's gain within [0.85, 1.05] x rho(W_hh); factor within 15% of rho(W_hh) x mean(1 - h^2)"
)

# %%
fig, (ax_norm, ax_pred) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
ax_norm.plot([r["norm"] for r in rows], factors, "o", color=COLOR["RNN"])
ax_norm.axvline(1, color="black", lw=1)
ax_norm.set(
    xlabel="||W_hh||_2",
    ylabel="per-step factor of the gradient",
    ylim=(0, 1.05),
    title="Below 1 on both sides of ||W_hh||_2 = 1",
)
predicted = [r["radius"] * r["mean_tanh_prime"] for r in rows]
ax_pred.plot(predicted, factors, "o", color=COLOR["RNN"])
ax_pred.plot([0.3, 0.6], [0.3, 0.6], ":", color="black", label="measured = predicted")
ax_pred.set(
    xlabel="rho(W_hh) x mean(1 - h^2)",
    ylabel="per-step factor of the gradient",
    title="Predicted from the eigenvalues and tanh's slope",
)
ax_pred.legend()
fig.suptitle("20 initialisations, one dot each")
plt.show()

# %% [markdown]
# **And exploding?** The YOUR CAT deck's other failure is the opposite one. Scale the same 20
# initialisations' $W_{hh}$ up by $c$: its gain grows with $c$, but the states saturate, tanh's slope
# falls, and the product of the two decides. Next to the gain we print it as a multiple of
# $\rho(W_{hh})$, the same multiple when every unit is given the step's mean slope
# (`step_factors(..., uniform_slope=True)`, a what-if that isolates $W_{hh}$), and how uneven the
# real slope is across the units (its standard deviation over its mean, averaged over the steps).
# From $c = 4$ the recurrence amplifies tiny differences in the last bits of the arithmetic, so
# this table's last digits can differ on another processor; the counts and checks after it do not.

# %%
scales, blow_up = [1, 2, 4, 6], {}
for c in scales:
    for seed in seeds_20:
        torch.manual_seed(seed)
        rnn_s = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True).double()
        with torch.no_grad():
            rnn_s.weight_hh_l0.mul_(c)
        p = {name: value.median().item() for name, value in step_factors(rnn_s, X[:, :129]).items()}
        uniform = step_factors(rnn_s, X[:, :129], uniform_slope=True)["W_hh_part"].median().item()
        radius = torch.linalg.eigvals(rnn_s.weight_hh_l0.detach()).abs().max().item()
        blow_up[c, seed] = dict(
            radius=radius,
            growth=grad_norm_to_first(rnn_s, X, 128) / grad_norm_to_first(rnn_s, X, 1),
            gain_over_radius=p["W_hh_part"] / radius,
            uniform_over_radius=uniform / radius,
            **p,
        )

# %% tags=["nbval-ignore-output"]
print("min-max over 20 seeds:")
columns = ["radius", "tanh_part", "W_hh_part", "gain_over_radius", "uniform_over_radius", "slope_spread", "factor"]
print("  c  rho(W_hh)  tanh part  W_hh part  gain/rho   same slope  slope spread  factor     gradient n=128 / n=1")
for c in scales:
    rs = [blow_up[c, seed] for seed in seeds_20]
    cols = [f"{min(r[key] for r in rs):4.2f}-{max(r[key] for r in rs):<4.2f}" for key in columns]
    growth = [r["growth"] for r in rs]
    print(f"{c:3d}  " + "  ".join(f"{col:9s}" for col in cols) + f"  {min(growth):.0e} to {max(growth):.0e}")
spread = {c: statistics.median(blow_up[c, s]["slope_spread"] for s in seeds_20) for c in scales}
print("median slope spread over the 20 seeds, by c:", {c: round(v, 2) for c, v in spread.items()})
growing = {c: [blow_up[c, s]["growth"] for s in seeds_20 if blow_up[c, s]["factor"] > 1] for c in (4, 6)}
for c, g in growing.items():
    print(f"c = {c}: in the {len(g)} seeds with factor > 1, gradient n=128 / n=1 from {min(g):.0e} to {max(g):.0e}")

# %% [markdown]
# The gain of $W_{hh}$ is near $\rho(W_{hh})$ when tanh's slope is about the same in every unit.
# Given the same slope in every unit, it is within 5% of $\rho(W_{hh})$ at every $c$ and in every
# seed. At PyTorch's initialisation ($c = 1$) the real slope varies by about a third of its mean
# across the units, and the gain stays between $0.9\,\rho$ and $\rho$ in all 20 seeds. Scaled up,
# $W_{hh}$ drives some units into saturation (slope near 0) and leaves others near 1; the slope's
# spread grows to about its mean at $c = 4$ and beyond it at $c = 6$ (medians over the seeds, printed
# above), and
# the gain strays from $\rho(W_{hh})$: below $0.75\,\rho$ in some seeds and above $\rho$ in others,
# at $c = 4$ and at $c = 6$.
#
# At $c = 2$ the spectral radius is above 1 in all but one seed, yet the gradient still vanishes in
# every seed: the slope of tanh fell. From $c = 4$ the per-step factor passes 1 in most seeds, and
# there the gradient grows over the 128 steps, by amounts that differ by orders of magnitude from
# seed to seed (printed above); in the others it still vanishes (the counts below): how far the
# states saturate decides. Gradient clipping (against exploding) and gated cells such as the LSTM
# (against vanishing) were the usual repairs.

# %%
count = {
    what: {c: sum(test(blow_up[c, s]) for s in seeds_20) for c in scales}
    for what, test in [
        ("rho(W_hh) > 1", lambda r: r["radius"] > 1),
        ("per-step factor > 1", lambda r: r["factor"] > 1),
        ("gradient n=128 / n=1 > 1", lambda r: r["growth"] > 1),
    ]
}
for what, by_c in count.items():
    print(f"seeds (of 20) with {what:26s} by c: {by_c}")
ratio = {c: [blow_up[c, s]["gain_over_radius"] for s in seeds_20] for c in scales}
assert all(abs(blow_up[c, s]["factor"] - 1) > 0.01 for c in scales for s in seeds_20)  # no count on a knife-edge
assert all(abs(blow_up[c, s]["uniform_over_radius"] - 1) < 0.05 for c in scales for s in seeds_20)
assert all(0.9 < r < 1 for r in ratio[1]) and 0.25 < spread[1] < 0.4  # about a third of the mean slope
assert all(min(ratio[c]) < 0.75 and max(ratio[c]) > 1 for c in (4, 6))
assert 0.8 < spread[4] < 1.2 and spread[6] > 1.2  # about the mean slope, then beyond it
assert all(a < b for a, b in zip(spread.values(), list(spread.values())[1:]))  # more uneven as c grows
print(
    "PASS: with the same slope in every unit W_hh's gain is within 5% of rho(W_hh) (4 scales x 20 seeds); "
    "with the real slope, within [0.9, 1] x rho at c = 1, and below 0.75 x rho in some seeds and above rho "
    "in others at c = 4 and at c = 6, where the slope's spread (median) reaches its mean or more"
)
assert count["rho(W_hh) > 1"][2] == 19 and all(blow_up[2, s]["growth"] < 1e-6 for s in seeds_20)
assert count["per-step factor > 1"][1] == count["per-step factor > 1"][2] == 0
assert all(10 < count["per-step factor > 1"][c] < 20 for c in (4, 6))  # most seeds, not all
assert all((r["factor"] > 1) == (r["growth"] > 1) for r in blow_up.values())
assert all(max(g) / min(g) > 100 for g in growing.values())  # by amounts orders of magnitude apart
assert all(
    blow_up[c, s]["tanh_part"] > blow_up[c2, s]["tanh_part"] for c, c2 in zip(scales, scales[1:]) for s in seeds_20
)
assert all(
    blow_up[c, s]["W_hh_part"] < blow_up[c2, s]["W_hh_part"] for c, c2 in zip(scales, scales[1:]) for s in seeds_20
)
print("PASS: W_hh x 2: rho > 1 in 19 of 20 seeds, yet the gradient falls by over 6 orders of magnitude in 128 steps")
print(
    "PASS: the gradient grows exactly where the per-step factor is above 1: in most seeds but not all at c = 4 "
    "and at c = 6 (by amounts over 100 x apart), in none at c = 1 or 2; as c grows, W_hh's gain grows and tanh's slope falls, in every seed"
)

# %% [markdown]
# The range $[0.9\,\rho, \rho]$ at $c = 1$ is for our width, $d_{hidden} = 16$. Narrower RNNs
# (inputs of their own width, the same 20 seeds) stray further even at PyTorch's initialisation:

# %%
narrow_gain = {}
for d_hidden in (4, 8):
    X_d = torch.randn(8, 129, d_hidden, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    narrow_gain[d_hidden] = []
    for seed in seeds_20:
        torch.manual_seed(seed)
        rnn_s = nn.RNN(d_hidden, d_hidden, nonlinearity="tanh", batch_first=True).double()
        radius = torch.linalg.eigvals(rnn_s.weight_hh_l0.detach()).abs().max().item()
        narrow_gain[d_hidden].append(step_factors(rnn_s, X_d)["W_hh_part"].median().item() / radius)

# %% tags=["nbval-ignore-output"]
for d_hidden, g in narrow_gain.items():
    print(f"d_hidden = {d_hidden}: gain of W_hh / rho(W_hh) from {min(g):.2f} to {max(g):.2f} over 20 seeds")

# %%
assert all(max(g) > 1.1 for g in narrow_gain.values())
print("PASS: at d_hidden = 4 and 8 the gain of W_hh passes 1.1 x rho(W_hh) in some seed at c = 1")

# %% [markdown]
# ### 5.4 In float32, when is it exactly zero?
#
# PyTorch computes in float32 unless told otherwise (as we did with `.double()`), and float32's
# smallest positive number is $2^{-149} \approx 1.4 \times 10^{-45}$.
# Two things reach zero, at different distances. The gradient's **norm**, as computed (by PyTorch's
# CPU kernel, for vectors like these), squares each entry first, and a square below $2^{-150}$
# rounds to 0: once every entry is below
# $2^{-75} \approx 2.6 \times 10^{-23}$, the norm reads exactly 0 while the gradient is not. The
# **gradient itself** is exactly 0 only when its entries fall below about $2^{-149}$ (what is under
# half of it rounds to 0). We find both
# distances (with the largest $|\text{entry}|$ for the second), each for the median of the 8
# sequences (the 4th smallest), and predict each from the float64 run: the first $n$ at which
# float64's median largest entry crosses the same line. Sequences differ, so we also find where
# every one of the 8 gradients is exactly 0.
#
# **Predict first.** Before running the next cells, estimate the distance $n$ at which the float32
# gradient **itself** (the median sequence's) is first exactly 0, from two numbers section 5.2
# printed: the gradient at $n = 1$ and the factor it shrinks by per step. Write a whole number; the check after the
# measurement says whether you were close.

# %%
my_prediction = None  # your answer: the first n at which the float32 gradient is exactly 0, e.g. 50

# %% tags=["nbval-ignore-output"]
rnn32 = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True)
rnn32.load_state_dict(rnn64.state_dict())  # the same weights, back in float32
X32, far = X.float(), range(1, X.shape[1])  # (8, 161, d_model)
norm_zero = first_vanished(rnn32, X32, far)  # the norm, computed in float32, is exactly 0
grad_zero = first_vanished(rnn32, X32, far, ord=math.inf)  # every entry is exactly 0
predicted_norm_zero = first_vanished(rnn64, X, far, threshold=2.0**-75, ord=math.inf)
predicted_grad_zero = first_vanished(rnn64, X, far, threshold=2.0**-149, ord=math.inf)
all_zero = first_vanished(rnn32, X32, far, ord=math.inf, over="max")  # every entry of every sequence's gradient
estimate = 1 + math.log(2.0**-149 / rnn_grad[0]) / math.log(parts["factor"])  # solve g_1 * factor^(n-1) = 2^-149
print(f"float32: the norm first reads exactly 0 at n = {norm_zero} (float64 predicts {predicted_norm_zero})")
print(
    f"float32: the median gradient itself is first exactly 0 at n = {grad_zero} (float64 predicts "
    f"{predicted_grad_zero}); every sequence's is 0 from n = {all_zero}"
)
print(f"estimate from section 5.2: 1 + log(2^-149 / {rnn_grad[0]:.2f}) / log({parts['factor']:.2f}) = {estimate:.0f}")

# %% [markdown]
# The exact $n$ can move by a step between machines (the last bits of float32 arithmetic differ),
# and so can the estimate's last digit, so the claim checked is the band:

# %%
assert abs(norm_zero - predicted_norm_zero) <= 2 and abs(grad_zero - predicted_grad_zero) <= 3
assert 55 <= norm_zero <= 80 and 115 <= grad_zero <= 150 and grad_zero > norm_zero + 40
assert grad_zero <= all_zero <= grad_zero + 15
print(
    "PASS: in float32 the gradient's norm reads 0 within 2 steps of where float64's largest entry falls below "
    "2^-75 (n in [55, 80])"
)
print(
    "PASS: the median gradient itself is exactly 0 within 3 steps of where float64's falls below 2^-149 "
    "(n in [115, 150]), more than 40 steps later; every sequence's is 0 within 15 steps after that"
)
answer, (lo, hi) = check.predict_underflow.reference, check.UNDERFLOW_BAND
assert abs(rnn_grad[0] - 1) < 0.05 and abs(parts["factor"] - 0.45) < 0.01  # the two numbers the estimate uses
assert abs(estimate - answer) <= 2 and abs(predicted_grad_zero - answer) <= 1 and lo <= grad_zero <= hi
print(
    f"PASS: the estimate, float64's crossing and float32's zero all lie within [{lo}, {hi}], "
    f"the band the check below accepts around n = {answer}"
)

# %% [markdown]
# How close was your prediction?

# %%
check.predict_underflow(my_prediction)

# %% [markdown]
# ### 5.5 Attention: diluted, not vanishing
#
# Attention has no product of Jacobians: output $n$ depends on $x_0$ through one softmax-weighted
# sum over $n + 1$ positions. When the weights stay close to uniform, each near $1/(n+1)$, position
# 0's share, and its gradient, fall like $1/(n+1)$. If so, gradient $\times (n+1)$ stays roughly flat.
# Over 8 initialisations of the attention layer, with the largest weight of the last output at
# $n = 128$ as a multiple of the uniform $1/129$:


# %%
def largest_weight(attention, x):
    """Largest attention weight of the last output, times the number of positions (1 = uniform); x is (batch, seq, d)."""
    with torch.no_grad():
        weights = scaled_dot_product_attention(attention.W_q(x), attention.W_k(x), attention.W_v(x))[1]  # (b, s, s)
    return weights[:, -1].max().item() * x.shape[1]


spread, peak = {1: [], 3: []}, {1: [], 3: []}
for seed in range(8):
    torch.manual_seed(seed)
    attention_s = SelfAttention(d_model).double()
    for size in (1, 3):  # the inputs as they are, and 3 x larger
        scaled = [grad_norm_to_first(attention_s, size * X, n) * (n + 1) for n in grad_ns]
        spread[size].append((min(scaled), max(scaled)))
        peak[size].append(largest_weight(attention_s, size * X[:, :129]))
print(
    "\n".join(
        f"seed {seed}: gradient x (n+1) between {lo:.2f} and {hi:.2f} for n = 1 ... 128; "
        f"last output's largest weight {p:.1f} x uniform"
        for seed, ((lo, hi), p) in enumerate(zip(spread[1], peak[1]))
    )
)
print(f"largest max/min ratio over the 8 seeds: {max(hi / lo for lo, hi in spread[1]):.2f}")

# %%
assert all(hi / lo < 2.5 for lo, hi in spread[1]) and max(peak[1]) < 10
assert attention_grad[-1] / attention_grad[0] > 1e-2  # ours falls by less than 2 orders of magnitude
print(
    "PASS: in all 8 initialisations the last output's largest weight stays below 10 x uniform, and attention's "
    "gradient x (n+1) stays within a factor 2.5 from n = 1 to 128"
)

# %% [markdown]
# With sharper weights the share depends on the content, not on a product of $n$ Jacobians. Make
# the inputs 3 times larger: the scores grow, a few positions take most of the weight,
# and gradient $\times (n+1)$ is no longer flat:

# %% tags=["nbval-ignore-output"]
for seed, ((lo, hi), p) in enumerate(zip(spread[3], peak[3])):
    print(
        f"inputs x 3, seed {seed}: gradient x (n+1) from {lo:.1e} to {hi:.1e}; "
        f"last output's largest weight {p:.0f} x uniform"
    )

# %%
assert all(hi / lo > 20 for lo, hi in spread[3]) and min(peak[3]) > 50
print(
    "PASS: with inputs 3 x larger, in all 8 initialisations the last output's largest weight is over 50 x uniform "
    "and gradient x (n+1) varies by more than 20 x from n = 1 to 128"
)

# %% [markdown]
# Either way the gradient does not pass through a chain of $n$ steps: no path gets longer. Near
# uniform weights dilute it; sharp ones make it depend on what the inputs say.
#
# ## 6. Sequential against parallel, in time
#
# Timing the forward passes for growing $n$: the cell loop (one Python-level step per position),
# `nn.RNN` (the same loop, in C++), and one batched attention call, on one CPU thread. Timings
# vary from run to run and machine to machine, so treat this figure as an illustration; the claim
# it illustrates, sequential steps growing like $n$ against a constant, is the counted one above.

# %% tags=["nbval-ignore-output"]
rnn, attention, cell = rnn.float(), attention.float(), cell.float()
threads = torch.get_num_threads()
torch.set_num_threads(1)
time_ns = [32, 128, 512, 2048]
timings = {"RNNCell loop": [], "nn.RNN": [], "self-attention": []}
with torch.no_grad():
    for n in time_ns:
        x_n = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(5))  # (1, n, d_model)
        timings["RNNCell loop"].append(median_time(lambda: cell_states(list(x_n[0]), cell)))
        timings["nn.RNN"].append(median_time(lambda: rnn(x_n)))
        timings["self-attention"].append(median_time(lambda: attention(x_n)))
        print(f"n={n:5d}: " + "   ".join(f"{k} {v[-1] * 1e3:8.3f} ms" for k, v in timings.items()))
torch.set_num_threads(threads)

fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
styles = {
    "RNNCell loop": ("o-", COLOR["RNN"]),
    "nn.RNN": ("o--", COLOR["RNN"]),
    "self-attention": ("s-", COLOR["self-attention"]),
}
for name, ts in timings.items():
    ax.plot(time_ns, [t * 1e3 for t in ts], styles[name][0], color=styles[name][1], label=name)
ax.set(
    xscale="log",
    yscale="log",
    xlabel="sequence length n",
    ylabel="ms (median of 5)",
    title="Forward time on one CPU thread",
)
ax.set_xticks(time_ns, [str(n) for n in time_ns])
ax.xaxis.set_minor_formatter(plt.NullFormatter())  # only the chosen n are labelled
ax.legend()
plt.show()

# %% [markdown]
# By section 4's counts one attention layer does more arithmetic than the RNN at every $n$
# ($6nd^2 + 4n^2d$ against $4nd^2$), and the gap grows like $n^2$. Where attention is still the
# faster one on one CPU thread, at small $n$, that comes from making a few large calls instead of
# $n$ small dependent ones; as $n$ grows, its $n^2$ work must win. A GPU, which runs thousands of
# multiply-adds at once, can do the $n^2$ comparisons side by side, while the RNN's $n$ dependent
# steps, computed as written, cannot run side by side ("GPU loves parallel computing blocks!", the
# COMP7607 slides; this CPU-only lesson does not time a GPU). Training adds one more advantage
# (the reading notes): with teacher forcing every target position of a Transformer is a training
# example computed in the same pass, while an RNN must still step through the sequence.
#
# ## Summary
#
# - An RNN needs $n$ dependent steps before position 0 reaches position $n - 1$: its path and its
#   count of sequential calls grow linearly with $n$. One self-attention layer connects any two
#   positions in one layer and a fixed number of calls.
# - A bidirectional RNN gives every position context from both sides, but still runs $n$ steps one
#   after another and still puts $n$ cell applications between the two ends.
# - The paper's Table 1, counted: self-attention does $O(n^2 d)$ work in $O(1)$ sequential steps
#   with path 1; a recurrent layer $O(n d^2)$, $O(n)$, $n$; a convolution $O(k n d^2)$, $O(1)$, with
#   a path of $\lceil (n-1)/(k-1) \rceil$ layers, or $\lceil \log_k n \rceil$ when dilated. Counted
#   exactly, one attention layer does more arithmetic than an RNN layer at every $n$; the paper's
#   "faster ... when $n$ is smaller than $d$" compares only its two $n \times n$ products.
# - The gradient through a vanilla tanh RNN shrinks by a fixed factor per step: the slope of tanh
#   times the gain of $W_{hh}$, which is close to its spectral radius while tanh's slope is about the
#   same in every unit (between $0.9\,\rho$ and $\rho$ at PyTorch's initialisation with
#   $d_{hidden} = 16$, 20 seeds; at $d_{hidden} = 4$ or 8 it passes $1.1\,\rho$ in some seeds) and
#   strays from it once the states saturate. From $d_{hidden} = 16$ up, PyTorch's default
#   initialisation usually puts $\|W_{hh}\|_2$ *above* 1, but $\rho(W_{hh})$ below 1 (at every width
#   shown), so the gradient still vanishes; with $W_{hh}$ scaled up it grows exactly where that
#   product passes 1, in most seeds but not all at $c = 4$ or 6.
# - Through attention no path gets longer: with near-uniform weights the gradient is only shared
#   among the $n+1$ positions; with sharp weights it depends on the content.
#
# ## Exercises
#
# Two exercises apply the lesson's counting to layers it did not count, and one measures the
# gradient of section 5 yourself; the prediction in section 5.4 was a fourth. Replace
# `raise NotImplementedError` with your code and run the cell: the check prints PASS or says what
# is wrong. Stuck? `check.stacked_rnn.hint()` prints a hint and `check.stacked_rnn.solution()` a
# solution (likewise for the others).
#
# **Exercise 1 (a stacked RNN).** `nn.RNN(..., num_layers=L)` stacks $L$ RNN layers: layer 1 reads
# the inputs, layer $l$ reads the states of layer $l - 1$, and the output is the top layer's states.
# Count it the way sections 2 and 4 count a layer. Write `stacked_rnn(n, num_layers)` returning three
# numbers for a sequence of length $n$: the cell applications in one forward pass; the sequential
# steps, the longest chain of cell applications each needing the previous one's result (if every
# cell ran as soon as its inputs were ready, the number of rounds); and the path length, the fewest
# cell applications on a route from $x_0$ to the top layer's output at position $n - 1$.


# %%
def stacked_rnn(n, num_layers):
    """(cell runs, sequential steps, path length) of a num_layers-deep RNN over n positions."""
    raise NotImplementedError  # your code here


check.stacked_rnn(stacked_rnn)

# %% [markdown]
# **Exercise 2 (other dilations).** Section 4 stacked causal convolutions of width $k$ whose
# dilation grows by a factor $k$ per layer ($1, k, k^2, \dots$), and contiguous ones (dilation 1
# everywhere). Let it grow by any whole factor `growth` from 1 to `kernel` instead: layer
# $l = 0, 1, 2, \dots$ has width `kernel` and dilation `growth ** l`, so its output $t$ reads inputs
# $t, t - \text{dilation}, \dots$. Write
# `dilated_layers(n, kernel, growth)`: the fewest such layers before output $n - 1$ reads input 0
# (`growth = 1` and `growth = kernel` must give section 4's two rows).


# %%
def dilated_layers(n, kernel, growth):
    """The fewest causal layers (dilation growth**l in layer l, 1 <= growth <= kernel) connecting output n - 1 to input 0."""
    raise NotImplementedError  # your code here


check.dilated_layers(dilated_layers)

# %% [markdown]
# **Exercise 3 (the gradient that reaches position 0).** Given an `nn.RNN` and one unbatched
# sequence `x` (seq, input_size), return (as a float) the norm of the gradient of the loss
# $L = \sum_j (\text{output at the last position})_j$ with respect to the **first** input $x_0$.
# Try it on longer and longer sequences afterwards.


# %%
def grad_to_first(rnn, x):
    """|| d L / d x_0 || for L the sum of the last position's output."""
    raise NotImplementedError  # your code here


check.grad_to_first(grad_to_first)

# %% [markdown]
# ## Sources
#
# - Vaswani et al., 2017, "Attention Is All You Need", NeurIPS: section 4 ("Why Self-Attention")
#   and Table 1; for dilated convolutions it cites N. Kalchbrenner et al., 2017, "Neural Machine
#   Translation in Linear Time" (ByteNet).
# - Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong): the O(N) steps before two
#   words interact, the vanishing gradient, the bidirectional RNN, convolution-style models, "GPU
#   loves parallel computing blocks!".
# - Slide deck "Transformers / Attention is all you need" (the YOUR CAT IS A LOVELY CAT worked
#   example): the problems with RNNs.
# - Reading notes on the paper (June 2020): "constant length between any two positions"; every
#   step a training sample.
# - S. Geman, 1980, "A Limit Theorem for the Norm of Random Matrices", The Annals of Probability 8(2).
# - S. Geman, 1986, "The Spectral Radius of Large Random Matrices", The Annals of Probability 14(4).
# - T. Tao and V. Vu, 2010, "Random matrices: universality of ESDs and the circular law", The Annals of
#   Probability 38(5).
