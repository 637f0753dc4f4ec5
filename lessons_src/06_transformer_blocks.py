# %% [markdown]
# # 06 · Transformer blocks
#
# Multi-head attention is one of two sublayers. An **encoder layer** is
#
# $$x \;\to\; \mathrm{LayerNorm}(x + \mathrm{MultiHead}(x, x, x)) \;\to\; \mathrm{LayerNorm}(\,\cdot + \mathrm{FFN}(\cdot)\,),$$
#
# and a **decoder layer** adds a third sublayer in the middle that attends to the encoder's output.
#
# **Goals.** You will
# 1. build the position-wise feed-forward network, which treats every position alike;
# 2. write layer normalisation from its formula (gain γ, bias β), check it against `torch.nn.LayerNorm`,
#    and see why batch norm's axis, shared across the batch, does not suit sentences;
# 3. compare post-norm (the paper) with pre-norm (most code today) in deep stacks;
# 4. meet the three kinds of attention and assemble encoder and decoder layers equal to PyTorch's.
#
# **Prerequisites.** 04 (masks; `True` = may attend) and 05 (multi-head attention).

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

# %% [markdown]
# The usual imports; one thread keeps the printed digits identical from run to run on one computer.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from utils.blocks import DecoderLayer, Encoder, EncoderLayer, FeedForward
from utils.course.exercises import lesson06 as check
from utils.experiments.layer_costs import saved_tensors
from utils.experiments.norm_probes import (
    copy_task_model,
    gap_findings,
    gradient_gap,
    last_layer_norm_inputs,
    layer_grad_norms,
    load_warmup_seeds,
    probe_stacks,
    stream_mean_and_spread,
    train_copy_task,
)
from utils.figures.norm_probes import VARIANT_STYLE, plot_gradient_gap, plot_loss_curves, plot_norm_axes
from utils.masks import causal_mask, padding_mask
from utils.multihead import MultiHeadAttention

torch.set_num_threads(1)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. The position-wise feed-forward network
#
# $$\mathrm{FFN}(x) = \max(0,\; x W_1 + b_1)\, W_2 + b_2,$$
#
# a two-layer MLP (`d_model → d_ff → d_model`; the paper uses 512 → 2048 → 512) applied to every
# position **separately, with the same weights**, though "they use different parameters from layer to
# layer" (section 3.3). Attention mixes positions; the FFN never does. The paper also calls it "two
# convolutions with kernel size 1".

# %%
torch.manual_seed(0)
d_model, d_ff, T = 8, 32, 5
ffn = FeedForward(d_model, d_ff)
x = torch.randn(2, T, d_model)  # (batch, T, d_model)
W_1, b_1 = ffn.linear1.weight.T, ffn.linear1.bias  # (d_model, d_ff), (d_ff,)
W_2, b_2 = ffn.linear2.weight.T, ffn.linear2.bias  # (d_ff, d_model), (d_model,)
by_hand = torch.relu(x @ W_1 + b_1) @ W_2 + b_2  # (batch, T, d_model)
assert torch.allclose(by_hand, ffn(x), atol=1e-6)
one_at_a_time = torch.stack([ffn(x[:, t]) for t in range(T)], dim=1)  # (batch, T, d_model)
assert torch.allclose(one_at_a_time, ffn(x), atol=1e-6)
hidden = torch.relu(F.conv1d(x.mT, ffn.linear1.weight[..., None], b_1))  # (batch, d_ff, T): kernel size 1
as_convolutions = F.conv1d(hidden, ffn.linear2.weight[..., None], b_2).mT  # (batch, T, d_model)
assert torch.allclose(as_convolutions, ffn(x), atol=1e-6)
print("✓ FeedForward computes max(0, x W_1 + b_1) W_2 + b_2")
print("✓ applied one position at a time, or as two kernel-1 convolutions, it gives the same")

# %% [markdown]
# So it **commutes with permutations**: shuffling the positions before or after the FFN gives the
# same result.

# %% tags=["hide-input"]
perm = torch.tensor([3, 0, 4, 1, 2])  # (T,): a reordering of the positions
assert torch.allclose(ffn(x[:, perm]), ffn(x)[:, perm], atol=1e-6)
print("✓ shuffling the positions before or after the FFN gives the same result")

# %% [markdown]
# **Predict, then check.** Shuffle the input of lesson 05's multi-head self-attention (`d_model = 16`,
# 4 heads, 5 seeds) with the same `perm`, once without a mask and once with a causal mask (lesson 04).
# Which one's output is *not* just the shuffled output: `"without mask"`, `"with causal mask"`,
# `"both"` or `"neither"`?

# %%
my_guess_order_aware = None  # your answer: "without mask", "with causal mask", "both" or "neither"

# %% tags=["nbval-ignore-output"]
shuffle_gap = {"without mask": [], "with causal mask": []}  # max |change| per seed
for seed in range(5):
    torch.manual_seed(seed)
    mha_p = MultiHeadAttention(16, 4)  # d_model = 16, num_heads = 4
    x_p = torch.randn(2, T, 16)  # (batch, T, d_model)
    for name, mask in [("without mask", None), ("with causal mask", causal_mask(T))]:
        shuffled_first = mha_p(x_p[:, perm], x_p[:, perm], x_p[:, perm], mask)[0]  # (batch, T, d_model)
        shuffled_after = mha_p(x_p, x_p, x_p, mask)[0][:, perm]  # (batch, T, d_model)
        shuffle_gap[name].append((shuffled_first - shuffled_after).abs().max().item())
for name, gaps in shuffle_gap.items():
    shuffled = sum(g < 1e-5 for g in gaps)  # seeds where the output is just the shuffled output
    print(f"attention {name:16s}: output just shuffled in {shuffled} of 5 seeds")

# %% tags=["hide-input"]
assert max(shuffle_gap["without mask"]) < 1e-5 and min(shuffle_gap["with causal mask"]) > 0.1
order_aware = [name for name, gaps in shuffle_gap.items() if min(gaps) > 0.1]
assert order_aware == [check.predict_order_aware.reference]
print("✓ in 5 of 5 seeds, shuffling commutes with attention without a mask, not with a causal mask")

# %% [markdown]
# Attention without a mask is permutation *equivariant* (lesson 03; a padding mask would have to be
# shuffled with the tokens). The causal mask itself carries position: position $i$ attends to
# positions $0 \dots i$ only. Your guess:

# %%
check.predict_order_aware(my_guess_order_aware)

# %% [markdown]
# ## 2. Layer normalisation
#
# The COMP7607 slides (after Ba et al., 2016) normalise each token's vector **over its H features**:
#
# $$\mathbf h = \mathbf g \odot N(\mathbf x) + \mathbf b, \qquad N(\mathbf x) = \frac{\mathbf x - \mu}{\sigma},
# \qquad \mu = \frac1H\sum_{i=1}^H x_i, \qquad \sigma = \sqrt{\frac1H\sum_{i=1}^H (x_i-\mu)^2}.$$
#
# $\mathbf g$ (PyTorch's `weight`, the YOUR CAT deck's γ) and $\mathbf b$ (`bias`, β) are
# learned, one number per feature. Two details decide whether this matches PyTorch: σ uses the
# **biased** variance (divide by H, not H − 1), and PyTorch adds a small ε inside the square root,
# $\sqrt{\sigma^2 + \varepsilon}$ (as does the YOUR CAT deck), so a constant vector gives 0
# rather than 0/0.


# %%
def layer_norm(x, g, b, eps=1e-5):
    """LayerNorm over the last axis: g * (x - mean) / sqrt(biased variance + eps) + b."""
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1): divide by H (biased)
    return g * (x - mu) / torch.sqrt(var + eps) + b  # (..., H)


torch.manual_seed(1)
H = 6
ln = nn.LayerNorm(H)
with torch.no_grad():
    ln.weight.uniform_(0.5, 2.0)  # g: start away from 1 so the check means something
    ln.bias.uniform_(-1.0, 1.0)  # b
x = 3.0 * torch.randn(4, 7, H) + 2.0  # (batch, T, H)
ours = layer_norm(x, ln.weight, ln.bias)  # (batch, T, H)
assert torch.allclose(ours, ln(x), atol=1e-5)
print("✓ the formula gives what torch.nn.LayerNorm gives")


# %% [markdown]
# The YOUR CAT deck adds γ and β "because maybe having all values between 0 and 1 may be too
# restrictive". That is wrong: $N(\mathbf x)$ has **mean 0 and variance 1 over each token's features**
# (just under 1 with ε, far under it for a nearly constant token), so, in exact arithmetic, every token
# that is not constant has negative values.

# %% [markdown]
# ### Batch norm or layer norm: which axis?
#
# The YOUR CAT deck draws a batch of 3 items, each with 4 features (its numbers, below).
# **Batch norm** computes μ and σ² of each *feature* across the items of the batch (down the
# columns here); **layer norm** computes them for each *item* across its features (along the rows).
# In the picture, a black outline marks one group of numbers that share a μ and σ.

# %%
batch3 = torch.tensor(
    [
        [50.147, 3314.825, 8463.361, 8.021],  # item 1
        [1242.223, 688.123, 434.944, 149.442],  # item 2
        [9.370, 4606.674, 944.705, 21189.444],
    ]
)  # item 3: (items, features)
batch_normed = nn.BatchNorm1d(4, affine=False).train()(batch3)  # statistics per feature (column)
layer_normed = nn.LayerNorm(4, elementwise_affine=False)(batch3)  # statistics per item (row)
assert torch.allclose(batch_normed.mean(dim=0), torch.zeros(4), atol=1e-4)
assert torch.allclose(batch_normed.var(dim=0, unbiased=False), torch.ones(4), atol=1e-3)
assert torch.allclose(layer_normed.mean(dim=1), torch.zeros(3), atol=1e-4)
assert torch.allclose(layer_normed.var(dim=1, unbiased=False), torch.ones(3), atol=1e-3)
print("✓ batch norm gives every column (feature) mean 0 and variance 1, layer norm every row (item)")

# %%
plot_norm_axes(batch3, batch_normed, layer_normed)
plt.show()

# %% [markdown]
# ### Why layer norm suits sentences: no statistics shared across the batch
#
# In a Transformer the "items" are tokens, in a batch `(batch, T, d_model)` whose short sentences are
# padded to the longest. In **training mode**, batch norm takes a feature's statistics over every
# token of the batch.
#
# **Predict, then check.** A 3-token sentence is normalised alone, then in a batch with another
# 3-token sentence (same length, so no padding). Which normalisation gives its 3 tokens the same output
# both ways: `"layer norm"`, `"batch norm"`, `"both"` or `"neither"`? Five random pairs:

# %%
my_guess_same_alone_or_batched = None  # your answer: "layer norm", "batch norm", "both" or "neither"


# %% tags=["nbval-ignore-output"]
def batch_norm_tokens(x):
    """Batch norm over every token of the batch, per feature (what BatchNorm1d does to (batch*T, d))."""
    flat = x.reshape(-1, x.shape[-1])  # (batch * T, d_model)
    return nn.functional.batch_norm(flat, None, None, training=True).reshape(x.shape)  # (batch, T, d_model)


ln_changes, bn_changes, bn_padded_changes = [], [], []
for seed in range(5):
    torch.manual_seed(seed)
    short = torch.randn(1, 3, 4)  # (1, 3, d_model): a 3-token sentence
    mate = torch.randn(1, 3, 4)  # (1, 3, d_model): another 3-token sentence
    long = torch.randn(1, 6, 4)  # (1, 6, d_model): a 6-token sentence
    batch = torch.cat([short, mate])  # (2, 3, d_model): no padding
    padded = torch.cat([F.pad(short, (0, 0, 0, 3)), long])  # (2, 6, d_model): short padded with zeros
    ln_same = (F.layer_norm(short, (4,)) - F.layer_norm(batch, (4,))[:1]).abs().max().item()
    ln_padded = (F.layer_norm(short, (4,)) - F.layer_norm(padded, (4,))[:1, :3]).abs().max().item()
    ln_changes.append(max(ln_same, ln_padded))
    bn_changes.append((batch_norm_tokens(short) - batch_norm_tokens(batch)[:1]).abs().max().item())
    bn_padded_changes.append((batch_norm_tokens(short) - batch_norm_tokens(padded)[:1, :3]).abs().max().item())
print(
    f"batch norm: the short sentence's output moves by {min(bn_changes):.1f} to {max(bn_changes):.1f} "
    f"(max |change| per pair) next to a sentence of its length, {min(bn_padded_changes):.1f} to "
    f"{max(bn_padded_changes):.1f} when padded next to a 6-token one"
)

# %% tags=["hide-input"]
assert max(ln_changes) < 1e-6 and min(bn_changes) > 0.1 and min(bn_padded_changes) > 0.1
unchanged = [name for name, c in (("layer norm", ln_changes), ("batch norm", bn_changes)) if max(c) < 1e-6]
assert unchanged == [check.predict_same_alone_or_batched.reference]
print("✓ in 5 of 5 pairs, layer norm gives the short sentence the same output alone or batched")
print("✓ in 5 of 5 pairs, batch norm in training mode changes it, with or without padding")

# %% [markdown]
# Batch norm's output for a sentence depends on *which other sentences* share its batch and how much
# padding they bring; layer norm looks at one token at a time. Your guess:

# %%
check.predict_same_alone_or_batched(my_guess_same_alone_or_batched)

# %% [markdown]
# > **Going further:** the normalised values of random tokens, what the biased variance and ε change, what
# > γ and β can do, batch norm in evaluation mode, and the slides' reasons for LayerNorm.

# %% [markdown]
# ## 3. Residual connections, post-norm and pre-norm
#
# Each sublayer `f` (attention or FFN) is wrapped in a **residual connection** (He et al., 2016): it
# adds its input back, `x + f(x)`, so `f` only has to learn a change.
# Adding needs `f(x)` of `x`'s size: "to facilitate these residual connections", every sublayer and
# the embeddings output `d_model` = 512 numbers per position (section 3.1). The paper then
# normalises the sum, **post-norm**: `LayerNorm(x + f(x))`, as BERT and `torch.nn.Transformer` (by
# default) still do. Most recent large language models normalise the sublayer's *input* instead,
# **pre-norm**: `x + f(LayerNorm(x))` — plus one final LayerNorm after the last layer.
# *The Annotated Transformer* codes pre-norm while quoting the paper's post-norm formula. In `utils`,
# as in PyTorch, `norm_first=True` selects pre-norm.
#
# In pre-norm the input has a direct path through: with its sublayers silenced (zero output weights),
# a layer returns its input unchanged; in post-norm the sum still passes through a LayerNorm.

# %%
torch.manual_seed(3)
layer = EncoderLayer(d_model=16, num_heads=4, d_ff=64, norm_first=True).eval()
post_layer = EncoderLayer(d_model=16, num_heads=4, d_ff=64, norm_first=False).eval()
with torch.no_grad():
    for lin in (layer.self_attn.W_o, layer.ff.linear2, post_layer.self_attn.W_o, post_layer.ff.linear2):
        lin.weight.zero_()
        lin.bias.zero_()
x = 3 * torch.randn(2, 5, 16) + 1  # (batch, T, d_model)
assert torch.equal(layer(x), x)
assert torch.allclose(post_layer(x), F.layer_norm(x, (16,)), atol=1e-4) and (post_layer(x) - x).abs().max() > 1
print("✓ with both sublayers silenced, a pre-norm layer is exactly the identity (x + 0)")
print("✓ with both sublayers silenced, a post-norm layer returns LayerNorm(x)")

# %% [markdown]
# The paper also applies dropout ($P_{drop} = 0.1$, section 5.4) to each sublayer's output before the
# addition, $\mathrm{LN}(x + \mathrm{Dropout}(f(x)))$; it is off in this lesson.
#
# What changes between the two at initialisation? Measure two things on random encoder stacks
# (`d_model` = 32, 4 heads) of 6, 12, 24 and 48 layers, 5 seeds each, fed a random input of RMS 1, with the
# cross-entropy of a random linear read-out against random classes as the loss:
#
# * the **scale of the activations**: the root-mean-square (RMS) of the stream after every layer;
# * the **gradient norm per layer**: $\lVert \partial\,\mathrm{loss} / \partial\theta_\ell \rVert$ over
#   all parameters $\theta_\ell$ of layer $\ell$.
#
# `probe_stacks` measures both. Its layers all *start* as copies
# of one (equal values, not shared weights), as in `torch.nn.TransformerEncoder`.


# %%
depths, seeds = (6, 12, 24, 48), range(5)
rms, final_rms, grads = probe_stacks(depths, seeds)  # (variant, L) -> (seeds, L), (seeds,), (seeds, L)

# %% [markdown]
# Post-norm ends every layer with a LayerNorm, so the stream is pinned at RMS 1 (γ = 1, β = 0 at
# initialisation). Pre-norm never normalises the stream itself: every layer *adds* its output to it,
# so here it grows — hence the final LayerNorm (`Encoder.norm`, restoring RMS 1).

# %% tags=["nbval-ignore-output"]
for L in depths:
    pre = rms["pre-norm", L]  # (seeds, L)
    print(
        f"{L:2d} layers: pre-norm RMS before the final norm {pre[:, -1].min():.1f} to {pre[:, -1].max():.1f}; "
        f"it rises after every layer in {int((np.diff(pre, axis=1) > 0).all(1).sum())} of 5"
    )


# %% tags=["hide-input"]
def check_stream(rms, final_rms):
    """Post-norm keeps RMS 1; pre-norm's stream ends larger, more so in deeper stacks; its final norm restores 1."""
    growth = {L: rms["pre-norm", L][:, -1] / rms["pre-norm", L][:, 0] for L in depths}  # (seeds,) each
    for L in depths:
        assert np.allclose(rms["post-norm", L], 1.0, atol=1e-3)
        assert np.allclose(final_rms["pre-norm", L], 1.0, atol=1e-3) and (growth[L] > 1).all()
    assert all(growth[a].max() < growth[b].min() for a, b in zip(depths, depths[1:]))  # deeper: more


check_stream(rms, final_rms)
assert all((np.diff(rms["pre-norm", L], axis=1) > 0).all() for L in depths)
print("✓ post-norm keeps RMS 1 after every layer")
print("✓ pre-norm's RMS rises after every layer and ends larger in deeper stacks")
print("✓ pre-norm's final LayerNorm brings it back to 1")

# %% [markdown]
# **Predict, then check.** In the 24-layer stacks, which variant gives the **last** layer (next to the
# loss) the larger gradient norm: `"post-norm"`, `"pre-norm"`, or about the `"same"`?

# %%
my_guess_largest_gradient = None  # your answer: "post-norm", "pre-norm" or "same"


# %% tags=["nbval-ignore-output"]
ratio, tracks = gradient_gap(grads, rms)  # L -> post / pre last-layer gradient, and that / pre-norm's RMS
spans = ", ".join(f"{ratio[L].min():.1f}-{ratio[L].max():.1f}" for L in depths)
print(f"last-layer gradient, post-norm / pre-norm, at 6, 12, 24, 48 layers: {spans}")
print(
    f"that gap / pre-norm's stream RMS: {min(t.min() for t in tracks.values()):.2f} to {max(t.max() for t in tracks.values()):.2f}"
)


# %% tags=["hide-input"]
assert all(gap_findings(ratio, tracks).values()), gap_findings(ratio, tracks)
larger = "post-norm" if (ratio[24] > 1).all() else "pre-norm" if (ratio[24] < 1).all() else "same"
assert larger == check.predict_largest_gradient.reference
per_doubling = [np.median(ratio[b]) / np.median(ratio[a]) for a, b in zip(depths, depths[1:])]
assert all(f > 2**0.75 for f in per_doubling)  # on a log scale nearer 2 than sqrt(2)
print("✓ in every stack the last layer's gradient is larger with post-norm than with pre-norm")
print("✓ the factor grows with depth, and stays within a factor 1.5 of pre-norm's stream RMS (input of RMS 1)")
print("✓ each doubling of depth multiplies the median gap by nearer 2 than sqrt(2)")

# %% [markdown]
# Why: a LayerNorm scales the gradient reaching each token by 1/σ, that token's spread. Post-norm's
# last layer gets its gradient through its own LayerNorms, whose inputs here have RMS near 1 (so σ no
# larger); pre-norm's through the **final** LayerNorm, whose tokens each have a σ close to their own
# RMS, about the stream's, so in these stacks (PyTorch's default init) it arrives about that many times
# smaller. Your guess:

# %%
check.predict_largest_gradient(my_guess_largest_gradient)

# %% [markdown]
# The 24-layer stacks (line: median of the 5 seeds, band: min to max), and the gap at every depth:


# %%
plot_gradient_gap(grads, rms, ratio, "copied")
plt.show()

# %% [markdown]
# **Why it matters.** Xiong et al. (2020) bound these gradients at initialisation: post-norm's
# last-layer bound does not shrink with depth, pre-norm's shrinks like $1/\sqrt L$. They argue this is
# why post-norm needs the paper's learning-rate warm-up (section 5.3): "using a large learning rate on
# those gradients makes the training unstable"; their pre-norm Transformers trained without it. The
# gaps above come from copied layers, and about double with each doubling of depth.
# [Going further](#Going-further) draws the layers independently and probes warm-up on a copy task.

# %% [markdown]
# ## 4. The three kinds of attention
#
# The reading notes list three uses of the same multi-head attention (the mask column is ours, from lesson 04):
#
# | where | queries from | keys and values from | mask |
# |---|---|---|---|
# | encoder self-attention | the source | the source | padding of the source |
# | decoder masked self-attention | the target | the target | causal (and target padding) |
# | encoder–decoder cross-attention | the **decoder** | the **encoder** output ("memory") | padding of the source |
#
# Run one encoder layer on a source of 6 tokens (the last 2 are padding) and one decoder layer on a
# target of 4 tokens, and look at all three maps (averaged over the heads).

# %%
torch.manual_seed(5)
d_model, num_heads, d_ff = 16, 4, 64
encoder_layer = EncoderLayer(d_model, num_heads, d_ff).eval()
decoder_layer = DecoderLayer(d_model, num_heads, d_ff).eval()
src_tokens = torch.tensor([[7, 3, 9, 4, 0, 0]])  # (1, T_src), 0 = padding
src = torch.randn(1, 6, d_model)  # (1, T_src, d_model): embedded source
tgt = torch.randn(1, 4, d_model)  # (1, T_tgt, d_model): embedded target so far
src_mask = padding_mask(src_tokens, 0)  # (1, 1, T_src)
memory = encoder_layer(src, mask=src_mask)  # (1, T_src, d_model)
out = decoder_layer(tgt, memory, tgt_mask=causal_mask(4), memory_mask=src_mask)  # (1, T_tgt, d_model)
maps = {
    "encoder self-attention": encoder_layer.self_attn_weights,  # (1, h, T_src, T_src)
    "decoder masked self-attention": decoder_layer.self_attn_weights,  # (1, h, T_tgt, T_tgt)
    "cross-attention (Q: decoder, K/V: encoder)": decoder_layer.cross_attn_weights,
}  # (1, h, T_tgt, T_src)
for name, w in maps.items():
    print(f"{name:45s} weights {tuple(w.shape)}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), layout="constrained")
src_labels, tgt_labels = [f"s{i}" for i in range(4)] + ["pad", "pad"], [f"t{i}" for i in range(4)]
looks = ["the padding columns are 0", "nothing above the diagonal", "padding columns 0; rectangular"]
for ax, (name, w), (rows, cols), look in zip(
    axes, maps.items(), [(src_labels, src_labels), (tgt_labels, tgt_labels), (tgt_labels, src_labels)], looks
):
    im = ax.imshow(w[0].mean(0).detach(), cmap="viridis", vmin=0, vmax=1)
    ax.set(title=f"{name}:\n{look}", xticks=range(len(cols)), yticks=range(len(rows)), xlabel="key", ylabel="query")
    ax.set_xticklabels(cols)
    ax.set_yticklabels(rows)
fig.colorbar(im, ax=axes, shrink=0.8, label="attention weight (mean over heads)")
plt.show()

# %% [markdown]
# Each map keeps its mask's promise; cross-attention is rectangular, one row per target position, one
# column per source position.

# %% tags=["hide-input"]
enc_w, self_w, cross_w = (w[0].detach() for w in maps.values())
assert (enc_w[..., 4:] == 0).all() and (cross_w[..., 4:] == 0).all()
assert (self_w.triu(diagonal=1) == 0).all()
assert cross_w.shape == (num_heads, 4, 6)
print("✓ padding columns are 0; the decoder's self-attention is lower-triangular")
print("✓ cross-attention's map is (T_tgt, T_src)")

# %% [markdown]
# Two behavioural checks. The causal mask: changing target token j leaves the outputs before j
# unchanged and changes the rest (checked below for every j).
#
# **Predict, then check.** Now change the memory (the encoder's output) at source position 1, a real
# word, and run the decoder layer again. Of the 4 target positions, how many get a different output?

# %%
my_guess_positions_reading_source = None  # your answer: a number from 0 to 4

# %%
memory_changed = memory.clone()
memory_changed[0, 1] += 5.0  # change the memory at source position 1
out_src = decoder_layer(tgt, memory_changed, tgt_mask=causal_mask(4), memory_mask=src_mask)
reading_source = int(((out_src - out).abs().amax(dim=-1) > 1e-3).sum())  # target positions that changed
print(f"target positions whose output changed: {reading_source} of 4")

# %% tags=["hide-input"]
for j in range(4):
    tgt_changed = tgt.clone()
    tgt_changed[0, j] += 5.0  # change target token j
    out_changed = decoder_layer(tgt_changed, memory, tgt_mask=causal_mask(4), memory_mask=src_mask)
    moved = ((out_changed[0] - out[0]).abs().amax(dim=-1) > 1e-6).tolist()  # (T_tgt,): which positions changed
    assert moved == [False] * j + [True] * (4 - j)
assert reading_source == 4 == check.predict_positions_reading_source.reference
only_first = torch.zeros_like(src_mask)  # (1, 1, T_src): cross-attention may see source position 0 only
only_first[..., 0] = True
before, after = (
    decoder_layer(tgt, m, tgt_mask=causal_mask(4), memory_mask=only_first) for m in (memory, memory_changed)
)
cut_reached = int(((after - before).abs().amax(dim=-1) > 1e-3).sum())  # target positions that changed
assert cut_reached == 0
print("✓ changing target token j changes the outputs from j on, never before it")
print("✓ through cross-attention, every target position reads source position 1")
print(f"✓ with cross-attention cut to source position 0, changing source position 1 changes {cut_reached} of 4 outputs")

# %% [markdown]
# Every one: the causal mask limits which *target* positions a query sees, while cross-attention "allows
# every position in the decoder to attend over all positions in the input sequence" (section 3.2.3),
# here all but padding. Your guess:

# %%
check.predict_positions_reading_source(my_guess_positions_reading_source)

# %% [markdown]
# ## 5. Encoder and decoder layers, by hand and against PyTorch
#
# A layer is a few lines. Each `sublayer` call is a box of the paper's Figure 1 (attention or "Feed
# Forward") with its "Add & Norm" (post-norm; pre-norm moves the Norm before the box).


# %%
def sublayer(x, f, norm, norm_first):
    """Post-norm LN(x + f(x)) (the paper) or pre-norm x + f(LN(x))."""
    return x + f(norm(x)) if norm_first else norm(x + f(x))


def encoder_layer_by_hand(layer, x, mask=None):
    """Figure 1's encoder layer: self-attention ("Multi-Head Attention"), then "Feed Forward"."""
    x = sublayer(x, lambda y: layer.self_attn(y, y, y, mask)[0], layer.norm1, layer.norm_first)
    return sublayer(x, layer.ff, layer.norm2, layer.norm_first)  # (batch, T, d_model)


def decoder_layer_by_hand(layer, y, memory, tgt_mask=None, memory_mask=None):
    """Figure 1's decoder layer: "Masked Multi-Head Attention"; cross-attention, its middle "Multi-Head
    Attention" (Q from y, K and V from memory); "Feed Forward"."""
    y = sublayer(y, lambda z: layer.self_attn(z, z, z, tgt_mask)[0], layer.norm1, layer.norm_first)
    y = sublayer(y, lambda z: layer.cross_attn(z, memory, memory, memory_mask)[0], layer.norm2, layer.norm_first)
    return sublayer(y, layer.ff, layer.norm3, layer.norm_first)  # (batch, T_tgt, d_model)


# %% [markdown]
# Copy the weights of PyTorch's layers (batch-first, ReLU, no dropout) into ours with `from_torch`
# and compare by hand, `utils` and PyTorch, for both norm placements, with masks. The
# `nn.Transformer*` layers read boolean masks the other way round (lesson 05, `True` = *not
# allowed*), so they get ours negated.
#
# **Predict, then check.** The source batch below has two sentences of 6 tokens: the first has no
# padding, the second ends in 3 padding tokens. Hand torch's encoder layer *our* padding mask unchanged (`True` on the real tokens):
# of the 12 output tokens, how many still equal the correct output?

# %%
my_guess_tokens_right_with_our_mask = None  # your answer: a number from 0 to 12

# %%
torch.manual_seed(6)
src_tokens = torch.tensor([[5, 2, 8, 1, 6, 3], [4, 9, 2, 0, 0, 0]])  # (batch, T_src), 0 = padding
tgt_tokens = torch.tensor([[3, 3, 7, 1], [8, 2, 0, 0]])  # (batch, T_tgt)
src = torch.randn(2, 6, d_model)  # (batch, T_src, d_model)
tgt = torch.randn(2, 4, d_model)  # (batch, T_tgt, d_model)
src_mask = padding_mask(src_tokens, 0)  # (batch, 1, T_src)
tgt_mask = causal_mask(4) & padding_mask(tgt_tokens, 0)  # (batch, T_tgt, T_tgt)
torch_encoders = {}  # norm_first -> torch's encoder layer
for norm_first in (False, True):
    torch_enc = nn.TransformerEncoderLayer(
        d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
    ).eval()
    torch_dec = nn.TransformerDecoderLayer(
        d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
    ).eval()
    torch_encoders[norm_first] = torch_enc
    enc, dec = EncoderLayer.from_torch(torch_enc), DecoderLayer.from_torch(torch_dec)
    theirs_memory = torch_enc(src, src_key_padding_mask=src_tokens == 0)  # (batch, T_src, d_model)
    theirs_out = torch_dec(
        tgt,
        theirs_memory,
        tgt_mask=~causal_mask(4),
        tgt_key_padding_mask=tgt_tokens == 0,
        memory_key_padding_mask=src_tokens == 0,
    )  # (batch, T_tgt, d_model)
    memory = enc(src, mask=src_mask)
    by_hand = encoder_layer_by_hand(enc, src, src_mask)
    assert torch.allclose(by_hand, memory, atol=1e-6) and torch.allclose(memory, theirs_memory, atol=1e-5)
    out = dec(tgt, memory, tgt_mask=tgt_mask, memory_mask=src_mask)
    by_hand = decoder_layer_by_hand(dec, tgt, memory, tgt_mask, src_mask)
    assert torch.allclose(by_hand, out, atol=1e-6) and torch.allclose(out, theirs_out, atol=1e-5)
print("✓ post-norm and pre-norm, encoder and decoder layer: our wiring of the utils layer's parts equals utils,")
print("  and utils equals torch")

# %% [markdown]
# The same torch encoder layers, given our padding mask unchanged:

# %%
for norm_first, torch_enc in torch_encoders.items():
    right = torch_enc(src, src_key_padding_mask=src_tokens == 0)  # (batch, T_src, d_model): negated mask
    unconverted = torch_enc(src, src_key_padding_mask=src_tokens != 0)  # our convention, not negated
    tokens_right = int(((unconverted - right).abs().amax(-1) < 1e-3).sum())  # of the 2 x 6
    assert tokens_right == check.predict_tokens_right_with_our_mask.reference
    print(f"✓ norm_first={norm_first}: with our mask unchanged, {tokens_right} of 12 tokens come out right")

# %% [markdown]
# None: our mask, read as "blocked", hides every real token and lets each query see only padding — or,
# in the first sentence, nothing at all. Your guess:

# %%
check.predict_tokens_right_with_our_mask(my_guess_tokens_right_with_our_mask)

# %% [markdown]
# The paper's encoder and decoder are each "a stack of N = 6 identical layers" (section 3.1; Figure 1's
# "N×"). `utils.blocks.Encoder` / `Decoder` are `num_layers` deep copies of a layer,
# plus the final LayerNorm in the pre-norm case; `from_torch` copies a
# `torch.nn.TransformerEncoder` / `TransformerDecoder` layer by layer.

# %% tags=["hide-input"]
torch.manual_seed(7)
torch_stack = nn.TransformerEncoder(
    nn.TransformerEncoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=True),
    num_layers=3,
    norm=nn.LayerNorm(d_model),
    enable_nested_tensor=False,
).eval()
stack = Encoder.from_torch(torch_stack)
assert torch.allclose(stack(src, mask=src_mask), torch_stack(src, src_key_padding_mask=src_tokens == 0), atol=1e-5)
print(
    f"✓ a 3-layer pre-norm utils Encoder (with its final {type(stack.norm).__name__}) equals torch.nn.TransformerEncoder"
)

# %% [markdown]
# Section 1's shuffle, on whole layers (5 seeds): built from parts that each commute with it
# (attention, the FFN, LayerNorm), an encoder layer knows nothing of the order of its inputs (if its
# padding mask is shuffled with them). An encoder's sense of order has to come in through the
# positional encoding; a decoder also gets it from its causal mask.

# %% tags=["hide-input"]
layer_gap = {"encoder": [], "encoder, mask not shuffled": [], "decoder, causal mask": [], "decoder, no mask": []}
real = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])  # (batch, T): 0 = padding
for seed in range(5):
    torch.manual_seed(seed)
    enc_p, dec_p = EncoderLayer(16, 4, 64).eval(), DecoderLayer(16, 4, 64).eval()
    x_p, memory_p = torch.randn(2, 5, 16), torch.randn(2, 6, 16)  # (batch, T, d_model), (batch, T_src, d_model)
    layers = {
        "encoder": lambda x, p: enc_p(x, mask=padding_mask(real[:, p], 0)),  # the mask shuffled with x
        "encoder, mask not shuffled": lambda x, p: enc_p(x, mask=padding_mask(real, 0)),
        "decoder, causal mask": lambda x, p: dec_p(x, memory_p, tgt_mask=causal_mask(5)),
        "decoder, no mask": lambda x, p: dec_p(x, memory_p),
    }
    identity = torch.arange(5)  # (T,): no shuffle
    for name, layer_fn in layers.items():
        layer_gap[name].append((layer_fn(x_p[:, perm], perm) - layer_fn(x_p, identity)[:, perm]).abs().max().item())
assert max(layer_gap["encoder"]) < 1e-5 and max(layer_gap["decoder, no mask"]) < 1e-5
assert min(layer_gap["encoder, mask not shuffled"]) > 0.1 and min(layer_gap["decoder, causal mask"]) > 0.1
print("✓ in 5 of 5 seeds, an encoder layer commutes with shuffling; a decoder layer with its causal mask does not")

# %% [markdown]
# ## Summary
#
# * The FFN is one MLP applied to every position with the same weights. It, unmasked attention and an
#   encoder layer (its padding mask shuffled too) commute with permutations; a causal mask carries position.
# * LayerNorm normalises each token over its features, $g \odot (x-\mu)/\sqrt{\sigma^2+\varepsilon} + b$
#   with the biased variance — exactly `torch.nn.LayerNorm`. The normalised values have (in exact
#   arithmetic) mean 0 and variance $\sigma^2/(\sigma^2+\varepsilon)$ per token (≈ 1 unless the token is
#   nearly constant), not a range of $[0, 1]$. Batch norm normalises each feature over the batch,
#   so in training mode a sentence's output depends on its batch-mates.
# * Post-norm (the paper, `LN(x + f(x))`) keeps the stream at unit scale at initialisation; pre-norm
#   (`x + f(LN(x))`, most code today) lets it grow, more in deeper stacks, and needs a final LayerNorm;
#   in our stacks of 6 to 48 layers, that norm's 1/σ makes the last layer's gradient smaller than
#   post-norm's. Xiong et al. link post-norm's larger one to its need for warm-up.
# * Three attentions: encoder self-attention, masked decoder self-attention, and cross-attention with
#   queries from the decoder and keys/values from the encoder.
# * Our layers, written out by hand, equal `utils.blocks` and PyTorch's (copied weights, negated masks).
#
# ## Exercises
#
# Each checker prints ✓, what is wrong, or "not attempted yet". Stuck? Call
# `check.<name>.hint()`; to see a reference answer, `check.<name>.solution()`. Each exercise cell
# stands on its own: use only its arguments, `torch` and `math`.

# %%
import torch

from utils.course.exercises import lesson06 as check

# %% [markdown]
# **Exercise 1.** Derive the LayerNorm gradient that section 3 relied on: write
# `my_layer_norm_grad(x, grad_out, eps)`, the gradient of `(grad_out * N(x)).sum()` with respect to
# `x` (N: LayerNorm over the last axis, no g, b), without autograd; the checker compares with autograd.
# Then think: what comes out when `grad_out` is all ones, or $N(\mathbf x)$?


# %%
def my_layer_norm_grad(x, grad_out, eps):
    raise NotImplementedError


check.layer_norm_grad(my_layer_norm_grad)


# %% [markdown]
# **Exercise 2 (transfer).** Many recent language models (LLaMA among them) replace LayerNorm with
# **RMSNorm** (Zhang and Sennrich, 2019): it skips the centring and the bias, and divides each token by
# the root of its mean square,
#
# $$\mathrm{RMSNorm}(\mathbf x) = \mathbf g \odot \frac{\mathbf x}{\sqrt{\frac1H\sum_{i=1}^H x_i^2 + \varepsilon}}.$$
#
# Write `my_rms_norm(x, g, eps)` over the last axis. The checker compares it with `torch.nn.RMSNorm`.
# Then think: a token $\mathbf x + c$ (every feature shifted by the same $c$) gives the same LayerNorm
# output as $\mathbf x$; does it give the same RMSNorm output?


# %%
def my_rms_norm(x, g, eps):
    raise NotImplementedError


check.rms_norm(my_rms_norm)


# %% [markdown]
# **Exercise 3 (transfer).** How many parameters has the paper's base model? Write
# `my_parameter_count(d_model, d_ff, num_heads, num_layers, vocab_size)` for the encoder–decoder of
# this lesson: `num_layers` post-norm encoder layers and as many decoder layers (every linear map with
# its bias, every LayerNorm with its g and b), no final LayerNorm, the sinusoidal PE (no parameters),
# and **one** `vocab_size` × `d_model` matrix shared by the source embedding, the target embedding
# and the output projection (the paper, section 3.4), with no bias on the output projection. The
# checker tries the base model (Table 3: `d_model` 512, `d_ff` 2048, 8 heads, 6 layers; about 37000
# shared tokens, section 5.1) and other sizes, then compares with Table 3's 65 million. Does
# `num_heads` change the count?


# %%
def my_parameter_count(d_model, d_ff, num_heads, num_layers, vocab_size):
    raise NotImplementedError


check.parameter_count(my_parameter_count)


# %% [markdown]
# **Exercise 4 (transfer).** Some large models (GPT-J, Wang and Komatsuzaki 2021; PaLM, Chowdhery et
# al. 2022, section 2) run a pre-norm layer's two sublayers side by side instead of one after the
# other. In GPT-J both read **one** normalised copy of the layer's input, and both outputs are added to
# the residual stream. Write `my_parallel_block(x, attn, ffn, norm)`, where `attn`, `ffn` and `norm` are
# functions of a tensor of the shape of `x`. Then think: what does the FFN no longer see?


# %%
def my_parallel_block(x, attn, ffn, norm):
    raise NotImplementedError


check.parallel_block(my_parallel_block)


# %% [markdown]
# ## Going further
#
# Detours from the main line, each with its own checks: LayerNorm first, then deep stacks and warm-up,
# the paper's Table 3, and the fused attention path.

# %% [markdown]
# ### What the normalised values look like — not "between 0 and 1"
#
# The YOUR CAT deck says γ and β "introduce some fluctuations in the data, because maybe having
# all values between 0 and 1 may be too restrictive". "Fluctuations" is loose wording for a learned
# scale and shift per feature ("What γ and β can and cannot do", below); "between 0 and 1"
# is wrong: $N(\mathbf x)$ has **mean 0 and variance 1 over each token's features** (with ε,
# $\sigma^2/(\sigma^2+\varepsilon)$, just under 1 when the spread σ ≫ $\sqrt\varepsilon$) — so, in exact
# arithmetic, every token that is not constant has negative values and (without ε) at least one value
# with $|v| \ge 1$, up to $\sqrt{H-1}$ when one feature sticks out. Check it on random tokens of several
# widths H, scales and offsets, 5 seeds each, and on one float32 token whose offset, $10^7$, dwarfs its spread:


# %% tags=["nbval-ignore-output"]
def normalised(x):
    """N(x): LayerNorm without g and b (g = 1, b = 0)."""
    return F.layer_norm(x, x.shape[-1:])  # (..., H)


# per (seed, H): |mean|, |variance - exact|, share outside [0, 1], smallest over tokens of the largest |value|,
# every token has a value < 0, least spread, least variance
stats = []
for seed in range(5):
    for H_ in (4, 16, 64, 512):
        g_ = torch.Generator().manual_seed(seed)
        scale, shift = torch.rand(2, generator=g_) * torch.tensor([10.0, 20.0])  # any scale and offset
        tokens = (scale + 0.1) * torch.randn(200, H_, generator=g_) + shift  # (200 tokens, H)
        n = normalised(tokens)  # (200, H)
        var = tokens.var(-1, unbiased=False)  # (200,): sigma^2 of each token
        exact = var / (var + 1e-5)  # (200,): the variance N(x) must have
        stats.append(
            (
                n.mean(-1).abs().max().item(),
                (n.var(-1, unbiased=False) - exact).abs().max().item(),
                ((n < 0) | (n > 1)).float().mean().item(),
                n.abs().amax(-1).min().item(),
                bool((n.amin(-1) < 0).all()),
                var.sqrt().min().item(),
                n.var(-1, unbiased=False).min().item(),
            )
        )
means, variances, outside, smallest_max, all_negative, smallest_spread, least_var = map(np.array, zip(*stats))
spike = normalised(100.0 * torch.eye(512)[:1])  # (1, 512): one feature sticks out
huge_offset = normalised(torch.tensor([[1e7, 1e7, 1e7, 1e7 + 1]]))  # (1, 4): float32 rounds its mean to 1e7
print(f"share of normalised values outside [0, 1]: {outside.min():.2f} to {outside.max():.2f} over 20 runs")
print(f"smallest variance of a normalised token (with eps): {least_var.min():.3f}")
print(
    f"largest |value| of a token is at least {smallest_max.min():.2f}; a one-spike token at H = 512 "
    f"reaches {spike.max():.1f} (sqrt(511) = {np.sqrt(511):.1f})"
)
print("float32 token (1e7, 1e7, 1e7, 1e7 + 1), normalised:", huge_offset)

# %% [markdown]
# In every run more than half the values fall outside $[0, 1]$, and no token stays inside it. The float32
# token is the exception rounding makes: its mean rounds to $10^7$, so it comes out with no negative value.

# %% tags=["hide-input"]
assert means.max() < 1e-5 and variances.max() < 1e-4  # mean 0, variance sigma^2 / (sigma^2 + eps) per token
assert all_negative.all() and smallest_max.min() >= 0.99  # every token has a value < 0 and one with |v| >= 1
assert outside.min() > 0.5 and 0.9 < least_var.min() < 1  # with eps, each variance just under 1
assert abs(spike.max().item() - np.sqrt(511)) < 1e-2
assert (huge_offset >= 0).all() and huge_offset.mean() > 0.1  # float32: not constant, yet nothing negative
print("✓ over 5 seeds and 4 widths, no token's normalised values stay inside [0, 1]")
print("✓ the float32 token with offset 1e7 has no negative value: exact arithmetic's rule fails there")

# %% [markdown]
# ### Biased variance and ε
#
# *What each of section 2's two details changes, on random tokens of three widths H, 5 seeds.*
#
# With the unbiased variance (`torch.var`'s default, H − 1), the output (less b) of every token whose
# spread is well above $\sqrt\varepsilon$ is scaled by the factor $\sqrt{(H-1)/H}$; dropping ε changes
# nothing visible on ordinary tokens but turns a constant token into NaN.

# %% tags=["hide-input"]
for seed in range(5):
    for H_ in (4, 6, 64):
        torch.manual_seed(seed)
        ln_ = nn.LayerNorm(H_)
        with torch.no_grad():
            ln_.weight.uniform_(0.5, 2.0)  # g
            ln_.bias.uniform_(-1.0, 1.0)  # b
        x_ = 3.0 * torch.randn(4, 7, H_) + 2.0  # (batch, T, H)
        unbiased = ln_.weight * (x_ - x_.mean(-1, keepdim=True)) / x_.std(-1, keepdim=True) + ln_.bias  # (batch, T, H)
        factor = np.sqrt((H_ - 1) / H_)
        assert torch.allclose(unbiased - ln_.bias, factor * (ln_(x_) - ln_.bias), atol=1e-4)
        assert (unbiased - ln_(x_)).abs().max() > 0.005
        assert (layer_norm(x_, ln_.weight, ln_.bias, eps=0.0) - ln_(x_)).abs().max() < 1e-4  # ordinary tokens
        constant = torch.full((1, H_), 4.0)  # (1, H): every feature equal
        assert (
            torch.isnan(layer_norm(constant, 1.0, 0.0, eps=0.0)).all() and (layer_norm(constant, 1.0, 0.0) == 0).all()
        )
no_eps = layer_norm(torch.full((1, 6), 4.0), 1.0, 0.0, eps=0.0)  # (1, 6): a constant token, H = 6
print("constant token without eps:", no_eps, " with eps:", layer_norm(torch.full((1, 6), 4.0), 1.0, 0.0))
print("✓ H = 4, 6, 64, 5 seeds: the unbiased variance scales outputs (less b) by sqrt((H-1)/H);")
print("  without eps, a constant token gives NaN and an ordinary one barely moves")

# %% [markdown]
# With ε the normalised variance is $\sigma^2/(\sigma^2+\varepsilon)$, far below 1 once σ nears $\sqrt\varepsilon$.
# The random tokens of "What the normalised values look like" were drawn with a standard deviation of
# 0.1 or more (their own spreads go down to the value printed below). Now tokens of spread σ from 1
# down to 0.001, and a constant token (16 features in float64, one random pattern scaled to spread
# exactly σ):

# %% tags=["nbval-ignore-output"]
print(
    f"smallest spread of those random tokens: {smallest_spread.min():.3f} (drawn with a standard deviation of 0.1 or more)"
)
sigmas = (1.0, 0.01, 0.003, 0.001, 0.0)
pattern = torch.randn(16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)  # (16,)
pattern = (pattern - pattern.mean()) / pattern.std(unbiased=False)  # (16,): mean 0, spread 1
n_tiny = normalised(torch.stack([s * pattern for s in sigmas]))  # (5, 16): row k has spread sigmas[k]
var_tiny = n_tiny.var(-1, unbiased=False)  # (5,)
for s, v, m in zip(sigmas, var_tiny, n_tiny.abs().amax(-1)):
    print(
        f"spread {s:5}: variance of N(x) {v:.3f} (sigma^2 / (sigma^2 + eps) = {s**2 / (s**2 + 1e-5):.3f}), largest |value| {m:.2f}"
    )

# %% tags=["hide-input"]
exact_tiny = torch.tensor([s**2 / (s**2 + 1e-5) for s in sigmas], dtype=torch.float64)  # (5,)
assert (var_tiny - exact_tiny).abs().max() < 1e-9
assert var_tiny[0] > 0.9999 and var_tiny[3] < 0.1 and (n_tiny[4] == 0).all()
assert (n_tiny[:4].amin(-1) < 0).all() and n_tiny[3].abs().max() < 1
assert 0.02 < smallest_spread.min() < 0.04  # a token's own spread can fall well below the 0.1 it was drawn with
print("✓ the variance of N(x) is sigma^2 / (sigma^2 + eps) in every row; at spread 0.001 no value reaches |v| = 1,")
print("  the constant token gives all zeros, and each of the other four has a negative value")

# %% [markdown]
# ### What γ and β can and cannot do
#
# *Could γ and β undo the normalisation?*
#
# They are learned numbers, one pair per feature, the same for every token (not noise): output
# feature $j$ is $g_j N(\mathbf x)_j + b_j$. When every feature of $N(\mathbf x)$ has centre 0 and
# spread 1 over the tokens (below, random tokens whose 16 features are alike), output feature $j$ gets
# spread $|g_j|$ and centre $b_j$; when the features differ (the same tokens with feature 1 raised by 3
# and feature 2 shrunk to 0.2 of its size), it does not. What g and b *cannot* do is give a token back
# its own mean and scale: $\mathrm{LN}(a\mathbf x + c) = \mathrm{LN}(\mathbf x)$ for every $a > 0$ and
# $c$, whatever g and b are (exactly without ε; with ε nearly so, while the spread $a\sigma$ stays well
# above $\sqrt\varepsilon \approx 0.003$).

# %% tags=["nbval-ignore-output"]
torch.manual_seed(8)
g, b = torch.ones(16), torch.zeros(16)  # (16,), (16,): gamma and beta of 16 features
g[:3], b[:3] = torch.tensor([0.2, 1.0, 3.0]), torch.tensor([-2.0, 0.0, 5.0])  # set the first three
tokens = torch.randn(4000, 16)  # (4000 tokens, 16 features)
h = layer_norm(tokens, g, b)  # (4000, 16)
print("features 0-2, std over 4000 tokens:", h[:, :3].std(0), "\nfeatures 0-2, mean:               ", h[:, :3].mean(0))
uneven = tokens.clone()  # (4000, 16)
uneven[:, 1] += 3.0  # feature 1 raised by 3
uneven[:, 2] *= 0.2  # feature 2 shrunk
h_uneven = layer_norm(uneven, g, b)  # (4000, 16)
print(
    f"uneven features: feature 1 centre {h_uneven[:, 1].mean():.2f} (b_1 = 0), "
    f"feature 2 spread {h_uneven[:, 2].std():.2f} (|g_2| = 3)"
)

# %% tags=["hide-input"]
assert torch.allclose(h.std(0), g.abs(), rtol=0.05) and torch.allclose(h.mean(0), b, atol=0.2)
assert (h_uneven[:, 1].mean() - b[1]).abs() > 1 and h_uneven[:, 2].std() < 0.5 * g[2].abs()
lost = []  # max |LN(a x + c) - LN(x)| per seed, a, c (float64, so 0.5 x + 42 keeps its digits)
for seed in range(5):
    gen = torch.Generator().manual_seed(seed)
    x5 = torch.randn(3, 16, generator=gen, dtype=torch.float64)  # (3 tokens, 16 features), in float64
    g5 = torch.rand(16, generator=gen, dtype=torch.float64) + 0.5  # (16,)
    b5 = torch.randn(16, generator=gen, dtype=torch.float64)  # (16,)
    lost += [
        (layer_norm(a * x5 + c, g5, b5, eps=0.0) - layer_norm(x5, g5, b5, eps=0.0)).abs().max().item()
        for a in (0.5, 3.0, 100.0)
        for c in (-7.0, 0.0, 42.0)
    ]  # eps = 0: the identity is exact
assert max(lost) < 1e-9
print("✓ g and b set each feature's spread (|g_j|) and centre (b_j) when features are alike, not when they differ;")
print("  without eps, LN(a x + c) equals LN(x) for every scale a and offset c tried, 5 seeds")

# %% [markdown]
# With ε the same tokens (spreads σ from 0.67 to 1.51), scaled by $a$ from 3 down to 0.001:

# %% tags=["nbval-ignore-output"]
blur = {}  # a -> max |LN(a x) - LN(x)| with eps = 1e-5, over 5 seeds
spread_of = {}  # seed -> the spread of each of its 3 tokens (the same for every a)
for a in (3.0, 0.5, 0.1, 0.01, 0.001):
    blur[a] = 0.0
    for seed in range(5):
        gen = torch.Generator().manual_seed(seed)
        x5 = torch.randn(3, 16, generator=gen, dtype=torch.float64)  # (3 tokens, 16 features)
        g5 = torch.rand(16, generator=gen, dtype=torch.float64) + 0.5  # (16,)
        b5 = torch.randn(16, generator=gen, dtype=torch.float64)  # (16,)
        spread_of[seed] = x5.std(-1, unbiased=False)  # (3,)
        blur[a] = max(blur[a], (layer_norm(a * x5, g5, b5) - layer_norm(x5, g5, b5)).abs().max().item())
    print(f"a = {a:5}: max |LN(a x) - LN(x)| with eps = {blur[a]:.1e}")
spreads5 = torch.cat(list(spread_of.values()))  # (15,)
print(f"spreads of the 15 tokens: {spreads5.min():.2f} to {spreads5.max():.2f}")
print(
    f"at a = 0.001 their spreads are {0.001 * spreads5.min():.5f} to {0.001 * spreads5.max():.5f}, "
    f"below sqrt(eps) = {1e-5**0.5:.4f}"
)

# %% tags=["hide-input"]
assert blur[3.0] < 1e-4 and blur[0.5] < 1e-4 and blur[0.1] < 1e-2 and blur[0.001] > 0.5
assert abs(spreads5.min() - 0.67) < 0.005 and abs(spreads5.max() - 1.51) < 0.005
assert 0.001 * spreads5.max() < 1e-5**0.5 < 0.1 * spreads5.min()
print("✓ over 5 seeds, with eps, LN(a x) stays close to LN(x) while a sigma is well above sqrt(eps), not at a = 0.001")

# %% [markdown]
# If every token had the same μ and σ, $g = \sqrt{\sigma^2 + \varepsilon}$ and $b = \mu$ would undo the
# normalisation exactly; tokens differ. The share of
# $x_j$'s variance a least-squares fit $x_j \approx g_j N(\mathbf x)_j + b_j$ explains ($R^2$, 16 features,
# 4000 tokens, 5 seeds), for tokens with their own scale (0.5 to 3) and offset (standard deviation 2), and
# for tokens from one standard normal distribution:


# %% tags=["hide-input", "nbval-ignore-output"]
def undo_r2(tokens):
    """R^2 of the best x_j = g_j N(x)_j + b_j, per feature j: (H,)."""
    n = normalised(tokens)  # (n_tokens, H)
    r2 = []
    for j in range(tokens.shape[-1]):
        design = torch.stack([n[:, j], torch.ones(len(n), dtype=n.dtype)], dim=-1)  # (n_tokens, 2)
        fit = design @ torch.linalg.lstsq(design, tokens[:, j : j + 1]).solution  # (n_tokens, 1)
        r2.append(1 - ((tokens[:, j : j + 1] - fit) ** 2).mean().item() / tokens[:, j].var(unbiased=False).item())
    return np.array(r2)


undo = {"own scale and offset": [], "one distribution": []}
for seed in range(5):
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(4000, 16, generator=gen, dtype=torch.float64)  # (4000 tokens, 16 features)
    scale = 0.5 + 2.5 * torch.rand(4000, 1, generator=gen, dtype=torch.float64)  # (4000, 1): one per token
    offset = 2.0 * torch.randn(4000, 1, generator=gen, dtype=torch.float64)  # (4000, 1)
    undo["own scale and offset"].append(undo_r2(scale * z + offset))
    undo["one distribution"].append(undo_r2(z))
for kind, r2 in undo.items():
    print(
        f"tokens with {kind:20s}: R^2 of the best g_j, b_j = {np.min(r2):.2f} to {np.max(r2):.2f} (16 features x 5 seeds)"
    )

# %% tags=["hide-input"]
assert np.max(undo["own scale and offset"]) < 0.5 and np.min(undo["one distribution"]) > 0.8
print(
    "✓ for every feature and seed: under half of x_j's variance with their own scale and offset, most of it otherwise"
)

# %% [markdown]
# The histograms: the normalised values of 200 tokens (H = 64) spread well beyond $[0, 1]$ (shaded);
# after γ and β, each feature has its own centre and spread.

# %%
fig, (ax_n, ax_h) = plt.subplots(1, 2, figsize=(10, 3.2), layout="constrained")
n = normalised(torch.randn(200, 64, generator=torch.Generator().manual_seed(0))).flatten()  # (200 * 64,)
ax_n.axvspan(0, 1, color="gold", alpha=0.3, label="[0, 1]: where the slides put them")
ax_n.hist(n, bins=60, color="gray")
ax_n.set(
    title="N(x) of random tokens:\nmean 0, variance ≈ 1, most outside [0, 1]", xlabel="normalised value", ylabel="count"
)
ax_n.legend(fontsize=8)
for j, (color, hatch) in enumerate([("tab:purple", "//"), ("tab:green", ""), ("tab:orange", "..")]):
    ax_h.hist(
        h[:, j], bins=60, color=color, alpha=0.6, hatch=hatch, label=f"feature {j}: g = {g[j]:.1f}, b = {b[j]:.0f}"
    )
ax_h.set(title="g ⊙ N(x) + b:\ng sets each feature's spread, b its centre", xlabel="output value")
ax_h.legend(fontsize=8)
plt.show()

# %% [markdown]
# ### Batch norm in evaluation mode
#
# *Running statistics remove the dependence on the batch, and bring another problem.*
#
# In **evaluation mode** batch norm normalises with running averages of each feature's mean and
# variance collected in training (`running_mean`, `running_var`), so a sentence's output no longer
# depends on its batch-mates. But those averages describe the *training* batches, padding included,
# not the tokens met at inference. Collect them over 200 padded training batches (8 sentences of 2 to 10
# tokens, padded with zeros; every real token's features have mean 2 and standard deviation 3), then,
# in evaluation mode, batch the short sentence as before and normalise 2000 new real tokens, for 5
# seeds; and the same without padding (every sentence 10 tokens long):


# %% tags=["nbval-ignore-output"]
def running_batch_norm(seed, padded):
    """A BatchNorm1d(4) whose running statistics come from 200 training batches, in evaluation mode."""
    gen = torch.Generator().manual_seed(seed)
    bn = nn.BatchNorm1d(4, affine=False, momentum=None)  # momentum=None: the plain average over batches
    for _ in range(200):
        lengths = torch.randint(2, 11, (8,), generator=gen) if padded else torch.full((8,), 10)  # (8,)
        real = torch.arange(10) < lengths[:, None]  # (8, 10): True on real tokens
        tokens = (2.0 + 3.0 * torch.randn(8, 10, 4, generator=gen)) * real[..., None]  # (8, 10, 4): pads are 0
        bn(tokens.reshape(-1, 4))  # training mode: updates the running statistics
    return bn.eval()


eval_changes, eval_stats = [], {True: [], False: []}
for seed in range(5):
    torch.manual_seed(seed)
    short, long = torch.randn(1, 3, 4), torch.randn(1, 6, 4)  # a short and a long sentence
    padded = torch.cat([F.pad(short, (0, 0, 0, 3)), long])  # (2, 6, 4)
    for with_padding in (True, False):
        bn = running_batch_norm(seed, with_padding)
        if with_padding:
            eval_changes.append((bn(short[0]) - bn(padded.reshape(-1, 4))[:3]).abs().max().item())
        new_tokens = 2.0 + 3.0 * torch.randn(2000, 4, generator=torch.Generator().manual_seed(100 + seed))  # (2000, 4)
        out_new = bn(new_tokens)  # (2000, 4)
        eval_stats[with_padding].append(torch.stack([out_new.mean(0), out_new.std(0)]).numpy())  # (2, 4)
eval_stats = {with_padding: np.array(stats) for with_padding, stats in eval_stats.items()}  # (seeds, 2, 4)
print("evaluation mode: the short sentence's output moves by", max(eval_changes), "when it is batched")
for with_padding, stats in eval_stats.items():
    print(
        f"running statistics {'with' if with_padding else 'without'} padding: new real tokens come out with "
        f"mean {stats[:, 0].min():.2f} to {stats[:, 0].max():.2f} and std {stats[:, 1].min():.2f} to "
        f"{stats[:, 1].max():.2f} (4 features x 5 seeds)"
    )

# %% tags=["hide-input"]
assert max(eval_changes) == 0.0
assert (eval_stats[True][:, 0] > 0.2).all() and (eval_stats[True][:, 1] > 1.1).all()
assert (np.abs(eval_stats[False][:, 0]) < 0.1).all() and (np.abs(eval_stats[False][:, 1] - 1) < 0.1).all()
print(
    "✓ in evaluation mode, batch norm ignores the batch; padding in its statistics moves new tokens off mean 0, std 1"
)

# %% [markdown]
# ### A LayerNorm's gradient and σ
#
# *Section 3's "why": a LayerNorm scales the gradient reaching each token by 1/σ, that token's spread
# (its RMS once its mean is removed), not by 1/RMS.*
#
# It first removes from the gradient the two directions along which its output does not move (up to
# ε): adding the same number to every feature, and scaling the token.
#
# Feed one `x`, `7 x` and `x + 10` (the same output, up to ε) and compare the gradients (5 seeds,
# widths 8, 32 and 128):

# %% tags=["hide-input"]
shrink, shifted = [], []  # |gradient at x| / |gradient at 7x|, and / |gradient at x + 10|, per seed and width
for seed in range(5):
    for width in (8, 32, 128):
        torch.manual_seed(seed)
        x_ln, read_out = torch.randn(10, width), torch.randn(10, width)  # (tokens, width) each
        grad_norms = []
        for x_in in (x_ln, 7 * x_ln, x_ln + 10):
            inp = x_in.clone().requires_grad_()  # (tokens, width)
            (read_out * F.layer_norm(inp, (width,))).sum().backward()
            grad_norms.append(inp.grad.norm().item())
        shrink.append(grad_norms[0] / grad_norms[1])
        shifted.append(grad_norms[0] / grad_norms[2])
        for x_in in (7 * x_ln, x_ln + 10):
            assert torch.allclose(F.layer_norm(x_in, (width,)), F.layer_norm(x_ln, (width,)), atol=1e-4)
print(f"gradient at x / gradient at 7x: {min(shrink):.2f} to {max(shrink):.2f} (15 runs)")
print(f"gradient at x / gradient at x + 10: {min(shifted):.2f} to {max(shifted):.2f} (15 runs)")
assert all(abs(r - 7) < 1e-3 for r in shrink) and all(abs(r - 1) < 1e-3 for r in shifted)
print(
    "✓ scaling a LayerNorm's input by 7 keeps its output (up to eps) and divides the gradient by 7; adding 10 changes neither"
)

# %% [markdown]
# So what matters in section 3 is the σ entering each LayerNorm. At 24 layers (5 seeds):

# %% tags=["nbval-ignore-output"]
norm_inputs = np.array([last_layer_norm_inputs(False, num_layers=24, d_model=32, seed=s) for s in seeds])  # (seeds, 2)
token_mean, token_sigma = map(np.concatenate, zip(*(stream_mean_and_spread(24, 32, s) for s in seeds)))  # (400,) each
print(f"post-norm: RMS of the input of the last layer's LayerNorms {norm_inputs.min():.2f} to {norm_inputs.max():.2f}")
print(
    f"pre-norm, input of the final LayerNorm, per token: sigma {token_sigma.min():.1f} to {token_sigma.max():.1f}, "
    f"|mean| at most {token_mean.max():.1f}, RMS / sigma at most {np.hypot(1, token_mean / token_sigma).max():.2f}"
)

# %% tags=["hide-input"]
assert 1.0 < norm_inputs.min() and norm_inputs.max() < 1.5 and token_sigma.min() > 3
assert np.hypot(1, token_mean / token_sigma).max() < 1.1  # each token's RMS within 10% of its sigma
print("✓ post-norm's last LayerNorms get inputs of RMS near 1 (σ no larger); pre-norm's final one, tokens of σ far")
print("  larger, each with RMS close to σ")

# %% [markdown]
# ### The gap and the input's scale
#
# *Section 3 fed its stacks an input of RMS 1; the input sets pre-norm's stream scale as well as the depth.*
#
# The paper multiplies its embeddings by $\sqrt{d_\text{model}}$ (section 3.4). One probe by hand, 6
# layers, the same input and then 5 times larger:

# %% tags=["nbval-ignore-output"]
by_scale = {}  # input scale -> post / pre last-layer gradient (seeds,), pre-norm stream RMS (seeds,)
for scale in (1.0, 5.0):
    gaps, streams = [], []
    for s in seeds:
        last_grad = {}
        for norm_first in (False, True):
            torch.manual_seed(s)
            stack_p, read_out = Encoder(32, 4, 128, num_layers=6, norm_first=norm_first), nn.Linear(32, 16)
            x_p = scale * torch.randn(8, 10, 32)  # (batch, T, d_model): RMS about `scale`
            classes = torch.randint(0, 16, (8, 10))  # (batch, T)
            stream = x_p
            for layer_p in stack_p.layers:
                stream = layer_p(stream)  # (batch, T, d_model)
            loss = F.cross_entropy(read_out(stack_p.norm(stream)).flatten(0, 1), classes.flatten())
            last_grad[norm_first] = layer_grad_norms(stack_p, loss)[-1]
        gaps.append(last_grad[False] / last_grad[True])
        streams.append(stream.pow(2).mean().sqrt().item())  # pre-norm's stream, before its final norm
    by_scale[scale] = np.array(gaps), np.array(streams)
for scale, (gap, stream) in by_scale.items():
    print(
        f"input x {scale:.0f}: gap {gap.min():.1f} to {gap.max():.1f}, pre-norm's stream RMS "
        f"{stream.min():.1f} to {stream.max():.1f}, gap / RMS {(gap / stream).min():.2f} to {(gap / stream).max():.2f}"
    )

# %% tags=["hide-input"]
assert np.allclose(by_scale[1.0][0], ratio[6], rtol=1e-4)  # the same probe as probe_stacks' 6-layer stacks
assert (by_scale[5.0][0] > 2 * by_scale[1.0][0]).all() and (by_scale[5.0][1] > 2 * by_scale[1.0][1]).all()
assert all(((1 / 1.5 < g / r) & (g / r < 1.5)).all() for g, r in by_scale.values())
print("✓ by hand, the same input gives section 3's 6-layer gap; 5 times larger, it more than doubles both the gap")
print("  and pre-norm's stream RMS in 5 of 5 seeds, and the gap stays within a factor 1.5 of that RMS")

# %% [markdown]
# ### The slides' reasons for LayerNorm
#
# *What this lesson shows of them, and what it cannot.*
#
# The COMP7607 slides credit LayerNorm with "Smoother gradients, faster training and better
# generalization accuracy" (Xu et al., 2019); the YOUR CAT deck says it normalises each token
# independently, "providing stability and ensuring the model generalizes well across the entire sequence".
#
# * **Gradients.** Xu et al. find the derivatives of the mean and variance "more important than forward
#   normalization by re-centering and re-scaling backward gradients". That backward pass is what this
#   lesson shows: exercise 1 derives it, and "A LayerNorm's gradient and σ" measures it (scaling a token
#   by 7 divides the gradient's norm by 7; adding 10 to every feature leaves it unchanged). Whether it makes gradients
#   smoother or training faster, the lesson cannot say: nothing here trains without LayerNorm.
# * **Stability.** Section 3 shows a fixed scale at initialisation: post-norm's stream stays at RMS 1
#   after every layer, at every depth tried, and pre-norm's final LayerNorm brings its grown stream back
#   to 1. That is not stable training: post-norm, with a LayerNorm after every sublayer, is the variant
#   that stays stuck without warm-up in most runs with copied layers ("Warm-up and post-norm", below).
# * **Generalisation.** Nothing here compares a model with and without LayerNorm, so this claim is not
#   tested. Xu et al. also report that the gain and bias "increase the risk of over-fitting and do not
#   work in most cases", a point the YOUR CAT deck's case for γ and β leaves out and this lesson does not
#   test either.
#
# ### Copied or independent layers
#
# *Section 3's stacks started every layer as a copy of the first; does its gradient gap need that?*
#
# `utils.blocks.Encoder` and `torch.nn.TransformerEncoder` copy one layer; `torch.nn.Transformer`
# re-draws every weight matrix (Xavier init), so its layers start different. Our independent stacks draw
# each layer as a fresh `EncoderLayer`, with PyTorch's default `nn.Linear` init (bound
# $1/\sqrt{\text{fan-in}}$, smaller here than Xavier's $\sqrt{6/(\text{fan-in} + \text{fan-out})}$);
# Xavier's larger weights are not measured here.


# %% tags=["hide-input"]
def same_start(layers):
    """True when every layer's parameters (every matrix and vector) equal the first layer's."""
    first = layers[0].state_dict()
    return all(all(torch.equal(first[k], v) for k, v in layer.state_dict().items()) for layer in layers[1:])


torch.manual_seed(0)
torch_encoder = nn.TransformerEncoder(
    nn.TransformerEncoderLayer(32, 4, 128, batch_first=True), num_layers=3, enable_nested_tensor=False
)
torch_full = nn.Transformer(32, 4, num_encoder_layers=3, num_decoder_layers=1, dim_feedforward=128, batch_first=True)
assert same_start(Encoder(32, 4, 128, num_layers=3).layers)
assert same_start(torch_encoder.layers)
assert not same_start(torch_full.encoder.layers)
fresh, xavier = EncoderLayer(32, 4, 128).ff.linear1.weight, torch_full.encoder.layers[0].linear1.weight  # (128, 32)
assert fresh.abs().max() <= 1 / np.sqrt(32) < xavier.abs().max() <= np.sqrt(6 / (32 + 128))
print(
    "✓ our Encoder and torch.nn.TransformerEncoder start every layer with the same parameters; torch.nn.Transformer does not"
)
print("✓ a fresh EncoderLayer keeps the default init's bound; torch.nn.Transformer's Xavier weights exceed it")

# %% [markdown]
# Section 3's measurements again, with every layer drawn on its own, default init (`independent_layers=True`):

# %% tags=["nbval-ignore-output"]
rms_ind, final_rms_ind, grads_ind = probe_stacks(depths, seeds, independent_layers=True)
ratio_ind, tracks_ind = gradient_gap(grads_ind, rms_ind)
for L in depths:  # (seeds, L) each: pre-norm's stream RMS, independent and copied
    pre, pre_copied = rms_ind["pre-norm", L], rms["pre-norm", L]
    print(
        f"{L:2d} layers: pre-norm RMS at the top {pre[:, -1].min():.1f}-{pre[:, -1].max():.1f} (copied "
        f"{pre_copied[:, -1].min():.1f}-{pre_copied[:, -1].max():.1f}), rising at every layer in "
        f"{int((np.diff(pre, axis=1) > 0).all(1).sum())} of 5; gap {ratio_ind[L].min():.1f}-{ratio_ind[L].max():.1f}"
    )
ind_mean, ind_sigma = map(
    np.concatenate, zip(*(stream_mean_and_spread(24, 32, s, independent_layers=True) for s in seeds))
)
doubling_ind, doubling = (
    [np.median(r[b]) / np.median(r[a]) for a, b in zip(depths, depths[1:])] for r in (ratio_ind, ratio)
)
print(
    "median gap per doubling: "
    + ", ".join(f"x {f:.2f}" for f in doubling_ind)
    + " (copied: "
    + ", ".join(f"x {f:.2f}" for f in doubling)
    + f"; sqrt(2) = {np.sqrt(2):.2f}); 24 layers, per token: RMS / sigma <= {np.hypot(1, ind_mean / ind_sigma).max():.2f}"
)

# %% tags=["hide-input"]
check_stream(rms_ind, final_rms_ind)
assert np.hypot(1, ind_mean / ind_sigma).max() < 1.3  # 24 layers: each token's RMS within 30% of its sigma
assert all(rms_ind["pre-norm", L][:, -1].max() < rms["pre-norm", L][:, -1].min() for L in depths)
assert any(not (np.diff(rms_ind["pre-norm", L], axis=1) > 0).all() for L in depths[1:])  # 12 layers or more
assert all(gap_findings(ratio_ind, tracks_ind).values()), gap_findings(ratio_ind, tracks_ind)
assert all(ratio_ind[L].max() < ratio[L].min() for L in depths)  # every depth: a smaller gap than copied stacks
assert all(1 < f < 2**0.75 for f in doubling_ind)  # on a log scale nearer sqrt(2) than 2
grads_of = {"copied": grads, "independent": grads_ind}  # where the largest gradient sits, 20 stacks each
pre_first = {i: sum(int((g["pre-norm", L].argmax(1) == 0).sum()) for L in depths) for i, g in grads_of.items()}
post_top = {i: sum(int((g["post-norm", L].argmax(1) == L - 1).sum()) for L in depths) for i, g in grads_of.items()}
assert pre_first["copied"] == 20 and post_top["copied"] >= 15
assert pre_first["independent"] < 20 and post_top["independent"] < 10
print(
    "✓ independent layers, as in section 3: post-norm at RMS 1, pre-norm's stream growing with depth, post-norm's last"
)
print(
    "  layer's gradient larger, within a factor 1.5 of that RMS; but the stream grows less (not always at every layer)"
)
print("  and the gap is smaller at every depth, its median growing by nearer sqrt(2) than 2 per doubling")

# %% [markdown]
# The stream grows less, but the gap still follows pre-norm's stream RMS (a stand-in for σ: the
# per-token RMS / σ printed above): it does not need the copied start. Its median grows by nearer √2
# than 2 per doubling of depth, closer than the copied stacks to the $\sqrt L$ of Xiong et al.'s two
# bounds' ratio (section 3).

# %%
plot_gradient_gap(grads_ind, rms_ind, ratio_ind, "independent")
plt.show()

# %% [markdown]
# ### Warm-up and post-norm
#
# *Does section 3's gradient gap matter in training? A small test of Xiong et al.'s argument.*
#
# The paper's **warm-up** (section 5.3) raises the learning rate linearly over its first 4000 steps,
# then lets it decay in proportion to $1/\sqrt{\text{step}}$; here the rate stays at its full value after
# the warm-up.
# Twelve-layer stacks (`d_model` = 32) learn to copy each input token (16
# possible tokens: predicting each with probability 1/16 gives loss $\ln 16$), with Adam at a learning
# rate of 0.01, either at the full rate from the first step or after a 20-step linear warm-up; 5 seeds
# for each of the four setups, with copied layers (as `nn.TransformerEncoder`), and a fifth setup:
# post-norm without warm-up, with independent layers. `train_copy_task` (in
# `utils.experiments.norm_probes`) returns the loss of every step.

# %% tags=["nbval-ignore-output"]
setups = {
    ("post-norm", "no warm-up"): (False, 1, range(5)),
    ("post-norm", "warm-up"): (False, 20, range(5)),
    ("pre-norm", "no warm-up"): (True, 1, range(5)),
    ("pre-norm", "warm-up"): (True, 20, range(5)),
}
curves = {
    key: np.array(
        [
            train_copy_task(norm_first, lr=0.01, warmup_steps=warmup, steps=60, num_layers=12, d_model=32, seed=s)
            for s in seeds
        ]
    )
    for key, (norm_first, warmup, seeds) in setups.items()
}  # (seeds, 60 steps) each: copied layers
independent_curves = np.array(
    [train_copy_task(False, lr=0.01, warmup_steps=1, seed=s, independent_layers=True) for s in range(5)]
)  # (seeds, 60 steps): post-norm, no warm-up, independent layers
end_loss = {key: c[:, -10:].mean(1) for key, c in curves.items()}  # (seeds,): mean loss of the last 10 steps
for key, losses in end_loss.items():
    print(f"{key[0]:9s} {key[1]:10s}: loss at the end, per seed:", np.round(losses, 3))
stuck = int((end_loss["post-norm", "no warm-up"] > 2.0).sum())
print(
    f"post-norm without warm-up stays stuck (loss above 2; uniform prediction ln 16 = {np.log(16):.2f}) in {stuck} of 5 runs"
)
independent_end = independent_curves[:, -10:].mean(1)  # (seeds,)
print("post-norm, no warm-up, independent layers: loss at the end, per seed:", np.round(independent_end, 3))

# %% [markdown]
# With copied layers and no warm-up, most post-norm runs stay stuck (loss above 2); with the warm-up,
# and with pre-norm either way, all 5 runs shown learn the task. With independent layers, post-norm
# learns here without warm-up too: this demonstration needs the copied start.

# %% tags=["hide-input"]
assert stuck >= 3
assert all((end_loss[key] < 0.1).all() for key in setups if key != ("post-norm", "no warm-up"))
assert (independent_end < 0.1).all()
print("✓ copied layers: post-norm without warm-up stays stuck (loss above 2) in most of 5 runs; with the warm-up,")
print(
    "  and pre-norm either way, all 5 learn to copy; with independent layers, post-norm without warm-up learns in all 5"
)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), layout="constrained", sharey=True)
for ax, schedule, title in zip(
    axes,
    ["no warm-up", "warm-up"],
    [
        "Copied layers, full rate from step 1: post-norm mostly stuck",
        "Copied layers, 20-step warm-up: these 5 runs all learn",
    ],
):
    plot_loss_curves({name: curves[name, schedule] for name in VARIANT_STYLE}, title, ax=ax, chance=np.log(16))
plt.show()

# %% [markdown]
# The warm-up makes a stuck run rarer here, not impossible. Post-norm with the warm-up on 25 more
# seeds (5 to 29): `benchmarks/warmup_seeds.py` trained them with the same `train_copy_task` and these
# settings, and stored each run's loss at the end (`load_warmup_seeds` reads the file). These losses are
# one machine's (rounding differs elsewhere and grows over 60 steps), so only each run's category,
# stuck, slow or learned, is claimed. The stuck ones are trained again here:

# %% tags=["nbval-ignore-output"]
more_seeds = range(5, 30)
warmed = load_warmup_seeds()  # {setup, last_steps, seeds, end_loss: {seed: mean loss of the last 10 steps}}
warmed_end = np.array([warmed["end_loss"][s] for s in more_seeds])  # (25,): post-norm, copied layers
for label, hit in [("stuck (above 2)", warmed_end > 2), ("between 0.1 and 2", (warmed_end > 0.1) & (warmed_end <= 2))]:
    print(f"{label:17s}: {int(hit.sum())} of 25 runs, seeds {[s for s, h in zip(more_seeds, hit) if h]}")
print(f"learned (below 0.1): {int((warmed_end < 0.1).sum())} of 25 runs")
stuck_seeds = [s for s, end in zip(more_seeds, warmed_end) if end > 2]
retrained = {s: train_copy_task(False, lr=0.01, warmup_steps=20, seed=s)[-10:].mean() for s in stuck_seeds}
for s, end in retrained.items():
    print(f"seed {s} trained again here: loss at the end {end:.3f} (stored: {warmed['end_loss'][s]:.3f})")

# %% tags=["hide-input"]
same_settings = dict(norm_first=False, lr=0.01, warmup_steps=20, steps=60, num_layers=12, d_model=32)
assert warmed["setup"] == same_settings and warmed["last_steps"] == 10 and warmed["seeds"] == list(more_seeds)
slow = (warmed_end > 0.1) & (warmed_end <= 2)  # (25,): neither stuck nor learned by step 60
assert (warmed_end > 2).sum() >= 1 and slow.sum() >= 1 and (warmed_end < 0.1).sum() > 25 / 2
assert all(end > 2 for end in retrained.values())
print("✓ in the stored runs, most of 25 more warmed-up post-norm runs learn to copy, at least one stays stuck and")
print("  another ends between 0.1 and 2; every stored stuck run, trained again here, is stuck here too")

# %% [markdown]
# So the warm-up helps here, but a few runs still fail or learn slowly. Does section 3's gap matter in
# training? This experiment cannot say: its copied and independent post-norm runs differ both in the
# gap and in the copied start. The gap, measured on these same copy-task models at initialisation (the
# last layer's gradient norm on the first batch, post-norm / pre-norm, seeds 0 to 4):


# %% tags=["nbval-ignore-output"]
def copy_task_gap(seed, independent_layers):
    """train_copy_task's model and first batch at initialisation: last layer's gradient norm, post / pre."""
    last = {}
    for norm_first in (False, True):
        torch.manual_seed(seed)  # as train_copy_task does before building the model
        model = copy_task_model(norm_first, independent_layers=independent_layers)
        tokens = torch.randint(0, 16, (16, 8), generator=torch.Generator().manual_seed(1000 + seed))  # (batch, T)
        loss = F.cross_entropy(model(tokens).flatten(0, 1), tokens.flatten())
        last[norm_first] = layer_grad_norms(model[1], loss)[-1]
    return last[False] / last[True]


copy_gap = {name: np.array([copy_task_gap(s, name == "independent") for s in range(5)]) for name in grads_of}
for name, gaps in copy_gap.items():
    print(f"{name + ' layers':18s}: last-layer gradient, post-norm / pre-norm, {gaps.min():.1f} to {gaps.max():.1f}")

# %% tags=["hide-input"]
assert copy_gap["copied"].min() > copy_gap["independent"].max() > 1
print("✓ in the copy-task models, every copied stack has a larger gap than every independent one")

# %% [markdown]
# It is also one small setting; Xiong et al. (2020) compare full-size translation and language models.

# %% [markdown]
# ### How many layers, how wide, how much dropout?
#
# *What the paper's Table 3 says about depth, width and dropout; exercise 3 counts its parameters.*
#
# The paper's Table 3 varies the base model's sizes (N = 6 layers, $d_{ff}$ = 2048: BLEU 25.8 on
# the development set, 65 million parameters). A subset of its rows (C), leaving out the two that
# change $d_{model}$ (to 256 and 1024):
#
# | changed | N = 2 | N = 4 | N = 8 | $d_{ff}$ = 1024 | $d_{ff}$ = 4096 |
# |---|---|---|---|---|---|
# | BLEU | 23.7 | 25.3 | 25.5 | 25.4 | 26.2 |
# | parameters (millions) | 36 | 50 | 80 | 53 | 90 |
#
# Fewer or narrower layers cost BLEU; 8 layers instead of 6 do not raise it (though their perplexity,
# 4.88 against 4.92, is slightly better), a wider FFN does. Section 5.4 announces "three types of
# regularization" under two headings, residual dropout and label smoothing (lesson 07); we read the
# first as two: dropout on each sublayer's output (section 3 of this lesson) and on the sums of
# embeddings and positional encodings. Row (D): without dropout ($P_{drop} = 0.0$) the base model's BLEU
# drops from 25.8 to 24.6; without label smoothing it is 25.3, though its perplexity is better (4.67):
# label smoothing "hurts perplexity, as the model learns to be more unsure, but improves accuracy and
# BLEU score" (section 5.4). Section 6.2 reads rows (C) and (D) as: "as expected, bigger models are
# better, and dropout is very helpful in avoiding over-fitting".

# %% [markdown]
# ### The same attention without its weights
#
# *How the translator of lesson 07 trains: PyTorch's fused attention.*
#
# Lesson 07's training does not look at the attention weights. With `need_weights=False`,
# `MultiHeadAttention` (and the layers, which pass the flag on) hands the same per-head $Q$, $K$, $V$
# and mask to `torch.nn.functional.scaled_dot_product_attention`, which returns no weights (`None`) and
# runs a fused kernel when one fits the inputs and hardware, else a plain "math" fallback. A query with
# every key masked gets output zero on both paths before $W_o$, so it outputs just $W_o$'s bias.

# %%
import time

torch.manual_seed(8)
batch, T = 16, 128
mha = MultiHeadAttention(64, 4)  # d_model = 64, num_heads = 4
x = torch.randn(batch, T, 64, requires_grad=True)  # (batch, T, d_model)
lengths = torch.randint(T // 2, T + 1, (batch,))  # (batch,): real tokens per sequence
x_mask = padding_mask((torch.arange(T) < lengths[:, None]).long(), 0)  # (batch, 1, T)
x_mask = x_mask & causal_mask(T)  # (batch, T, T)
x_mask[0, 5] = False  # query 5 of sequence 0 may attend to nothing


def attention_and_gradient(need_weights):
    """Output, weights and the gradient of a loss with respect to x."""
    x.grad = None
    out, w = mha(x, x, x, x_mask, need_weights=need_weights)  # (batch, T, d_model)
    out.square().sum().backward()
    return out.detach(), w, x.grad.clone()


out_w, weights, grad_w = attention_and_gradient(True)
out_f, no_weights, grad_f = attention_and_gradient(False)
print(f"the weights path returns weights of shape {tuple(weights.shape)}; need_weights=False returns {no_weights}")

# %% tags=["hide-input"]
assert no_weights is None and weights.shape == (batch, 4, T, T)
assert torch.allclose(out_f, out_w, atol=1e-5) and torch.allclose(grad_f, grad_w, atol=1e-5)
assert torch.equal(out_f[0, 5], mha.W_o.bias.detach()) and torch.equal(out_w[0, 5], mha.W_o.bias.detach())
print("✓ need_weights=False gives the same output and gradient as the weights path, and no weights (None);")
print("  on both paths, the query that may attend to nothing outputs exactly the bias of W_o")

# %% [markdown]
# What it saves: the weights path returns a `(batch, num_heads, T_q, T_k)` tensor per layer, and
# autograd keeps copies of it for backward (`utils.experiments.layer_costs.saved_tensors` lists them).
# Time both, forward and backward, alternating them so that other work slows both alike; five repeats
# of 15 runs.


# %% tags=["nbval-ignore-output"]
def seconds(need_weights):
    start = time.perf_counter()
    attention_and_gradient(need_weights)
    return time.perf_counter() - start


for _ in range(3):  # warm-up
    seconds(True), seconds(False)
ratios = []  # fused time / weights time, one per repeat
for _ in range(5):
    runs = [(seconds(True), seconds(False)) for _ in range(15)]
    with_weights, fused = (float(np.median(t)) for t in zip(*runs))
    ratios.append(fused / with_weights)
print(f"weights path: {1000 * with_weights:.1f} ms, fused: {1000 * fused:.1f} ms (last repeat)")
print("fused / weights time, per repeat:", np.round(ratios, 2))
print(
    f"weights returned by the weights path: {weights.numel():,} numbers ({weights.numel() * 4 / 2**20:.0f} MiB) "
    "for this one layer"
)
print(f"fused path faster than the weights path in {sum(r < 1 for r in ratios)} of 5 repeats")

# %% [markdown]
# These ratios are one machine's, so no check rests on them. Memory: with attention dropout off (as
# here), the fused kernel picked here keeps no copy of the weights for backward (the math fallback
# does), but a float copy of the mask, of the mask's shape: $1/h$ of the weights' size for a
# $(B, 1, T, T)$ mask shared by the heads, their full size for a mask per head. Among the kept tensors:

# %% tags=["hide-input"]
from torch.nn.attention import SDPBackend, sdpa_kernel

empty = ~x_mask.any(-1)[:, None, :, None]  # (batch, 1, T, 1): the query that may attend to nothing
per_head = x_mask[:, None].expand(batch, 4, T, T)  # (batch, h, T, T): the same mask, given per head


def holds_weights(t):
    """True when t holds this layer's weights (the empty query's row aside)."""
    same_size = t.is_floating_point() and t.numel() == weights.numel()
    return same_size and torch.allclose(t.reshape(weights.shape).masked_fill(empty, 0.0), weights)


def mask_copy_mib(kept, mask):
    """MiB of each kept float tensor that is 0 where the mask allows (the empty query: all), -inf elsewhere."""
    allowed = mask | empty  # (batch, 1 or h, T, T)
    return [
        t.untyped_storage().nbytes() / 2**20
        for t in kept
        if t.is_floating_point() and t.shape == allowed.shape and torch.equal(t == 0, allowed)
    ]


found = {}  # (mask, need_weights) -> (copies of the weights, MiB of each mask copy) among the kept tensors
for name, mask in [("one mask for all heads", x_mask[:, None]), ("a mask per head", per_head)]:
    for need in (True, False):
        kept = saved_tensors(lambda t: mha(t, t, t, mask, need_weights=need), x)
        found[name, need] = (sum(map(holds_weights, kept)), mask_copy_mib(kept, mask))
    (w_copies, w_masks), (f_copies, f_masks) = found[name, True], found[name, False]
    print(
        f"{name}: weights path {w_copies} copies of the weights, mask copies (MiB) {w_masks}; "
        f"fused {f_copies}, {f_masks}"
    )
assert found == {
    ("one mask for all heads", True): (2, []),
    ("one mask for all heads", False): (0, [1.0]),
    ("a mask per head", True): (2, []),
    ("a mask per head", False): (0, [4.0]),
}
assert weights.numel() == batch * 4 * T * T == 1_048_576 and weights.element_size() * weights.numel() == 4 * 2**20
no_empty = x_mask | torch.eye(T, dtype=torch.bool)  # (batch, T, T): every query may see itself
weights_no_empty = mha(x, x, x, no_empty)[1].detach()  # (batch, h, T, T)
kept = saved_tensors(lambda t: mha(t, t, t, no_empty), x)
copies_no_empty = sum(
    t.is_floating_point()
    and t.numel() == weights.numel()
    and torch.allclose(t.reshape(weights.shape), weights_no_empty)
    for t in kept
)
assert copies_no_empty == 1 and found["one mask for all heads", True][0] == 2
with sdpa_kernel(SDPBackend.MATH):  # the fallback, forced
    math_copies = sum(map(holds_weights, saved_tensors(lambda t: mha(t, t, t, x_mask[:, None], need_weights=False), x)))
assert math_copies == 1
print("✓ the weights path keeps this layer's 1,048,576 weights (4 MiB) for backward: one copy, two when a query")
print("  is fully masked; the fused kernel keeps none (the forced math fallback one), but a float copy of the mask")

# %% [markdown]
# The weights path's second copy is the softmax output with the fully-masked query's row set to zero.
# The translator of lesson 07 trains on the fused path and asks for the weights only in evaluation
# mode (decoding, accuracy, attention maps).
#
# PyTorch's own encoder layers have a faster path too, taken under `torch.no_grad()`. Section 5's
# unconverted mask left the first sentence's queries nothing to see: finite but wrong there, all NaN here.

# %% tags=["hide-input"]
for torch_enc in torch_encoders.values():  # post-norm, then pre-norm
    unconverted = torch_enc(src, src_key_padding_mask=src_tokens != 0)  # (batch, T_src, d_model): not negated
    with torch.no_grad():  # no gradient needed: torch takes its fast path
        fast = torch_enc(src, src_key_padding_mask=src_tokens != 0)  # (batch, T_src, d_model)
    assert unconverted.isfinite().all() and fast[0].isnan().all() and fast[1].isfinite().all()
print("✓ post-norm and pre-norm layers, our mask unchanged: the first sentence comes out finite with gradients on,")
print("  all NaN under torch.no_grad(); the second sentence is finite on both paths")

# %% [markdown]
# ## Sources
#
# * Vaswani et al. (2017), "Attention Is All You Need", NeurIPS: sections 3.1 (residual connection
#   and LayerNorm, post-norm), 3.2.3 (the three uses of attention), 3.3 (the feed-forward network),
#   3.4 (one matrix shared by both embeddings and the output projection), 5.1 (vocabulary), 5.3
#   (warm-up), 5.4 (dropout), Table 3 (sizes and parameter counts, rows (C) and (D)).
# * Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong): the layer-normalisation
#   formula with $\mu$, $\sigma$, gain and bias, and its claimed benefits
# * Slide deck "Transformers / Attention is all you need" (the YOUR CAT IS A LOVELY CAT worked
#   example): γ, β, ε inside the square root, "stability", the 3-item batch, and the "between 0
#   and 1" claim corrected above.
# * Reading notes on the paper (June 2020): the three kinds of attention.
# * Ba, Kiros and Hinton (2016), "Layer Normalization", arXiv:1607.06450.
# * He, Zhang, Ren and Sun (2016), "Deep Residual Learning for Image Recognition", CVPR: the residual
#   connection (the paper's reference [11]).
# * Xu, Sun, Zhang, Zhao and Lin (2019), "Understanding and Improving Layer Normalization", NeurIPS:
#   LayerNorm's backward pass, and its gain and bias.
# * Wang and Komatsuzaki (2021), "GPT-J-6B: A 6 Billion Parameter Autoregressive Language Model",
#   released in the mesh-transformer-jax repository (github.com/kingoflolz/mesh-transformer-jax): a
#   parallel block like exercise 4's.
# * Chowdhery et al. (2022), "PaLM: Scaling Language Modeling with Pathways", section 2 ("Parallel
#   Layers"): the parallel block of exercise 4.
# * Xiong et al. (2020), "On Layer Normalization in the Transformer Architecture", ICML: gradients
#   of post-norm and pre-norm Transformers at initialisation, and training without warm-up.
# * Rush (2018), "The Annotated Transformer" (Harvard NLP): the pre-norm form in its code.
# * Zhang and Sennrich (2019), "Root Mean Square Layer Normalization", NeurIPS: RMSNorm (exercise 2).
# * Touvron et al. (2023), "LLaMA: Open and Efficient Foundation Language Models", arXiv:2302.13971:
#   pre-norm with RMSNorm.
