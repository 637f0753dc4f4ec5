# %% [markdown]
# # 00 · Why attention
#
# Before the Transformer, most sequence models were recurrent (the paper's section 2 names convolutional
# ones too: the Extended Neural GPU, ByteNet and ConvS2S): a recurrent neural network (RNN) reads a sentence one word at a time and
# carries everything it knows in a hidden state. The YOUR CAT IS A LOVELY CAT slide deck lists "Problems
# with RNN (among others)": "Slow computation for long sequences", "Vanishing
# or exploding gradients", "Difficulty in accessing information from long time ago". The COMP7607 slides name the
# cause: "In general, the longer the path, the smaller the gradient signal." The reading notes sum up
# the alternative: attention "has constant length between any two positions"; Liang Hong's slides,
# bluntly: "RNN is unnecessary". On small models, this lesson counts the sequential steps behind the
# first problem (section 2) and measures the gradient behind the other two (vanishing here, exploding in
# Going further C).
#
# **Goals.** Say why an RNN encoder–decoder squeezes a sentence into one vector and how attention
# removes that bottleneck; count the steps between two positions in an RNN and in self-attention;
# rebuild the paper's Table 1 by counting; measure the gradient that reaches position 0 through each.
#
# **Prerequisites.** Python and a little PyTorch (`nn.Linear`, `backward()`).

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
import copy
import math
import statistics

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
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
COLOR = {
    "RNN": "C0",
    "self-attention": "C1",
    "convolution": "C2",
    "dilated convolution": "C3",
    "restricted self-attention": "C4",
}  # in every figure

# %% [markdown]
# ## 1. An RNN, and the one vector it hands on
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
print("✓ the hand-written recurrence equals nn.RNN; output shape", tuple(out.shape))

# %% [markdown]
# Each step as a separate operation: the same weights in an `nn.RNNCell` (one step), run in a loop.


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
print("✓ a loop over nn.RNNCell equals nn.RNN")

# %% [markdown]
# **The bottleneck.** For translation, an RNN *encoder* reads the source sentence and a second RNN,
# the *decoder*, writes the translation. In the first such models the decoder received one vector:
# the encoder's final state $h_{n-1}$ (Cho et al., 2014: a transform of it), of $d_{hidden}$ numbers
# whatever the sentence's length.
# Bahdanau, Cho and Bengio (2015) "conjecture that the use of a fixed-length vector is a bottleneck"
# and remove it: at every output step the decoder, in state $s$ (their $s_{i-1}$), scores each encoder state $h_j$,
# $e_j = v^\top \tanh(W_s s + W_h h_j)$ (**additive attention**), and reads the **context**
# $c = \sum_j \alpha_j h_j$ with $\alpha = \mathrm{softmax}(e)$ (ours differs: a plain tanh cell where they,
# like Cho et al., use gated units; `W_s` adds a bias; their encoder is bidirectional, as in section 3):


# %%
def additive_attention(s, H, W_s, W_h, v):
    """Bahdanau et al.'s context for decoder state s (d,) over encoder states H (n, d): (context (d,), weights (n,))."""
    scores = torch.tanh(W_s(s) + W_h(H)) @ v  # (n,) e_j = v . tanh(W_s s + W_h h_j)
    weights = torch.softmax(scores, dim=0)  # (n,)
    return weights @ H, weights  # (d,), (n,)


# %% [markdown]
# Untrained weights cannot show what a fixed vector holds, only how much the first word still
# moves it. We compare the two contexts on our RNN as encoder
# (5 to 80 words, 5 seeds): their size, and the gradient that reaches the **first** word $x_0$ from
# each, $\|\partial L / \partial x_0\|$ with $L$ the sum of the context's entries (attention's multiplied by $n$).
#
# **Predict first.** Through the final state, the gradient falls steeply with the length. Through
# attention, what is $\|\partial L / \partial x_0\| \times n$ at $n = 80$ divided by
# its value at $n = 5$?

# %%
my_guess_attention_ratio = None  # your answer: a ratio, e.g. 0.001


# %%
def first_word_gradients(encoder, attend, words):
    """||d L / d x_0|| for L = sum of h_(n-1) and for L = sum of c (what reaches the first word through each context),
    the weights, the sizes."""
    x_n = words.clone().requires_grad_(True)  # (n, d_model)
    H = encoder(x_n[None])[0][0]  # (n, d_hidden) every encoder state
    context, weights = attend(H)  # (d_hidden,), (n,)
    (through_last,) = torch.autograd.grad(H[-1].sum(), x_n, retain_graph=True)  # (n, d_model)
    (through_attention,) = torch.autograd.grad(context.sum(), x_n)  # (n, d_model)
    sizes = {H[-1].numel(), context.numel()}
    return through_last[0].norm().item(), through_attention[0].norm().item(), weights, sizes


# %% tags=["nbval-ignore-output"]
lengths = [5, 10, 20, 40, 80]
words = torch.randn(max(lengths), d_model, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
fixed_grad, attention_grad_x_n, sizes, peaks = [], [], set(), []
for seed in range(5):
    torch.manual_seed(seed)
    encoder = nn.RNN(d_model, d_model, nonlinearity="tanh", batch_first=True).double()
    W_s, W_h = nn.Linear(d_model, d_model).double(), nn.Linear(d_model, d_model, bias=False).double()
    v = torch.randn(d_model, dtype=torch.float64) / math.sqrt(d_model)  # (d_model,)
    s = torch.randn(d_model, dtype=torch.float64)  # (d_model,) a decoder state
    fixed_grad.append([])
    attention_grad_x_n.append([])
    for n in lengths:
        through_last, through_attention, weights, both_sizes = first_word_gradients(
            encoder, lambda H: additive_attention(s, H, W_s, W_h, v), words[:n]
        )
        sizes |= both_sizes
        peaks.append(weights.max().item() * n)  # 1 = uniform weights
        fixed_grad[-1].append(through_last)
        attention_grad_x_n[-1].append(through_attention * n)  # times n: undoes the 1/n share
fixed_fall = [g[-1] / g[0] for g in fixed_grad]  # n = 80 against n = 5
attention_spread = [max(g) / min(g) for g in attention_grad_x_n]
attention_ratio = [g[-1] / g[0] for g in attention_grad_x_n]  # n = 80 against n = 5
print(f"size of either context, at every n: {sizes} numbers")
print(
    f"through the final state, ||d L / d x_0|| (L = sum of h_(n-1)) at n = 80 over n = 5: from {min(fixed_fall):.0e} to "
    f"{max(fixed_fall):.0e} (5 seeds)"
)
print(
    f"through attention, ||d L / d x_0|| x n (L = sum of c) at n = 80 over n = 5: from {min(attention_ratio):.2f} to "
    f"{max(attention_ratio):.2f}; between any two lengths at most a factor {max(attention_spread):.2f}"
)
print(f"largest attention weight: {max(peaks):.1f} x uniform")

# %% tags=["hide-input"]
assert all(fall < 1e-19 for fall in fixed_fall)  # our tanh RNN: about 20 orders of magnitude lost, or more
assert all(spread < 2 for spread in attention_spread) and max(peaks) < 2
lo, hi = check.ATTENTION_FLAT_BAND  # the band the prediction accepts, around its reference 1
assert all(lo < ratio < hi for ratio in attention_ratio)  # in every seed
print("✓ in 5 of 5 seeds the gradient reaching the first word through the final state vanishes with length")
print("✓ through attention it behaves like a 1/n share among the n words: gradient x n stays nearly flat")

# %%
check.predict_attention_flat(my_guess_attention_ratio)


# %%
def log_axes(ax, ns, ylabel, title):
    """Log-log axes over the sequence lengths ns, with only those n labelled."""
    ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel=ylabel, title=title)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())


fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
for seed, (last, attended) in enumerate(zip(fixed_grad, attention_grad_x_n)):
    ax.plot(lengths, last, "o-", color=COLOR["RNN"], label="through the final state" if seed == 0 else None)
    ax.plot(
        lengths, attended, "s-", color=COLOR["self-attention"], label="through attention, x n" if seed == 0 else None
    )
log_axes(
    ax,
    lengths,
    "gradient reaching x_0 (log scale)",
    "Gradient reaching the first word, 5 seeds:\nit vanishes through the final state, stays flat through attention (x n)",
)
ax.legend()
plt.show()

# %% [markdown]
# Both contexts hold $d_{hidden}$ numbers, but attention's is recomputed at every decoder step from all
# the encoder states. The encoder still runs $n$ steps one after another; the Transformer
# drops the recurrence: **self-attention**.
#
# ## 2. Self-attention: one step between any two positions
#
# **The self-attention layer.** Every position $t$ makes a query $q_t = x_t W_q + b_q$, a key
# $k_t = x_t W_k + b_k$ and a value $v_t = x_t W_v + b_v$ (`nn.Linear` adds the biases $b$; the
# paper's projections have none); output $t$ is a weighted average of **all** values,
# with weights $\mathrm{softmax}_s(q_t \cdot k_s / \sqrt{d_k})$. Naively, one query at a time, then
# batched (`utils.attention.scaled_dot_product_attention`).


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


def one_query_at_a_time(x_one):
    """The same layer on x_one (seq, d_model), looping over the queries: (seq, d_model)."""
    q, k, v = attention.W_q(x_one), attention.W_k(x_one), attention.W_v(x_one)  # (seq, d_model) each
    return torch.stack([torch.softmax(q[t] @ k.T / math.sqrt(d_model), dim=0) @ v for t in range(x_one.shape[0])])


with torch.no_grad():
    assert torch.allclose(one_query_at_a_time(x[0]), attention(x)[0], atol=1e-6)
print("✓ the one-query-at-a-time loop equals the batched self-attention layer")

# %% [markdown]
# **Path length.** How many steps lie between input $x_0$ and the output at position $n - 1$?
# `path_length` counts the fewest cell applications (RNN) or layers (attention)
# on any route from that output back to $x_0$ in the autograd graph. The graph records tensors, not
# positions, so for one layer it is 1 by construction; the evidence is a nonzero gradient.


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
print(f"from x_0 to the last output, n = 2 to 64: RNN {rnn_path} cell applications, attention {attention_path} layers")

# %% tags=["hide-input"]
assert rnn_path == ns  # x_0 passes through every one of the n cell applications
assert attention_path == [1] * len(ns) and all(reaches["attention"])  # one layer, and x_0 really reaches it
assert path["position-wise"] == [1] * len(ns) and not any(reaches["position-wise"])  # the graph alone cannot tell
print("✓ from x_0 to the last output: n cell applications for the RNN, one attention layer (1 by construction)")
print("✓ attention's output n-1 depends on x_0; a position-wise layer's does not")

# %% [markdown]
# **Sequential operations.** The paper measures parallel work by "the minimum number of sequential
# operations required" (section 4). We count PyTorch calls (`count_calls`) and cell runs (a forward
# hook). In our cell loop each cell call needs the previous one's output. The count is a proxy both
# ways: `nn.RNN` hides the same loop inside one call (on the CPU it projects all inputs in one product
# first; only the $W_{hh}$ steps wait), and the one-query-at-a-time loop makes more calls as $n$ grows
# though no query waits for another.
#
# **Predict first.** Attention computes $64^2$ scores at $n = 64$ and $2^2$ at $n = 2$. How many
# times as many PyTorch calls does it make at $n = 64$ as at $n = 2$?

# %%
my_guess_attention_calls = None  # your answer: a ratio, e.g. 100

# %%
cell_runs = []
hook = cell.register_forward_hook(lambda module, inputs, output: cell_runs.append(1))
rnn_runs, rnn_calls, attention_calls, fused_calls, loop_calls = [], [], [], [], []
for n in ns:
    xs = [x_t.detach() for x_t in leaves(n)]
    cell_runs.clear()
    rnn_calls.append(count_calls(cell_states, xs, cell))
    rnn_runs.append(len(cell_runs))
    attention_calls.append(count_calls(attention, torch.stack(xs)[None]))  # (1, n, d_model) input
    fused_calls.append(count_calls(rnn, torch.stack(xs)[None]))  # nn.RNN: its n steps run inside one call
    loop_calls.append(count_calls(one_query_at_a_time, torch.stack(xs)))  # n independent queries, one by one
hook.remove()
calls_per_step = (rnn_calls[-1] - rnn_calls[0]) // (ns[-1] - ns[0])
print(
    f"PyTorch calls at n = 2 and 64: cell loop {rnn_calls[0]} and {rnn_calls[-1]}, attention {attention_calls[0]} "
    f"and {attention_calls[-1]}, nn.RNN {fused_calls[0]} and {fused_calls[-1]}, one-query loop {loop_calls[0]} "
    f"and {loop_calls[-1]}"
)

# %% tags=["hide-input"]
assert rnn_runs == ns  # one cell run per position, each waiting for the previous one
assert all(c == rnn_calls[0] + calls_per_step * (n - ns[0]) for c, n in zip(rnn_calls, ns))
assert len(set(attention_calls)) == 1  # a fixed number of calls, whatever n
assert attention_calls[-1] / attention_calls[0] == check.predict_attention_calls.reference
assert len(set(fused_calls)) == 1  # the fused layer's loop is invisible to this count
print(
    f"✓ the cell loop makes {calls_per_step} more calls per position; attention makes {attention_calls[0]} calls at every n"
)
print(f"✓ nn.RNN makes {fused_calls[0]} calls at every n: one call can hide n dependent steps")
assert all(a < b for a, b in zip(loop_calls, loop_calls[1:]))
print(
    f"✓ the one-query-at-a-time loop's calls grow with n ({loop_calls[0]} to {loop_calls[-1]}), "
    "though its queries do not depend on each other"
)

# %%
check.predict_attention_calls(my_guess_attention_calls)


# %%
fig, (ax_path, ax_ops) = plt.subplots(1, 2, figsize=(10, 3.5), layout="constrained")
ax_path.plot(ns, rnn_path, "o-", color=COLOR["RNN"], label="RNN (cell applications)")
ax_path.plot(ns, attention_path, "s-", color=COLOR["self-attention"], label="self-attention (layers)")
log_axes(ax_path, ns, "steps from x_0 to the last output", "Path from x_0 to output n-1: grows with n only for the RNN")
ax_ops.plot(ns, rnn_calls, "o-", color=COLOR["RNN"], label="RNN (cell loop)")
ax_ops.plot(ns, attention_calls, "s-", color=COLOR["self-attention"], label="self-attention")
ax_ops.plot(ns, fused_calls, "o--", color=COLOR["RNN"], label="nn.RNN (its loop inside one call)")
log_axes(ax_ops, ns, "PyTorch calls per forward pass", "Operations, one call after another")
for ax in (ax_path, ax_ops):
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
print("✓ two cell loops, one each way, equal nn.RNN(bidirectional=True); output shape", tuple(out_bi.shape))

# %% [markdown]
# What it fixes: output 0 now depends on the **last** input (the one-way RNN has no route). Does it
# also shorten the route between the two ends?
#
# **Predict first.** At $n = 64$, how many cell applications lie between $x_0$ and the
# bidirectional RNN's output at position 63?

# %%
my_guess_bi_path = None  # your answer: a whole number, e.g. 10

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
print(f"bidirectional RNN, n = 2 to 64: cell applications from x_0 to output n-1 {bi_last_from_first}")

# %% tags=["hide-input"]
assert uni_first_from_last == [None] * len(ns)  # no route: the one-way RNN never sees the future
assert bi_first_from_last == ns and bi_last_from_first == ns  # both directions: n cell applications
assert bi_runs == [2 * n for n in ns]
assert bi_last_from_first[ns.index(64)] == check.predict_bi_path.reference
print("✓ the one-way RNN has no route from x_(n-1) to output 0, at every n")
print("✓ the bidirectional RNN reaches both ways, but through n cell applications, with 2n cell runs")

# %%
check.predict_bi_path(my_guess_bi_path)

# %% [markdown]
# And the gradient across those $n$ steps still vanishes: $\|\partial L_n / \partial x_0\|$ with $L_n$ the sum
# of output $n$, output 64's against output 1's, for 10 initialisations:

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

# %% tags=["hide-input"]
assert all(fall < 1e-10 for fall in bi_falls)
print("✓ in 10 of 10 seeds the bidirectional RNN's gradient across 64 steps falls by over 10 orders of magnitude")

# %% [markdown]
# ## 4. The paper's Table 1, counted
#
# Table 1 of the paper (section 4, "Why Self-Attention") compares four kinds of layer by three costs, for a sequence of length $n$,
# representation dimension $d$ and kernel size $k$ (as the paper prints it):
#
# | Layer Type | Complexity per Layer | Sequential Operations | Maximum Path Length |
# |---|---|---|---|
# | Self-Attention | $O(n^2 \cdot d)$ | $O(1)$ | $O(1)$ |
# | Recurrent | $O(n \cdot d^2)$ | $O(n)$ | $O(n)$ |
# | Convolutional | $O(k \cdot n \cdot d^2)$ | $O(1)$ | $O(\log_k(n))$ |
# | Self-Attention (restricted) | $O(r \cdot n \cdot d)$ | $O(1)$ | $O(n/r)$ |
#
# A convolution of width $k < n$ connects each output to $k$ inputs: linking
# the two ends takes $O(n/k)$ layers, or $O(\log_k(n))$ **dilated** ones, whose layer $l$ skips
# $k^l - 1$ positions between its inputs. That is the idealisation behind $O(\log_k(n))$: ByteNet
# (Kalchbrenner et al., 2017) uses $k = 3$ with dilations 1, 2, 4, 8, 16, then 1 again (**exercise 2**).
# Ours are causal, like the RNN.
# `layers_to_connect` counts the path in **layers**: it stacks layers until output $n - 1$'s
# gradient with respect to $x_0$ is not zero. Complexity: the FLOPs of the products
# (`torch.utils.flop_counter`, 2 per multiply-add). Sequential operations: PyTorch calls, as in
# section 2.

# %% [markdown]
# The fourth row, **restricted** self-attention, lets each position attend only to "a neighborhood of
# size r in the input sequence centered around the respective output position". The paper only
# proposes it, for "future work"; the Transformer itself uses full attention. Ours is causal:
# output $t$ attends to inputs $t - r + 1, \dots, t$ (exercise 4 counts the centred one).
# Gathering each window's keys and values with `unfold`, it computes $n \times r$ scores instead of
# $n \times n$, and must equal full attention masked to the same band:


# %%
class RestrictedSelfAttention(SelfAttention):
    """Self-attention in which output t attends only to inputs t - r + 1, ..., t (a window of r positions)."""

    def __init__(self, d_model, r):
        super().__init__(d_model)
        self.r = r

    def forward(self, x):  # x: (batch, n, d_model)
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (batch, n, d_k) each
        n, d_k = q.shape[-2:]
        k_win = F.pad(k, (0, 0, self.r - 1, 0)).unfold(1, self.r, 1)  # (batch, n, d_k, r) keys t-r+1 .. t
        v_win = F.pad(v, (0, 0, self.r - 1, 0)).unfold(1, self.r, 1)  # (batch, n, d_v, r)
        scores = (q[..., None, :] @ k_win).squeeze(-2) / math.sqrt(d_k)  # (batch, n, r)
        before_start = torch.arange(n)[:, None] - self.r + 1 + torch.arange(self.r) < 0  # (n, r) padding
        weights = torch.softmax(scores.masked_fill(before_start, -math.inf), dim=-1)  # (batch, n, r)
        return (v_win @ weights[..., None]).squeeze(-1)  # (batch, n, d_v)


x_10 = torch.randn(2, 10, d_model, generator=torch.Generator().manual_seed(8))  # (batch, 10, d_model)
query, key = torch.arange(10)[:, None], torch.arange(10)  # (10, 1), (10,) positions
for r in (3, 4, 64):
    torch.manual_seed(0)
    restricted = RestrictedSelfAttention(d_model, r)
    band = (key <= query) & (key > query - r)  # (10, 10) True where query t may see key s: t - r < s <= t
    with torch.no_grad():
        full = scaled_dot_product_attention(restricted.W_q(x_10), restricted.W_k(x_10), restricted.W_v(x_10), mask=band)
        assert torch.allclose(restricted(x_10), full[0], atol=1e-6)  # (2, 10, d_model)
print("✓ for r = 3, 4 and 64 (n = 10), restricted attention equals full attention under the band mask")

# %% [markdown]
# **Predict first.** With a window of $r = 4$, how many stacked restricted-attention layers does output
# 63 need before it depends on input 0 ($n = 64$)? The paper writes $O(n/r)$.

# %%
my_guess_restricted_path = None  # your answer: a whole number of layers, e.g. 10

# %%
kernel, window = 3, 4  # k and r
layer_kinds = {  # make_layer(depth): a new layer for each depth of a stack; layer `depth` dilates by kernel**depth
    "self-attention": lambda depth: SelfAttention(d_model),
    "convolution": lambda depth: CausalConv(d_model, kernel),
    "dilated convolution": lambda depth: CausalConv(d_model, kernel, dilation=kernel**depth),
    "restricted self-attention": lambda depth: RestrictedSelfAttention(d_model, r=window),
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
print(f"at n = {ns[-1]}:               FLOPs   calls   path")
for kind, c in costs.items():
    print(f"{kind:25s} {c['flops'][-1]:8d} {c['calls'][-1]:7d} {c['path'][-1]:6d}")

# %% [markdown]
# Each count against its exact formula ($d = 16$, $k = 3$, $r = 4$):
#
# - **FLOPs.** Attention: $3 \cdot 2nd^2$ for the projections plus $2 \cdot 2n^2d$ for its two
#   $n \times n$ products (the paper's $O(n^2 \cdot d)$ counts only these); restricted attention: the
#   projections plus $2 \cdot 2rnd$; the RNN: $2 \cdot 2nd^2$ (two $d \times d$ matrices); a convolution:
#   $2knd^2$.
# - **Paths.** RNN: $n$ steps. Attention: 1 layer. Convolution: $\lceil (n-1)/(k-1) \rceil$ layers, each
#   reaching $k - 1$ positions further back. Dilated: the fewest $L$ with $k^L \ge n$. Restricted:
#   $\lceil (n-1)/(r-1) \rceil$, that is $O(n/r)$.
#
# In the paper's words: "The shorter these paths between any combination of
# positions in the input and output sequences, the easier it is to learn long-range dependencies". It
# cites Hochreiter et al.'s "Gradient flow in recurrent nets"; section 5 measures that gradient flow.


# %% tags=["hide-input"]
def fewest_dilated_layers(n, k):
    """Smallest L with k**L >= n: L dilated layers of width k see k**L positions."""
    L = 1
    while k**L < n:
        L += 1
    return L


d = d_model
assert costs["self-attention"]["flops"] == [3 * 2 * n * d * d + 2 * 2 * n * n * d for n in ns]
assert costs["RNN"]["flops"] == [2 * 2 * n * d * d for n in ns]
assert costs["restricted self-attention"]["flops"] == [3 * 2 * n * d * d + 2 * 2 * window * n * d for n in ns]
assert costs["convolution"]["flops"] == costs["dilated convolution"]["flops"] == [2 * kernel * n * d * d for n in ns]
print(
    "✓ FLOPs per layer, exactly at every n: RNN 4nd^2; self-attention 6nd^2 + 4n^2d; "
    "convolution and dilated convolution 2knd^2; restricted self-attention 6nd^2 + 4rnd"
)
assert all(c == costs["RNN"]["calls"][0] + calls_per_step * (n - ns[0]) for c, n in zip(costs["RNN"]["calls"], ns))
for kind in layer_kinds:
    assert len(set(costs[kind]["calls"])) == 1, kind
print("✓ calls grow with n for the RNN's cell loop only; a fixed number of calls for each other layer")
assert costs["RNN"]["path"] == ns
assert costs["self-attention"]["path"] == [1] * len(ns)
assert costs["convolution"]["path"] == [math.ceil((n - 1) / (kernel - 1)) for n in ns]
assert costs["dilated convolution"]["path"] == [fewest_dilated_layers(n, kernel) for n in ns]
assert costs["restricted self-attention"]["path"] == [math.ceil((n - 1) / (window - 1)) for n in ns]
assert costs["restricted self-attention"]["path"][ns.index(64)] == check.predict_restricted_path.reference
print(
    "✓ path length, exactly at every n: RNN n cell steps; self-attention 1 layer; convolution ceil((n-1)/(k-1)) "
    "layers; dilated convolution ceil(log_k n); restricted self-attention ceil((n-1)/(r-1))"
)

# %%
check.predict_restricted_path(my_guess_restricted_path)

# %% [markdown]
# So one self-attention layer does **more** arithmetic than our two-matrix RNN at every $n$. The
# paper's claim, "self-attention layers are faster than recurrent layers when the sequence length $n$
# is smaller than the representation dimensionality $d$, which is most often the case with sentence
# representations used by state-of-the-art models in machine translations", holds against our RNN
# for attention's $n \times n$ products alone:

# %% tags=["hide-input"]
extra = [a - r for a, r in zip(costs["self-attention"]["flops"], costs["RNN"]["flops"])]
assert all(e > 0 for e in extra) and all(a < b for a, b in zip(extra, extra[1:]))
print("✓ at every n one self-attention layer does more FLOPs than the RNN layer, and the gap widens with n")
products_cheaper = []
for n in range(1, 2 * d + 1):
    x_n = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(3))  # (1, n, d_model)
    products = count_flops(scaled_dot_product_attention, x_n, x_n, x_n)  # the two n x n products only
    products_cheaper.append(products < count_flops(rnn_layer, x_n))
assert products_cheaper == [n < d for n in range(1, 2 * d + 1)]
print(f"✓ attention's n x n products alone cost fewer FLOPs than the RNN layer exactly when n < d = {d}")

# %% [markdown]
# The columns as figures: convolutions and restricted attention buy parallel work with depth.

# %%
fig, (ax_path, ax_flops) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
markers = {
    "RNN": "o-",
    "self-attention": "s-",
    "convolution": "^--",
    "dilated convolution": "v:",
    "restricted self-attention": "d-.",
}
for kind, c in costs.items():
    ax_path.plot(ns, c["path"], markers[kind], color=COLOR[kind], label=kind)
    ax_flops.plot(ns, c["flops"], markers[kind], color=COLOR[kind], label=kind)
log_axes(
    ax_path,
    ns,
    "steps (RNN) or layers",
    "Path from x_0 to output n-1\n(the longest, for causal layers):\nonly full attention stays at 1",
)
log_axes(
    ax_flops,
    ns,
    "FLOPs of one layer",
    "Complexity per layer:\nattention's grows fastest, towards n^2\n(the two convolutions coincide)",
)
for ax in (ax_path, ax_flops):
    ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Recurrence "precludes parallelization within training examples", and at long lengths "memory
# constraints limit batching across examples"; factorization tricks and conditional computation cut
# its cost, but "The fundamental constraint of sequential computation, however, remains" (the paper,
# section 1). A GPU can run attention's $n^2$ comparisons side by side, not the RNN's $n$ dependent steps ("GPU loves parallel computing blocks!", the COMP7607 slides; one
# CPU thread in **Going further G**).
# The payoff: "a new state of the art in translation quality after being trained for as little as
# twelve hours on eight P100 GPUs" (section 1).


# %% [markdown]
# ## 5. Vanishing gradients
#
# Through the RNN the gradient of a loss at position $n$ with respect to $x_0$ is a product of $n$
# Jacobians; through attention, one softmax-weighted sum. We measure $\|\partial L_n / \partial x_0\|$
# with $L_n$ the sum of output $n$, in float64, median over 8 random sequences (`grad_norm_to_first`),
# at distances $n$ from 1 to 128.
#
# **Predict first.** From $n = 1$ to $n = 128$, by how many orders of magnitude does the RNN's
# gradient fall? (Section 1 printed the gradient through our tanh RNN's final state at $n = 80$ over
# its value at $n = 5$, 75 steps earlier: $4 \times 10^{-29}$ to $10^{-21}$ over 5 seeds.)

# %%
my_guess_orders = None  # your answer: a number of orders of magnitude, e.g. 5

# %%
rnn64, attention64 = copy.deepcopy(rnn).double(), copy.deepcopy(attention).double()  # the same weights, in float64
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
print(f"RNN: ||d L_n / d x_0|| = {rnn_grad[0]:.2f} at n = 1, {rnn_grad[-1]:.1e} at n = 128")
print(f"a fall of {orders:.1f} orders of magnitude, by x{measured_rate:.2f} per step")
print(f"attention: {attention_grad[0]:.2f} at n = 1, {attention_grad[-1]:.3f} at n = 128")

# %% tags=["hide-input"]
assert rnn_grad[-1] / rnn_grad[0] < 1e-40  # falls by more than 40 orders of magnitude
assert all(later < earlier for earlier, later in zip(rnn_grad, rnn_grad[1:]))
assert round(orders) == check.predict_orders_lost.reference
print(
    "✓ the RNN's gradient to x_0 is smaller at each distance measured than at the one before, and more than 40 orders of magnitude smaller at n = 128"
)

# %%
check.predict_orders_lost(my_guess_orders)


# %%
def plot_gradients(curves, title):
    """||d L_n / d x_0|| against the distance n on a log scale; curves maps a label to (values, style, colour)."""
    fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    for label, (values, style, colour) in curves.items():
        ax.plot(grad_ns, values, style, color=colour, label=label)
    ax.set(yscale="log", xlabel="distance n", ylabel="|| d L_n / d x_0 || (log scale)", title=title)
    ax.legend(fontsize=8)
    plt.show()


plot_gradients(
    {
        "vanilla RNN (tanh)": (rnn_grad, "o-", COLOR["RNN"]),
        "one self-attention layer": (attention_grad, "s-", COLOR["self-attention"]),
    },
    "Gradient reaching position 0: a straight fall for the RNN",
)

# %% [markdown]
# A nearly straight line on a log scale: a constant factor per step on average.
#
# **Attention: diluted, not vanishing.**
# Output $n$ depends on $x_0$ through one softmax-weighted sum over $n + 1$ positions. When the
# weights stay within a few times $1/(n+1)$, position 0's share, and its gradient, fall like
# $1/(n+1)$: gradient $\times (n+1)$ changes by a small factor, not orders of magnitude. Over 8
# initialisations:


# %%
def last_output_weights(attention, x):
    """The last output's attention weights over every position, one row per sequence; x is (batch, seq, d)."""
    with torch.no_grad():
        weights = scaled_dot_product_attention(attention.W_q(x), attention.W_k(x), attention.W_v(x))[1]  # (b, s, s)
    return weights[:, -1]  # (batch, seq)


def attention_spread_and_weights(size):
    """Over 8 seeds: (min, max) of gradient x (n+1), and the last output's weights, with the inputs times size."""
    spread, weights = [], []
    for seed in range(8):
        torch.manual_seed(seed)
        attention_s = SelfAttention(d_model).double()
        scaled = [grad_norm_to_first(attention_s, size * X, n) * (n + 1) for n in grad_ns]
        spread.append((min(scaled), max(scaled)))
        weights.append(last_output_weights(attention_s, size * X[:, :129]))  # (8, 129): 8 sequences
    return spread, weights


spread_1, weights_1 = attention_spread_and_weights(1)
peak = [w.max().item() * 129 for w in weights_1]  # 1 = uniform

# %% tags=["nbval-ignore-output"]
print(f"8 seeds: gradient x (n+1) from {min(lo for lo, _ in spread_1):.2f} to {max(hi for _, hi in spread_1):.2f}")
print(f"largest max/min ratio within one seed: {max(hi / lo for lo, hi in spread_1):.2f}")
print(f"last output's largest weight: at most {max(peak):.1f} x uniform")

# %% tags=["hide-input"]
assert all(hi / lo < 2.5 for lo, hi in spread_1) and max(peak) < 10
assert attention_grad[-1] / attention_grad[0] > 1e-2  # ours falls by less than 2 orders of magnitude
print(
    "✓ in 8 of 8 initialisations no weight takes over and attention's gradient x (n+1) changes by a small factor, not orders of magnitude"
)

# %% [markdown]
# There is no chain of $n$ steps: spread-out weights dilute the gradient. The paper names the price
# of this averaging (section 2): self-attention relates two positions in "a constant number of
# operations, albeit at the cost of reduced effective resolution due to averaging attention-weighted
# positions, an effect we counteract with Multi-Head Attention" (lesson 05).
#
# > [Going further](#Going-further) A–E: the factor per step, exploding gradients, float32's exact
# > zero, sharper attention weights.
#
# ## Summary
#
# - An RNN encoder hands its decoder one vector; in our untrained RNNs the first word's gradient
#   through it vanishes with length. Bahdanau et al.'s attention rereads all the encoder states at
#   every step.
# - Between positions 0 and $n - 1$ an RNN puts $n$ dependent steps, bidirectional or not;
#   self-attention, one layer and a fixed number of calls.
# - Table 1, counted: every row's FLOPs and path length match an exact formula at every $n$
#   measured; only the RNN cell loop's calls grow with $n$.
# - Through our tanh RNN the gradient shrinks by a roughly constant factor per step: over 40 orders
#   of magnitude in 128 steps at seed 0, over 30 at each of twenty seeds; through attention with
#   spread-out weights it is only shared among the positions.
#
# ## Exercises
#
# Replace `raise NotImplementedError` and run the cell. Stuck? `check.stacked_rnn.hint()`
# and `check.stacked_rnn.solution()` (likewise for the others).
#
# **Exercise 1 (a stacked RNN).** `nn.RNN(..., num_layers=L)` stacks $L$ RNN layers: layer 1 reads
# the inputs, layer $l$ the states of layer $l - 1$; the output is the top layer's states. Write
# `stacked_rnn(n, num_layers)` returning, for length $n$: the cell applications in one forward pass;
# the sequential steps (the longest chain of cell applications, each needing the previous one's
# result); and the path length, the fewest cell applications from $x_0$ to the top layer's output at
# position $n - 1$.


# %%
def stacked_rnn(n, num_layers):
    """(cell runs, sequential steps, path length) of a num_layers-deep RNN over n positions."""
    raise NotImplementedError  # your code here


check.stacked_rnn(stacked_rnn)

# %% [markdown]
# **Exercise 2 (other dilations).** Section 4's dilation grew by a factor $k$ per layer
# ($1, k, k^2, \dots$) or not at all. Let it grow by any whole factor `growth` from 1 to `kernel`:
# layer $l = 0, 1, \dots$ has width `kernel` and dilation `growth ** l`, so its output $t$ reads inputs
# $t, t - \text{dilation}, \dots$. Write `dilated_layers(n, kernel, growth)`: the fewest such layers
# before output $n - 1$ reads input 0 (`growth = 1` and `growth = kernel` give section 4's two rows).


# %%
def dilated_layers(n, kernel, growth):
    """The fewest causal layers (dilation growth**l in layer l, 1 <= growth <= kernel) connecting output n - 1 to input 0."""
    raise NotImplementedError  # your code here


check.dilated_layers(dilated_layers)

# %% [markdown]
# **Exercise 3 (the gradient that reaches position 0).** Given an `nn.RNN` and one unbatched
# sequence `x` (seq, input_size), return (as a float) the norm of the gradient of the loss
# $L = \sum_j (\text{output at the last position})_j$ with respect to the **first** input $x_0$.


# %%
def grad_to_first(rnn, x):
    """|| d L / d x_0 || for L the sum of the last position's output."""
    raise NotImplementedError  # your code here


check.grad_to_first(grad_to_first)

# %% [markdown]
# **Exercise 4 (the paper's centred window).** With an odd size $r$, output $t$ attends to inputs
# $t - (r-1)/2, \dots, t + (r-1)/2$ (those that exist). Write `centred_layers(n, r)`: the fewest
# such layers before output $n - 1$ depends on input 0.


# %%
def centred_layers(n, r):
    """The fewest stacked centred windows of odd size r connecting output n - 1 to input 0."""
    raise NotImplementedError  # your code here


check.centred_layers(centred_layers)

# %% [markdown]
# ## Going further
#
# Eight detours (A to E from section 5, F to H from section 4):
#
# - **A.** whether $\|W_{hh}\|_2 < 1$, a sufficient condition for vanishing, holds at PyTorch's
#   initialisation, and what random-matrix theory says;
# - **B.** where the factor per step comes from: tanh's slope times a gain of $W_{hh}$ near its
#   spectral radius, not its norm;
# - **C.** whether that holds over twenty initialisations, and when the gradient explodes instead;
# - **D.** at what distance float32 rounds the gradient to exactly 0 (a prediction to make first);
# - **E.** what sharper attention weights do to attention's gradient;
# - **F.** what `pad` + `unfold` gather in section 4's restricted attention;
# - **G.** what timing on one CPU thread shows of parallel work;
# - **H.** the k/2 between a convolution and our RNN, and where a GRU, an LSTM, the paper's output
#   projection $W^O$ and separable convolutions move section 4's cost comparison.
#
# ### A. $\|W_{hh}\|_2$ at initialisation
#
# With row vectors, $g_t = \partial L / \partial h_t$ goes back one step as
#
# $$g_{t-1} = \big(g_t \odot (1 - h_t^2)\big)\, W_{hh},$$
#
# since $\tanh'(a) = 1 - \tanh(a)^2$. As $0 < 1 - h^2 \le 1$, each step can at most multiply
# $\|g\|$ by $\|W_{hh}\|_2$, the largest singular value, which bounds the whole gradient by
# $\sqrt{d}\,\|W_{hh}\|_2^{\,n}\,\|W_{ih}\|_2$ (the $\sqrt{d}$ is $\|\partial L / \partial h_n\|$ for
# $L$ = the sum of the last output). That bound shrinks only if $\|W_{hh}\|_2 < 1$, the sufficient
# condition for vanishing gradients in Pascanu, Mikolov and Bengio (2013). Does it hold at
# initialisation? `default_init_W_hh` builds `nn.RNN(d, d)` under seeds 0 to 49 and returns, for
# each, $\|W_{hh}\|_2$ and the **spectral radius** $\rho(W_{hh})$, the largest $|\text{eigenvalue}|$.

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
# So PyTorch's initialisation often does not meet $\|W_{hh}\|_2 < 1$: the column "below 1" counts
# the seeds where it held, fewer than half at $d_{hidden} = 16$ (seed 0, ours, is one of them) and
# none from $d_{hidden} = 64$ on, while over these four widths the median norm grows towards
# $2/\sqrt{3}$.
# Random matrix theory says why: a $d \times d$ matrix with independent entries of variance
# $\sigma^2$ has, for large $d$, largest singular value near $2\sigma\sqrt{d}$ (Geman, 1980) and
# eigenvalues filling the disc of radius $\sigma\sqrt{d}$ (the circular law; Tao and Vu, 2010), with
# the largest $|\text{eigenvalue}|$ tending to $\sigma\sqrt{d}$ (Geman, 1986).
# Uniform weights in $[-1/\sqrt{d}, 1/\sqrt{d}]$ have $\sigma^2 = 1/(3d)$: $\|W_{hh}\|_2 \to 2/\sqrt{3}
# \approx 1.15$, while $\rho(W_{hh}) \to 1/\sqrt{3} \approx 0.58$.

# %% tags=["hide-input"]
for norms, radii in init.values():
    assert (norms - 1).abs().min() > 1e-3  # no norm so close to 1 that rounding could flip the count
    assert radii.max() < 1  # every spectral radius is below 1
medians = [norms.median() for norms, _ in init.values()]
assert all(a < b for a, b in zip(medians, medians[1:]))  # the median norm grows over these widths
assert 0 < int((init[16][0] < 1).sum()) < 25 and init[16][0][0] < 1  # seed 0 is among those below 1
assert int((init[64][0] < 1).sum()) == int((init[256][0] < 1).sum()) == 0
assert abs(init[256][0].median() / (2 / math.sqrt(3)) - 1) < 0.05
assert abs(init[256][1].median() / (1 / math.sqrt(3)) - 1) < 0.06
print(
    "✓ ||W_hh||_2 < 1 in fewer than half of 50 seeds at d_hidden = 16 and in none at 64 or 256, its median growing "
    "towards 2/sqrt(3); rho(W_hh) < 1 in every seed, its median near 1/sqrt(3) at 256"
)

# %% [markdown]
# The limits are for large $d$. At the narrowest widths (2000 seeds at each even width from 2 to 14)
# the norm is below 1 in most seeds at $d_{hidden}$ = 2 and 4, in fewer at each wider width, and in
# under half at 12 and 14; a spectral radius of 1 or more turns up in more than 10 seeds at 2 and 4,
# in 1 to 5 at 6 and 8, and in none from 10 on.

# %% tags=["hide-input"]
narrow_seeds = range(2000)
narrow = {d_hidden: default_init_W_hh(d_hidden, narrow_seeds) for d_hidden in range(2, 15, 2)}
norm_below_1, radius_1_or_more = {}, {}  # per width: how many seeds
for d_hidden, (norms, radii) in narrow.items():
    norm_below_1[d_hidden], radius_1_or_more[d_hidden] = int((norms < 1).sum()), int((radii >= 1).sum())
    which = (radii >= 1).nonzero().flatten().tolist()  # the seeds with rho(W_hh) >= 1
    print(
        f"d_hidden = {d_hidden:2d}: ||W_hh||_2 < 1 in {norm_below_1[d_hidden]:4d} of {len(narrow_seeds)} seeds, "
        f"rho(W_hh) >= 1 in {radius_1_or_more[d_hidden]:2d}"
        + (f" (seed{'s' * (len(which) > 1)} {', '.join(map(str, which))})" if 0 < len(which) <= 5 else "")
    )

# %% tags=["hide-input"]
for norms, radii in narrow.values():
    assert (norms - 1).abs().min() > 1e-6 and (radii - 1).abs().min() > 1e-6  # no count on a knife-edge
half = len(narrow_seeds) / 2
assert all(norm_below_1[d] > half and radius_1_or_more[d] > 10 for d in (2, 4))
assert all(0 < radius_1_or_more[d] <= 5 for d in (6, 8))
assert all(radius_1_or_more[d] == 0 for d in (10, 12, 14))
counts = list(norm_below_1.values())  # d_hidden = 2, 4, ..., 14
assert all(a > b for a, b in zip(counts, counts[1:])) and norm_below_1[12] < half and norm_below_1[14] < half
print(
    "✓ of 2000 seeds per width: the norm is below 1 in most at 2 and 4, in fewer at each wider width; "
    "rho(W_hh) >= 1 in over 10 at 2 and 4, in 1 to 5 at 6 and 8, in none from 10 on"
)

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
# **References for A.** S. Geman, 1980, "A Limit Theorem for the Norm of Random Matrices", Ann. Probab. 8(2);
# S. Geman, 1986, "The Spectral Radius of Large Random Matrices", Ann. Probab. 14(4); T. Tao and
# V. Vu, 2010, "Random matrices: universality of ESDs and the circular law", Ann. Probab. 38(5);
# R. Pascanu, T. Mikolov and Y. Bengio, 2013, "On the difficulty of training recurrent neural
# networks", ICML: $\|W_{hh}\|_2 < 1$ as a sufficient condition for vanishing.

# %% [markdown]
# ### B. The factor per step
#
# The bound of A holds at every distance, but it is far too loose to explain the decay:

# %% tags=["nbval-ignore-output"]
print(f"||W_hh||_2 = {W_hh_norm:.2f}: the bound falls by x{W_hh_norm:.2f} per step, to {bound[-1]:.1e} at n = 128")
print(f"the RNN's gradient falls by x{measured_rate:.2f} per step, to {rnn_grad[-1]:.1e} at n = 128")

# %% [markdown]
# Follow the gradient back through the Jacobians instead. `step_factors` runs $g_{t-1} = (g_t \odot (1 - h_t^2)) W_{hh}$ step by step
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
# is only near $\rho(W_{hh})$; C measures how near, and when it strays.

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

# %% tags=["hide-input"]
assert all(g <= b for g, b in zip(rnn_grad, bound))
assert abs(parts["factor"] / measured_rate - 1) < 0.05
assert abs(parts["tanh_part"] / parts["mean_tanh_prime"] - 1) < 0.1
assert 0.85 < parts["W_hh_part"] / W_hh_radius < 1.05 and parts["W_hh_part"] < W_hh_norm
print(
    "✓ the gradient stays under its bound; the Jacobians' factor matches the curve's, with a tanh part close to "
    "mean(1 - h^2) and a W_hh part close to rho(W_hh), below ||W_hh||_2"
)

# %%
plot_gradients(
    {
        "vanilla RNN (tanh), measured": (rnn_grad, "o-", COLOR["RNN"]),
        "bound sqrt(d) ||W_hh||^n ||W_ih||": (bound, ":", "black"),
        "(per-step factor from the Jacobians)^(n-1),\nalmost hidden under the measured curve": (
            [rnn_grad[0] * parts["factor"] ** (n - 1) for n in grad_ns],
            "--",
            "gray",
        ),
    },
    "Gradient reaching position 0: the bound is loose, the Jacobians' factor is not",
)

# %% [markdown]
# ### C. Twenty initialisations, and exploding gradients
#
# One seed proves little. For seeds 0 to 19 (the same 8 sequences), the per-step factor and its
# parts, next to $\|W_{hh}\|_2$ and $\rho(W_{hh})$ (ranges over the seeds; the figure shows each):

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
for key, label in [
    ("norm", "||W_hh||_2"),
    ("radius", "rho(W_hh)"),
    ("tanh_part", "tanh part"),
    ("W_hh_part", "W_hh part"),
]:
    print(f"{label:11s} from {min(r[key] for r in rows):.2f} to {max(r[key] for r in rows):.2f}")
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

# %% tags=["hide-input"]
assert all(r["factor"] < 0.6 for r in rows)
assert -128 * math.log10(max(factors)) > 30  # the summary's "over 30 in each of twenty initialisations"
assert above_one >= 5  # the claim is tested where the norm bound says nothing
assert all(0.85 < r["W_hh_part"] / r["radius"] < 1.05 and r["W_hh_part"] < r["norm"] for r in rows)
assert all(abs(r["tanh_part"] / r["mean_tanh_prime"] - 1) < 0.1 for r in rows)
assert all(abs(r["factor"] / (r["radius"] * r["mean_tanh_prime"]) - 1) < 0.15 for r in rows)
print(
    f"✓ in 20 of 20 seeds ({above_one} with ||W_hh||_2 > 1) the per-step factor is well below 1 (over 30 orders "
    "of magnitude lost in 128 steps) and close to rho(W_hh) x mean(1 - h^2)"
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
# falls, and the product of the two decides. We print the gain of $W_{hh}$ as a multiple of
# $\rho(W_{hh})$, the same multiple when every unit is given the step's mean slope
# (`step_factors(..., uniform_slope=True)`, a what-if that isolates $W_{hh}$), the per-step factor,
# and how uneven the real slope is across the units (its standard deviation over its mean, averaged
# over the steps).
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
columns = ["gain_over_radius", "uniform_over_radius", "factor"]
print("  c  gain / rho   same slope: gain / rho   per-step factor")
for c in scales:
    rs = [blow_up[c, seed] for seed in seeds_20]
    cols = [f"{min(r[key] for r in rs):4.2f}-{max(r[key] for r in rs):<4.2f}" for key in columns]
    print(f"{c:3d}  {cols[0]:11s}  {cols[1]:23s}  {cols[2]}")
spread = {c: statistics.median(blow_up[c, s]["slope_spread"] for s in seeds_20) for c in scales}
print("median slope spread over the 20 seeds, by c:", {c: round(v, 2) for c, v in spread.items()})
growing = {c: [blow_up[c, s]["growth"] for s in seeds_20 if blow_up[c, s]["factor"] > 1] for c in (4, 6)}
shrinking = {c: [blow_up[c, s]["growth"] for s in seeds_20 if blow_up[c, s]["factor"] < 1] for c in (4, 6)}
for c, g in growing.items():
    print(f"c = {c}: in the {len(g)} seeds with factor > 1, gradient n=128 / n=1 from {min(g):.0e} to {max(g):.0e}")
    h = shrinking[c]
    print(f"c = {c}: in the {len(h)} seeds with factor < 1, gradient n=128 / n=1 from {min(h):.0e} to {max(h):.1e}")

# %% [markdown]
# Given the same slope in every unit, the gain of $W_{hh}$ is within 5% of $\rho(W_{hh})$ at every
# $c$ and in every seed. At $c = 1$ the real slope varies by about a third of its mean across the
# units, and the gain stays between $0.9\,\rho$ and $\rho$ in all 20 seeds. Scaled up, $W_{hh}$
# saturates some units (slope near 0) and leaves others near 1: the slope's spread reaches about its
# mean at $c = 4$ and more at $c = 6$, and the gain strays below $0.75\,\rho$ in some seeds and above
# $\rho$ in others.
#
# At $c = 2$ the spectral radius is above 1 in all but one seed, yet the gradient still vanishes in
# every seed: tanh's slope fell. From $c = 4$ the per-step factor passes 1 in most seeds, and there
# the gradient grows over the 128 steps, by amounts orders of magnitude apart; in the others it
# shrinks, at $c = 4$ by anything from under ten times to many orders of magnitude: how far the states
# saturate decides. Gradient clipping (against exploding) and gated cells such as the LSTM (against
# vanishing) were the usual repairs.

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


# %% tags=["hide-input"]
assert all(abs(blow_up[c, s]["factor"] - 1) > 0.01 for c in scales for s in seeds_20)  # no count on a knife-edge
assert all(abs(blow_up[c, s]["uniform_over_radius"] - 1) < 0.05 for c in scales for s in seeds_20)
assert all(0.9 < r < 1 for r in ratio[1]) and 0.25 < spread[1] < 0.4  # about a third of the mean slope
assert all(min(ratio[c]) < 0.75 and max(ratio[c]) > 1 for c in (4, 6))
assert 0.8 < spread[4] < 1.2 and spread[6] > 1.2  # about the mean slope, then beyond it
assert all(a < b for a, b in zip(spread.values(), list(spread.values())[1:]))  # more uneven as c grows
print(
    "✓ W_hh's gain is within 5% of rho(W_hh) with the same slope in every unit; with the real slope it stays "
    "near rho at c = 1 and strays both ways at c = 4 and 6, as the slope grows uneven"
)
assert count["rho(W_hh) > 1"][2] == 19 and all(blow_up[2, s]["growth"] < 1e-6 for s in seeds_20)
assert count["per-step factor > 1"][1] == count["per-step factor > 1"][2] == 0
assert all(10 < count["per-step factor > 1"][c] < 20 for c in (4, 6))  # most seeds, not all
assert all((r["factor"] > 1) == (r["growth"] > 1) for r in blow_up.values())
assert all(max(g) / min(g) > 100 for g in growing.values())  # by amounts orders of magnitude apart
assert all(max(h) < 1 for h in shrinking.values())
assert 0.1 < max(shrinking[4]) < 1 and min(shrinking[4]) < 1e-6  # at c = 4: from under ten times to many orders
assert all(
    blow_up[c, s]["tanh_part"] > blow_up[c2, s]["tanh_part"] for c, c2 in zip(scales, scales[1:]) for s in seeds_20
)
assert all(
    blow_up[c, s]["W_hh_part"] < blow_up[c2, s]["W_hh_part"] for c, c2 in zip(scales, scales[1:]) for s in seeds_20
)
print(
    "✓ at c = 2, rho > 1 in 19 of 20 seeds, yet the gradient falls by over 6 orders of magnitude in 128 steps; "
    "as c grows, W_hh's gain grows and tanh's slope falls in every seed, and the gradient grows exactly where "
    "the per-step factor is above 1 (most seeds but not all at c = 4 and 6)"
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

# %% tags=["hide-input"]
assert all(max(g) > 1.1 for g in narrow_gain.values())
print("✓ at d_hidden = 4 and 8 the gain of W_hh passes 1.1 x rho(W_hh) in some seed at c = 1")

# %% [markdown]
# ### D. In float32, when is the gradient exactly zero?
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
# gradient **itself** (the median sequence's) is first exactly 0, from two numbers section 5 and B
# printed: the gradient at $n = 1$ and the factor it shrinks by per step. Write a whole number; the check after the
# measurement says whether you were close.

# %%
my_guess_underflow = None  # your answer: the first n at which the float32 gradient is exactly 0, e.g. 50

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
print(
    f"estimate from sections 5 and B: 1 + log(2^-149 / {rnn_grad[0]:.3f}) / log({parts['factor']:.3f}) = {estimate:.0f}"
)

# %% [markdown]
# The exact $n$ can move by a step between machines (the last bits of float32 arithmetic differ),
# and so can the estimate's last digit, so the claim checked is the band:

# %% tags=["hide-input"]
assert abs(norm_zero - predicted_norm_zero) <= 2 and abs(grad_zero - predicted_grad_zero) <= 3
assert 55 <= norm_zero <= 80 and 115 <= grad_zero <= 150 and grad_zero > norm_zero + 40
assert grad_zero <= all_zero <= grad_zero + 15
print(
    "✓ in float32 the gradient's norm reads 0 where float64's largest entry falls below 2^-75, and the "
    "gradient itself is exactly 0 where it falls below 2^-149, more than 40 steps later"
)
answer, (lo, hi) = check.predict_underflow.reference, check.UNDERFLOW_BAND
assert abs(rnn_grad[0] - 1) < 0.05 and abs(parts["factor"] - 0.45) < 0.01  # the two numbers the estimate uses
assert abs(estimate - answer) <= 2 and abs(predicted_grad_zero - answer) <= 1 and lo <= grad_zero <= hi
print(f"✓ the estimate, float64's crossing and float32's zero all land near n = {answer}")

# %% [markdown]
# How close was your prediction?

# %%
check.predict_underflow(my_guess_underflow)

# %% [markdown]
# ### E. Sharper attention weights
#
# Section 5's attention weights were spread out. With sharper ones the share depends on the content,
# not on a product of $n$ Jacobians. Make the inputs 3 times larger: the scores grow, the weight
# gathers on a few positions (uniform weights would give the 3 largest $3/129$ of it), and gradient
# $\times (n+1)$ is no longer flat:

# %%
spread_3, weights_3 = attention_spread_and_weights(3)
top3 = {size: torch.cat(w).topk(3, dim=-1).values.sum(-1).tolist() for size, w in [(1, weights_1), (3, weights_3)]}

# %% tags=["nbval-ignore-output"]
print(
    f"inputs x 3: smallest max/min ratio of gradient x (n+1) within one seed {min(hi / lo for lo, hi in spread_3):.0f}"
)
print(
    f"share of the 3 largest weights, 64 sequences (8 seeds x 8): {min(top3[3]):.2f} to {max(top3[3]):.2f}, "
    f"median {statistics.median(top3[3]):.2f} (inputs as they are: at most {max(top3[1]):.2f})"
)

# %% tags=["hide-input"]
assert all(hi / lo > 20 for lo, hi in spread_3)
assert min(top3[3]) > 6 * 3 / 129 and statistics.median(top3[3]) > 0.4  # in every sequence; the median is printed above
print(
    "✓ with inputs 3 x larger the 3 largest weights take over 6 times their uniform share in 64 of 64 "
    "sequences, and gradient x (n+1) is far from flat in 8 of 8 initialisations"
)

# %% [markdown]
# ### F. What `pad` + `unfold` gather
#
# Section 4's restricted attention gathers each window of keys with `pad` + `unfold`. On the positions
# themselves ($n = 5$, $r = 3$; $-1$ marks the padding
# that `before_start` masks):

# %%
positions = torch.arange(5.0).reshape(1, 5, 1)  # (batch, n, 1): each position's own index
windows = F.pad(positions, (0, 0, 2, 0), value=-1).unfold(1, 3, 1)[0, :, 0].long()  # (n, r)
print(windows)  # row t: the keys output t attends to
assert torch.equal(windows, (torch.arange(5)[:, None] - 2 + torch.arange(3)).clamp(min=-1))
print("✓ row t gathers positions t - 2, t - 1, t")

# %% [markdown]
# ### G. In time, on one CPU thread
#
# Section 4 counted calls; here are times (they vary between machines): the cell loop, `nn.RNN` (one
# product for all the inputs, then the same $W_{hh}$ loop, in C++) and one attention call.

# %% tags=["nbval-ignore-output"]
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
time_ratio = timings["self-attention"][1] / timings["nn.RNN"][1]  # at n = 128
print(f"at n = 128 attention took {time_ratio:.2f} x the time of nn.RNN")

fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
styles = {
    "RNNCell loop": ("o-", COLOR["RNN"]),
    "nn.RNN": ("o--", COLOR["RNN"]),
    "self-attention": ("s-", COLOR["self-attention"]),
}
for name, ts in timings.items():
    ax.plot(time_ns, [t * 1e3 for t in ts], styles[name][0], color=styles[name][1], label=name)
log_axes(ax, time_ns, "ms (median of 5)", "Forward time on one CPU thread")
ax.legend()
plt.show()

# %%
x_128 = torch.randn(1, 128, d_model, generator=torch.Generator().manual_seed(5))  # (1, 128, d_model)
x_2048 = torch.randn(1, 2048, d_model, generator=torch.Generator().manual_seed(5))  # (1, 2048, d_model)
flops_ratio = count_flops(attention, x_128) / count_flops(rnn, x_128)
flops_ratio_2048 = count_flops(attention, x_2048) / count_flops(rnn, x_2048)
print(
    f"attention does {flops_ratio:.1f} times the FLOPs of nn.RNN at n = 128, {flops_ratio_2048:.1f} times at n = 2048"
)

# %% tags=["nbval-ignore-output"]
print(f"at n = 128 attention gets through {flops_ratio / time_ratio:.0f} times as many FLOPs per second as nn.RNN")

# %% tags=["hide-input"]
assert flops_ratio == (6 * 128 * d * d + 4 * 128**2 * d) / (4 * 128 * d * d)  # section 4's formulas
assert flops_ratio_2048 == (6 * 2048 * d * d + 4 * 2048**2 * d) / (4 * 2048 * d * d)
assert flops_ratio / time_ratio > 3  # FLOPs per second: attention's over nn.RNN's; loose, timings vary
assert timings["self-attention"][-1] > timings["nn.RNN"][-1]  # n = 2048
print(
    "✓ at n = 128 attention gets through over 3 times as many FLOPs per second as nn.RNN; "
    "at n = 2048 it takes longer than nn.RNN"
)

# %% [markdown]
# The cell loop pays for $n$ small dependent calls; `nn.RNN` runs the same $n$ dependent steps in C++.
# Attention's positions do not wait for one another, so its work goes into a few large products that
# even one thread gets through fast: at $n = 128$ it does 9.5 times the FLOPs of `nn.RNN` and gets
# through each FLOP many times as fast (the ratio printed above varies between machines and runs; the
# check asks only for over 3). That is the part of Table 1's "Sequential Operations" column one thread
# can show; more cores or a GPU would also split the independent work. But attention's $n^2$ work grows faster: at $n = 2048$ it does 129.5
# times the FLOPs of `nn.RNN`, and takes longer.
#
# ### H. More of the paper's section 4
#
# Section 4 counted a convolution at $2knd^2$ FLOPs and our RNN at $4nd^2$: a convolution costs $k/2$
# RNN layers here; the paper's "by a factor of k" compares orders of growth.

# %% tags=["hide-input"]
assert all(2 * c == kernel * r for c, r in zip(costs["convolution"]["flops"], costs["RNN"]["flops"]))
print(f"✓ a convolution layer costs k/2 = {kernel / 2} RNN layers in FLOPs, at every n")

# %% [markdown]
# Section 4 compared attention with our two-matrix RNN. A GRU (6 $d \times d$ matrices, $12nd^2$) or
# an LSTM (8, $16nd^2$) costs more than our whole attention layer while $n < 1.5d$ or $n < 2.5d$, and
# more than the paper's, which adds an output projection $W^O$, while $n < d$ or $n < 2d$:

# %% tags=["hide-input"]
with torch.random.fork_rng():  # new weights, without moving the random numbers of the cells below
    gated = {"GRU": nn.GRU(d_model, d_model, batch_first=True), "LSTM": nn.LSTM(d_model, d_model, batch_first=True)}
    W_O = nn.Linear(d_model, d_model)  # the paper's output projection, which our layer leaves out
matrices, whole_cheaper, with_W_O_cheaper = {"GRU": 6, "LSTM": 8}, {"GRU": [], "LSTM": []}, {"GRU": [], "LSTM": []}
for n in range(1, 3 * d + 1):
    x_n = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(3))  # (1, n, d_model)
    whole = count_flops(attention, x_n)  # projections and products: 6nd^2 + 4n^2d
    for name, layer in gated.items():
        assert count_flops(layer, x_n) == 2 * matrices[name] * n * d * d  # 12nd^2 and 16nd^2
        whole_cheaper[name].append(whole < count_flops(layer, x_n))
        with_W_O_cheaper[name].append(whole + count_flops(W_O, x_n) < count_flops(layer, x_n))
assert whole_cheaper["GRU"] == [n < 1.5 * d for n in range(1, 3 * d + 1)]
assert whole_cheaper["LSTM"] == [n < 2.5 * d for n in range(1, 3 * d + 1)]
assert with_W_O_cheaper["GRU"] == [n < d for n in range(1, 3 * d + 1)]
assert with_W_O_cheaper["LSTM"] == [n < 2 * d for n in range(1, 3 * d + 1)]
print(
    f"✓ a whole self-attention layer costs fewer FLOPs than a GRU exactly when n < 1.5d = {1.5 * d:.0f}, than an "
    f"LSTM when n < 2.5d = {2.5 * d:.0f}; with W^O added, when n < d = {d} and n < 2d = {2 * d}"
)

# %% [markdown]
# The paper's last cost comparison: separable convolutions cost $O(k \cdot n \cdot d + n \cdot d^2)$, yet
# "Even with $k = n$, however, the complexity of a separable convolution is equal to the combination
# of a self-attention layer and a point-wise feed-forward layer, the approach we take in our model"
# (lesson 06).
#
# Section 4 of the paper adds: "As side benefit, self-attention could yield more interpretable models"
# (lesson 07).


# %% [markdown]
# ## Sources
#
# - D. Bahdanau, K. Cho and Y. Bengio, 2015, "Neural Machine Translation by Jointly Learning to Align
#   and Translate", ICLR: the fixed-length vector as a bottleneck; additive attention.
# - K. Cho et al., 2014, "Learning Phrase Representations using RNN Encoder-Decoder for Statistical
#   Machine Translation", EMNLP: the decoder reads one summary vector.
# - Vaswani et al., 2017, "Attention Is All You Need", NeurIPS: sections 1, 2 and 4 and Table 1; for dilated
#   convolutions it cites Kalchbrenner et al., 2017, "Neural Machine Translation in Linear Time".
# - Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong): the gradient signal, the
#   bidirectional RNN, "GPU loves parallel computing blocks!".
# - Slide deck "Transformers / Attention is all you need" (YOUR CAT IS A LOVELY CAT): the three
#   "Problems with RNN"; exploding gradients.
# - Slides "Attention is all you need — RNN is unnecessary" (Liang Hong, 17 March 2023): the subtitle.
# - Reading notes on the paper (June 2020): "constant length between any two positions".
