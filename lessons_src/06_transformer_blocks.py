# %% [markdown]
# # 06 · Transformer blocks
#
# Multi-head attention is one of two sublayers. An **encoder layer** is
#
# $$x \;\to\; \mathrm{LayerNorm}(x + \mathrm{MultiHead}(x, x, x)) \;\to\; \mathrm{LayerNorm}(\,\cdot + \mathrm{FFN}(\cdot)\,),$$
#
# and a **decoder layer** adds a third sublayer in the middle that attends to the encoder's output.
#
# **Goals.** By the end of this lesson you will have
# 1. built the position-wise feed-forward network and checked that it treats every position alike;
# 2. written layer normalisation from its formula (μ and σ over the features, gain $g$/γ and bias
#    $b$/β), checked it against `torch.nn.LayerNorm`, and seen which axis batch norm uses instead —
#    and why that matters for sequences of different lengths;
# 3. seen what the residual connection does, and compared post-norm (the paper) with pre-norm
#    (most code today) in a deep stack;
# 4. met the three kinds of attention (encoder self-attention, masked decoder self-attention,
#    encoder–decoder cross-attention) and assembled encoder and decoder layers equal to
#    `torch.nn.TransformerEncoderLayer` / `TransformerDecoderLayer`.
#
# **Prerequisites.** 04 (masks; `True` = may attend) and 05 (multi-head attention).

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    get_ipython().run_line_magic(
        "pip", "install -q 'attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand'"
    )

# %% [markdown]
# The usual imports; one thread keeps the printed digits identical from run to run.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from utils.blocks import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward
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
# position **separately, with the same weights**. Attention mixes positions; the FFN never does.

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
print("PASS: utils FeedForward == max(0, x W_1 + b_1) W_2 + b_2, and == applying it one position at a time")

# %% [markdown]
# So it **commutes with permutations**: shuffling the positions before or after the FFN gives the
# same result. (Compare lesson 03: attention is permutation *equivariant* too — nothing in a block
# knows the order except through the positional encoding.)

# %%
perm = torch.tensor([3, 0, 4, 1, 2])  # (T,): a reordering of the positions
assert torch.allclose(ffn(x[:, perm]), ffn(x)[:, perm], atol=1e-6)
print("PASS: FFN(x[:, perm]) == FFN(x)[:, perm] for perm =", perm.tolist())

# %% [markdown]
# ## 2. Layer normalisation
#
# Seed 001 (after Ba et al., 2016) normalises each token's vector **over its H features**:
#
# $$\mathbf h = \mathbf g \odot N(\mathbf x) + \mathbf b, \qquad N(\mathbf x) = \frac{\mathbf x - \mu}{\sigma},
# \qquad \mu = \frac1H\sum_{i=1}^H x_i, \qquad \sigma = \sqrt{\frac1H\sum_{i=1}^H (x_i-\mu)^2}.$$
#
# $\mathbf g$ (PyTorch's `weight`, seed 003's γ) and $\mathbf b$ (`bias`, β) are learned, one number
# per feature, so the network can undo the normalisation where it needs to. Two details decide
# whether this matches PyTorch: σ uses the **biased** variance (divide by H, not H − 1), and PyTorch
# adds a small ε inside the square root, $\sqrt{\sigma^2 + \varepsilon}$ (seed 003 writes it that
# way), so a constant vector gives 0 rather than 0/0.

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
print("PASS: the formula == torch.nn.LayerNorm, max |diff| =", f"{(ours - ln(x)).abs().max():.1e}")

# %% [markdown]
# Both details are visible. With the unbiased variance (`torch.var`'s default, H − 1) the result is
# off by a factor $\sqrt{H/(H-1)}$; dropping ε changes only the 6th decimal here but turns a constant
# token into NaN.

# %%
unbiased = ln.weight * (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True) + ln.bias  # (batch, T, H)
print(f"unbiased variance: max |diff| = {(unbiased - ln(x)).abs().max():.3f}")
assert (unbiased - ln(x)).abs().max() > 0.05
constant = torch.full((1, H), 4.0)  # (1, H): every feature equal
no_eps = layer_norm(constant, 1.0, 0.0, eps=0.0)
print("constant token without eps:", no_eps, " with eps:", layer_norm(constant, 1.0, 0.0))
assert torch.isnan(no_eps).all() and (layer_norm(constant, 1.0, 0.0) == 0).all()
assert (layer_norm(x, ln.weight, ln.bias, eps=0.0) - ln(x)).abs().max() < 1e-4  # tiny on ordinary tokens
print("PASS: biased variance and eps inside the square root are both needed to match PyTorch")

# %% [markdown]
# ### Batch norm or layer norm: which axis?
#
# Seed 003 draws a batch of 3 items, each with 4 features (its numbers, below). **Batch norm**
# computes μ and σ² of each *feature* across the items of the batch (down the columns here);
# **layer norm** computes them for each *item* across its features (along the rows). In the
# picture, a black outline marks one group of numbers that share a μ and σ.

# %%
batch3 = torch.tensor([[50.147, 3314.825, 8463.361, 8.021],  # item 1
                       [1242.223, 688.123, 434.944, 149.442],  # item 2
                       [9.370, 4606.674, 944.705, 21189.444]])  # item 3: (items, features)
batch_normed = nn.BatchNorm1d(4, affine=False).train()(batch3)  # statistics per feature (column)
layer_normed = nn.LayerNorm(4, elementwise_affine=False)(batch3)  # statistics per item (row)
print("batch norm: column means", batch_normed.mean(0), "\nlayer norm: row means   ", layer_normed.mean(1))
assert torch.allclose(batch_normed.mean(dim=0), torch.zeros(4), atol=1e-4)
assert torch.allclose(batch_normed.var(dim=0, unbiased=False), torch.ones(4), atol=1e-3)
assert torch.allclose(layer_normed.mean(dim=1), torch.zeros(3), atol=1e-4)
assert torch.allclose(layer_normed.var(dim=1, unbiased=False), torch.ones(3), atol=1e-3)
print("PASS: batch norm zero-means and unit-scales every column (feature), layer norm every row (item)")

# %%
fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), layout="constrained")
panels = [(batch3, "seed 003's batch (raw)"), (batch_normed, "batch norm: per feature ↓"),
          (layer_normed, "layer norm: per item →")]
for ax, (values, title) in zip(axes, panels):
    im = ax.imshow(values, cmap="RdBu_r", vmin=-2 if values is not batch3 else None,
                   vmax=2 if values is not batch3 else None)
    ax.set(title=title, xticks=range(4), yticks=range(3), yticklabels=["item 1", "item 2", "item 3"],
           xlabel="feature")
    for (i, j), v in np.ndenumerate(values.numpy()):
        ax.text(j, i, f"{v:.0f}" if values is batch3 else f"{v:.2f}", ha="center", va="center", fontsize=8)
# outline one group of shared statistics in each: a column for batch norm, a row for layer norm
axes[1].add_patch(plt.Rectangle((-0.5, -0.5), 1, 3, fill=False, lw=3, color="black"))
axes[2].add_patch(plt.Rectangle((-0.5, -0.5), 4, 1, fill=False, lw=3, color="black"))
plt.show()

# %% [markdown]
# ### Why layer norm suits sequences of different lengths
#
# In a Transformer the "items" are tokens: a batch is `(batch, T, d_model)` and short sentences are
# padded to the longest. Batch norm's statistics for a feature are taken over every token of every
# sentence in the batch — padding included — so a sentence's output depends on *which other
# sentences* share its batch and how much padding they bring. Layer norm looks at one token at a
# time, so a sentence's output is the same alone or in any batch.

# %%
torch.manual_seed(2)
short = torch.randn(1, 3, 4)  # (1, 3, d_model): a 3-token sentence
long = torch.randn(1, 6, 4)  # (1, 6, d_model): a 6-token sentence
padded = torch.cat([F.pad(short, (0, 0, 0, 3)), long])  # (2, 6, d_model): short padded with zeros


def batch_norm_tokens(x):
    """Batch norm over every token of the batch, per feature (what BatchNorm1d does to (batch*T, d))."""
    flat = x.reshape(-1, x.shape[-1])  # (batch * T, d_model)
    return nn.functional.batch_norm(flat, None, None, training=True).reshape(x.shape)  # (batch, T, d_model)


ln_alone, ln_batched = F.layer_norm(short, (4,)), F.layer_norm(padded, (4,))[:1, :3]
bn_alone, bn_batched = batch_norm_tokens(short), batch_norm_tokens(padded)[:1, :3]
print(f"layer norm: alone vs batched, max |diff| = {(ln_alone - ln_batched).abs().max():.1e}")
print(f"batch norm: alone vs batched, max |diff| = {(bn_alone - bn_batched).abs().max():.2f}")
assert torch.allclose(ln_alone, ln_batched, atol=1e-6)
assert (bn_alone - bn_batched).abs().max() > 0.1
print("PASS: layer norm gives a sentence the same output in any batch; batch norm does not")

# %% [markdown]
# ## 3. Residual connections, post-norm and pre-norm
#
# Each sublayer `f` (attention or FFN) is wrapped in a **residual connection**: the layer outputs
# `x + f(x)`, so the input always has a direct path through, and `f` only has to learn a change.
# The paper then normalises, **post-norm**: `LayerNorm(x + f(x))`. Most code today normalises the
# sublayer's *input* instead, **pre-norm**: `x + f(LayerNorm(x))` — and then needs one final
# LayerNorm after the last layer. *The Annotated Transformer* uses the pre-norm form in its code
# (while quoting the paper's post-norm formula), a well-known source of confusion. `utils` has both:
# `EncoderLayer(..., norm_first=False)` is the paper's, `norm_first=True` is pre-norm, exactly like
# PyTorch's switch of the same name.
#
# The residual path is literally the identity: if a pre-norm layer's sublayers output zero (zero
# output weights), the layer returns its input unchanged.

# %%
torch.manual_seed(3)
layer = EncoderLayer(d_model=16, num_heads=4, d_ff=64, norm_first=True).eval()
with torch.no_grad():
    for lin in (layer.self_attn.W_o, layer.ff.linear2):
        lin.weight.zero_()
        lin.bias.zero_()
x = torch.randn(2, 5, 16)  # (batch, T, d_model)
assert torch.equal(layer(x), x)
print("PASS: with both sublayers silenced, a pre-norm layer is exactly the identity: x + 0")

# %% [markdown]
# What changes between the two is the **scale of the activations** through a deep stack. Push the
# same input through 24 randomly initialised encoder layers of each kind and measure the
# root-mean-square of the stream after every layer.

# %%
def rms_through_stack(norm_first, num_layers=24, d_model=64, seed=4):
    """RMS of the activations after each layer of a random Encoder (batch 4, T 10)."""
    torch.manual_seed(seed)
    encoder = Encoder(d_model, num_heads=4, d_ff=4 * d_model, num_layers=num_layers,
                      norm_first=norm_first).eval()
    x = torch.randn(4, 10, d_model)  # (batch, T, d_model)
    rms = []
    with torch.no_grad():
        for layer in encoder.layers:
            x = layer(x)  # (batch, T, d_model)
            rms.append(x.pow(2).mean().sqrt().item())
        final = encoder.norm(x).pow(2).mean().sqrt().item()  # RMS after the final norm (Identity if post-norm)
    return np.array(rms), final


post_rms, post_final = rms_through_stack(norm_first=False)
pre_rms, pre_final = rms_through_stack(norm_first=True)
print("post-norm RMS after layers 1, 12, 24:", np.round(post_rms[[0, 11, 23]], 3))
print("pre-norm  RMS after layers 1, 12, 24:", np.round(pre_rms[[0, 11, 23]], 3),
      f" after the final LayerNorm: {pre_final:.3f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
layers = np.arange(1, 25)
ax.plot(layers, post_rms, "o-", label="post-norm: LN(x + f(x))  (paper)")
ax.plot(layers, pre_rms, "s-", label="pre-norm: x + f(LN(x))")
ax.axhline(1, color="gray", lw=0.8, ls="--")
ax.set(xlabel="layer", ylabel="RMS of the activations", title="Activation scale through 24 encoder layers")
ax.legend()
plt.show()

# %% [markdown]
# Post-norm ends every layer with a LayerNorm, so the stream is pinned at RMS 1 (γ = 1, β = 0 at
# initialisation). Pre-norm never normalises the stream itself: every layer *adds* its output to
# it, so its scale grows with depth — which is why a pre-norm stack needs the final LayerNorm
# (`Encoder.norm`, restoring RMS 1). In exchange, the identity path from input to output is never
# interrupted by a normalisation, which is the usual explanation for why deep pre-norm stacks are
# easier to train.

# %%
assert np.allclose(post_rms, 1.0, atol=1e-3)
assert np.all(np.diff(pre_rms) > 0) and pre_rms[-1] > 2 * pre_rms[0]
assert abs(pre_final - 1.0) < 1e-3
print(f"PASS: post-norm stays at RMS 1; pre-norm grows {pre_rms[-1] / pre_rms[0]:.1f}x over 24 layers "
      "and the final LayerNorm brings it back to 1")

# %% [markdown]
# ## 4. The three kinds of attention
#
# Seed 004 lists three uses of the same multi-head attention:
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
maps = {"encoder self-attention": encoder_layer.self_attn_weights,  # (1, h, T_src, T_src)
        "decoder masked self-attention": decoder_layer.self_attn_weights,  # (1, h, T_tgt, T_tgt)
        "cross-attention (Q: decoder, K/V: encoder)": decoder_layer.cross_attn_weights}  # (1, h, T_tgt, T_src)
for name, w in maps.items():
    print(f"{name:45s} weights {tuple(w.shape)}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), layout="constrained")
src_labels, tgt_labels = [f"s{i}" for i in range(4)] + ["pad", "pad"], [f"t{i}" for i in range(4)]
for ax, (name, w), (rows, cols) in zip(axes, maps.items(), [(src_labels, src_labels), (tgt_labels, tgt_labels),
                                                            (tgt_labels, src_labels)]):
    ax.imshow(w[0].mean(0).detach(), cmap="viridis", vmin=0, vmax=1)
    ax.set(title=name, xticks=range(len(cols)), yticks=range(len(rows)), xlabel="key", ylabel="query")
    ax.set_xticklabels(cols)
    ax.set_yticklabels(rows)

# %% [markdown]
# Each map says what its mask promises: no one attends to the source padding, no target position
# attends to a later one, and cross-attention is rectangular — one row per target position, one
# column per source position.

# %%
enc_w, self_w, cross_w = (w[0].detach() for w in maps.values())
assert (enc_w[..., 4:] == 0).all() and (cross_w[..., 4:] == 0).all()
assert (self_w.triu(diagonal=1) == 0).all()
assert cross_w.shape == (num_heads, 4, 6)
print("PASS: padding columns are 0, the decoder's self-attention is lower-triangular, "
      "cross-attention is (T_tgt, T_src)")

# %% [markdown]
# Two behavioural checks. The causal mask means a decoder position cannot see the future: changing
# the last target token leaves the outputs at positions 0–2 unchanged. Cross-attention reads the
# source: changing a (real) source token changes every target position's output.

# %%
tgt_changed = tgt.clone()
tgt_changed[0, 3] += 5.0  # change the last target token
out_changed = decoder_layer(tgt_changed, memory, tgt_mask=causal_mask(4), memory_mask=src_mask)
assert torch.allclose(out_changed[0, :3], out[0, :3], atol=1e-6) and not torch.allclose(out_changed[0, 3], out[0, 3])
src_changed = src.clone()
src_changed[0, 1] += 5.0  # change source token 1
out_src = decoder_layer(tgt, encoder_layer(src_changed, mask=src_mask), tgt_mask=causal_mask(4),
                        memory_mask=src_mask)
assert ((out_src - out).abs().amax(dim=-1) > 1e-3).all()
print("PASS: no leakage from future target tokens; every target position reads the source")

# %% [markdown]
# ## 5. Encoder and decoder layers, by hand and against PyTorch
#
# With the pieces above, a layer is a few lines. `sublayer` is the residual-plus-norm wrapper in
# both flavours.

# %%
def sublayer(x, f, norm, norm_first):
    """Post-norm LN(x + f(x)) (the paper) or pre-norm x + f(LN(x))."""
    return x + f(norm(x)) if norm_first else norm(x + f(x))


def encoder_layer_by_hand(layer, x, mask=None):
    """Self-attention sublayer, then feed-forward sublayer."""
    x = sublayer(x, lambda y: layer.self_attn(y, y, y, mask)[0], layer.norm1, layer.norm_first)
    return sublayer(x, layer.ff, layer.norm2, layer.norm_first)  # (batch, T, d_model)


def decoder_layer_by_hand(layer, y, memory, tgt_mask=None, memory_mask=None):
    """Masked self-attention, cross-attention (Q from y, K and V from memory), feed-forward."""
    y = sublayer(y, lambda z: layer.self_attn(z, z, z, tgt_mask)[0], layer.norm1, layer.norm_first)
    y = sublayer(y, lambda z: layer.cross_attn(z, memory, memory, memory_mask)[0], layer.norm2, layer.norm_first)
    return sublayer(y, layer.ff, layer.norm3, layer.norm_first)  # (batch, T_tgt, d_model)

# %% [markdown]
# Build PyTorch's layers (batch-first, ReLU, no dropout), copy their weights into ours with
# `from_torch`, and compare all three — ours by hand, `utils`, PyTorch — for both norm placements,
# with masks. PyTorch's boolean masks mean `True` = *not allowed*, so they get the negation of ours.

# %%
torch.manual_seed(6)
src_tokens = torch.tensor([[5, 2, 8, 1, 6, 3], [4, 9, 2, 0, 0, 0]])  # (batch, T_src), 0 = padding
tgt_tokens = torch.tensor([[3, 3, 7, 1], [8, 2, 0, 0]])  # (batch, T_tgt)
src = torch.randn(2, 6, d_model)  # (batch, T_src, d_model)
tgt = torch.randn(2, 4, d_model)  # (batch, T_tgt, d_model)
src_mask = padding_mask(src_tokens, 0)  # (batch, 1, T_src)
tgt_mask = causal_mask(4) & padding_mask(tgt_tokens, 0)  # (batch, T_tgt, T_tgt)
for norm_first in (False, True):
    torch_enc = nn.TransformerEncoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True,
                                           norm_first=norm_first).eval()
    torch_dec = nn.TransformerDecoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True,
                                           norm_first=norm_first).eval()
    enc, dec = EncoderLayer.from_torch(torch_enc), DecoderLayer.from_torch(torch_dec)
    theirs_memory = torch_enc(src, src_key_padding_mask=src_tokens == 0)  # (batch, T_src, d_model)
    theirs_out = torch_dec(tgt, theirs_memory, tgt_mask=~causal_mask(4), tgt_key_padding_mask=tgt_tokens == 0,
                           memory_key_padding_mask=src_tokens == 0)  # (batch, T_tgt, d_model)
    memory = enc(src, mask=src_mask)
    by_hand = encoder_layer_by_hand(enc, src, src_mask)
    assert torch.allclose(by_hand, memory, atol=1e-6) and torch.allclose(memory, theirs_memory, atol=1e-5)
    out = dec(tgt, memory, tgt_mask=tgt_mask, memory_mask=src_mask)
    by_hand = decoder_layer_by_hand(dec, tgt, memory, tgt_mask, src_mask)
    assert torch.allclose(by_hand, out, atol=1e-6) and torch.allclose(out, theirs_out, atol=1e-5)
    print(f"PASS (norm_first={norm_first}): by hand == utils == torch for the encoder layer "
          f"(max |diff| {(memory - theirs_memory).abs().max():.0e}) and the decoder layer "
          f"(max |diff| {(out - theirs_out).abs().max():.0e})")

# %% [markdown]
# Stacks work the same way: `utils.blocks.Encoder` / `Decoder` are `num_layers` copies of a layer,
# plus the final LayerNorm in the pre-norm case; `from_torch` copies a
# `torch.nn.TransformerEncoder` / `TransformerDecoder` layer by layer.

# %%
torch.manual_seed(7)
torch_stack = nn.TransformerEncoder(
    nn.TransformerEncoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=True),
    num_layers=3, norm=nn.LayerNorm(d_model), enable_nested_tensor=False).eval()
stack = Encoder.from_torch(torch_stack)
assert torch.allclose(stack(src, mask=src_mask), torch_stack(src, src_key_padding_mask=src_tokens == 0), atol=1e-5)
print(f"PASS: a 3-layer pre-norm utils Encoder (with its final {type(stack.norm).__name__}) == torch.nn.TransformerEncoder")

# %% [markdown]
# ## Summary
#
# * The FFN is one small MLP applied to every position with the same weights; it commutes with
#   permutations of the positions.
# * LayerNorm normalises each token over its features: $g \odot (x-\mu)/\sqrt{\sigma^2+\varepsilon} + b$
#   with the biased variance — exactly `torch.nn.LayerNorm`. Batch norm normalises each feature over
#   the batch, which ties a sentence's output to its batch-mates and their padding.
# * Residual connections give every sublayer an identity path. Post-norm (the paper,
#   `LN(x + f(x))`) keeps the stream at unit scale; pre-norm (`x + f(LN(x))`, most code today and
#   The Annotated Transformer's code) lets it grow with depth and needs a final LayerNorm.
# * Three attentions: encoder self-attention, masked decoder self-attention, and cross-attention
#   with queries from the decoder and keys/values from the encoder.
# * Our encoder and decoder layers, written out by hand, equal `utils.blocks` and PyTorch's
#   `TransformerEncoderLayer` / `TransformerDecoderLayer` with copied weights.
#
# ## Exercises
#
# Each checker prints PASS, a specific failure, or "not attempted yet". Stuck? Call
# `check.<name>.hint()`; to see a reference answer, `check.<name>.solution()`.

# %%
from utils.exercises import lesson06 as check

# %% [markdown]
# **Exercise 1.** Write `my_layer_norm(x, g, b, eps)`: layer normalisation over the last axis of `x`
# with gain `g`, bias `b` and `eps` inside the square root. The checker compares it with
# `torch.nn.LayerNorm`, including a large `eps` and a tiny `H` where small mistakes show.

# %%
def my_layer_norm(x, g, b, eps):
    raise NotImplementedError


check.layer_norm(my_layer_norm)

# %% [markdown]
# **Exercise 2.** Write `my_encoder_layer(layer, x, mask)`: the forward pass of a
# `utils.blocks.EncoderLayer` using only its parts `layer.self_attn`, `layer.ff`, `layer.norm1`,
# `layer.norm2` — and `layer.norm_first`, since the checker tries both post-norm and pre-norm layers.

# %%
def my_encoder_layer(layer, x, mask):
    raise NotImplementedError


check.encoder_layer(my_encoder_layer)

# %% [markdown]
# **Exercise 3.** Write `my_cross_attention(layer, y, memory, memory_mask)`: only the cross-attention
# call of a `utils.blocks.DecoderLayer` (`layer.cross_attn`), returning its output
# `(batch, T_tgt, d_model)`. Which of `y` and `memory` gives the queries?

# %%
def my_cross_attention(layer, y, memory, memory_mask):
    raise NotImplementedError


check.cross_attention(my_cross_attention)
