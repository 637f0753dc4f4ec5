# %% [markdown]
# # 04 · Masking
#
# **Goals.** By the end of this lesson you can
#
# - remove a key from attention exactly, by setting its score to −∞ before the softmax;
# - build a padding mask for a batch of sentences of different lengths, and check that the pad tokens
#   cannot change the outputs at real positions;
# - build the causal mask of a decoder, see why the lecture's formula (−∞ for j ≥ i) produces NaN, and fix it
#   (keep j ≤ i);
# - test for leakage: with the causal mask, the future cannot change the past;
# - combine causal and padding masks, and know what a query with nothing to attend to returns.
#
# **Prerequisites.** [03 · Self-attention](03_self_attention.ipynb).
#
# **Convention.** A mask is a boolean tensor, `True` = *may attend*, broadcastable to the scores'
# shape (…, T_q, T_k), as in `torch.nn.functional.scaled_dot_product_attention`.
# (`torch.nn.MultiheadAttention` uses the opposite: `True` = *may not*.)

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    get_ipython().run_line_magic(
        "pip", "install -q 'attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand'"
    )

# %%
import math

import numpy as np
import torch
import torch.nn.functional as F

from utils.attention import scaled_dot_product_attention
from utils.masks import causal_mask, combine_masks, padding_mask
from utils.plotting import plot_attention, plot_attention_explorer
from utils.widgets import attention_explorer

torch.set_printoptions(precision=4, sci_mode=False)
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. −∞ before the softmax removes a position exactly
#
# softmax(s)_j = e^{s_j} / Σ_l e^{s_l}. With s_j = −∞, e^{s_j} = 0: key j gets weight exactly 0, and the
# other weights renormalise among themselves, as if key j had never been there.

# %%
gen = torch.Generator().manual_seed(0)
s = torch.randn(5, generator=gen, dtype=torch.float64)  # (T_k,) one query's scores
removed = s.clone()  # (T_k,)
removed[2] = float("-inf")  # remove key 2
w = torch.softmax(removed, dim=-1)  # (T_k,)
keep = [0, 1, 3, 4]
print("scores:", s.numpy().round(4))
print("weights with key 2 removed:", w.numpy().round(4))
assert w[2] == 0.0, "exactly zero"
assert torch.allclose(w[keep], torch.softmax(s[keep], dim=-1)), "the rest renormalise"

# %% [markdown]
# It is the same as taking the softmax, zeroing key 2 and renormalising; and it is what `utils` does
# with a mask that is False at key 2. Setting the score to 0 instead of −∞ does *not* remove the key
# (e⁰ = 1).

# %%
full = torch.softmax(s, dim=-1)  # (T_k,)
zeroed = full * torch.tensor([1.0, 1, 0, 1, 1], dtype=torch.float64)  # (T_k,)
assert torch.allclose(w, zeroed / zeroed.sum())
mask = torch.tensor([True, True, False, True, True])  # (T_k,) True = may attend
q, k = s[None, :], torch.eye(5, dtype=torch.float64) * math.sqrt(5)  # scores q·k_j/√5 = s_j
_, w_utils = scaled_dot_product_attention(q, k, k, mask)  # (1, T_k)
assert torch.allclose(w_utils[0], w)
zero_score = s.clone()  # (T_k,)
zero_score[2] = 0.0
print("weight of key 2 with score 0 instead of -inf:", round(torch.softmax(zero_score, -1)[2].item(), 4))
assert torch.softmax(zero_score, -1)[2] > 0.1

# %% [markdown]
# ## 2. Padding masks
#
# Sentences in a batch have different lengths, but a tensor is rectangular: we pad the short ones with a
# `<pad>` token (id 0). The pad tokens are not words, so no query may attend to them: the padding mask is
# True on real tokens, with shape (batch, 1, T) so that it broadcasts over every query row of the scores
# (batch, T_q, T_k).

# %%
sentences = ["YOUR CAT IS A LOVELY CAT", "THE CAT SAT", "A CAT"]
vocab = {"<pad>": 0}
for sentence in sentences:
    for word in sentence.split():
        vocab.setdefault(word, len(vocab))
T = max(len(s.split()) for s in sentences)
tokens = torch.tensor([[vocab[w] for w in s.split()] + [0] * (T - len(s.split())) for s in sentences])  # (batch, T)
print(tokens)  # (batch, T)

# %% [markdown]
# By hand, key by key, then with `utils.masks.padding_mask`:

# %%
naive = torch.zeros(len(sentences), 1, T, dtype=torch.bool)  # (batch, 1, T)
for b in range(len(sentences)):
    for j in range(T):
        naive[b, 0, j] = tokens[b, j].item() != vocab["<pad>"]
pad_mask = padding_mask(tokens, pad_id=0)  # (batch, 1, T)
print(pad_mask.int())
assert torch.equal(pad_mask, naive) and pad_mask.shape == (3, 1, 6)

# %% [markdown]
# Embed the tokens (a seeded embedding table, d_model = 16) and run masked self-attention.

# %%
d_model = 16
torch.manual_seed(0)
embedding = torch.nn.Embedding(len(vocab), d_model)
with torch.no_grad():
    x = embedding(tokens)  # (batch, T, d_model)
out, weights = scaled_dot_product_attention(x, x, x, pad_mask)  # (batch, T, d_model), (batch, T, T)
print("weights of 'THE CAT SAT':\n", weights[1].numpy().round(3))
assert torch.all(weights[1][:, 3:] == 0), "no query attends to a pad"
assert torch.allclose(weights.sum(-1), torch.ones(3, T))
fig = plot_attention(tokens=["THE", "CAT", "SAT", "<pad>", "<pad>", "<pad>"], weights=weights[1].numpy(),
                     mask=pad_mask[1].expand(T, T).numpy(), title="THE CAT SAT, padding mask")

# %% [markdown]
# The claim that matters: **outputs at real positions do not depend on what the pad tokens are.** Replace
# every pad vector by something wild and compare. Without the mask they do change. (The outputs *at* pad
# positions are meaningless either way; later lessons ignore them in the loss.)

# %%
real = tokens != 0  # (batch, T)
wild = torch.randn(x.shape, generator=gen) * 100  # (batch, T, d_model)
x_wild = torch.where(real[..., None], x, wild)  # (batch, T, d_model) same words, different pads
out_wild, _ = scaled_dot_product_attention(x_wild, x_wild, x_wild, pad_mask)  # (batch, T, d_model)
assert torch.allclose(out_wild[real], out[real], atol=1e-6), "masked: pads cannot change real outputs"
out_nomask, _ = scaled_dot_product_attention(x, x, x)  # (batch, T, d_model)
out_nomask_wild, _ = scaled_dot_product_attention(x_wild, x_wild, x_wild)  # (batch, T, d_model)
print("largest change at real positions, masked:  ", round((out_wild - out)[real].abs().max().item(), 6))
print("largest change at real positions, no mask: ", round((out_nomask_wild - out_nomask)[real].abs().max().item(), 2))
assert not torch.allclose(out_nomask_wild[real], out_nomask[real], atol=1e-2)

# %% [markdown]
# ## 3. The causal mask
#
# A decoder generates one word at a time, so while training, position i must not see the words after
# it. The lecture (seed 001) writes this as
#
# $$e_{ij} = \begin{cases} q_i^\top k_j, & j < i \\ -\infty, & j \geq i \end{cases}$$
#
# with a table for "Happy mid autumn festival" whose first row is all −∞. Let us run exactly that.

# %%
words = ["Happy", "mid", "autumn", "festival"]
n = len(words)
gen = torch.Generator().manual_seed(1)
qk = torch.randn(n, 8, generator=gen, dtype=torch.float64)  # (n, d_k) queries = keys = values
scores = qk @ qk.T / math.sqrt(8)  # (n, n)
e = scores.clone()  # (n, n)
for i in range(n):
    for j in range(n):
        if j >= i:  # seed 001's rule
            e[i, j] = float("-inf")
seed_weights = torch.softmax(e, dim=-1)  # (n, n)
print(seed_weights.numpy().round(4))

# %% [markdown]
# The first row is all −∞: softmax computes 0/0 = **NaN**. And j ≥ i also removes the diagonal, so every
# other word cannot see itself either (for "mid", the whole distribution sits on "Happy").

# %%
assert torch.isnan(seed_weights[0]).all(), "row 0 is NaN"
assert not torch.isnan(seed_weights[1:]).any() and torch.all(seed_weights.diagonal()[1:] == 0)
assert seed_weights[1, 0] == 1.0

# %% [markdown]
# One NaN row is enough to ruin training: it flows into the output and the loss, and backprop carries it
# into the gradient of the value projection W_v (every value row meets the NaN weights of row 0).

# %%
torch.manual_seed(0)
W_q, W_v = torch.nn.Linear(8, 8, dtype=torch.float64), torch.nn.Linear(8, 8, dtype=torch.float64)
seed_mask = torch.ones(n, n, dtype=torch.bool).triu()  # (n, n) True where seed 001 puts -inf (j >= i)
e_q = (W_q(qk) @ qk.T / math.sqrt(8)).masked_fill(seed_mask, float("-inf"))  # (n, n)
loss = (torch.softmax(e_q, dim=-1) @ W_v(qk)).square().sum()  # (,) any loss will do
loss.backward()
print("loss:", loss.item())
print("NaN entries in W_v's gradient:", int(W_v.weight.grad.isnan().sum()), "of", W_v.weight.numel())
assert torch.isnan(loss) and W_v.weight.grad.isnan().all()

# %% [markdown]
# The fix: keep the diagonal. Position i may attend to every j **≤ i**, itself included, and −∞ only for
# j > i. By hand, then `utils.masks.causal_mask`:

# %%
naive_causal = torch.zeros(n, n, dtype=torch.bool)  # (n, n)
for i in range(n):
    for j in range(n):
        naive_causal[i, j] = j <= i
print(naive_causal.int())
assert torch.equal(causal_mask(n), naive_causal)

# %%
out_c, causal_weights = scaled_dot_product_attention(qk, qk, qk, causal_mask(n))  # (n, d_k), (n, n)
print(causal_weights.numpy().round(4))
assert not torch.isnan(causal_weights).any()
assert torch.allclose(causal_weights.sum(-1), torch.ones(n, dtype=torch.float64))
assert torch.all(causal_weights.triu(1) == 0) and causal_weights[0, 0] == 1, "Happy sees only itself"
fig = plot_attention(words, causal_weights.numpy(), mask=causal_mask(n).numpy(), title="causal mask, j ≤ i")

# %% [markdown]
# ## 4. A leakage test
#
# If the mask works, changing the tokens after position t cannot change any output at positions ≤ t.
# We check it for every t, through two stacked attention layers with learned projections (a decoder is a
# stack: the mask must hold through all of it). Without the mask, the past changes.

# %%
torch.manual_seed(0)
layers = [[torch.nn.Linear(d_model, d_model, dtype=torch.float64) for _ in range(3)] for _ in range(2)]


def decoder_stack(x, mask):
    """Two self-attention layers Attention(xW_q, xW_k, xW_v) with residuals: (T, d_model) -> (T, d_model)."""
    for W_q, W_k, W_v in layers:
        x = x + scaled_dot_product_attention(W_q(x), W_k(x), W_v(x), mask)[0]  # (T, d_model)
    return x


T_dec = 6
x_dec = torch.randn(T_dec, d_model, generator=gen, dtype=torch.float64)  # (T, d_model)
y_dec = decoder_stack(x_dec, causal_mask(T_dec))  # (T, d_model)
for t in range(T_dec - 1):
    changed = x_dec.clone()  # (T, d_model)
    changed[t + 1:] = torch.randn(T_dec - t - 1, d_model, generator=gen, dtype=torch.float64)  # new future
    assert torch.allclose(decoder_stack(changed, causal_mask(T_dec))[: t + 1], y_dec[: t + 1]), f"leak at t={t}"
    assert not torch.allclose(decoder_stack(changed, None)[: t + 1], decoder_stack(x_dec, None)[: t + 1])
print(f"causal: no leakage for any t in 0..{T_dec - 2}; without the mask, the past changes for every t: PASS")

# %% [markdown]
# The same fact as a picture of dependencies: the Jacobian block ∂y_t/∂x_s is zero whenever s > t, so
# the matrix of their norms is lower triangular.

# %%
J = torch.autograd.functional.jacobian(lambda x: decoder_stack(x, causal_mask(T_dec)), x_dec)  # (T, d, T, d)
dependence = J.abs().sum(dim=(1, 3))  # (T, T): row t, column s
print((dependence > 0).int())
assert torch.equal(dependence > 0, causal_mask(T_dec))

# %% [markdown]
# ## 5. Causal and padding masks together
#
# A decoder on a padded batch needs both: query i may attend to key j when j ≤ i **and** j is a real token.
# `utils.masks.combine_masks` takes the logical AND with broadcasting: (T, T) & (batch, 1, T) → (batch, T, T).

# %%
both = combine_masks(causal_mask(T), pad_mask)  # (batch, T, T)
naive_both = torch.zeros(len(sentences), T, T, dtype=torch.bool)  # (batch, T, T)
for b in range(len(sentences)):
    for i in range(T):
        for j in range(T):
            naive_both[b, i, j] = j <= i and tokens[b, j].item() != 0
assert torch.equal(both, naive_both)
print("mask for 'THE CAT SAT':\n", both[1].int())

# %% [markdown]
# With pads on the right, every query still sees at least key 0, a real word. But batches for generation
# are often padded on the **left** (so that every sentence ends at the same position). Then the first
# query of a short sentence is a pad and may attend to nothing: a **fully-masked row**.

# %%
left = torch.tensor([[0, 0, 0, vocab["THE"], vocab["CAT"], vocab["SAT"]]])  # (1, T) left-padded
left_mask = combine_masks(causal_mask(T), padding_mask(left, 0))  # (1, T, T)
with torch.no_grad():
    x_left = embedding(left)  # (1, T, d_model)
empty_rows = ~left_mask.any(dim=-1)  # (1, T)
print(left_mask[0].int())
print("queries with nothing to attend to:", empty_rows[0].nonzero().flatten().tolist())
assert empty_rows[0].tolist() == [True, True, True, False, False, False]

# %% [markdown]
# A plain softmax over an all −∞ row gives NaN, as in section 3. `utils` returns **zero weights and a zero
# output** for such a row (the query attends to nothing), with no NaN in the forward or backward pass:

# %%
x_req = x_left.clone().requires_grad_()  # (1, T, d_model)
ours, ours_w = scaled_dot_product_attention(x_req, x_req, x_req, left_mask)  # (1, T, d_model), (1, T, T)
ours.sum().backward()
print("utils output, rows 0-3, first 4 features:\n", ours[0, :4, :4].detach().numpy().round(4))
assert torch.all(ours[0, :3] == 0) and torch.all(ours_w[0, :3] == 0)
assert not torch.isnan(ours).any() and not torch.isnan(x_req.grad).any()
plain = torch.softmax((x_left @ x_left.transpose(-2, -1)).masked_fill(~left_mask, float("-inf")), dim=-1)  # (1, T, T)
assert torch.isnan(plain[0, :3]).all() and not torch.isnan(plain[0, 3:]).any()
print("plain softmax: NaN in rows 0-2; utils: zeros, and finite gradients: PASS")

# %% [markdown]
# What does torch do? Run both of its attention functions on the same input and print what they return.
# `F.scaled_dot_product_attention` (same mask convention as ours):

# %%
torch_out = F.scaled_dot_product_attention(x_left, x_left, x_left, attn_mask=left_mask)  # (1, T, d_model)
print("F.scaled_dot_product_attention, rows 0-3, first 4 features:\n", torch_out[0, :4, :4].numpy().round(4))
torch_zero_rows = (torch_out[0] == 0).all(dim=-1)  # (T,)
assert torch_zero_rows.tolist() == [True, True, True, False, False, False]
assert torch.allclose(torch_out, ours.detach(), atol=1e-6)
print("in this torch version, F.scaled_dot_product_attention also returns zeros for a fully-masked row")

# %% [markdown]
# and `torch.nn.MultiheadAttention` (whose boolean `attn_mask` means the opposite, True = *may not*
# attend, so we pass `~left_mask`):

# %%
torch.manual_seed(0)
mha = torch.nn.MultiheadAttention(d_model, num_heads=1, batch_first=True)
mha_out, mha_w = mha(x_left, x_left, x_left, attn_mask=~left_mask)  # (1, T, d_model), (1, T, T)
print("nn.MultiheadAttention, rows 0-3, first 4 features:\n", mha_out[0, :4, :4].detach().numpy().round(4))
assert torch.isnan(mha_out[0, :3]).all() and torch.isnan(mha_w[0, :3]).all()
assert not torch.isnan(mha_out[0, 3:]).any()
print("nn.MultiheadAttention returns NaN for the fully-masked rows (and the rest is fine)")

# %% [markdown]
# So the same situation gives zeros in one torch function and NaN in another. `utils` always gives zeros:
# a query that may attend to nothing receives nothing.
#
# ## 6. The explorer, with its mask control
#
# The attention-map explorer of lesson 03 has a mask dropdown: none, causal, padding (tokens equal to
# `<pad>`) and causal+padding. Masked cells are dotted and have weight 0; every other row sums to 1.
# Its state with both masks on a padded sentence:

# %%
fig = plot_attention_explorer("YOUR CAT IS A LOVELY CAT <pad> <pad>", mask="causal+padding", query=5)

# %%
# NBVAL_IGNORE_OUTPUT
attention_explorer("YOUR CAT IS A LOVELY CAT <pad> <pad>", mask="causal+padding", query=5)

# %% [markdown]
# ## Summary
#
# - A score of −∞ before the softmax gives that key weight exactly 0; the rest renormalise. A score of 0
#   does not remove anything.
# - Padding mask: (batch, 1, T), True on real tokens; outputs at real positions do not depend on the pads.
# - Causal mask: True for j ≤ i. Seed 001's j < i masks the diagonal, turns the first row into NaN and,
#   through the loss, every gradient.
# - With the causal mask the future cannot change the past, at every position and through a stack of layers.
# - Masks combine with a logical AND. A fully-masked row: plain softmax → NaN, `nn.MultiheadAttention` → NaN,
#   `F.scaled_dot_product_attention` (this torch version) → zeros, `utils` → zeros.
#
# ## Exercises
#
# Replace `raise NotImplementedError` with your code and run the cell. `check.causal_mask.hint()` gives a
# hint, `check.causal_mask.solution()` one solution (likewise for the others).

# %%
from utils.exercises import lesson04 as check

# %% [markdown]
# **1.** The causal mask: a bool tensor of shape (n, n), True where query i may attend to key j.

# %%
def my_causal_mask(n):
    raise NotImplementedError


check.causal_mask(my_causal_mask)

# %% [markdown]
# **2.** The padding mask of a batch of token ids (batch, T): bool, True on real tokens, shaped
# (batch, 1, T) so that it broadcasts over the queries.

# %%
def my_padding_mask(tokens, pad_id):
    raise NotImplementedError


check.padding_mask(my_padding_mask)

# %% [markdown]
# **3.** A masked softmax over the last dimension: scores (…, T_k) and a bool mask of the same shape.
# Masked keys get weight 0, the others renormalise, and a row with no allowed key gives all zeros (no NaN).

# %%
def masked_softmax(scores, mask):
    raise NotImplementedError


check.masked_softmax(masked_softmax)
