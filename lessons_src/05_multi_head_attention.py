# %% [markdown]
# # 05 · Multi-head attention
#
# One attention head computes one weighted average per query. The Transformer runs `h` of them
# side by side, each in its own smaller subspace, and glues the results back together:
#
# $$\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O,
# \qquad \mathrm{head}_i = \mathrm{Attention}(Q W^Q_i,\; K W^K_i,\; V W^V_i),
# \qquad d_k = d_v = d_{model} / h .$$
#
# (Seed 003 prints $\mathrm{head}_i = \mathrm{Attention}(QW^Q, KW^K_i, VW^V)$, dropping the
# subscript $i$ on $W^Q$ and $W^V$: every head has its own slice of all three, as the loop over
# heads below makes explicit.)
#
# **Goals.** By the end of this lesson you will have
# 1. built multi-head attention step by step — project, split, attend, concatenate, $W^O$ — with
#    every shape printed, and checked it against `utils.multihead` and `torch.nn.MultiheadAttention`
#    with copied weights;
# 2. counted parameters and multiply–adds and seen that `h` heads cost exactly what one head of
#    width `d_model` costs;
# 3. seen what "multiple copies improve the *resolution* of attention" (seed 001) means: a task
#    where one head must blur two places together and two heads read both sharply;
# 4. explored per-head attention maps with a head picker.
#
# **Prerequisites.** 03 (self-attention: `softmax(QKᵀ/√d_k)V`) and 04 (masks; `True` = may attend).

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    get_ipython().run_line_magic(
        "pip", "install -q 'attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand'"
    )

# %% [markdown]
# The usual imports. One thread keeps the small computations below fast and their printed digits
# identical from run to run.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from utils.attention import scaled_dot_product_attention
from utils.masks import causal_mask, padding_mask
from utils.multihead import MultiHeadAttention, merge_heads, split_heads
from utils.plotting import plot_head_attention, plot_head_grid
from utils.widgets import head_explorer

torch.set_num_threads(1)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. Step by step
#
# A batch of 2 sequences of 5 tokens, `d_model = 12`, split into `num_heads = 3` heads, so each
# head works in `d_k = d_v = 12 / 3 = 4` dimensions. The four weight matrices are `d_model × d_model`
# ($W^Q$ holds all heads' $W^Q_i$ side by side, column blocks of width `d_k`).

# %%
torch.manual_seed(0)
batch, T, d_model, num_heads = 2, 5, 12, 3
d_k = d_model // num_heads
x = torch.randn(batch, T, d_model)  # (batch, T, d_model)
W_q, W_k, W_v, W_o = (torch.randn(d_model, d_model) / math.sqrt(d_model) for _ in range(4))  # (d_model, d_model)
print("x", tuple(x.shape), " W_q", tuple(W_q.shape), " d_k =", d_k)

# %% [markdown]
# **Project.** One matrix product per role gives every head's queries, keys and values at once.

# %%
Q = x @ W_q  # (batch, T, d_model)
K = x @ W_k  # (batch, T, d_model)
V = x @ W_v  # (batch, T, d_model)
print("Q", tuple(Q.shape))

# %% [markdown]
# **Split.** Head `i` owns columns `i·d_k … (i+1)·d_k − 1`. Reshape the last axis into
# `(num_heads, d_k)` and move the head axis forward, so each head looks like an ordinary
# `(batch, T, d_k)` attention problem.

# %%
Q_heads = Q.view(batch, T, num_heads, d_k).transpose(1, 2)  # (batch, num_heads, T, d_k)
K_heads = K.view(batch, T, num_heads, d_k).transpose(1, 2)  # (batch, num_heads, T, d_k)
V_heads = V.view(batch, T, num_heads, d_k).transpose(1, 2)  # (batch, num_heads, T, d_k)
print("Q_heads", tuple(Q_heads.shape))
assert torch.equal(Q_heads[:, 1], Q[..., 4:8])  # head 1 = columns 4..7 of Q
assert torch.equal(Q_heads, split_heads(Q, num_heads))
print("PASS: head i is the column block i*d_k:(i+1)*d_k, and utils.split_heads agrees")

# %% [markdown]
# **Attend** in every head at once: the same `softmax(QKᵀ/√d_k)V` as lesson 03, with `d_k = 4`
# (not `d_model`) in the scale, batched over the head axis.

# %%
scores = Q_heads @ K_heads.transpose(-2, -1) / math.sqrt(d_k)  # (batch, num_heads, T, T)
weights = torch.softmax(scores, dim=-1)  # (batch, num_heads, T, T)
heads = weights @ V_heads  # (batch, num_heads, T, d_k)
print("weights", tuple(weights.shape), " heads", tuple(heads.shape))
assert torch.allclose(weights.sum(-1), torch.ones(batch, num_heads, T))
print("PASS: every head's every row of weights sums to 1")

# %% [markdown]
# **Concatenate and project.** Undo the split (heads side by side again) and mix them with $W^O$.

# %%
concat = heads.transpose(1, 2).reshape(batch, T, d_model)  # (batch, T, d_model)
output = concat @ W_o  # (batch, T, d_model)
print("concat", tuple(concat.shape), " output", tuple(output.shape))
assert torch.equal(concat, merge_heads(heads))
print("PASS: utils.merge_heads is the same Concat")

# %% [markdown]
# The naive version: a Python loop over heads, each head's own slices $W^Q_i, W^K_i, W^V_i$
# (`d_model × d_k`), exactly the formula at the top. The vectorised version above must agree.

# %%
naive_heads = []
for i in range(num_heads):
    cols = slice(i * d_k, (i + 1) * d_k)
    q_i, k_i, v_i = x @ W_q[:, cols], x @ W_k[:, cols], x @ W_v[:, cols]  # (batch, T, d_k) each
    a_i = torch.softmax(q_i @ k_i.transpose(-2, -1) / math.sqrt(d_k), dim=-1)  # (batch, T, T)
    naive_heads.append(a_i @ v_i)  # (batch, T, d_k)
naive = torch.cat(naive_heads, dim=-1) @ W_o  # (batch, T, d_model)
assert torch.allclose(naive, output, atol=1e-6)
print("PASS: loop over heads == vectorised heads, max |diff| =", f"{(naive - output).abs().max():.1e}")

# %% [markdown]
# ### Equal to `utils` and to PyTorch
#
# `utils.multihead.MultiHeadAttention` stores each matrix as an `nn.Linear`, whose `weight` is the
# transpose of our `W` (`x @ W == x @ linear.weight.T`). Copy the matrices in, with zero biases.

# %%
mha = MultiHeadAttention(d_model, num_heads)
with torch.no_grad():
    for lin, W in ((mha.W_q, W_q), (mha.W_k, W_k), (mha.W_v, W_v), (mha.W_o, W_o)):
        lin.weight.copy_(W.T)
        lin.bias.zero_()
ours, ours_weights = mha(x, x, x)  # (batch, T, d_model), (batch, num_heads, T, T)
assert torch.allclose(ours, output, atol=1e-6) and torch.allclose(ours_weights, weights, atol=1e-6)
print("PASS: utils.MultiHeadAttention == the step-by-step version (output and per-head weights)")

# %% [markdown]
# PyTorch's `nn.MultiheadAttention` keeps $W^Q, W^K, W^V$ stacked in one `in_proj_weight`
# (3·d_model × d_model) and $W^O$ in `out_proj`. `MultiHeadAttention.from_torch` copies them.
# PyTorch returns the weights *averaged over heads* by default; ours keeps every head.
# Mind the mask convention: PyTorch's boolean masks mean `True` = **not** allowed, ours `True` = may attend.

# %%
torch.manual_seed(1)
torch_mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True).eval()
copy = MultiHeadAttention.from_torch(torch_mha).eval()
tokens = torch.tensor([[5, 3, 8, 0, 0], [4, 4, 1, 7, 2]])  # (batch, T), 0 = padding
mask = padding_mask(tokens, 0) & causal_mask(T)  # (batch, T, T): True = may attend
ref, ref_avg = torch_mha(x, x, x, key_padding_mask=tokens == 0, attn_mask=~causal_mask(T))  # (batch, T, d_model), (batch, T, T)
got, got_heads = copy(x, x, x, mask=mask)  # (batch, T, d_model), (batch, num_heads, T, T)
print("torch weights", tuple(ref_avg.shape), " ours", tuple(got_heads.shape))
assert torch.allclose(got, ref, atol=1e-6)
assert torch.allclose(got_heads.mean(dim=1), ref_avg, atol=1e-6)
print("PASS: equal to torch.nn.MultiheadAttention with copied weights (masked), "
      f"max |diff| = {(got - ref).abs().max():.1e}")

# %% [markdown]
# And the step-by-step recipe applied to PyTorch's own matrices (biases included) gives PyTorch's
# answer too — nothing is hidden in `nn.MultiheadAttention`.

# %%
Wq_t, Wk_t, Wv_t = torch_mha.in_proj_weight.detach().chunk(3)  # (d_model, d_model) each, nn.Linear layout
bq, bk, bv = torch_mha.in_proj_bias.detach().chunk(3)  # (d_model,) each
q = split_heads(x @ Wq_t.T + bq, num_heads)  # (batch, num_heads, T, d_k)
k = split_heads(x @ Wk_t.T + bk, num_heads)  # (batch, num_heads, T, d_k)
v = split_heads(x @ Wv_t.T + bv, num_heads)  # (batch, num_heads, T, d_k)
h_out, _ = scaled_dot_product_attention(q, k, v, mask.unsqueeze(1))  # (batch, num_heads, T, d_k)
by_hand = merge_heads(h_out) @ torch_mha.out_proj.weight.detach().T + torch_mha.out_proj.bias.detach()  # (batch, T, d_model)
assert torch.allclose(by_hand, ref, atol=1e-6)
print("PASS: project / split / attend / concat / W_o with torch's weights == torch")

# %% [markdown]
# ## 2. Same cost as one wide head
#
# Splitting does not add parameters: $W^Q, W^K, W^V, W^O$ are `d_model × d_model` whatever `h` is
# (the heads just share them out in blocks), so there are $4\,d_{model}^2 + 4\,d_{model}$
# parameters with biases. Count them for `h = 1, 2, 4, 8` at `d_model = 64`.

# %%
d = 64
counts = {h: sum(p.numel() for p in MultiHeadAttention(d, h).parameters()) for h in (1, 2, 4, 8)}
print(counts)
assert set(counts.values()) == {4 * d * d + 4 * d}
print(f"PASS: {4 * d * d + 4 * d} parameters for every number of heads")

# %% [markdown]
# Multiply–adds (one multiply–add = 2 FLOPs). Per sequence of `T` tokens:
#
# | step | one head of width d_model | h heads of width d_k = d_model / h |
# |---|---|---|
# | 4 projections | $4\,T\,d_{model}^2$ | $4\,T\,d_{model}^2$ |
# | scores $QK^\top$ | $T^2 d_{model}$ | $h \cdot T^2 d_k = T^2 d_{model}$ |
# | weights × values | $T^2 d_{model}$ | $h \cdot T^2 d_v = T^2 d_{model}$ |
#
# Rather than trust the table, let PyTorch's `FlopCounterMode` count the matrix products the
# forward pass actually runs (the softmax and the scaling are not matrix products; they are
# $O(h T^2)$ element-wise work).

# %%
def count_macs(num_heads, batch=2, T=10, d_model=64):
    """Multiply-adds of the matrix products in one forward pass of utils.MultiHeadAttention."""
    mha = MultiHeadAttention(d_model, num_heads)
    x = torch.randn(batch, T, d_model)  # (batch, T, d_model)
    with FlopCounterMode(display=False) as counter:
        mha(x, x, x)
    return counter.get_total_flops() // 2


macs = {h: count_macs(h) for h in (1, 2, 4, 8)}
formula = 2 * (4 * 10 * 64**2 + 2 * 10**2 * 64)  # batch 2 x (projections + scores + weighted sum)
print(macs, " formula:", formula)
assert set(macs.values()) == {formula}
print("PASS: the same multiply-adds for 1, 2, 4 and 8 heads, equal to the formula")

# %% [markdown]
# So multi-head attention is not "h times the work". What changes is *what it can express*:
# `h` separate softmaxes instead of one.

# %% [markdown]
# ## 3. What "improving the resolution" means
#
# Seed 001 says multiple heads "improve the resolution of the attention mechanism". Here is a
# task where that is literally true. Each sequence has 6 tokens of `d_model = 8` features:
#
# * features 0–3: random **content** on every token;
# * feature 4 = 1 tags one token **A**, feature 5 = 1 tags another token **B** (random positions);
# * the last token asks (feature 6 = 1, no content).
#
# The last token must output **A's content features 0–1 and B's content features 2–3**. It needs
# to look at two places at once. One head has one softmax: its weights on A and B share a total
# of 1, so the best it can do is a blend of the two. Two heads can each look at one place.
#
# First, by hand: two heads whose weights we write down ourselves.

# %%
d_model, T = 8, 6


def make_batch(n, generator):
    """n sequences (n, T, d_model) and the targets (n, 4) of the two-places task."""
    x = torch.zeros(n, T, d_model)  # (n, T, d_model)
    x[..., :4] = torch.randn(n, T, 4, generator=generator)  # content
    where = torch.rand(n, T - 1, generator=generator).argsort(-1)[:, :2]  # (n, 2) positions of A, B
    rows = torch.arange(n)  # (n,)
    x[rows, where[:, 0], 4] = 1.0  # tag A
    x[rows, where[:, 1], 5] = 1.0  # tag B
    x[:, -1, :4] = 0.0
    x[:, -1, 6] = 1.0  # the asking token
    target = torch.cat([x[rows, where[:, 0], :2], x[rows, where[:, 1], 2:4]], dim=-1)  # (n, 4)
    return x, target


x_demo, y_demo = make_batch(1, torch.Generator().manual_seed(3))
print(x_demo[0])
print("target:", y_demo[0])

# %% [markdown]
# Head 0 (columns 0–3 of each projection) asks "where is tag A?": the asking feature becomes a
# query along direction 0, the tag-A feature a key along direction 0, scaled by `s = 40` so the
# softmax is nearly one-hot. Its values carry content features 0–1. Head 1 does the same for tag B
# and content features 2–3. $W^O$ puts head 0's two values into output features 0–1 and head 1's
# into 2–3.

# %%
s = 40.0
two_heads = MultiHeadAttention(d_model, num_heads=2)
with torch.no_grad():
    for p in two_heads.parameters():
        p.zero_()
    two_heads.W_q.weight[0, 6] = s  # head 0 query: "I am asking"
    two_heads.W_k.weight[0, 4] = 1.0  # head 0 key: "I am A"
    two_heads.W_q.weight[4, 6] = s  # head 1 query (column 4 = head 1's first)
    two_heads.W_k.weight[4, 5] = 1.0  # head 1 key: "I am B"
    two_heads.W_v.weight[0, 0] = two_heads.W_v.weight[1, 1] = 1.0  # head 0 values: content 0-1
    two_heads.W_v.weight[4, 2] = two_heads.W_v.weight[5, 3] = 1.0  # head 1 values: content 2-3
    two_heads.W_o.weight[0, 0] = two_heads.W_o.weight[1, 1] = 1.0  # output 0-1 <- head 0
    two_heads.W_o.weight[2, 4] = two_heads.W_o.weight[3, 5] = 1.0  # output 2-3 <- head 1
out, w_two = two_heads(x_demo, x_demo, x_demo)  # (1, T, d_model), (1, 2, T, T)
print("asking token's output:", out[0, -1, :4].detach(), "\ntarget:               ", y_demo[0])
assert torch.allclose(out[0, -1, :4], y_demo[0], atol=1e-6)
print("PASS: two heads retrieve A's and B's features exactly")

# %% [markdown]
# The per-head maps of the asking token (last row) show why: each head puts all its weight on
# one place.

# %%
labels = [("A" if x_demo[0, t, 4] else "B" if x_demo[0, t, 5] else "ask" if x_demo[0, t, 6] else "·")
          + str(t) for t in range(T)]
fig = plot_head_grid(w_two[0].detach().numpy(), tokens=labels)
where_a, where_b = int(x_demo[0, :, 4].argmax()), int(x_demo[0, :, 5].argmax())
assert w_two[0, 0, -1, where_a] > 0.999 and w_two[0, 1, -1, where_b] > 0.999
print(f"PASS: head 0 puts {w_two[0, 0, -1, where_a]:.4f} on A, head 1 puts {w_two[0, 1, -1, where_b]:.4f} on B")

# %% [markdown]
# With a single head the same trick cannot work: the one softmax can split its weight between A and
# B (say ½ each), but then *every* value is blended — the output's features 0–1 become
# ½·A + ½·B instead of A. A linear $W^V$ cannot fix that, since it treats every token alike.
# Here is that single head, built by hand: one query that matches both tags equally.

# %%
one_head = MultiHeadAttention(d_model, num_heads=1)
with torch.no_grad():
    for p in one_head.parameters():
        p.zero_()
    one_head.W_q.weight[0, 6] = s  # "I am asking"
    one_head.W_k.weight[0, 4] = one_head.W_k.weight[0, 5] = 1.0  # "I am A or B"
    for i in range(4):
        one_head.W_v.weight[i, i] = one_head.W_o.weight[i, i] = 1.0  # values = content features
out_one, w_one = one_head(x_demo, x_demo, x_demo)  # (1, T, d_model), (1, 1, T, T)
blend = 0.5 * (x_demo[0, where_a, :4] + x_demo[0, where_b, :4])  # (4,)
print("weights of the asking token:", w_one[0, 0, -1].detach())
print("output:", out_one[0, -1, :4].detach(), "\n½(A+B):", blend, "\ntarget:", y_demo[0])
assert torch.allclose(out_one[0, -1, :4], blend, atol=1e-6)
assert (out_one[0, -1, :4] - y_demo[0]).abs().max() > 0.5
print("PASS: one head splits its weight ½/½ and returns the blend ½(A+B), far from the target")

# %% [markdown]
# Instead of arguing about the best possible single head, **train** both from random weights on
# the same batches (120 steps of Adam) and compare the held-out error.

# %%
def train(num_heads, steps=120, seed=0):
    """Train MultiHeadAttention(8, num_heads) on the two-places task; return losses and test error."""
    torch.manual_seed(seed)
    model = MultiHeadAttention(d_model, num_heads)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    data = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        x, y = make_batch(128, data)  # (128, T, d_model), (128, 4)
        out, _ = model(x, x, x)  # (128, T, d_model)
        loss = ((out[:, -1, :4] - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    x, y = make_batch(2000, torch.Generator().manual_seed(2))  # held out
    with torch.no_grad():
        test = ((model(x, x, x)[0][:, -1, :4] - y) ** 2).mean().item()  # (2000, 4) -> a number
    return model, losses, test


one_model, one_losses, one_test = train(num_heads=1)
two_model, two_losses, two_test = train(num_heads=2)
print(f"held-out mean squared error: one head {one_test:.3f}, two heads {two_test:.4f} "
      "(predicting 0 would score 1.0)")

# %%
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
ax.semilogy(one_losses, label="1 head (d_k = 8)")
ax.semilogy(two_losses, label="2 heads (d_k = 4)")
ax.set(xlabel="training step", ylabel="mean squared error", title="Two places at once: same parameter count")
ax.legend()
plt.show()

# %%
assert sum(p.numel() for p in one_model.parameters()) == sum(p.numel() for p in two_model.parameters())
assert one_test > 0.1 and two_test < 0.01 and two_test < one_test / 20
print(f"PASS: same parameters; two heads are {one_test / two_test:.0f}x more accurate than one")

# %% [markdown]
# The trained heads found the same division of labour we wrote by hand. On a held-out sequence,
# the asking token's row in each head peaks on a different tagged token:

# %%
x_show, _ = make_batch(1, torch.Generator().manual_seed(7))
with torch.no_grad():
    _, w_trained = two_model(x_show, x_show, x_show)  # (1, 2, T, T)
w_trained = w_trained[0].numpy()  # (2, T, T)
labels = [("A" if x_show[0, t, 4] else "B" if x_show[0, t, 5] else "ask" if x_show[0, t, 6] else "·")
          + str(t) for t in range(T)]
peaks = sorted(labels[int(w_trained[h, -1].argmax())][0] for h in range(2))
print("asking row, head 0:", np.round(w_trained[0, -1], 3))
print("asking row, head 1:", np.round(w_trained[1, -1], 3))
assert peaks == ["A", "B"]
print("PASS: one trained head looks at A, the other at B")

# %% [markdown]
# ### Head explorer
#
# The static figure shows the default state (head 0 of the trained model); the live widget
# below lets you pick a head. Only the asking token's row (the last) is trained, so the other rows
# are whatever they happen to be — that is normal for heads, whose maps only mean something for
# the queries a task uses.

# %%
fig = plot_head_attention(w_trained, head=0, tokens=labels)

# %%
# NBVAL_IGNORE_OUTPUT
head_explorer(w_trained, tokens=labels)

# %% [markdown]
# ## Summary
#
# * Multi-head attention = project with $W^Q, W^K, W^V$ → split the `d_model` features into `h`
#   heads of `d_k = d_model / h` → attend in each head → concatenate → $W^O$. It equals
#   `utils.multihead.MultiHeadAttention` and `torch.nn.MultiheadAttention` with copied weights.
# * It has the same parameters ($4 d_{model}^2 + 4 d_{model}$) and multiply–adds as one head of
#   width `d_model`: the heads divide the width, they do not multiply the work.
# * What it buys is `h` independent softmaxes: one head must blend the places it attends to, `h`
#   heads can each read one place sharply — the "resolution" of seed 001.
# * PyTorch averages the heads' weights by default (`average_attn_weights=True`) and uses
#   `True` = *not allowed* in its boolean masks; `utils` keeps per-head weights and `True` = may attend.
#
# ## Exercises
#
# Each checker prints PASS, a specific failure, or "not attempted yet". Stuck? Call
# `check.<name>.hint()`; to see a reference answer, `check.<name>.solution()`.

# %%
from utils.exercises import lesson05 as check

# %% [markdown]
# **Exercise 1.** Write `my_split_heads(x, num_heads)`: `(batch, T, d_model)` →
# `(batch, num_heads, T, d_k)`, head `i` holding columns `i·d_k … (i+1)·d_k − 1`.
# (A plain `x.view(batch, num_heads, T, d_k)` has the right shape but mixes tokens — why?)

# %%
def my_split_heads(x, num_heads):
    raise NotImplementedError


check.split_heads(my_split_heads)

# %% [markdown]
# **Exercise 2.** Write `my_multi_head(x, W_q, W_k, W_v, W_o, num_heads)`: self-attention of
# `x (batch, T, d_model)` with matrices `(d_model, d_model)` used as `x @ W` (no biases, no mask).

# %%
def my_multi_head(x, W_q, W_k, W_v, W_o, num_heads):
    raise NotImplementedError


check.multi_head(my_multi_head)

# %% [markdown]
# **Exercise 3.** Write `my_param_count(d_model, num_heads, bias)`: the number of parameters of
# multi-head attention (with or without the four bias vectors). The checker compares it with
# `utils.MultiHeadAttention` for many sizes.

# %%
def my_param_count(d_model, num_heads, bias):
    raise NotImplementedError


check.param_count(my_param_count)
