# %% [markdown]
# # 01 · Positional encoding
#
# **Goals.** By the end of this lesson you will have seen why attention without a mask cannot tell
# "A chases B" from "B chases A", and why integer positions, or positions squeezed into [0, 1], are
# poor position signals; built the sinusoidal encoding of *Attention is all you need* (section 3.5),
# checked that it is bounded, deterministic and unique, and read the paper's reasons for it; and
# added it to the word embeddings of "YOUR CAT IS A LOVELY CAT".
#
# **Prerequisites.** Python, a little NumPy and PyTorch (tensors, `@`, broadcasting). Lesson 00
# motivates this one but is not required.
#
# **Conventions, for this lesson and all the following ones.** As in the paper, vectors are **rows**.
# A sentence of $T$ tokens is a matrix $X$ of shape `(T, d_model)`, one row per token, and a linear
# map multiplies from the right: $xW$, $XW$ (the paper's $QW_i^Q$, section 3.2.2). A batch adds a
# leading axis: `(batch, T, d_model)`.

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
# Everything we need: PyTorch for tensors, NumPy for the naive version, and this collection's `utils`.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from utils.course.exercises import lesson01 as check
from utils.figures.plotting import plot_pe_heatmap
from utils.figures.widgets import pe_explorer
from utils.positional import PositionalEncoding, angular_frequencies, relative_rotation, sinusoidal_encoding

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. The ordering problem
#
# An RNN reads a sentence in order; a Transformer reads all words at once. Take the simplest things
# it does with word vectors: **sum** them, or let each word **attend** to all the words, itself
# included, without a mask, $\mathrm{softmax}(XX^\top/\sqrt{d_{model}})\,X$: each output a weighted average of the word
# vectors, with weights that are positive and sum to 1 (lesson 03's parameter-free self-attention, as
# in the encoder). Here are "A chases B" and "B chases A" with random word vectors.
#
# **Predict first.** Of the three output vectors of attention for "A chases B", how many are also
# output vectors for "B chases A"?

# %%
my_guess_shared = None  # your answer: 0, 1, 2 or 3

# %% tags=["nbval-ignore-output"]
SEEDS = range(5)  # every claim about random numbers is checked over these seeds


def sentences(seed, width=8):
    """Random word vectors for A, chases, B; returns X for "A chases B" and "B chases A", (seq, width) each."""
    torch.manual_seed(seed)
    vectors = {w: torch.randn(width) for w in ["A", "chases", "B"]}  # each (width,)
    X_ab = torch.stack([vectors["A"], vectors["chases"], vectors["B"]])  # (seq, width) "A chases B"
    X_ba = torch.stack([vectors["B"], vectors["chases"], vectors["A"]])  # (seq, width) "B chases A"
    return X_ab, X_ba


def self_attention(X):
    """Parameter-free self-attention: every word becomes a weighted average of all words."""
    weights = torch.softmax(X @ X.T / math.sqrt(X.shape[-1]), dim=-1)  # (seq, seq)
    return weights @ X  # (seq, d_model)


X_ab, X_ba = sentences(seed=0)  # (seq, width) each
out_ab, out_ba = self_attention(X_ab), self_attention(X_ba)  # (seq, width) each
print("sum over words, A chases B:", X_ab.sum(dim=0)[:4])
print("sum over words, B chases A:", X_ba.sum(dim=0)[:4])
print("attention output for 'A', A chases B:", out_ab[0, :4])
print("attention output for 'A', B chases A:", out_ba[2, :4])

# %% [markdown]
# The sums are the same, and "A" comes out of attention as the same vector, subject or object: the
# outputs are the same vectors, reordered as the inputs were (lesson 03 proves it for any vectors). A **causal mask**
# (lesson 04), as in the decoder, breaks this: who may see whom then depends on the order ("Going
# further" checks it).

# %% tags=["hide-input"]
for seed in SEEDS:
    X_ab, X_ba = sentences(seed)  # (seq, width) each
    assert torch.allclose(X_ab.sum(dim=0), X_ba.sum(dim=0), atol=1e-6)  # sum: order-blind
    assert torch.allclose(self_attention(X_ab)[[2, 1, 0]], self_attention(X_ba), atol=1e-6)  # shuffled
print("✓ in 5 of 5 draws the sums are equal and unmasked attention only reorders the outputs")
out_ab, out_ba = self_attention(X_ab), self_attention(X_ba)  # (seq, width) each, the last draw
shared = sum(any(torch.allclose(row, other, atol=1e-6) for other in out_ba) for row in out_ab)
assert shared == check.predict_shared_outputs.reference
print(f"{shared} of the 3 unmasked outputs for 'A chases B' are also outputs for 'B chases A', reordered")

# %%
check.predict_shared_outputs(my_guess_shared)

# %% [markdown]
# A tiny RNN, $h_t = \tanh(h_{t-1} W_h + x_t W_x)$ (row vectors, as everywhere here), is not fooled:
# its final state depends on the order, for each of 5 random draws of the words and the weights.


# %%
def rnn_final_state(X, W_h, W_x):
    """Read the rows of X (seq, width) in order; return the last state (width,)."""
    h = torch.zeros(W_h.shape[0])  # (width,)
    for x_t in X:  # one word at a time, in order
        h = torch.tanh(h @ W_h + x_t @ W_x)  # (width,)
    return h


gaps = []
for seed in SEEDS:
    X_ab, X_ba = sentences(seed)  # (seq, width) each
    width = X_ab.shape[1]  # 8, the width sentences() draws
    W_h, W_x = torch.randn(width, width) / 3, torch.randn(width, width) / 3  # (width, width) each
    gaps.append((rnn_final_state(X_ab, W_h, W_x) - rnn_final_state(X_ba, W_h, W_x)).norm().item())
assert min(gaps) > 0.1
print("✓ the RNN's final states for the two sentences differ, in 5 of 5 draws")

# %% tags=["nbval-ignore-output"]
print("distance between the two final states, per draw:", [round(g, 3) for g in gaps])

# %% [markdown]
# So the Transformer adds a position vector $PE(pos)$ to each word vector before the first layer.
# Section 3.5 adds them "to the input embeddings at the bottoms of the encoder and decoder stacks.
# The positional encodings have the same dimension $d_{model}$ as the embeddings, so that the two
# can be summed."
# The reading notes list what we want of it: **bounded**, **deterministic**, **unique for each
# position**, and a distance between two steps that **means the same in sentences of different
# lengths**. Liang Hong's slides and the reading notes reject the obvious candidates first.

# %% [markdown]
# ## 2. Why not integer positions, or positions in [0, 1]?
#
# Use the position itself, 0, 1, 2, ... as the signal: it grows with the sentence, while a word
# vector with unit-variance entries (our choice here; section 6 meets others) stays within a few
# units. The last position against the largest entry of such a word vector (entries from $N(0, 1)$, 5 draws):

# %% tags=["nbval-ignore-output"]
d_model = 512
largest_entries = []
for seed in SEEDS:
    torch.manual_seed(seed)
    word_vector = torch.randn(d_model)  # (d_model,) a typical word vector
    largest_entries.append(word_vector.abs().max().item())
largest_entry = max(largest_entries)
print(f"largest entry of a word vector, over 5 draws: from {min(largest_entries):.2f} to {largest_entry:.2f}")
for seq_len in (10, 100, 1000, 10000):
    last = seq_len - 1
    print(f"seq_len {seq_len:5d}: last position {last:4d} = {last / largest_entry:7.1f} x the largest of them")

# %% tags=["hide-input"]
assert largest_entry < 5  # word-vector entries stay small, in every draw, while positions only grow
print("✓ in 5 of 5 draws every word-vector entry is under 5, so under a tenth of the last position from 100 words on")

# %% [markdown]
# A model trained on sentences of up to 100 words would also meet values like 999 for the first time
# at inference. So divide by the last position, `pos / (seq_len - 1)`: every position lies in
# $[0, 1]$, bounded.
#
# **Predict first.** In a 50-word sentence, how many words apart are two positions 0.25 apart?

# %%
my_guess_gap = None  # your answer: a number of words, not necessarily whole, e.g. 3.5

# %%
steps = {}
for seq_len in (5, 50):
    scaled = torch.arange(seq_len) / (seq_len - 1)  # (seq_len,) positions squeezed into [0, 1]
    steps[seq_len] = (scaled[1] - scaled[0]).item()
    print(f"seq_len {seq_len:2d}: {scaled[:4].numpy().round(4)} ..., step between neighbours {steps[seq_len]:.4f}")

# %%
words_apart = {seq_len: 0.25 / step for seq_len, step in steps.items()}  # a gap of 0.25, counted in words
at_half = {seq_len: (torch.arange(seq_len) / (seq_len - 1) == 0.5).nonzero().flatten().tolist() for seq_len in steps}
print(f"a gap of 0.25 is {words_apart[5]:.2f} word in the 5-word sentence, {words_apart[50]:.2f} in the 50-word one")
print(f"the word at 0.5: {at_half[5]} in the 5-word sentence, {at_half[50]} in the 50-word one")
assert words_apart[50] > 12 * words_apart[5] and at_half[5] == [2] and at_half[50] == []
assert math.isclose(words_apart[50], check.predict_gap_in_words.reference, rel_tol=1e-6)
print("✓ the same number is a different distance, or no word at all, in sentences of different lengths")

# %%
check.predict_gap_in_words(my_guess_gap)

# %% [markdown]
# The same number means different things in different sentences, and 0.5 is position 2 (the third
# word) of a five-word sentence but no word at all of a 50-word one. The sinusoidal encoding below
# has no `seq_len` in it at all, so it cannot have this problem.

# %% [markdown]
# ## 3. The sinusoidal formula
#
# The paper gives every position a vector of $d_{model}$ numbers. Columns come in pairs $2i, 2i+1$
# for $i = 0, \dots, d_{model}/2 - 1$; each pair is a sine and a cosine of the same angle:
#
# $$PE(pos, 2i) = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right), \qquad
#   PE(pos, 2i+1) = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right).$$
#
# Writing $w_i = 1/10000^{2i/d_{model}}$ (the pair's angular frequency), the angle is $w_i \cdot pos$.
# At position 0 every angle is 0, so $PE(0) = (0, 1, 0, 1, \dots, 0, 1)$.
#
# **Predict first.** What is $PE(1, 0)$, the first entry of position 1's vector (3 decimals)?
# Then the table with two loops, straight from the formula, settles it:

# %%
my_guess_pe1 = None  # your answer: a number, e.g. 0.5


# %%
def pe_naive(max_len, d_model, base=10000.0):
    """The PE table, one entry at a time."""
    table = np.zeros((max_len, d_model))  # (max_len, d_model)
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            table[pos, 2 * i] = math.sin(angle)
            table[pos, 2 * i + 1] = math.cos(angle)
    return table


print(np.round(pe_naive(4, 8), 4))

# %% [markdown]
# `utils.positional.sinusoidal_encoding(max_len, d_model)` computes the same table without loops
# (in float64, then cast to float32 by default). The two agree at several sizes:

# %% tags=["hide-input"]
for max_len, d_model in [(4, 8), (50, 16), (100, 128), (30, 512)]:
    naive = torch.from_numpy(pe_naive(max_len, d_model))  # (max_len, d_model) float64
    fast64 = sinusoidal_encoding(max_len, d_model, dtype=torch.float64)  # (max_len, d_model)
    fast32 = sinusoidal_encoding(max_len, d_model)  # (max_len, d_model) float32, the default
    assert fast32.dtype == torch.float32 and fast32.shape == (max_len, d_model)
    assert torch.allclose(fast64, naive, rtol=0, atol=1e-12)
    assert torch.allclose(fast32.double(), naive, rtol=0, atol=1e-7)
print("✓ the loops and utils.positional.sinusoidal_encoding give the same table")

# %% tags=["hide-input"]
pe_512 = sinusoidal_encoding(2, 512, dtype=torch.float64)  # (2, d_model=512): rows PE(0), PE(1)
assert torch.equal(pe_512[0, 0::2], torch.zeros(256)) and torch.equal(pe_512[0, 1::2], torch.ones(256))
assert round(pe_512[1, 0].item(), 4) == check.predict_pe1_first.reference
print("✓ PE(0) = (0, 1, 0, 1, ..., 0, 1), and PE(1) starts with sin(1)")

# %%
check.predict_pe1_first(my_guess_pe1)

# %% [markdown]
# ## 4. Bounded, deterministic, unique
#
# Build the table for 10,000 positions at $d_{model} = 512$. Every entry is a sine or a cosine, so it
# lies in $[-1, 1]$. And the rows?
#
# **Predict first.** How long is the vector $PE(pos)$ at $d_{model} = 512$: what is its norm
# $\lVert PE(pos) \rVert$, and does it grow along the sentence? Write a number in the next cell
# before you run the one after it; section 3's $PE(0)$ is a good place to start.

# %%
my_guess_norm = None  # your answer: the norm of PE(pos) at d_model = 512, e.g. 3.5

# %%
max_len, d_model = 10_000, 512
pe = sinusoidal_encoding(max_len, d_model, dtype=torch.float64)  # (max_len, d_model)
row_norms = pe.norm(dim=1)  # (max_len,)
print(
    f"smallest entry {pe.min():.4f}, largest {pe.max():.4f}; row norms from {row_norms.min():.6f} to {row_norms.max():.6f}"
)
assert pe.abs().max() <= 1
assert torch.allclose(row_norms, torch.full_like(row_norms, math.sqrt(d_model / 2)), atol=1e-9)
print("✓ bounded: every entry in [-1, 1], every row of norm 16")

# %% [markdown]
# Every row has the same length, however far along the sentence it is: since
# $\sin^2 + \cos^2 = 1$ for each of the 256 pairs, $\lVert PE(pos) \rVert^2 = d_{model}/2$. Your
# prediction:

# %%
check.predict_row_norm(my_guess_norm)

# %% [markdown]
# **Deterministic**: no random numbers and nothing learned, so the table cannot depend on the random
# state. Build it after two different seeds; a learned position table (an `nn.Embedding`, which
# starts from random numbers) built the same way does depend on them. (This catches a table that
# draws random numbers; that it is the right table, we check again against section 3's loops.)

# %% tags=["hide-input"]
tables, learned = [], []
for seed in (0, 1):
    torch.manual_seed(seed)
    tables.append(sinusoidal_encoding(max_len, d_model, dtype=torch.float64))  # (max_len, d_model)
    learned.append(torch.nn.Embedding(max_len, d_model).weight.detach())  # (max_len, d_model), untrained
assert torch.equal(tables[0], tables[1]) and torch.equal(tables[0], pe)
assert torch.allclose(tables[1][:50], torch.from_numpy(pe_naive(50, d_model)), rtol=0, atol=1e-12)
assert not torch.equal(learned[0], learned[1])
print("✓ deterministic: the same bits after two different seeds, and the loops' table (a learned table is not)")

# %% [markdown]
# **Unique**: no two positions may share a vector. Comparing all $10{,}000^2/2$ pairs directly is
# slow, but there is a shortcut. With $\sin a \sin b + \cos a \cos b = \cos(a - b)$, the squared
# distance between positions $t$ and $t + k$ is
#
# $$\lVert PE(t) - PE(t+k) \rVert^2 = \sum_{i} \big(2 - 2\cos(w_i k)\big)
#   = d_{model} - 2 \sum_{i=0}^{d_{model}/2 - 1} \cos(w_i k),$$
#
# which depends on the offset $k$ only, not on $t$ (lesson 02 takes this further). So one number per
# offset covers every pair:

# %%
w = angular_frequencies(d_model)  # (d_model/2,) float64, w_i = 10000^(-2i/d_model)
k = torch.arange(1, max_len, dtype=torch.float64)  # (max_len - 1,) every offset
dist_by_offset = (d_model - 2 * torch.cos(k[:, None] * w).sum(dim=1)).clamp_min(0).sqrt()  # (max_len - 1,)
print(
    f"distance at offsets 1, 2, 10, 100, 1000: {[round(dist_by_offset[j - 1].item(), 4) for j in (1, 2, 10, 100, 1000)]}"
)

# %% [markdown]
# Check the shortcut against brute force on the first 1,000 positions (`torch.cdist` computes every
# pairwise distance), then read off the closest pair among all 10,000 positions:

# %%
n = 1000
brute = torch.cdist(pe[:n], pe[:n])  # (n, n) every pairwise distance
t, s = torch.triu_indices(n, n, offset=1)  # every pair t < s
assert torch.allclose(brute[t, s], dist_by_offset[s - t - 1], atol=1e-6)
closest = dist_by_offset.min().item()
closest_offset = int(dist_by_offset.argmin()) + 1
print(f"closest two of {max_len} positions: {closest:.4f} apart, at offset {closest_offset}")
assert closest > 3 and closest_offset == 1
assert torch.unique(sinusoidal_encoding(max_len, d_model), dim=0).shape[0] == max_len  # also in float32
print("✓ unique: no two of 10,000 positions share a vector; the closest are neighbours")

# %% [markdown]
# That was one width. The same shortcut checks six, from $d_{model} = 16$ to $1024$ (512 again): in
# each, the closest two of the 10,000 positions are neighbours, and no two coincide.
#
# > **Going further:** very small widths, and why no two positions coincide at any length, are at
# > the end of the lesson.

# %%
for d in (16, 64, 128, 256, 512, 1024):
    dist_d = (d - 2 * torch.cos(k[:, None] * angular_frequencies(d)).sum(dim=1)).clamp_min(0).sqrt()  # (max_len - 1,)
    print(f"d_model {d:4d}: closest pair {dist_d.min():.4f} apart, at offset {int(dist_d.argmin()) + 1}")
    assert dist_d.min() > 1 and int(dist_d.argmin()) == 0
print("✓ unique at 6 of 6 widths (16 to 1024), where the closest are neighbours")

# %% [markdown]
# The same identity answers the $[0, 1]$ problem: two neighbours are the same distance apart
# everywhere, at the start of a sentence or 9,000 words in, and in a sentence of any length.

# %%
neighbour_gaps = (pe[1:] - pe[:-1]).norm(dim=1)  # (max_len - 1,)
print(f"neighbour distances range from {neighbour_gaps.min():.6f} to {neighbour_gaps.max():.6f}")
assert (neighbour_gaps.max() - neighbour_gaps.min()) < 1e-9
print("✓ a step of one word means the same everywhere")

# %% [markdown]
# ## 5. Why these frequencies, and why the paper chose them
#
# Why 256 pairs and not one? The first pair alone, $(\sin pos, \cos pos)$ in columns 0 and 1, is a
# point on a circle of radius 1, so in it any two positions are between 0 and 2 apart.
#
# **Predict first.** How far apart are positions 0 and 710 in the first pair alone, to two decimals?

# %%
my_guess_first_pair = None  # your answer: a distance between 0 and 2, e.g. 1.5

# %%
for offset, turns in ((44, 7), (710, 113)):
    first_pair = (pe[offset, :2] - pe[0, :2]).norm().item()  # columns 0, 1 only
    all_pairs = (pe[offset] - pe[0]).norm().item()  # all d_model columns
    print(
        f"{turns} x 2 pi = {turns * 2 * math.pi:.2f}; positions 0 and {offset}: "
        f"{first_pair:.5f} apart in the first pair, {all_pairs:.4f} in all 256"
    )
    assert first_pair < 0.02 and all_pairs > 10
assert round(first_pair, 2) == check.predict_first_pair_distance.reference  # the last one: offset 710
print("✓ the first pair nearly repeats; all 256 pairs together keep the positions apart")

# %%
check.predict_first_pair_distance(my_guess_first_pair)

# %% [markdown]
# The first pair nearly comes back, roughly every $2\pi$ positions, and 710 is close to $113 \cdot 2\pi$ (44 to
# $7 \cdot 2\pi$), so positions that far apart get almost the same first pair. The slower pairs tell
# them apart.
#
# Each pair's **wavelength**, $2\pi / w_i = 2\pi \cdot 10000^{2i/d_{model}}$, is a
# constant factor $10000^{2/d_{model}}$ longer than the previous one: a geometric progression, a
# straight line on a log scale. The paper (section 3.5): "The wavelengths form a geometric progression
# from $2\pi$ to $10000 \cdot 2\pi$." The cell below reads them off the table: the last is just under
# $10000 \cdot 2\pi$, because $i$ stops at $d_{model}/2 - 1$, one step short of the exponent 1. Each pair is a point going round its circle, like a hand of a clock,
# and together the fast and slow hands tell positions apart, as a clock's second, minute and hour
# hands tell the time.
#
# The reading notes call PE "a generalization of binary encoding" ([Going further](#Going-further) says in what sense).

# %%
d_model = 512
wavelengths = 2 * math.pi / torch.atan2(pe[1, 0::2], pe[1, 1::2])  # (d_model/2,) 2 pi over each pair's angle at pos 1
ratios = wavelengths[1:] / wavelengths[:-1]  # (d_model/2 - 1,)
assert torch.allclose(ratios, torch.full_like(ratios, 10000 ** (2 / d_model)), rtol=1e-9, atol=0)
assert math.isclose(wavelengths[0], 2 * math.pi, rel_tol=1e-12) and wavelengths[-1] < 10000 * 2 * math.pi
print(
    f"wavelengths from {wavelengths[0]:.4f} to {wavelengths[-1]:.1f} positions (10000 x 2 pi = {10000 * 2 * math.pi:.1f}), "
    f"each {ratios[0]:.5f} x the previous one"
)

fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
ax.semilogy(wavelengths.numpy(), color="black")
ax.set(
    xlabel="pair i (columns 2i, 2i+1)",
    ylabel="wavelength (positions)",
    title=f"Geometric wavelengths, 2π to just under 10000·2π (d_model={d_model})",
)
plt.show()

# %% [markdown]
# **The whole table at a glance.** Rows are positions, columns are dimensions. The left columns (fast waves) flip colour every few
# rows; further right the waves are so slow that they barely change over 100 positions. The bottom
# panel is one row, the vector $PE(10)$ that gets added to the 11th word.

# %%
fig = plot_pe_heatmap(max_len=100, d_model=128, position=10)
image = fig.axes[0].images[0].get_array()  # what is drawn: the PE table
assert np.allclose(image, sinusoidal_encoding(100, 128).numpy())
sign_changes = int((np.diff(np.sign(image[1:, 0])) != 0).sum())  # column 0, sin(pos), after pos 0
drift = float(np.abs(image[:, -8:] - image[0, -8:]).max())  # the last 8 columns, over all 100 positions
assert sign_changes >= 30 and drift < 0.05
print(f"✓ column 0 changes sign {sign_changes} times in 100 rows; the last 8 columns move by at most {drift:.3f}")

# %% [markdown]
# **Why the paper chose it.** Section 3.5 gives its reasons. The first: "We chose this function
# because we hypothesized it would allow the model to easily learn to attend by relative positions,
# since for any fixed offset k, $PE_{pos+k}$ can be represented as a linear function of $PE_{pos}$."
# That linear function exists: each sin/cos pair turns by the angle $w_i k$ whatever the position,
# so one matrix $M_k$ of 2 × 2 rotation blocks (`utils.positional.relative_rotation`, built in
# lesson 02) takes every row of the table $k$ rows down ($M_k$ written out: [Going further](#Going-further)).

# %% tags=["hide-input"]
for offset in (1, 7, 100, 5000):
    M_k = relative_rotation(offset, d_model, dtype=torch.float64)  # (d_model, d_model)
    assert torch.allclose(pe[:-offset] @ M_k, pe[offset:], rtol=0, atol=1e-9)  # (max_len - k, d_model)
print("✓ PE(pos + k) = PE(pos) M_k at every pos whose pos + k is in the table of 10,000, for k = 1, 7, 100 and 5000")

# %% [markdown]
# The second reason, after trying the alternative: "We also experimented with using learned
# positional embeddings [9] instead, and found that the two versions produced nearly identical
# results (see Table 3 row (E)). We chose the sinusoidal version because it may allow the model to
# extrapolate to sequence lengths longer than the ones encountered during training." The paper's
# Table 3 reports, on its English-to-German development set (newstest2013), perplexity 4.92 and
# BLEU 25.8 for the base model and 4.92 and 25.7 for row (E), "positional embedding instead of
# sinusoids" (the paper's figures, not measured here, printed below).
#
# So the paper kept sinusoids for a hope, "may
# allow", which it does not test. The YOUR CAT deck repeats the hope ("Easier to extrapolate for
# longer sequences"); the COMP7607 slides answer it with "(No)". Lesson 08 measures it.

# %%
table_3 = {"base model": (4.92, 25.8), "row (E), learned positional embedding": (4.92, 25.7)}  # the paper's
for row, (perplexity, bleu) in table_3.items():
    print(f"Table 3, {row}: perplexity {perplexity}, BLEU {bleu} (newstest2013)")

# %% [markdown]
# ## 6. Computed once, added to the word embeddings
#
# The table does not depend on the words, so it is computed once up to a maximum length and then
# sliced (the YOUR CAT deck: "Only computed once and reused for every sentence during training and
# inference."). `utils.positional.PositionalEncoding` does exactly that. The table is a **buffer**,
# not a parameter: it moves with the model (`.to(device)`), but no optimizer will ever change it. Why
# it is added rather than concatenated, a question the reading notes raise, is lesson 02's.

# %%
pos_enc = PositionalEncoding(d_model=512, max_len=128)
print(pos_enc)
print("parameters:", [name for name, _ in pos_enc.named_parameters()])
print("buffers:", [(name, tuple(b.shape)) for name, b in pos_enc.named_buffers()])
assert list(pos_enc.parameters()) == []
assert torch.equal(pos_enc.pe, sinusoidal_encoding(128, 512))
x = torch.randn(2, 6, 512)  # (batch, seq, d_model) stand-in embeddings
assert torch.equal(pos_enc(x), x + pos_enc.pe[:6])  # the forward pass only slices and adds
print("✓ a precomputed buffer, sliced per sentence")

# %% [markdown]
# The printout shows a `Dropout(p=0.0)`. The paper (section 5.4): "In addition, we apply dropout to
# the sums of the embeddings and the positional encodings in both the encoder and decoder stacks. For
# the base model, we use a rate of $P_{drop} = 0.1$." We keep $p = 0$ here, so the output is exactly
# embedding + PE and can be checked, as the cell above does. With `dropout=0.1`, the paper's rate,
# training zeroes about a tenth of the entries of the sums, single numbers, not whole word vectors (and
# scales the rest by $1/0.9$); evaluation zeroes none:

# %% tags=["hide-input"]
pos_enc_train = PositionalEncoding(d_model=512, max_len=128, dropout=0.1)  # a new module is in training mode
out = pos_enc_train(x)  # (batch, seq, d_model)
kept = out != 0  # (batch, seq, d_model)
assert 0.05 < 1 - kept.double().mean().item() < 0.15
assert kept.any(dim=-1).all()  # every word vector keeps some entries
assert torch.allclose(out[kept], pos_enc(x)[kept] / 0.9, rtol=1e-6, atol=0)
assert torch.equal(pos_enc_train.eval()(x), pos_enc(x))
print(
    "✓ with dropout=0.1 about a tenth of the entries of the sums are zeroed in training (no word vector "
    "is zeroed whole), the rest scaled by 1/0.9; none in evaluation"
)

# %% [markdown]
# A sentence longer than the table is an error, with a message that says how to fix it:

# %%
message = None
try:
    pos_enc(torch.zeros(1, 200, 512))  # (batch, seq=200, d_model)
except ValueError as err:
    message = str(err)
    print("ValueError:", message)
assert message is not None and "max_len=128" in message

# %% [markdown]
# The YOUR CAT deck's example: six words, $d_{model} = 512$. The input to the encoder is the word
# embedding **plus** the position's vector.

# %%
sentence = "YOUR CAT IS A LOVELY CAT".split()
vocab = {word: idx for idx, word in enumerate(dict.fromkeys(sentence))}
tokens = torch.tensor([vocab[word] for word in sentence])  # (seq,) = (6,)
print(vocab, tokens)

# %% [markdown]
# How large is $PE(pos)$, of norm 16 at $d_{model} = 512$, next to a word vector? That depends on
# the embedding. The paper gives only "In the embedding layers, we multiply those weights by
# $\sqrt{d_{model}}$" (section 3.4). We compare three, each drawn 5 times:
#
# - entries from $N(0, 1/d_{model})$, times $\sqrt{d_{model}}$: ours from here on (and the authors'
#   tensor2tensor code's);
# - PyTorch's default `nn.Embedding`, entries from $N(0, 1)$, times $\sqrt{d_{model}}$;
# - numbers up to 10,000, as large as the YOUR CAT deck's figures (see the errata at the end).
#
# **Predict first.** With our choice (entries of variance 1 after the $\sqrt{d_{model}}$), what is
# $\lVert PE(pos) \rVert / \lVert \text{word vector} \rVert$, to two decimals?

# %%
my_guess_ratio = None  # your answer: a number, e.g. 0.1

# %%
d_model, seq = 512, len(sentence)
pe_norm = sinusoidal_encoding(seq, d_model).norm(dim=1).mean().item()  # every row has norm 16


def embedding_tables(seed):
    """Three (vocab, d_model) embedding tables of very different sizes, drawn with `seed`."""
    torch.manual_seed(seed)
    return {
        "N(0, 1/d_model) x sqrt(d_model)": torch.randn(len(vocab), d_model) / math.sqrt(d_model) * math.sqrt(d_model),
        "nn.Embedding's N(0, 1) x sqrt(d_model)": torch.nn.Embedding(len(vocab), d_model).weight.detach()
        * math.sqrt(d_model),
        "like the deck: uniform in [0, 10000)": torch.rand(len(vocab), d_model) * 10000,
    }


ratios = {}  # kind -> PE norm / word norm, one per seed
for seed in SEEDS:
    for name, table in embedding_tables(seed).items():
        word_norm = table[tokens].norm(dim=1).mean().item()  # mean over the sentence's (seq, d_model) rows
        ratios.setdefault(name, []).append(pe_norm / word_norm)

# %% tags=["nbval-ignore-output"]
for name, r in ratios.items():
    print(f"{name:38s} PE / word norm from {min(r):.5f} to {max(r):.5f} over 5 draws")

# %% tags=["hide-input"]
print(
    f"PE norm {pe_norm:.1f}; sqrt(512) = {math.sqrt(512):.1f}; 16 / sqrt(512) = {16 / math.sqrt(512):.3f}; "
    f"16 / 512 = {16 / 512:.5f}"
)
assert all(0.028 < r < 0.035 for r in ratios["nn.Embedding's N(0, 1) x sqrt(d_model)"])  # about 16/512: a small nudge
assert all(r < 1e-3 for r in ratios["like the deck: uniform in [0, 10000)"])  # PE would be swamped
lo, hi = check.EMBEDDING_RATIO_BAND  # the band the prediction accepts, around 1/sqrt(2)
assert all(lo < r < hi for r in ratios["N(0, 1/d_model) x sqrt(d_model)"])
print("✓ in 5 of 5 draws PE is comparable to our word vectors, a small nudge to nn.Embedding's, swamped by the deck's")

# %%
check.predict_pe_to_word_ratio(my_guess_ratio)

# %% [markdown]
# With our choice a word vector has norm about $\sqrt{512}$ and PE has norm 16, so neither dominates,
# as the YOUR CAT deck asks ("positional encodings don't dominate the word embeddings"); with
# `nn.Embedding`'s default PE is a small nudge, about $16/512$ of the norm. So "PE is about as large
# as the embedding" holds for the initialisation of the authors' code, which the paper itself does
# not state. We add PE to ours:

# %%
X = embedding_tables(seed=0)["N(0, 1/d_model) x sqrt(d_model)"][tokens]  # (seq, d_model) word vectors
X_pe = pos_enc(X)  # (seq, d_model) word vectors + PE(0..5)
assert torch.equal(X_pe, X + sinusoidal_encoding(seq, d_model))
print(X_pe.shape)

# %% [markdown]
# The two CATs (positions 1 and 5) start as the very same vector, so after adding PE they differ by
# $PE(1) - PE(5)$, the offset-4 distance from section 4: exactly on paper, and in float32 up to a
# rounding error that grows with the size of the embedding.

# %% tags=["hide-input"]
cat_1, cat_5 = 1, 5
offset_4 = dist_by_offset[cat_5 - cat_1 - 1].item()
assert torch.equal(X[cat_1], X[cat_5])  # by construction (one token, one embedding row); the claim is tested below
assert torch.allclose((X_pe[cat_1] - X_pe[cat_5]).double(), pe[cat_1] - pe[cat_5], rtol=0, atol=1e-5)
assert math.isclose((X_pe[cat_1] - X_pe[cat_5]).norm().item(), offset_4, abs_tol=1e-4)
print(f"✓ the two CATs: identical before PE, {offset_4:.4f} apart after it, their difference PE(1) - PE(5)")
rounding = {}  # kind -> largest |(X_pe[1] - X_pe[5]) - (PE(1) - PE(5))|, one per seed
for seed in SEEDS:
    for name, table in embedding_tables(seed).items():
        X_pe_seed = pos_enc(table[tokens])  # (seq, d_model)
        off = (X_pe_seed[cat_1] - X_pe_seed[cat_5]).double() - (pe[cat_1] - pe[cat_5])  # (d_model,)
        rounding.setdefault(name, []).append(off.abs().max().item())
ours_off, deck_off = rounding["N(0, 1/d_model) x sqrt(d_model)"], rounding["like the deck: uniform in [0, 10000)"]
assert max(ours_off) < 1e-6 and min(deck_off) > 1000 * max(ours_off) and max(deck_off) < 1e-2
print("✓ in 5 of 5 draws that holds up to float32 rounding, over 1000 times larger with the deck-sized embedding")

# %% [markdown]
# ## Summary
#
# - Summing ignores order, and unmasked self-attention (the encoder's) only reorders its outputs; so
#   the Transformer puts position into the vectors themselves. Integer positions grow without bound;
#   positions scaled to $[0, 1]$ give a step that depends on the sentence length.
# - $PE(pos, 2i) = \sin(pos / 10000^{2i/d_{model}})$, $PE(pos, 2i+1) = \cos(\ldots)$: bounded, with
#   every row of norm $\sqrt{d_{model}/2}$, deterministic, unique for each position, and with a
#   distance between positions that depends only on how far apart they are.
# - The paper chose sinusoids hoping the model would attend by relative positions ($PE_{pos+k}$ is a
#   fixed linear function of $PE_{pos}$) and extrapolate to longer sequences; learned position
#   embeddings gave nearly identical results (Table 3, row (E)). Lesson 08 tests the extrapolation.
# - The table is computed once (a buffer) and added to the embeddings. How large it is next to them
#   depends on their initialisation, which the paper does not give (its authors' code makes them
#   comparable).
#
# ## Exercises
#
# Replace `raise NotImplementedError` with your code and run the cell. Stuck? `check.pe_table.hint()` gives a hint,
# `check.pe_table.solution()` a solution (likewise for the others).
#
# **1. The whole table, without loops.** Write `pe_table(max_len, d_model)` returning the
# `(max_len, d_model)` table as a NumPy array (or a tensor), using broadcasting instead of Python loops.


# %%
def pe_table(max_len, d_model):
    """The (max_len, d_model) PE table, without Python loops."""
    raise NotImplementedError  # your code here


check.pe_table(pe_table)

# %% [markdown]
# **2. Which position is this?** Section 4 showed that no two positions share a vector, so the
# vector must give its position away. Write `position_from_pe(pe_row)`: given one row $PE(t)$ of the
# table (a NumPy array of length $d_{model} \ge 8$, base 10000, $t$ between 0 and 5000), return the
# integer $t$, without building the table.


# %%
def position_from_pe(pe_row):
    """The position t whose encoding is pe_row."""
    raise NotImplementedError  # your code here


check.position_from_pe(position_from_pe)

# %% [markdown]
# **3. Choose the base.** With the paper's base 10000, the slowest pair's wavelength at
# $d_{model} = 512$ is the last one section 5 printed. Suppose you want it to be exactly `longest`
# positions instead. Write `base_for_wavelength(d_model, longest)` returning the base that does it
# for $d_{model} \ge 4$ (at 2 the only pair has $w_0 = 1$ at every base),
# with the pairs numbered from 0 as in the paper and `utils`.


# %%
def base_for_wavelength(d_model, longest):
    """The base whose slowest sin/cos pair has a wavelength of `longest` positions."""
    raise NotImplementedError  # your code here


check.base_for_wavelength(base_for_wavelength)

# %% [markdown]
# **4. The closest two positions.** Section 4 found the closest pair among 10,000 positions at a few
# widths, with the paper's base. Write `closest_offset(d_model, max_len, base)`: for the table of
# positions $0, \dots, max\_len - 1$ with frequencies $w_i = base^{-2i/d_{model}}$, return the offset
# $k$ between its two closest rows (an int), without building the table. Are neighbours always the
# closest?


# %%
def closest_offset(d_model, max_len, base=10000.0):
    """The offset k between the closest two of positions 0 .. max_len - 1."""
    raise NotImplementedError  # your code here


check.closest_offset(closest_offset)

# %% [markdown]
# ## Going further
#
# Two detours from section 4's uniqueness check (very small widths, and any length); two from
# section 5 (PE and binary, and the rotation $M_k$ written out); one from section 1, on what a mask
# changes; and the base, with a live explorer of the table.
#
# **Very small widths.** At $d_{model} \le 10$ the closest two of the 10,000 positions are not
# neighbours: two far-apart positions come closer (section 4's shortcut, `k` its offsets):

# %%
for d in (2, 4, 6, 8, 10):
    dist_d = (d - 2 * torch.cos(k[:, None] * angular_frequencies(d)).sum(dim=1)).clamp_min(0).sqrt()  # (max_len - 1,)
    print(f"d_model {d:4d}: closest pair {dist_d.min():.4f} apart, at offset {int(dist_d.argmin()) + 1}", end="")
    print(f" (neighbours: {dist_d[0]:.4f})")
    assert int(dist_d.argmin()) > 0 and dist_d.min() < dist_d[0]
print("✓ at d_model = 2 to 10 the closest two of 10,000 positions are not neighbours")

# %% [markdown]
# **At any length.** Section 5's first pair nearly repeats, but never back exactly:
# $(\sin pos, \cos pos)$ returns to $PE(0)$'s pair $(0, 1)$ only when $pos$ is a whole multiple of
# $2\pi$, and no whole number $pos > 0$ is, because $\pi$ is irrational. The same holds for any two
# positions $t \ne s$ (their difference is a whole number), so uniqueness holds beyond section 4's
# 10,000 positions, at every length. How close the
# first pair comes, over the first million positions:

# %%
far_positions = torch.arange(1, 1_000_001, dtype=torch.float64)  # (10^6,)
first_pair_gap = (2 * torch.sin(far_positions / 2)).abs()  # (10^6,) |(sin p, cos p) - (0, 1)| = |2 sin(p/2)|
print(
    f"closest return of the first pair in 10^6 positions: {first_pair_gap.min():.1e}, at position {int(first_pair_gap.argmin()) + 1}"
)

# %% [markdown]
# **A generalization of binary encoding.** The reading notes call PE "a generalization of binary encoding", in this sense.
# Write the position in binary: bit $k$ is 0 for $2^k$ positions, then 1 for $2^k$, a square wave of
# wavelength $2^{k+1}$, twice the previous bit's. PE keeps that plan, one periodic digit per column
# pair with wavelengths in a geometric progression, and changes two things: a smooth sine and cosine
# instead of the square wave, and the ratio $10000^{2/d_{model}}$ (printed in section 5) instead of 2. Binary
# is not one of its settings: whatever the base, the first pair's wavelength is $2\pi$, not 2.

# %% [markdown]
# **The rotation, written out.** Section 5's $M_k$: a 2 × 2 rotation by an angle $b$ takes
# $(\sin a, \cos a)$ to $(\sin(a + b), \cos(a + b))$, by the angle-addition formulas (a clockwise
# turn, as the point's angle is $\pi/2 - a$). For $d_{model} = 4$ and $k = 1$, two blocks, turning by
# $w_0 = 1$ and $w_1 = 1/100$ radians:

# %%
print(relative_rotation(1, 4, dtype=torch.float64))  # (4, 4): PE(pos + 1) = PE(pos) M_1

# %% tags=["hide-input"]
for i, w_i in enumerate((1.0, 1 / 100)):  # block i: [[cos w_i, -sin w_i], [sin w_i, cos w_i]]
    block = torch.tensor([[math.cos(w_i), -math.sin(w_i)], [math.sin(w_i), math.cos(w_i)]], dtype=torch.float64)
    assert torch.allclose(relative_rotation(1, 4, dtype=torch.float64)[2 * i : 2 * i + 2, 2 * i : 2 * i + 2], block)
    points = sinusoidal_encoding(100, 4, dtype=torch.float64)[:, 2 * i : 2 * i + 2]  # (100, 2): (sin, cos) of pair i
    turn = torch.atan2(*(points @ block).flip(1).T) - torch.atan2(*points.flip(1).T)  # (100,) change of angle
    assert torch.allclose(torch.remainder(turn, 2 * math.pi), torch.full_like(turn, 2 * math.pi - w_i))  # clockwise
print("✓ M_1 is two 2 x 2 rotations, turning each (sin, cos) point clockwise by w_0 = 1 and w_1 = 1/100 radians")

# %% [markdown]
# **A causal mask sees the order.** Section 1's attention had no mask. Under the decoder's causal
# mask (lesson 04) word $t$ weighs only words $0, \dots, t$: "A" sees only itself as the first word
# of "A chases B" and all three words as the last of "B chases A", so its output differs (the same
# 8-number word vectors as in section 1).


# %%
def causal_weights(X):
    """The attention weights under the decoder's causal mask: row t weighs only words 0..t."""
    scores = X @ X.T / math.sqrt(X.shape[-1])  # (seq, seq)
    future = torch.triu(torch.ones_like(scores, dtype=torch.bool), diagonal=1)  # (seq, seq) True above the diagonal
    return torch.softmax(scores.masked_fill(future, -math.inf), dim=-1)  # (seq, seq)


def causal_attention(X):
    """The same attention, but word t sees only words 0..t (the decoder's causal mask)."""
    return causal_weights(X) @ X  # (seq, d_model)


causal_gaps = []
for seed in SEEDS:
    X_ab, X_ba = sentences(seed)  # (seq, 8) each, as in section 1
    causal_gaps.append((causal_attention(X_ab)[0] - causal_attention(X_ba)[2]).norm().item())  # 'A' in each
    sees = causal_weights(X_ab) > 0  # (seq, seq) True where word t (row) gives word j (column) weight
    assert torch.equal(sees, torch.ones(3, 3, dtype=torch.bool).tril())  # itself and the words before it
assert min(causal_gaps) > 0.05
print("✓ with a causal mask the output for 'A' differs between the sentences, in 5 of 5 draws")
print("✓ with a causal mask each word gives weight to itself and the words before it, none to a later one")

# %% [markdown]
# **The base, live.** Read this to see what the paper's 10000 sets. The explorer below has a slider
# for the `base` (10000 in the paper). Lowering it speeds up every
# pair but the first: pair 0 (columns 0 and 1) has $w_0 = 1/\text{base}^0 = 1$ whatever the base,
# so those two columns never move, while every other $w_i = \text{base}^{-2i/d_{model}}$ grows as
# the base falls; at base 1, the slider's lowest, every pair is as fast as the first. The explorer's
# own drawing function at three bases:

# %% tags=["hide-input"]
drawn = {}
for base in (10000.0, 100.0, 1.0):
    fig_base = plot_pe_heatmap(max_len=100, d_model=128, base=base, position=10)
    drawn[base] = np.array(fig_base.axes[0].images[0].get_array())  # (max_len, d_model) as drawn
    plt.close(fig_base)
bases = np.logspace(0, 5, 101)  # 101 bases from 1 to 100000, each 10^0.05 times the one before
w_by_base = torch.stack([angular_frequencies(128, b) for b in bases])  # (bases, d_model/2)
assert all(np.array_equal(drawn[b][:, :2], drawn[10000.0][:, :2]) for b in drawn)  # pair 0 never moves
assert (drawn[100.0][:, 2:] != drawn[10000.0][:, 2:]).any(axis=0).all()  # every other column does
assert np.allclose(drawn[1.0][:, 0::2], drawn[1.0][:, :1]) and np.allclose(drawn[1.0][:, 1::2], drawn[1.0][:, 1:2])
assert (w_by_base[:, 0] == 1).all() and (w_by_base[1:, 1:] < w_by_base[:-1, 1:]).all()
print("✓ pair 0 is the same at every base; every other pair is faster at a lower base, and at base 1 all equal pair 0")

# %% [markdown]
# Now explore it live: change `d_model`, `max_len`, the `base` and the highlighted `position`.
# (On GitHub the widget is not live; run the notebook.)

# %% tags=["nbval-ignore-output"]
explorer = pe_explorer()
explorer

# %% tags=["hide-input"]
base_slider = next(c for c in explorer.children[0].children if c.description == "base")  # the explorer's base
lowest, highest = base_slider.base**base_slider.min, base_slider.base**base_slider.max
assert lowest == 1 and highest >= 10000 and base_slider.value == 10000
print(f"✓ the base slider runs from {lowest:g} to {highest:g} and starts at the paper's {base_slider.value:g}")

# %% [markdown]
# ## Errata in the sources
#
# What the slides we cite get wrong, or read differently from the paper, each checked. Read it if you teach from those slides.
#
# ### The YOUR CAT deck's $PE(1)$
#
# The slide deck "Transformers / Attention is all you need" (the one with the YOUR CAT IS A LOVELY CAT
# example; "the YOUR CAT deck") prints
# $PE(1) = (0.8414, 0.5403, 0.8218, 0.5696, \dots, 0.0001, 0.9999)$ for $d_{model} = 512$.
# Compare its six figures with the exact values, cut to four decimals in two ways:
# **truncated** (digits dropped) and **rounded**.

# %%
deck_pe1 = [0.8414, 0.5403, 0.8218, 0.5696, 0.0001, 0.9999]  # PE(1) as the YOUR CAT deck prints it
columns = [0, 1, 2, 3, 510, 511]  # the columns the deck shows
exact = [pe_512[1, c].item() for c in columns]
truncated = [math.floor(x * 10**4) / 10**4 for x in exact]  # every value here is positive
rounded = [round(x, 4) for x in exact]
print("column   exact PE(1)   truncated  rounded   deck")
for c, x, t, r, s in zip(columns, exact, truncated, rounded, deck_pe1):
    print(f"{c:6d}   {x:.8f}    {t:.4f}     {r:.4f}    {s:.4f}")

# %% tags=["hide-input"]
assert all(math.isclose(t, s, abs_tol=1e-12) for t, s in zip(truncated, deck_pe1))
differ = [c for c, r, s in zip(columns, rounded, deck_pe1) if not math.isclose(r, s, abs_tol=1e-12)]
assert differ == [0, 2, 3, 511]
print(f"✓ truncation reproduces the deck's row; rounding does not (columns {differ} differ)")

# %% [markdown]
# The deck's figures are **truncated**, not rounded: $\sin(1) = 0.841470\ldots$ rounds to 0.8415, and
# the last entry, $0.99999999\ldots$, rounds to 1.0000.
#
# Next to these numbers, the copy of the deck we work from (text taken from the slides) writes
# other exponents: the first two pairs both as $\sin(1/10000^{4/517})$, $\cos(1/10000^{4/517})$, the
# last as $\sin(1/10000^{40/517})$, and every entry of $PE(0)$ as $0/10000\frac{1}{101}$. One exponent
# for two pairs cannot give the deck's own two different sines, 0.8414 and 0.8218 in the table above,
# so those expressions do not match the deck's numbers. We cannot tell from that copy whether the
# slides themselves read so or the text was garbled in the copying. What we can check is which
# exponents give the deck's own numbers. The formula's exponent is $2i/d_{model}$: 0 for the first
# pair ($i = 0$) and $510/512$ for the last ($i = 255$):

# %%
garbled_first, garbled_last = math.sin(1 / 10000 ** (4 / 517)), math.sin(1 / 10000 ** (40 / 517))
formula_first, formula_last = math.sin(1 / 10000 ** (2 * 0 / 512)), math.sin(1 / 10000 ** (2 * 255 / 512))
print(f"first sine: garbled {garbled_first:.4f}, formula {formula_first:.4f}, deck 0.8414")
print(f"last sine:  garbled {garbled_last:.4f}, formula {formula_last:.4f}, deck 0.0001")
assert abs(garbled_first - 0.8414) > 0.03 and abs(garbled_last - 0.0001) > 0.4
assert math.floor(formula_first * 10**4) == 8414 and math.floor(formula_last * 10**4) == 1
print("✓ the deck's numbers come from the exponent 2i/d_model, not from 4/517 or 40/517")

# %% [markdown]
# ### Numbering the pairs from 0 or from 1 (the COMP7607 slides)
#
# The paper says "where $pos$ is the position and $i$ is the dimension" (section 3.5), though $i$
# numbers the column pairs, and does not list the range of $i$; its columns $2i, 2i+1$ filling $d_{model}$ and its
# shortest wavelength $2\pi$ put the pairs at $i = 0, \dots, d_{model}/2 - 1$, with exponents
# $2i/d_{model}$ from 0 to $(d_{model} - 2)/d_{model}$. The COMP7607 slides write the position vector
# for position $i$ (there $i$
# is the position) with the pairs numbered $1, \dots, d/2$:
#
# $$\Big(\sin\big(i/10000^{2 \cdot 1/d}\big),\ \cos\big(i/10000^{2 \cdot 1/d}\big),\ \dots,\
#   \sin\big(i/10000^{2 \cdot (d/2)/d}\big),\ \cos\big(i/10000^{2 \cdot (d/2)/d}\big)\Big),$$
#
# so their exponents run from $2/d$ to exactly 1. Build both tables and compare:


# %%
def wavelengths_of(table):
    """2 pi over each pair's angle at position 1, read from row 1 of a PE table (pairs with angle below pi)."""
    return 2 * math.pi / torch.atan2(table[1, 0::2], table[1, 1::2])  # (d_model/2,)


def pe_from_one(max_len, d_model, base=10000.0):
    """The table with the pairs numbered k = 1 .. d_model/2, as in the COMP7607 slides."""
    k = torch.arange(1, d_model // 2 + 1, dtype=torch.float64)  # (d_model/2,)
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] / base ** (2 * k / d_model)  # (max_len, d_model/2)
    table = torch.empty(max_len, d_model, dtype=torch.float64)  # (max_len, d_model)
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return table


print(f"{'d_model':>7}  {'paper: shortest, longest wavelength':>36}  {'slides: shortest, longest':>28}")
gaps_at_ends = []
for d in (4, 16, 64, 128, 512, 1024):
    paper, slides = sinusoidal_encoding(50, d, dtype=torch.float64), pe_from_one(50, d)  # (50, d) each
    assert torch.allclose(slides[:, :-2], paper[:, 2:], rtol=0, atol=1e-12)  # the same pairs, moved by one
    paper_wl, slides_wl = wavelengths_of(paper), wavelengths_of(slides)  # (d/2,) each, read from the tables
    assert math.isclose(paper_wl[0], 2 * math.pi, rel_tol=1e-12) and paper_wl[-1] < 10000 * 2 * math.pi
    assert slides_wl[0] > 2 * math.pi and math.isclose(slides_wl[-1], 10000 * 2 * math.pi, rel_tol=1e-12)
    print(f"{d:7d}  {paper_wl[0]:16.4f} {paper_wl[-1]:18.1f}  {slides_wl[0]:12.4f} {slides_wl[-1]:15.1f}")
    gaps_at_ends.append(((slides_wl[0] / paper_wl[0]).item(), (slides_wl[-1] / paper_wl[-1]).item()))
for end in (0, 1):  # the shortest ends, then the longest: each ratio is 10000^(2/d), shrinking towards 1
    assert all(a[end] > b[end] > 1 for a, b in zip(gaps_at_ends, gaps_at_ends[1:]))
print("✓ at 6 of 6 widths numbering from 1 drops the paper's fastest pair (2 pi) and adds one of exactly 10000 x 2 pi")
print("✓ as d_model grows, the two tables' shortest wavelengths and their longest approach each other")

# %% [markdown]
# The shift moves every pair by one place: the slides' table is the paper's without its fastest pair
# (wavelength exactly $2\pi$), with one slower pair added at the end, whose wavelength is exactly
# $10000 \cdot 2\pi$. The paper's own sentence, wavelengths "from $2\pi$ to $10000 \cdot 2\pi$"
# (section 3.5, quoted in section 5), matches its lower end with $i$ from 0 and its upper end with $i$ from 1; with
# $d_{model}/2$ pairs whose exponents step by $2/d_{model}$, no numbering reaches both. As $d_{model}$ grows, the two tables' ends approach each other.
# The authors' tensor2tensor code (`get_timing_signal_1d`) reaches both: its exponents step by
# $1/(d_{model}/2 - 1)$, and it lays out all the sines, then all the cosines, not interleaved.


# %% tags=["hide-input"]
def t2t_timing_signal(length, channels, min_timescale=1.0, max_timescale=1.0e4):
    """tensor2tensor's get_timing_signal_1d, in torch: all the sines, then all the cosines."""
    position = torch.arange(length, dtype=torch.float64)  # (length,)
    num_timescales = channels // 2
    log_timescale_increment = math.log(max_timescale / min_timescale) / (num_timescales - 1)
    inv_timescales = min_timescale * torch.exp(
        torch.arange(num_timescales, dtype=torch.float64) * -log_timescale_increment
    )  # (channels/2,)
    scaled_time = position[:, None] * inv_timescales[None, :]  # (length, channels/2)
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)  # (length, channels)


for d in (4, 16, 64, 128, 512, 1024):
    t2t = t2t_timing_signal(50, d)  # (50, d): sines in columns 0 .. d/2 - 1, cosines after them
    interleaved = torch.empty_like(t2t)  # (50, d)
    interleaved[:, 0::2], interleaved[:, 1::2] = t2t[:, : d // 2], t2t[:, d // 2 :]
    ours = sinusoidal_encoding(50, d, base=10000 ** (d / (d - 2)), dtype=torch.float64)  # (50, d)
    assert torch.allclose(interleaved, ours, rtol=0, atol=1e-12)
    assert not torch.allclose(interleaved, sinusoidal_encoding(50, d, dtype=torch.float64), rtol=0, atol=1e-3)
    t2t_wl = wavelengths_of(interleaved)  # (d/2,), read from the table
    assert math.isclose(t2t_wl[0], 2 * math.pi, rel_tol=1e-12)
    assert math.isclose(t2t_wl[-1], 10000 * 2 * math.pi, rel_tol=1e-9)
print(
    "✓ at 6 of 6 widths tensor2tensor's table, its sines and cosines interleaved, is ours with base 10000^(d_model/(d_model - 2))"
)
print("✓ read from that table, its wavelengths run from exactly 2 pi to exactly 10000 x 2 pi")

# %% [markdown]
# `utils` numbers the pairs **from 0**, as the paper's formula implies: its fastest pair has angular
# frequency exactly 1, so $PE(1)$ starts with $\sin 1$. So does the YOUR CAT deck's $PE(1)$ (0.8414);
# numbered from 1, $PE(1)$ would start with the deck's *third* number, 0.8218.

# %% tags=["hide-input"]
assert angular_frequencies(512)[0].item() == 1.0
assert math.isclose(
    sinusoidal_encoding(2, 512, dtype=torch.float64)[1, 0].item(), math.sin(1.0), rel_tol=0, abs_tol=1e-15
)
from_one_first = pe_from_one(2, 512)[1, 0].item()
print(f"PE(1), first column: utils sin(1) = {math.sin(1.0):.6f}; numbered from 1: {from_one_first:.6f}")
assert math.floor(math.sin(1.0) * 10**4) / 10**4 == deck_pe1[0]
assert math.floor(from_one_first * 10**4) / 10**4 == deck_pe1[2] != deck_pe1[0]
print("✓ utils and the YOUR CAT deck number the pairs from 0, as the paper's formula implies")

# %% [markdown]
# ### The YOUR CAT deck's embedding and PE figures
#
# The YOUR CAT deck draws embedding entries from below 1 up to several thousand (952.207, 5450.840,
# 0.565, ...), and PE entries in the hundreds and thousands (1664.068, 912.970, ...). Those cannot be
# sinusoidal PE values, which never leave $[-1, 1]$ (section 4), and next to embeddings that large
# the real PE would vanish (section 6's third embedding):

# %%
deck_pe_cat = [1664.068, 8080.133, 2620.399, 9386.405, 3120.159]  # the deck's "PE" column for CAT
# and for the second CAT; the deck's text also has 3821.102 in this column, but its own sums (deck_input_cat_again)
# show the five entries without it
deck_pe_cat_again = [1281.458, 7902.890, 912.970, 1659.217, 7018.620]
deck_input_cat_again = [1452.869, 11179.24, 10105.789, 5292.638, 15409.093]  # its "Encoder Input" for the second CAT
deck_embedding = {  # the deck's embedding columns for YOUR, CAT, IS, A, LOVELY
    "YOUR": [952.207, 5450.840, 1853.448, 1.658, 2671.529],
    "CAT": [171.411, 3276.350, 9192.819, 3633.421, 8390.473],
    "IS": [621.659, 1304.051, 0.565, 7679.805, 4506.025],
    "A": [776.562, 5567.288, 58.942, 2716.194, 5119.949],
    "LOVELY": [6422.693, 6315.080, 9358.778, 2141.081, 735.147],
}
entries = [v for column in deck_embedding.values() for v in column]
pe_entries = deck_pe_cat + deck_pe_cat_again
print(
    f"the deck's embedding entries run from {min(entries)} to {max(entries)}; its PE entries from {min(pe_entries)} to {max(pe_entries)}"
)
# a guard on our copying of the deck's figures, not a test of the deck; [-1, 1] is section 4's check
assert min(entries) < 1 and max(entries) > 5000 and 100 < min(pe_entries) < 1000 < max(pe_entries)
sums = zip(deck_embedding["CAT"], deck_pe_cat_again, deck_input_cat_again)
assert all(math.isclose(e + p, total, abs_tol=1e-3) for e, p, total in sums)  # five entries, no 3821.102
print("the deck's PE for CAT (position 1):", deck_pe_cat)
print("the real PE(1), first five entries:", sinusoidal_encoding(2, 512)[1, :5])

# %% [markdown]
# ## Sources
#
# - Vaswani et al. (2017), "Attention Is All You Need", NeurIPS: section 3.5 (the sinusoidal encoding,
#   its geometric progression of wavelengths, and why it was chosen), Table 3 (base model and row (E),
#   learned positional embeddings), section 3.4 (embeddings multiplied by $\sqrt{d_{model}}$), section 5.4 (dropout on the sums), section 3.2.2 (the
#   row-vector convention, $xW$).
# - Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong): the positional-encoding
#   vector with the pairs numbered $1, \dots, d/2$, and "(No)" to the hope of extrapolation.
# - Slide deck "Transformers / Attention is all you need": the YOUR CAT IS A LOVELY CAT example, its
#   embedding and PE figures, $PE(0)$ and $PE(1)$ at $d_{model} = 512$, the precomputed table, and the
#   hope of extrapolation.
# - Slides "Attention is all you need — RNN is unnecessary" (Liang Hong, 2023): the formula with $i$
#   from 0, and why neither integer positions nor positions in $[0, 1]$ will do.
# - The authors' tensor2tensor library, its code (`tensor2tensor/layers/modalities.py`, the symbol
#   modality; `tensor2tensor/layers/common_attention.py`, `get_timing_signal_1d`; the library is described in Vaswani et al., 2018, "Tensor2Tensor for Neural Machine
#   Translation"): word embeddings drawn from $N(0, 1/d_{model})$ and multiplied by $\sqrt{d_{model}}$.
# - Reading notes on the paper (June 2020): "A chases B" vs "B chases A", and the four properties a
#   position signal should have (bounded, deterministic, unique, consistent across lengths).
