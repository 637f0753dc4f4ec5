# %% [markdown]
# # 05 · Multi-head attention
#
# One attention head computes one weighted average per query. The Transformer runs `h` of them
# side by side, each in its own smaller subspace, and glues the results back together:
#
# $$\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O,
# \qquad \mathrm{head}_i = \mathrm{Attention}(Q W^Q_i,\; K W^K_i,\; V W^V_i).$$
#
# (Section 3.2.2 of the paper. Its formula has no bias terms; ours, like PyTorch's, adds them. $W^O$ is $h d_v \times d_{model}$, and it
# chooses $d_k = d_v = d_{model} / h$, as we do. The YOUR CAT slide deck prints
# $\mathrm{head}_i = \mathrm{Attention}(QW^Q, KW^K_i, VW^V)$, dropping the subscript $i$ on $W^Q$
# and $W^V$: every head has its own slice of all three, as the loop over heads below makes explicit.)
#
# **Goals.** By the end of this lesson you will have
# 1. built multi-head attention step by step (project, split, attend, concatenate, $W^O$) and checked it
#    against `utils.multihead` and `torch.nn.MultiheadAttention` with copied weights;
# 2. counted what 1 to 8 heads cost beside one head of width `d_model`: which costs stay equal, which grow;
# 3. seen what the "resolution" that multiple heads improve means, on a task that two heads nearly
#    solve and one head does not (held-out error below 0.05 vs above 0.25 in all 5 training runs);
# 4. watched two trained heads divide a sentence between them, in a per-head explorer.
#
# **Prerequisites.** 03 (self-attention: `softmax(QKᵀ/√d_k)V`) and 04 (masks; `True` = may attend).
# Each numbered section has a question: write your guess, run the cells that settle it, then check it.

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

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from utils.attention import scaled_dot_product_attention
from utils.course.exercises import lesson05 as check
from utils.experiments.head_training import heldout_error, train_heads
from utils.experiments.layer_costs import count_softmax_elements
from utils.figures.plotting import plot_head_attention, plot_head_grid
from utils.figures.widgets import head_explorer
from utils.masks import causal_mask, padding_mask
from utils.multihead import MultiHeadAttention, merge_heads, split_heads
from utils.positional import sinusoidal_encoding

torch.set_num_threads(1)  # the tensors are tiny
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. Step by step
#
# A batch of 2 sequences of 5 tokens, `d_model = 12`, split into `num_heads = 3` heads, so each
# head works in `d_k = d_v = 12 / 3 = 4` dimensions. The four weight matrices are `d_model × d_model`
# ($W^Q$ holds all heads' $W^Q_i$ side by side, column blocks of width `d_k`).
#
# **Predict first.** Lesson 03 divided the scores by $\sqrt{d_k}$. Inside each of these 3 heads, what
# number divides the scores $q \cdot k$?

# %%
my_guess_scale = None  # your answer: a number

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

# %% tags=["hide-input"]
for i in range(num_heads):
    assert torch.equal(Q_heads[:, i], Q[..., i * d_k : (i + 1) * d_k])  # head i = its block of columns
assert torch.equal(Q_heads, split_heads(Q, num_heads))
print("✓ each of the 3 heads is its column block i*d_k:(i+1)*d_k (utils.split_heads is this same reshape)")

# %% [markdown]
# **Attend** in every head at once: the same `softmax(QKᵀ/√d_k)V` as lesson 03, batched over the
# head axis.

# %%
scores = Q_heads @ K_heads.transpose(-2, -1) / math.sqrt(d_k)  # (batch, num_heads, T, T)
weights = torch.softmax(scores, dim=-1)  # (batch, num_heads, T, T)
heads = weights @ V_heads  # (batch, num_heads, T, d_k)
print("weights", tuple(weights.shape), " heads", tuple(heads.shape))

# %% [markdown]
# **Concatenate and project.** Undo the split (heads side by side again) and mix them with $W^O$.

# %%
concat = heads.transpose(1, 2).reshape(batch, T, d_model)  # (batch, T, d_model)
output = concat @ W_o  # (batch, T, d_model)
print("concat", tuple(concat.shape), " output", tuple(output.shape))

# %% tags=["hide-input"]
assert torch.equal(concat, merge_heads(heads))
print("✓ utils.merge_heads is the same Concat")

# %% [markdown]
# The naive version: a Python loop over heads, each head's own slices $W^Q_i, W^K_i, W^V_i$
# (`d_model × d_k`), exactly the formula at the top. The vectorised version above must agree.

# %% tags=["hide-input"]
naive_heads = []
for i in range(num_heads):
    cols = slice(i * d_k, (i + 1) * d_k)
    q_i, k_i, v_i = x @ W_q[:, cols], x @ W_k[:, cols], x @ W_v[:, cols]  # (batch, T, d_k) each
    a_i = torch.softmax(q_i @ k_i.transpose(-2, -1) / math.sqrt(d_k), dim=-1)  # (batch, T, T)
    naive_heads.append(a_i @ v_i)  # (batch, T, d_k)
naive = torch.cat(naive_heads, dim=-1) @ W_o  # (batch, T, d_model)
assert (naive - output).abs().max() < 1e-6
print("✓ the loop over heads gives the vectorised heads")

# %% [markdown]
# ### Equal to `utils` and to PyTorch
#
# With these four matrices, `utils.multihead.MultiHeadAttention` gives the output above. PyTorch's
# `nn.MultiheadAttention` has its own matrices and biases: the recipe above, applied to them, must give
# its output (with padding and causal masks). Which number should divide each head's scores? Four
# candidates:

# %% tags=["hide-input"]
mha = MultiHeadAttention(d_model, num_heads)  # nn.Linear layout: x @ W == x @ linear.weight.T
with torch.no_grad():
    for lin, W in ((mha.W_q, W_q), (mha.W_k, W_k), (mha.W_v, W_v), (mha.W_o, W_o)):
        lin.weight.copy_(W.T)
        lin.bias.zero_()
ours, ours_weights = mha(x, x, x)  # (batch, T, d_model), (batch, num_heads, T, T)
assert (ours - output).abs().max() < 1e-6 and (ours_weights - weights).abs().max() < 1e-6

torch.manual_seed(1)
torch_mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True).eval()
with torch.no_grad():  # PyTorch starts its biases at 0; random ones make the copy of the biases count
    torch_mha.in_proj_bias.normal_()
    torch_mha.out_proj.bias.normal_()
copy = MultiHeadAttention.from_torch(torch_mha).eval()
tokens = torch.tensor([[5, 3, 8, 0, 0], [4, 4, 1, 7, 2]])  # (batch, T), 0 = padding
mask = padding_mask(tokens, 0) & causal_mask(T)  # (batch, T, T): True = may attend
ref, ref_avg = torch_mha(
    x, x, x, key_padding_mask=tokens == 0, attn_mask=~causal_mask(T)
)  # (batch, T, d_model), (batch, T, T): torch's masks read True = not allowed
got, got_heads = copy(x, x, x, mask=mask)  # (batch, T, d_model), (batch, num_heads, T, T)
assert (got - ref).abs().max() < 1e-6

Wq_t, Wk_t, Wv_t = torch_mha.in_proj_weight.detach().chunk(3)  # (d_model, d_model) each, nn.Linear layout
bq, bk, bv = torch_mha.in_proj_bias.detach().chunk(3)  # (d_model,) each
q = split_heads(x @ Wq_t.T + bq, num_heads)  # (batch, num_heads, T, d_k)
k = split_heads(x @ Wk_t.T + bk, num_heads)  # (batch, num_heads, T, d_k)
v = split_heads(x @ Wv_t.T + bv, num_heads)  # (batch, num_heads, T, d_k)
W_o_t, b_o = torch_mha.out_proj.weight.detach(), torch_mha.out_proj.bias.detach()  # (d_model, d_model), (d_model,)
matches = {}
for scale in (1.0, math.sqrt(d_k), float(d_k), math.sqrt(d_model)):
    scores_s = (q @ k.transpose(-2, -1) / scale).masked_fill(~mask.unsqueeze(1), float("-inf"))  # (batch, h, T, T)
    by_hand = merge_heads(torch.softmax(scores_s, dim=-1) @ v) @ W_o_t.T + b_o  # (batch, T, d_model)
    matches[round(scale, 4)] = bool((by_hand - ref).abs().max() < 1e-5)
assert [s for s, ok in matches.items() if ok] == [check.predict_head_scale.reference]
print("divide each head's scores by ... and get PyTorch's output?", matches)
print("✓ equal to utils.MultiHeadAttention and torch.nn.MultiheadAttention, with each head's scores divided by")
print("  √d_k = 2 and by no other of the four")

# %%
check.predict_head_scale(my_guess_scale)

# %% [markdown]
# > How the matrices are copied into `utils` and PyTorch, the biases, the same equality at four more
# > sizes, and which PyTorch APIs read a boolean mask's `True` as *not allowed*: see
# > [Going further](#Going-further).

# %% [markdown]
# ## 2. Parameters and multiply–adds, counted
#
# **Predict first.** How many parameters does `MultiHeadAttention(d_model=64, num_heads=8)` have, biases
# included?

# %%
my_guess_params = None  # your answer: a whole number of parameters

# %% [markdown]
# Count them for `h = 1, 2, 4, 8` at `d_model = 64`.

# %%
d = 64
counts = {h: sum(p.numel() for p in MultiHeadAttention(d, h).parameters()) for h in (1, 2, 4, 8)}
print(counts)

# %% tags=["hide-input"]
assert set(counts.values()) == {4 * d * d + 4 * d}
assert counts[8] == check.predict_param_count.reference
print(f"✓ {4 * d * d + 4 * d} parameters for every number of heads")

# %%
check.predict_param_count(my_guess_params)

# %% [markdown]
# With $d_k = d_v = d_{model}/h$, splitting does not add parameters: $W^Q, W^K, W^V, W^O$ are
# `d_model × d_model` whatever `h` is (the heads share them out in blocks), so there are
# $4\,d_{model}^2 + 4\,d_{model}$ parameters with biases (rows (B) below shrink $d_k$ alone and have
# fewer). The multiply–adds below stay equal too: that is why the paper ties $d_k$ to $d_{model}/h$
# ("Due to the reduced dimension of each head, the total computational cost is similar to that of
# single-head attention with full dimensionality", section 3.2.2), and why every row (A) of its Table 3
# (our section 3) keeps $h \cdot d_k = 512$.

# %% [markdown]
# Multiply–adds (one multiply–add = 2 FLOPs). Per sequence of `T` tokens:
#
# | step | one head of width d_model | h heads of width d_k = d_model / h |
# |---|---|---|
# | 4 projections | $4\,T\,d_{model}^2$ | $4\,T\,d_{model}^2$ |
# | scores $QK^\top$ | $T^2 d_{model}$ | $h \cdot T^2 d_k = T^2 d_{model}$ |
# | weights × values | $T^2 d_{model}$ | $h \cdot T^2 d_v = T^2 d_{model}$ |
#
# PyTorch's `FlopCounterMode` counts the matrix products the forward pass actually runs.


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

# %% tags=["hide-input"]
assert set(macs.values()) == {formula}
print("✓ the same multiply-adds for 1, 2, 4 and 8 heads, equal to the formula")

# %% [markdown]
# The matrix products are not everything. The mask and the softmax act on every score (the scaling too,
# unless it is applied to the queries first, as `utils` and `nn.MultiheadAttention` do when they return
# the weights), and each head has its own `T × T`
# scores: `batch · h · T²`, `h` times as many as one wide head. The weights
# the softmax returns, a `(batch, h, T, T)` tensor kept for the backward pass, grow the same way. Count the
# elements the softmax normalises (`utils.experiments.layer_costs.count_softmax_elements`) and the
# returned weights:


# %%
def softmax_and_weights(num_heads, batch=2, T=10, d_model=64):
    """(elements the softmax normalises, numbers in the returned weights) in one forward pass."""
    mha = MultiHeadAttention(d_model, num_heads)
    x = torch.randn(batch, T, d_model)  # (batch, T, d_model)
    with torch.no_grad():
        weights = mha(x, x, x)[1]  # (batch, num_heads, T, T)
    return count_softmax_elements(lambda x: mha(x, x, x), x), weights.numel()


softmax_work = {h: softmax_and_weights(h) for h in (1, 2, 4, 8)}
print("h: (softmax elements, weights):", softmax_work)

# %% tags=["hide-input"]
for h, (elements, numel) in softmax_work.items():
    assert elements == numel == 2 * h * 10 * 10  # batch * h * T * T
print("✓ softmax elements and weights are batch * h * T * T: h times those of one head")

# %% [markdown]
# The same three counts at four more sizes `(d_model, T)`:

# %% tags=["hide-input"]
for d_s, T_s in ((32, 7), (48, 5), (96, 12), (128, 3)):
    params_s = {sum(p.numel() for p in MultiHeadAttention(d_s, h).parameters()) for h in (1, 2, 4, 8)}
    macs_s = {count_macs(h, T=T_s, d_model=d_s) for h in (1, 2, 4, 8)}
    assert params_s == {4 * d_s * d_s + 4 * d_s} and macs_s == {2 * (4 * T_s * d_s**2 + 2 * T_s**2 * d_s)}
    for h in (1, 2, 4, 8):
        assert softmax_and_weights(h, T=T_s, d_model=d_s) == (2 * h * T_s * T_s,) * 2
print("✓ at d_model = 32, 48, 96, 128 too: parameters and multiply-adds equal for 1 to 8 heads, softmax work h-fold")

# %% [markdown]
# So `h` heads cost what one wide head costs in **parameters** and in the **multiply–adds of the matrix
# products**; the **softmax work** and the **attention weights** grow `h`-fold, and with $T^2$ (lesson 09
# avoids storing the weights at all). What `h` buys is `h` separate softmaxes instead of one.

# %% [markdown]
# ## 3. What "improving the resolution" means
#
# The COMP7607 slides say multiple heads "Improve the “resolution” of the attention mechanism". The word
# is the paper's own (section 2): self-attention works "at the cost of reduced effective resolution due
# to averaging attention-weighted positions, an effect we counteract with Multi-Head Attention". Section
# 3.2.2 says how: "Multi-head attention allows the model to jointly attend to information
# from different representation subspaces at different positions. With a single attention head,
# averaging inhibits this." Its Table 3 varies the number of heads around the base model's $h = 8$ at
# constant computation (rows (A)), and shrinks $d_k$ alone (rows (B)); English-to-German development
# set, quoted, not measured here:

# %%
table3_rows_a = {  # h: (d_k, perplexity, BLEU); parameters blank in the paper, i.e. the base's 65 million
    1: (512, 5.29, 24.9),
    4: (128, 5.00, 25.5),
    8: (64, 4.92, 25.8),  # the base model
    16: (32, 4.91, 25.8),
    32: (16, 5.01, 25.4),
}
table3_rows_b = {16: (5.16, 25.1, 58), 32: (5.01, 25.4, 60)}  # h = 8, d_v = 64; d_k: (perplexity, BLEU, parameters)
print("row    h   d_k  h × d_k  perplexity  BLEU  parameters")
for h, (dk, ppl, bleu) in table3_rows_a.items():
    print(f"{'base' if h == 8 else '(A)':<4} {h:>3} {dk:>5} {h * dk:>8} {ppl:>11.2f} {bleu:>5.1f}  65M")
for dk, (ppl, bleu, params) in table3_rows_b.items():
    print(f"(B)  {8:>3} {dk:>5} {8 * dk:>8} {ppl:>11.2f} {bleu:>5.1f}  {params}M")
best_bleu = max(bleu for _, _, bleu in table3_rows_a.values())
print(
    f"one head: {best_bleu - table3_rows_a[1][2]:.1f} BLEU below the best; 32 heads: {best_bleu - table3_rows_a[32][2]:.1f} below"
)

# %% [markdown]
# Section 6.2: "While single-head attention is 0.9 BLEU worse than the best setting, quality also drops
# off with too many heads." Our reading of why is in [Going further](#Going-further). Here is a task
# where the single head's handicap is literal.
# Each sequence has 6 tokens of `d_model = 8` features:
#
# * features 0–3: random **content** on every token;
# * feature 4 = 1 tags one token **A**, feature 5 = 1 tags another token **B** (random positions);
# * the last token asks (feature 6 = 1, no content).
#
# The last token must output **A's content features 0–1 and B's content features 2–3**. It needs
# to look at two places at once. One head has one softmax: its weights over all 6 tokens sum to 1, so
# A and B share at most 1, and it returns one blend of A and B (and of any other token it weights). Two heads return two blends; the simplest pair has each
# head look at one place.
#
# First, by hand: two heads whose weights we write down ourselves.

# %%
d_model, T = 8, 6
ask_rows = slice(T - 1, T)  # the rows whose output is scored: the asking token


def make_two_places(n, generator):
    """n sequences (n, T, d_model) of the two-places task and their targets (n, 1, 4)."""
    x = torch.zeros(n, T, d_model)  # (n, T, d_model)
    x[..., :4] = torch.randn(n, T, 4, generator=generator)  # content
    where = torch.rand(n, T - 1, generator=generator).argsort(-1)[:, :2]  # (n, 2) positions of A, B
    rows = torch.arange(n)  # (n,)
    x[rows, where[:, 0], 4] = 1.0  # tag A
    x[rows, where[:, 1], 5] = 1.0  # tag B
    x[:, -1, :4] = 0.0
    x[:, -1, 6] = 1.0  # the asking token
    target = torch.cat([x[rows, where[:, 0], :2], x[rows, where[:, 1], 2:4]], dim=-1)  # (n, 4)
    return x, target.unsqueeze(1)


def tag_labels(x):
    """Labels A3, B1, ask5, ·0 ... for the tokens of one sequence x (T, d_model)."""
    return [("A" if x[t, 4] else "B" if x[t, 5] else "ask" if x[t, 6] else "·") + str(t) for t in range(len(x))]


x_demo, y_demo = make_two_places(1, torch.Generator().manual_seed(3))


# %% tags=["nbval-ignore-output"]
where_a, where_b = int(x_demo[0, :, 4].argmax()), int(x_demo[0, :, 5].argmax())
print("tokens:", tag_labels(x_demo[0]))
print("content of A:", x_demo[0, where_a, :4], " of B:", x_demo[0, where_b, :4])
print("target:      ", y_demo[0, 0], " (A's features 0-1, then B's 2-3)")

# %% tags=["hide-input"]
assert x_demo[0, :, 4:6].sum(0).tolist() == [1.0, 1.0] and x_demo[0, -1, 6] == 1 and (x_demo[0, -1, :4] == 0).all()
assert torch.equal(y_demo[0, 0], torch.cat([x_demo[0, where_a, :2], x_demo[0, where_b, 2:4]]))
print("✓ one token tagged A, one tagged B, the last one asks (no content); target = A's features 0-1, B's 2-3")

# %% [markdown]
# Head 0 (columns 0–3 of each projection) asks "where is tag A?": the asking feature becomes a
# query along direction 0, the tag-A feature a key along direction 0, scaled by `s = 40` so the
# softmax is nearly one-hot. Its values carry content features 0–1. Head 1 does the same for tag B
# and content features 2–3. $W^O$ puts head 0's two values into output features 0–1 and head 1's
# into 2–3 (in `nn.Linear`'s transposed layout, section 1).

# %%
s = 40.0
two_heads = MultiHeadAttention(d_model, num_heads=2)
with torch.no_grad():
    for p in two_heads.parameters():
        p.zero_()
    # .weight[output feature, input feature]
    two_heads.W_q.weight[0, 6] = s  # head 0 query: "I am asking"
    two_heads.W_k.weight[0, 4] = 1.0  # head 0 key: "I am A"
    two_heads.W_q.weight[4, 6] = s  # head 1 query (column 4 = head 1's first)
    two_heads.W_k.weight[4, 5] = 1.0  # head 1 key: "I am B"
    two_heads.W_v.weight[0, 0] = two_heads.W_v.weight[1, 1] = 1.0  # head 0 values: content 0-1
    two_heads.W_v.weight[4, 2] = two_heads.W_v.weight[5, 3] = 1.0  # head 1 values: content 2-3
    two_heads.W_o.weight[0, 0] = two_heads.W_o.weight[1, 1] = 1.0  # output 0-1 <- head 0
    two_heads.W_o.weight[2, 4] = two_heads.W_o.weight[3, 5] = 1.0  # output 2-3 <- head 1
out, w_two = two_heads(x_demo, x_demo, x_demo)  # (1, T, d_model), (1, 2, T, T)

# %% tags=["nbval-ignore-output"]
print("asking token's output:", out[0, -1, :4].detach(), "\ntarget:               ", y_demo[0, 0])

# %% tags=["hide-input"]
assert torch.allclose(out[0, -1, :4], y_demo[0, 0], atol=1e-6)
print("✓ two heads retrieve A's and B's features")

# %% [markdown]
# The per-head maps of the asking token (last row) show why: each head puts all its weight on
# one place. (The other rows are not part of the task.)

# %%
labels = tag_labels(x_demo[0])
fig = plot_head_grid(w_two[0].detach().numpy(), tokens=labels)
fig.suptitle("Last row (the asking token): head 0 reads A, head 1 reads B")
plt.show()

# %% tags=["hide-input"]
assert w_two[0, 0, -1, where_a] > 0.999 and w_two[0, 1, -1, where_b] > 0.999
print("✓ head 0 puts almost all of the asking token's weight on A, head 1 on B")

# %% [markdown]
# A single head cannot do this: if its softmax gives A and B ½ each, *every* value is blended, and
# features 0–1 become ½·A + ½·B instead of A. Here it is, built by hand: one query that matches both
# tags equally.

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

# %% tags=["nbval-ignore-output"]
print("weights of the asking token:", w_one[0, 0, -1].detach())
print("output:", out_one[0, -1, :4].detach(), "\n½(A+B):", blend, "\ntarget:", y_demo[0, 0])

# %% tags=["hide-input"]
assert torch.allclose(w_one[0, 0, -1, [where_a, where_b]], torch.tensor(0.5)) and w_one[0, 0, -1].sum() > 0.999
assert torch.allclose(out_one[0, -1, :4], blend, atol=1e-6)
assert (out_one[0, -1, :4] - y_demo[0, 0]).abs().max() > 0.5
print("✓ one head splits its weight ½/½ and returns the blend ½(A+B), far from the target")

# %% [markdown]
# **Predict.** Say a head gives A the weight 0.75 and B 0.25, in every sequence, and the best linear
# read-out is fitted to its output. What mean squared error over the four target features does it
# leave?

# %%
my_guess_split = None  # your answer: a number between 0 and 1

# %% [markdown]
# Fit the best linear read-out (least squares, with a bias) of the blend $wA + (1-w)B$ for five splits
# $w$, on 20 000 sequences:

# %% tags=["nbval-ignore-output"]
x_big, y_big = make_two_places(20_000, torch.Generator().manual_seed(4))
big_rows = torch.arange(len(x_big))  # (n,)
A = x_big[big_rows, x_big[..., 4].argmax(-1), :4]  # (n, 4) content of A
B = x_big[big_rows, x_big[..., 5].argmax(-1), :4]  # (n, 4) content of B
fixed_split, per_feature = {}, {}
for w in (0.5, 0.6, 0.75, 0.9, 1.0):
    design = torch.cat([w * A + (1 - w) * B, torch.ones(len(A), 1)], dim=-1)  # (n, 5): the blend and a bias
    readout = torch.linalg.lstsq(design, y_big[:, 0]).solution  # (5, 4)
    per_feature[w] = ((design @ readout - y_big[:, 0]) ** 2).mean(0)  # (4,) error per target feature
    fixed_split[w] = per_feature[w].mean().item()
print("best error for weight w on A:", {w: round(e, 4) for w, e in fixed_split.items()})
two_splits = {}  # two heads with fixed splits (w1, w2): the read-out sees both blends
for w1, w2 in ((1.0, 0.0), (0.9, 0.1), (0.6, 0.4), (0.75, 0.5), (0.55, 0.45)):
    design = torch.cat([w1 * A + (1 - w1) * B, w2 * A + (1 - w2) * B, torch.ones(len(A), 1)], dim=-1)  # (n, 9)
    readout = torch.linalg.lstsq(design, y_big[:, 0]).solution  # (9, 4)
    two_splits[(w1, w2)] = ((design @ readout - y_big[:, 0]) ** 2).mean().item()
print("two heads, best error for weights (w1, w2) on A:", {w: round(e, 4) for w, e in two_splits.items()})

# %% tags=["hide-input"]
assert all(abs(e - 0.5) < 0.02 for e in fixed_split.values())
assert abs(fixed_split[0.75] - check.predict_fixed_split_error.reference) < 0.02
assert len(two_splits) == 5 and all(e < 1e-6 for e in two_splits.values())
print("✓ for w = 0.5, 0.6, 0.75, 0.9 and 1.0 the best read-out of a fixed split scores ½")
print("✓ two heads with two different fixed splits score 0 in 5 of 5 pairs")

# %%
check.predict_fixed_split_error(my_guess_split)

# %% [markdown]
# **No fixed split does better than ½**: features 0–1 lose B's share of the blend's variance, features
# 2–3 lose A's share, and the two shares add up to 1 for every $w$, so the mean error is ½
# ([Going further](#Going-further) derives the shares). A fixed split only moves the error between the
# features. Two heads with two *different* fixed splits score 0 (five pairs above): a linear read-out
# can unmix two blends of A and B, not one. One place per head is one such pair among many. Now **train** one head and two heads from random weights on the same batches
# (120 steps of Adam), 5 initialisations each, and score them on sequences they never saw.

# %% tags=["nbval-ignore-output"]
# train_heads (utils.experiments.head_training) scores output features 0-3 at the query positions
# ask_rows; heldout_error scores a trained model on sequences it never saw
seeds = range(5)
x_test, y_test = make_two_places(2000, torch.Generator().manual_seed(2))  # held out
runs = {h: [train_heads(make_two_places, ask_rows, h, seed) for seed in seeds] for h in (1, 2)}
errors = {h: [heldout_error(model, x_test, y_test, ask_rows) for model, _ in runs[h]] for h in (1, 2)}
for h in (1, 2):
    e = np.array(errors[h])
    print(
        f"{h} head(s): held-out error mean {e.mean():.4f}, min {e.min():.4f}, max {e.max():.4f} "
        f"over {len(e)} initialisations"
    )
print("(predicting 0 would score 1.0)")

# %% tags=["hide-input"]
assert all(0.25 < e < 0.4 for e in errors[1]) and all(e < 0.05 for e in errors[2])
assert all(one > 5 * two for one, two in zip(errors[1], errors[2]))
print(f"✓ in all {len(seeds)} initialisations two heads nearly solve the task")
print("  and one head stays far from it (below ½, though)")

# %% [markdown]
# Every training run, one colour per number of heads (one head solid, two heads dashed); the dotted grey
# line is the ½ of any fixed split.

# %% tags=["hide-input"]
colors = {1: "tab:blue", 2: "tab:orange"}
fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
for h, style in ((1, "-"), (2, "--")):
    for i, (_, losses) in enumerate(runs[h]):
        ax.semilogy(
            losses,
            style,
            color=colors[h],
            lw=1,
            alpha=0.8,
            label=f"{h} head{'s' if h > 1 else ''} (d_k = {d_model // h})" if i == 0 else None,
        )
ax.axhline(0.5, color="gray", ls=":", label="best fixed split (½)")
ax.set(
    xlabel="training step",
    ylabel="mean squared error",
    title="Same parameters: one head levels off below ½, two heads end far lower",
)
ax.legend()
plt.show()

# %% [markdown]
# A trained single head beats ½ because its split is not fixed: its keys read each token's content
# too, so its weights on A and B change from sequence to sequence, and carry information a fixed blend
# cannot.
#
# > **Going further:** where the ½ comes from, that claim measured, the single head forced back to a fixed split, and how often
# > two trained heads divide the labour; see [the end of the lesson](#Going-further).

# %% [markdown]
# ## 4. Heads across a whole sentence
#
# Now *every* word asks: word $t$ must output the **previous** word's content features 0–1 and the
# **next** word's features 2–3 (the first and last words, which miss a neighbour, are not scored).
# Each token is its 4 content features followed by the sinusoidal positional encoding of lesson 01
# (12 columns, so `d_model = 16` and two heads of `d_k = 8`). The paper *adds* the encoding to the
# embedding (section 3.5); we concatenate it, so that content and position stay in separate columns. Lesson 02 showed that $PE_{t+k}$ is a
# fixed rotation of $PE_t$, so a linear $W^Q$ can turn "I am at $t$" into "I look for $t - 1$".

# %% tags=["nbval-ignore-output"]
sentence = "the big dog sees a red cat near the old tree".split()
T_s, d_pe = len(sentence), 12
PE = sinusoidal_encoding(T_s, d_pe)  # (T_s, d_pe)
neighbour_rows = slice(1, T_s - 1)  # words with a neighbour on each side


def make_neighbours(n, generator):
    """n sequences (n, T_s, 4 + d_pe): random content then PE; targets (n, T_s - 2, 4)."""
    content = torch.randn(n, T_s, 4, generator=generator)  # (n, T_s, 4)
    x = torch.cat([content, PE.expand(n, T_s, d_pe)], dim=-1)  # (n, T_s, 16)
    target = torch.cat([content[:, :-2, :2], content[:, 2:, 2:]], dim=-1)  # (n, T_s - 2, 4): previous, next
    return x, target


x_nb, y_nb = make_neighbours(1000, torch.Generator().manual_seed(2))  # held out
nb_seeds = range(5)
nb_runs = {
    h: [train_heads(make_neighbours, neighbour_rows, h, seed, steps=300, batch=64)[0] for seed in nb_seeds]
    for h in (1, 2)
}
nb_errors = {h: [heldout_error(m, x_nb, y_nb, neighbour_rows) for m in nb_runs[h]] for h in (1, 2)}
for h in (1, 2):
    e = np.array(nb_errors[h])
    print(
        f"{h} head(s): held-out error mean {e.mean():.4f}, min {e.min():.4f}, max {e.max():.4f} "
        f"over {len(e)} initialisations"
    )

# %% [markdown]
# How much weight each head puts on the previous and on the next word, averaged over the scored
# words of the held-out sentences (the full table per head is in `nb_split`):


# %% tags=["nbval-ignore-output"]
def neighbour_weights(model):
    """Mean weight on the previous and on the next word, per head: (num_heads, 2)."""
    with torch.no_grad():
        w = model(x_nb, x_nb, x_nb)[1].mean(0)  # (num_heads, T_s, T_s)
    t = torch.arange(1, T_s - 1)  # (T_s - 2,)
    return torch.stack([w[:, t, t - 1].mean(-1), w[:, t, t + 1].mean(-1)], dim=-1)


nb_split = {h: [neighbour_weights(m) for m in nb_runs[h]] for h in (1, 2)}
prev, nxt = ([t[:, side].max().item() for t in nb_split[2]] for side in (0, 1))  # the most either head gives
print(
    f"2 heads, 5 initialisations: the most weight a head puts on the previous word {min(prev):.2f} "
    f"to {max(prev):.2f}, on the next word {min(nxt):.2f} to {max(nxt):.2f}"
)
picks = ["previous" if t[0, 0] > t[0, 1] else "next" for t in nb_split[1]]  # the side each single head favours
print(
    f"1 head: reads mostly the previous word in {picks.count('previous')} of 5 initialisations, "
    f"the next word in {picks.count('next')} of 5"
)

# %% tags=["hide-input"]
assert all(e < 0.01 for e in nb_errors[2]) and all(0.45 < e < 0.55 for e in nb_errors[1])
assert all(
    ((t[:, 0] > 0.9) & (t[:, 1] < 0.05)).any() and ((t[:, 1] > 0.9) & (t[:, 0] < 0.05)).any() for t in nb_split[2]
)
assert all((t[0, 0] > 0.9 and t[0, 1] < 0.05) or (t[0, 1] > 0.9 and t[0, 0] < 0.05) for t in nb_split[1])
print("✓ in all 5 initialisations, one of the two heads reads the previous word and the other the next word")
print("✓ a single head picks one neighbour, and misses half of the target")

# %% tags=["hide-input", "nbval-ignore-output"]
other_weight, feature_error = [], []  # per single head: weight on the neighbour it does not read; error per feature
for m, t_avg in zip(nb_runs[1], nb_split[1]):
    with torch.no_grad():
        out1, w1 = m(x_nb, x_nb, x_nb)  # (n, T_s, 16), (n, 1, T_s, T_s)
    w1, out1 = w1[:, 0], out1[:, neighbour_rows, :4]  # (n, T_s, T_s), (n, T_s - 2, 4)
    rows_nb = torch.arange(1, T_s - 1)  # (T_s - 2,)
    reads_prev = bool(t_avg[0, 0] > t_avg[0, 1])
    other_weight.append(w1[:, rows_nb, rows_nb + (1 if reads_prev else -1)].max().item())
    err = ((out1 - y_nb) ** 2).mean((0, 1))  # (4,) per target feature
    feature_error.append((err[:2] if reads_prev else err[2:]).tolist() + (err[2:] if reads_prev else err[:2]).tolist())
feature_error = np.array(feature_error)  # (5, 4): read neighbour's two features, then the other's
print(f"1 head, 5 initialisations: largest weight on the neighbour it does not read {max(other_weight):.1e}")
print(
    f"error on the read neighbour's features {feature_error[:, :2].min():.4f} to {feature_error[:, :2].max():.4f}, "
    f"on the other's {feature_error[:, 2:].min():.2f} to {feature_error[:, 2:].max():.2f}"
)

# %% tags=["hide-input"]
assert max(other_weight) < 1e-3
assert feature_error[:, :2].max() < 0.01 and np.all(np.abs(feature_error[:, 2:] - 1) < 0.05)
print("✓ in all 5 initialisations the single head gives the neighbour it does not read a weight below 0.001")
print("  in every held-out sentence: error about 0 on the read neighbour's features, about 1 on the other's")

# %% [markdown]
# A single head reads one neighbour sharply and misses the other: a fixed split with $w = 1$, whose
# error is the ½ of section 3. Section 3's way past ½ (weights on A *and* B that vary with content) is
# not taken: the unread neighbour gets almost no weight in any sentence (above), so its features cost their
# full variance. Why training picks one neighbour here, we have not measured. Here are the trained two heads on our sentence (each word gets a
# random 4-number embedding, the same for both "the"s):

# %%
embedding = {
    word: torch.randn(4, generator=torch.Generator().manual_seed(10 + i))
    for i, word in enumerate(sorted(set(sentence)))
}  # a random (4,) vector per word
x_sentence = torch.cat([torch.stack([embedding[w] for w in sentence]), PE], dim=-1).unsqueeze(0)  # (1, T_s, 16)
with torch.no_grad():
    w_sentence = nb_runs[2][0](x_sentence, x_sentence, x_sentence)[1][0].numpy()  # (2, T_s, T_s)
fig = plot_head_grid(w_sentence, tokens=sentence)
fig.suptitle("Each head reads one neighbour: one the word before, the other the word after")
plt.show()

# %% tags=["hide-input"]
rows_s = np.arange(1, T_s - 1)  # the scored words
argmax_s = w_sentence.argmax(-1)[:, rows_s]  # (2, T_s - 2): each head's most-attended key per scored word
offsets = sorted(tuple((a - rows_s).tolist()) for a in argmax_s)  # per head: key - query of the largest weight
assert offsets == [(-1,) * len(rows_s), (1,) * len(rows_s)]
print(f"✓ on all {len(rows_s)} scored words, one head's largest weight is the word before, the other's the word after")

# %% [markdown]
# **Predict.** PyTorch's `nn.MultiheadAttention` returns the *average* of the heads' weights by default
# (`average_attn_weights=True`). On this sentence, what weight does the average give each scored word's
# previous word?

# %%
my_guess_average = None  # your answer: a number between 0 and 1

# %% tags=["nbval-ignore-output"]
t = np.arange(1, T_s - 1)
average = w_sentence.mean(0)  # (T_s, T_s)
print("average over heads, weight on previous / next word, per scored word:")
print(np.round(average[t, t - 1], 2), "\n", np.round(average[t, t + 1], 2))

# %% tags=["hide-input"]
assert np.all(np.abs(average[t, t - 1] - check.predict_average_weight.reference) < 0.1)
assert np.all(np.abs(average[t, t + 1] - 0.5) < 0.1)
assert np.all(w_sentence.max(axis=0)[t, t - 1] > 0.8) and np.all(w_sentence.max(axis=0)[t, t + 1] > 0.8)
print("✓ on every scored word the head average gives each neighbour about ½, while one head gives it most")

# %%
check.predict_average_weight(my_guess_average)

# %% [markdown]
# Two faint diagonals: the average looks like one unsure head, while each real head is sharp. The paper
# (section 4) also saw heads take on different jobs in its translation model: "Not only do individual
# attention heads clearly learn to perform different tasks, many appear to exhibit behavior related to the
# syntactic and semantic structure of the sentences." Its appendix (Figures 3–5) shows examples.
#
# ### Head explorer
#
# The live widget below lets you pick a head (the static figure shows head 0 beside the average).
# The first and last rows were not trained, so only the scored words' rows mean something.

# %%
fig = plot_head_attention(w_sentence, head=0, tokens=sentence)
fig.suptitle("One head: one sharp diagonal; the average over heads: two faint ones")
plt.show()

# %% tags=["nbval-ignore-output"]
head_explorer(w_sentence, tokens=sentence)

# %% [markdown]
# ## Summary
#
# * Multi-head attention = project with $W^Q, W^K, W^V$ → split the `d_model` features into `h`
#   heads of `d_k = d_model / h` → attend in each head, scaled by $\sqrt{d_k}$ → concatenate → $W^O$.
#   With copied weights it equals `utils.multihead.MultiHeadAttention` and `torch.nn.MultiheadAttention`
#   on every query with at least one key to attend to (a query with none: [Going further](#Going-further)).
# * It has the same parameters ($4 d_{model}^2 + 4 d_{model}$) and matrix-product multiply–adds as one
#   head of width `d_model`; the softmax work and the `(batch, h, T, T)` weights grow `h`-fold.
# * What it buys is `h` independent softmaxes. A fixed split between two places scores ½ on the
#   two-places task, whatever the split; two heads, two different blends, solve it: the "resolution"
#   of the paper's section 2 and the COMP7607 slides. A trained single head varies its split with
#   content and beats ½, but stayed far from solving the task in all 5 runs (a measurement, not a proof).
#   On a sentence, two heads become "previous word" and "next word". The paper's base model
#   uses $h = 8$, $d_k = d_v = 64$.
# * PyTorch averages the heads' weights by default, which can make two sharp heads look like one
#   unsure one; `utils` keeps per-head weights.
# * Boolean masks: `True` = may attend in `utils` and `F.scaled_dot_product_attention`;
#   `True` = *not allowed* in `nn.MultiheadAttention` and the `nn.Transformer*` layers.
#
# ## Exercises
#
# Each checker prints ✓, what is wrong, or "not attempted yet". Stuck? Call
# `check.<name>.hint()`; to see a reference answer, `check.<name>.solution()`. Each cell uses only its own
# arguments. Exercises 1, 3 and 4 take the lesson to cases it did not show.

# %% tags=["hide-input"]
from utils.course.exercises import lesson05 as check

# %% [markdown]
# **Exercise 1. Each head's share of the output.** Section 1 concatenated the heads, then applied $W^O$.
# The same output is a sum of one term per head, $\sum_i \mathrm{head}_i\, W^O_i$, each
# $W^O_i$ a `d_k × d_model` block of $W^O$: which block? Write `my_head_contributions(heads, W_o)`, with
# `heads` of shape `(batch, num_heads, T, d_k)` as in section 1 and `W_o` of shape `(d_model, d_model)`
# applied as `concat @ W_o`. Return the terms, shape `(batch, num_heads, T, d_model)`, term `i` computed
# from head `i` alone, so that their sum over the head axis is `merge_heads(heads) @ W_o`.


# %%
def my_head_contributions(heads, W_o):
    raise NotImplementedError


check.head_contributions(my_head_contributions)

# %% [markdown]
# **Exercise 2. Per-head matrices from PyTorch.** `nn.MultiheadAttention` (with its default
# `kdim = vdim = embed_dim`) keeps $W^Q, W^K, W^V$ stacked in one `in_proj_weight` of shape `(3·d_model, d_model)`, each in `nn.Linear`'s layout (section 1).
# Write `my_split_in_proj(in_proj_weight, num_heads)` returning the per-head matrices
# $W^Q_i, W^K_i, W^V_i$ of the formula at the top as three tensors `(W_Q, W_K, W_V)`, each of shape
# `(num_heads, d_model, d_k)`, such that head `i`'s queries are `x @ W_Q[i]` (plus head `i`'s slice
# of `in_proj_bias`), and likewise for keys and values.


# %%
def my_split_in_proj(in_proj_weight, num_heads):
    raise NotImplementedError


check.split_in_proj(my_split_in_proj)

# %% [markdown]
# **Exercise 3. Sharing keys and values.** A decoder that generates one token at a time can keep the keys
# and values of all earlier tokens (a *key-value cache*), so as not to recompute them. Multi-query
# attention (Shazeer, 2019) lets all query heads share a single key head and value head; grouped-query
# attention (Ainslie et al., 2023) has `num_kv_heads` key-value heads, each shared by
# `num_heads / num_kv_heads` query heads. Every query head keeps its own queries, every head (query or
# key-value) is `d_k = d_model / num_heads` wide, and the heads' outputs are concatenated and mixed by
# $W^O$ as before. Write `my_gqa_counts(d_model, num_heads, num_kv_heads, T)` returning
# `(parameters, cache)`: the parameters of the four projections with their biases, and how many numbers
# the key-value cache of one layer holds for one sequence of `T` tokens. (`num_kv_heads = num_heads` is
# the multi-head attention of this lesson; `num_kv_heads = 1` is multi-query attention.)


# %%
def my_gqa_counts(d_model, num_heads, num_kv_heads, T):
    raise NotImplementedError


check.gqa_counts(my_gqa_counts)

# %% [markdown]
# **Exercise 4. The cost of cross-attention.** In a decoder, the queries come from the `T_q` target tokens
# and the keys and values from the `T_k` source tokens (lesson 06). Write
# `my_cross_attention_macs(batch, T_q, T_k, d_model, num_heads)`: the multiply–adds of the matrix products
# in one forward pass of `MultiHeadAttention(d_model, num_heads)` called as `mha(target, source, source)`,
# `target` of shape `(batch, T_q, d_model)` and `source` `(batch, T_k, d_model)`. (Section 2 counted
# `T_q = T_k`.)


# %%
def my_cross_attention_macs(batch, T_q, T_k, d_model, num_heads):
    raise NotImplementedError


check.cross_attention_macs(my_cross_attention_macs)

# %% [markdown]
# ## Going further
#
# ### Section 1's comparisons in detail
#
# `utils.multihead.MultiHeadAttention` stores each matrix as an `nn.Linear`, whose `weight` is the
# transpose of our `W` (`x @ W == x @ linear.weight.T`): section 1 copied each `W.T` in, with zero biases.
# PyTorch's `nn.MultiheadAttention` keeps $W^Q, W^K, W^V$ stacked in one `in_proj_weight`
# (3·d_model × d_model) and $W^O$ in `out_proj`; `MultiHeadAttention.from_torch` copies them. PyTorch
# returns the weights *averaged over heads* by default; ours keeps every head. And `nn.MultiheadAttention`
# reads a boolean mask as `True` = **not** allowed, the opposite of ours, so section 1 inverted the masks on
# the way in. PyTorch starts both biases at 0; section 1 gave them random values, so that leaving them out
# shows. Nothing else is hidden in `nn.MultiheadAttention` with its defaults (no `add_bias_kv`,
# `add_zero_attn` or dropout): the recipe with PyTorch's matrices and biases, and the √d_k of section 1,
# gives PyTorch's output.

# %%
print("ours", tuple(ours.shape), " per-head weights", tuple(ours_weights.shape))
print("torch weights", tuple(ref_avg.shape), " ours", tuple(got_heads.shape))

# %% tags=["hide-input"]
assert (got_heads.mean(dim=1) - ref_avg).abs().max() < 1e-6
print("✓ torch's head-averaged weights are the mean over heads of our per-head weights")
h_out, _ = scaled_dot_product_attention(q, k, v, mask.unsqueeze(1))  # (batch, num_heads, T, d_k)
assert (merge_heads(h_out) @ W_o_t.T + b_o - ref).abs().max() < 1e-6
q0, k0, v0 = (split_heads(x @ W_t.T, num_heads) for W_t in (Wq_t, Wk_t, Wv_t))  # the same, without biases
h0, _ = scaled_dot_product_attention(q0, k0, v0, mask.unsqueeze(1))  # (batch, num_heads, T, d_k)
miss = (merge_heads(h0) @ W_o_t.T - ref).abs().max().item()
assert (torch_mha.in_proj_bias != 0).all() and (torch_mha.out_proj.bias != 0).all() and miss > 0.1
print("✓ project / split / attend / concat / W_o with torch's weights and biases gives torch's output")
print(f"  (the biases count: they are nonzero, and the recipe without them misses by up to {miss:.2f})")

# %% [markdown]
# ### Section 1's equality at five sizes
#
# The same equality at five sizes, section 1's and four more,
# `(d_model, h, T_q, T_k)` from one head to eight, with cross-attention (queries from one sequence, keys
# and values from another, of a different length in three of the five),
# a padded key, and both of our paths (`need_weights=True` and `False`):

# %% tags=["nbval-ignore-output"]
sizes = [(12, 3, 5, 5), (8, 1, 4, 7), (16, 4, 6, 3), (32, 8, 9, 9), (6, 2, 1, 5)]  # (d_model, h, T_q, T_k)
worst = []
for seed, (d_s, h_s, T_q, T_k) in enumerate(sizes):
    torch.manual_seed(seed)
    torch_s = nn.MultiheadAttention(d_s, h_s, batch_first=True).eval()
    with torch.no_grad():  # random biases, as in section 1
        torch_s.in_proj_bias.normal_()
        torch_s.out_proj.bias.normal_()
    copy_s = MultiHeadAttention.from_torch(torch_s).eval()
    q_in, kv_in = torch.randn(2, T_q, d_s), torch.randn(2, T_k, d_s)  # (2, T_q, d_s), (2, T_k, d_s)
    kv_tokens = torch.randint(1, 5, (2, T_k))  # (2, T_k)
    kv_tokens[0, -1] = 0  # the last key of sequence 0 is padding
    ref_s, _ = torch_s(q_in, kv_in, kv_in, key_padding_mask=kv_tokens == 0)  # (2, T_q, d_s)
    for need in (True, False):
        got_s, _ = copy_s(q_in, kv_in, kv_in, mask=padding_mask(kv_tokens, 0), need_weights=need)  # (2, T_q, d_s)
        worst.append((got_s - ref_s).abs().max().item())
print(f"max |utils - torch| over 5 sizes and both paths: {min(worst):.1e} to {max(worst):.1e}")

# %% tags=["hide-input"]
assert len(worst) == 10 and max(worst) < 1e-6
print("✓ equal to torch.nn.MultiheadAttention in 5 of 5 sizes, with cross-attention and padding, on both paths")

# %% [markdown]
# ### Where the ½ of a fixed split comes from
#
# Section 3's fixed split gives A the weight $w$ and B $1-w$ in every sequence. Its values can be any
# linear map of the content (the combined $W^V W^O$), so output feature 0 is $m \cdot (wA + (1-w)B)$ for
# some vector $m$ (weight on the other tokens would only add their unrelated content). A's and B's features are independent with variance 1, so regressing $A_0$ on $wA_0 + (1-w)B_0$
# explains the share $w^2 / (w^2 + (1-w)^2)$ of its variance: the best $m$ leaves a mean squared error of
# $(1-w)^2 / (w^2 + (1-w)^2)$ on features 0–1 (the part of B that leaks in) and $w^2 / (w^2 + (1-w)^2)$
# on features 2–3. Compare each feature's error in section 3's fits, as a share of its sample
# variance, with these formulas:

# %% tags=["nbval-ignore-output"]
unexplained = {w: errs / y_big[:, 0].var(0, correction=0) for w, errs in per_feature.items()}  # share of variance
print("w = 0.75, share of each target feature's variance left unexplained:", unexplained[0.75].numpy().round(3))

# %% tags=["hide-input"]
for w, share in unexplained.items():
    leak = (1 - w) ** 2 / (w**2 + (1 - w) ** 2)  # features 0-1: the share of B in the blend's variance
    assert torch.allclose(share, torch.tensor([leak, leak, 1 - leak, 1 - leak]), atol=0.02), w
print("✓ for w = 0.5, 0.6, 0.75, 0.9 and 1.0 each feature keeps the formula's share of its variance:")
print("  (1-w)²/(w²+(1-w)²) on features 0-1, w²/(w²+(1-w)²) on features 2-3")

# %% [markdown]
# ### Why one trained head beats ½
#
# Section 3's trained single head scores below the ½ of any fixed split. Its query is the same in every
# sequence, but its keys $x W^K$ read every token's *content* as well as its tag, so how much weight A and
# B receive depends on what they contain, and the softmax is not linear. Measure it: the weight the asking
# token gives A (and B) changes from one held-out sequence to the next.

# %% tags=["nbval-ignore-output"]
test_rows = torch.arange(len(x_test))  # (2000,)
spread = []
for seed, (model, _) in zip(seeds, runs[1]):
    with torch.no_grad():
        w_asking = model(x_test, x_test, x_test)[1][:, 0, -1]  # (2000, T): the asking row
    on_a = w_asking[test_rows, x_test[..., 4].argmax(-1)]  # (2000,)
    on_b = w_asking[test_rows, x_test[..., 5].argmax(-1)]  # (2000,)
    spread.append((on_a.max() - on_a.min()).item())
    spread.append((on_b.max() - on_b.min()).item())
    print(
        f"initialisation {seed}: weight on A from {on_a.min():.3f} to {on_a.max():.3f} (mean {on_a.mean():.3f}); "
        f"on B from {on_b.min():.3f} to {on_b.max():.3f} (mean {on_b.mean():.3f})"
    )

# %% tags=["hide-input"]
assert all(r > 0.2 for r in spread)
print(
    f"✓ in all {len(seeds)} initialisations, the single head's weight on A (and on B) varies from sequence to sequence"
)

# %% [markdown]
# Take that route away: set the content rows of $W^K$ to zero (`W_k.weight[:, :4]` in the
# `nn.Linear` layout), so the weights depend only on the tags. The split is fixed again, and the
# same trained heads fall back to an error of at least ½.


# %% tags=["nbval-ignore-output"]
def without_content_in_keys(model):
    """A copy of `model` whose keys ignore content features 0-3: its attention weights then depend only on the tags."""
    copy = MultiHeadAttention(model.d_model, model.num_heads)
    copy.load_state_dict(model.state_dict())
    with torch.no_grad():
        copy.W_k.weight[:, :4] = 0.0
    return copy


cut = [heldout_error(without_content_in_keys(model), x_test, y_test, ask_rows) for model, _ in runs[1]]
print("one head, keys without content:", np.round(cut, 3), " (trained as is:", np.round(errors[1], 3), ")")
cut_spread = []  # max - min over the held-out sequences of the weight on A, then on B
for model, _ in runs[1]:
    with torch.no_grad():
        w_asking = without_content_in_keys(model)(x_test, x_test, x_test)[1][:, 0, -1]  # (2000, T)
    for tag in (4, 5):
        on_tag = w_asking[test_rows, x_test[..., tag].argmax(-1)]  # (2000,)
        cut_spread.append((on_tag.max() - on_tag.min()).item())
print("spread of the weight on A and on B over the held-out sequences:", np.round(cut_spread, 4))

# %% tags=["hide-input"]
assert min(spread) > 0.2 and max(cut_spread) < 1e-4
assert all(e > 0.5 for e in cut)
print(
    f"✓ in all {len(cut)} initialisations, once content is removed from its keys the single head gives A the same "
    "weight in every held-out sequence, and B too (before the cut both varied), and it scores above ½"
)

# %% [markdown]
# With two heads, training usually finds the division of labour we wrote by hand: each head's
# asking row goes to a different tagged token. Count the initialisations where one head puts more
# than 0.8 of the weight (on average over the held-out set) on A and the other more than 0.8 on B,
# beside each one's held-out error from section 3. In any initialisation here where they do not (the
# count is printed below), the heads still read two different blends: the error falls below 0.05,
# though not to the 0 of section 3's two fixed splits:


# %% tags=["nbval-ignore-output"]
def tag_weights(model):
    """Mean weight of the asking token on A and on B, per head: (num_heads, 2)."""
    with torch.no_grad():
        w = model(x_test, x_test, x_test)[1][:, :, -1]  # (2000, num_heads, T)
    on_a = w[test_rows, :, x_test[..., 4].argmax(-1)].mean(0)  # (num_heads,)
    on_b = w[test_rows, :, x_test[..., 5].argmax(-1)].mean(0)  # (num_heads,)
    return torch.stack([on_a, on_b], dim=-1)


def divides(t):
    """True if one head puts > 0.8 on A (< 0.2 on B) and another > 0.8 on B (< 0.2 on A)."""
    return bool(((t[:, 0] > 0.8) & (t[:, 1] < 0.2)).any() and ((t[:, 1] > 0.8) & (t[:, 0] < 0.2)).any())


split = [tag_weights(model) for model, _ in runs[2]]
for seed, t, e in zip(seeds, split, errors[2]):
    print(
        f"initialisation {seed}: weight on (A, B) head 0 {np.round(t[0].numpy(), 3)}, head 1 {np.round(t[1].numpy(), 3)};"
        f" error {e:.4f}"
    )
divided = sum(divides(t) for t in split)
print(f"the heads divide the labour in {divided} of {len(split)} initialisations")

# %% tags=["hide-input"]
assert divided >= 4  # training may differ on another machine: at least 4 is what holds here and is asserted
assert all(((t[:, 0] > 0.2) & (t[:, 1] > 0.2)).any() for t in split if not divides(t))
share_a = [t[:, 0] / t.sum(-1) for t in split]  # per head: A's share of the weight on A and B
assert all(sh.max() - sh.min() > 0.3 and e < 0.05 for sh, e, t in zip(share_a, errors[2], split) if not divides(t))
print(f"✓ in at least 4 of {len(split)} initialisations one head reads A and the other B")
print("  (in any other, a head shares its weight between A and B, the two heads' blends differ, and the error")
print("  stays below 0.05)")

# %% [markdown]
# ### Small keys: rows (B) of Table 3
#
# Section 6.2's next paragraph is about rows (B): "In Table 3
# rows (B), we observe that reducing the attention key size $d_k$ hurts model quality. This suggests that
# determining compatibility is not easy and that a more sophisticated compatibility function than dot
# product may be beneficial." Linking the two is our reading, not the paper's: 32 heads leave $d_k = 16$,
# so small keys may be part of why too many heads hurt. Others have argued as much: Bhojanapalli et al.
# (2020) find that tying the head size to $d_{model}/h$ gives each head a low-rank bottleneck, and propose
# a head size set by the sequence length, independent of $h$. From the other side, Michel et al. (2019)
# remove heads from trained models at test time and find that many can go without much loss. Table 3's
# rows do not settle it: rows (B) also lose parameters, and at $d_k = 16$ eight heads score below 32
# (section 3's table):

# %%
print(f"d_k = 16: {table3_rows_a[32][2]} BLEU with 32 heads (65M), {table3_rows_b[16][1]} with 8 heads (58M)")

# %% [markdown]
# ### Two conventions for one boolean mask
#
# Why read it: mixing up PyTorch's mask conventions often fails silently (wrong outputs, no error); a row
# left with no key gets NaN or zeros, depending on the path. Back to section 1's batch `x`, its
# `torch_mha` and its per-head `q`, `k`, `v`. PyTorch's attention functions read a boolean mask in two
# opposite ways:
#
# | API | `True` means |
# |---|---|
# | `torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=...)` | may attend (as `utils`) |
# | `torch.nn.MultiheadAttention(...)(query, key, value, attn_mask=..., key_padding_mask=...)` | **not** allowed |
# | `torch.nn.Transformer`, `TransformerEncoderLayer`, `TransformerDecoderLayer` (`src_mask`, `tgt_mask`, `src_key_padding_mask`, …) | **not** allowed, like the `nn.MultiheadAttention` inside them |
#
# Hand the same causal mask to both. Given `allowed` itself, `nn.MultiheadAttention` does the opposite of
# causal: each query sees only *later* tokens, and the last query sees nothing at all (its weights are
# NaN, and so is its output unless `need_weights=False`, which, in the torch version pinned here, returns
# what `utils` returns; lesson 04's
# Going further shows the other answers such a row gets). A float mask, *added* to the
# scores (0 where allowed, $-\infty$ where blocked), has only one reading, and both PyTorch functions
# accept it; `utils` takes boolean masks only (convert an additive mask with `mask == 0`).

# %%
batch, T, d_model = x.shape  # section 1's sizes (section 3 reused the names d_model and T)
allowed = causal_mask(T)  # (T, T) bool, True = may attend
_, w_wrong = torch_mha(x, x, x, attn_mask=allowed)  # (batch, T, T): our mask, not inverted
print("nn.MultiheadAttention given `allowed` (True = may attend) uninverted; weight > 0 in sequence 0:")
print((w_wrong[0, :-1] > 0).int())
print("last row:", w_wrong[0, -1].detach())

# %% tags=["hide-input"]
by_sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)  # (batch, num_heads, T, d_k)
by_utils, _ = scaled_dot_product_attention(q, k, v, allowed)  # (batch, num_heads, T, d_k)
by_mha, _ = torch_mha(x, x, x, attn_mask=~allowed)  # (batch, T, d_model): inverted for nn.MultiheadAttention
assert torch.allclose(by_sdpa, by_utils, atol=1e-6)
assert torch.allclose(by_mha, copy(x, x, x, mask=allowed)[0], atol=1e-6)
assert torch.all(w_wrong[:, :-1][allowed[:-1].expand(batch, -1, -1)] == 0)  # no weight where we allow it
assert torch.all(w_wrong[:, :-1][~allowed[:-1].expand(batch, -1, -1)] > 0)  # weight wherever we block
assert torch.isnan(w_wrong[:, -1]).all()  # the last query: every key blocked
assert torch.isnan(torch_mha(x, x, x, attn_mask=allowed)[0][:, -1]).all()  # need_weights=True: NaN output
no_weights, _ = torch_mha(x, x, x, attn_mask=allowed, need_weights=False)  # (batch, T, d_model)
assert torch.allclose(no_weights, copy(x, x, x, mask=~allowed)[0], atol=1e-6)  # the last query included
blocked = torch.zeros(T, T).masked_fill(~allowed, float("-inf"))  # (T, T) float mask: added to the scores
assert torch.allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=blocked), by_utils, atol=1e-6)
assert torch.allclose(torch_mha(x, x, x, attn_mask=blocked)[0], by_mha, atol=1e-6)
assert torch.allclose(scaled_dot_product_attention(q, k, v, blocked == 0)[0], by_utils, atol=1e-6)
print("✓ F.scaled_dot_product_attention(attn_mask=allowed) equals utils (True = may attend)")
print("✓ nn.MultiheadAttention(attn_mask=~allowed) equals utils; given `allowed` it blocks exactly what we allow")
print("✓ a query with every key blocked: NaN weights and output from nn.MultiheadAttention with need_weights=True,")
print("  the output of utils with need_weights=False (in this torch version)")
print("✓ the float mask gives the same in both, and utils gets it as `blocked == 0`")

# %% [markdown]
# The `nn.Transformer*` layers of lesson 06 follow `nn.MultiheadAttention`: a boolean mask with `True` =
# not allowed gives the same as the float mask.

# %% tags=["hide-input"]
encoder = nn.TransformerEncoderLayer(d_model, num_heads, dim_feedforward=16, dropout=0.0, batch_first=True)
decoder = nn.TransformerDecoderLayer(d_model, num_heads, dim_feedforward=16, dropout=0.0, batch_first=True)
assert torch.allclose(encoder(x, src_mask=~allowed), encoder(x, src_mask=blocked), atol=1e-6)
assert torch.allclose(decoder(x, x, tgt_mask=~allowed), decoder(x, x, tgt_mask=blocked), atol=1e-6)
pad_blocked = torch.zeros(batch, T).masked_fill(tokens == 0, float("-inf"))  # (batch, T) float: -inf on padding
assert torch.allclose(
    encoder(x, src_key_padding_mask=tokens == 0), encoder(x, src_key_padding_mask=pad_blocked), atol=1e-6
)
print("✓ nn.TransformerEncoderLayer and DecoderLayer: a bool mask (True = not allowed) equals the float mask")

# %% [markdown]
# ## Sources
#
# * Vaswani et al., 2017, "Attention Is All You Need", NeurIPS — section 3.2.2 (multi-head
#   attention: the formula, $h = 8$, $d_k = d_v = d_{model}/h = 64$, the total cost "similar to that
#   of single-head attention with full dimensionality", "With a single attention head, averaging
#   inhibits this."); section 2 ("reduced effective resolution", counteracted by multi-head attention);
#   Table 3, base row and rows (A) and (B), and section 6.2 (BLEU for 1 to 32 heads, and the
#   paper's reading of rows (B)); section 4 (individual heads "learn to perform different tasks").
# * Reading notes on the paper (June 2020) — "Multi-head self-attention: split into parallel heads and
#   embed into diff representation space", the split of section 1.
# * Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong) — multiple heads
#   "Improve the “resolution” of the attention mechanism."
# * Slide deck "Transformers / Attention is all you need" (the YOUR CAT IS A LOVELY CAT example) —
#   the multi-head formula, printed with $W^Q$ and $W^V$ missing their subscript $i$.
# * Shazeer, 2019, "Fast Transformer Decoding: One Write-Head is All You Need" — multi-query attention
#   (exercise 3).
# * Ainslie et al., 2023, "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
#   Checkpoints" — grouped-query attention (exercise 3).
# * Bhojanapalli et al., 2020, "Low-Rank Bottleneck in Multi-head Attention Models", ICML — small keys
#   (Going further).
# * Michel, Levy and Neubig, 2019, "Are Sixteen Heads Really Better than One?", NeurIPS — head
#   pruning (Going further).
# * PyTorch documentation of `torch.nn.MultiheadAttention`, `torch.nn.Transformer` and
#   `torch.nn.functional.scaled_dot_product_attention` — their boolean-mask conventions.
