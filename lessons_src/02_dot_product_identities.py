# %% [markdown]
# # 02 · Dot-product identities
#
# Attention compares vectors with dot products. One question runs through this lesson: what does a dot
# product see? Of two positions (sections 1 to 3), of a word plus its position (4), of a query and a key and
# their size (5), and what the softmax then makes of the scores (6).
#
# **Goals.** By the end you can
# - show that $PE_t \cdot PE_{t+k} = \sum_i \cos(\omega_i k)$ depends on $|k|$ only, not on direction;
# - build the "fixed linear transformation" $M_k$ with $PE_{t+k} = PE_t\, M_k$, a rotation;
# - say how the dot product decays with distance, near and far;
# - measure the near-orthogonality of random high-dimensional vectors, and what adding PE, not concatenating it,
#   costs the word and the position;
# - explain the paper's choice of dot-product over additive attention and the $1/\sqrt{d_k}$ scale;
# - use softmax's shift invariance, its temperature, and its limit, the arg-max.
#
# Statements about random vectors are checked over five seeds.
#
# **Prerequisites.** Lesson 01 (the sinusoidal formula and `utils.positional.sinusoidal_encoding`).

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
import torch

from utils.course.exercises import lesson02 as check
from utils.experiments.dot_products import (
    pe_variance_share,
    random_pairs,
    random_scores,
    soft_argmax_gradient,
    spread,
    word_recovery,
)
from utils.figures.plotting import plot_offset_explorer
from utils.figures.widgets import offset_explorer
from utils.positional import angular_frequencies, relative_rotation, sinusoidal_encoding

torch.set_printoptions(precision=4, sci_mode=False)
SEEDS = [0, 1, 2, 3, 4]  # every measurement on random vectors is repeated over these five seeds

# %% [markdown]
# ## 1. $PE_t \cdot PE_{t+k}$ depends on the distance $|k|$ only
#
# With $\omega_i = 1/10000^{2i/d_{model}}$, column $2i$ of $PE_t$ is $\sin(\omega_i t)$ and column
# $2i+1$ is $\cos(\omega_i t)$.
#
# **Predict first.** Every entry of $PE_t$ lies in $[-1, 1]$. What is its squared length $|PE_t|^2$ at
# $d_{model} = 128$?

# %%
my_guess_length = None  # your answer: a number

# %%
d_model, max_len = 128, 200
pe = sinusoidal_encoding(max_len, d_model, dtype=torch.float64)  # (max_len, d_model)
w = angular_frequencies(d_model)  # (d_model/2,) omega_i, float64
squared = pe.pow(2).sum(dim=1)  # (max_len,) |PE_t|^2
assert torch.allclose(squared, torch.full_like(squared, check.predict_pe_length_squared.reference), atol=1e-10)
print(f"|PE_t|^2 = {squared[0]:.4f} = d_model / 2 for all {max_len} positions")

# %%
check.predict_pe_length_squared(my_guess_length)

# %% [markdown]
# Every pair contributes $\sin^2 + \cos^2 = 1$: all encodings have the same length, $\sqrt{d_{model}/2}$.
# The same identity in its general form, $\sin a \sin b + \cos a \cos b = \cos(a - b)$, gives the dot
# product of two positions:
#
# $$PE_t \cdot PE_{t+k} = \sum_{i=0}^{d_{model}/2-1} \big[\sin(\omega_i t)\sin(\omega_i (t+k))
#   + \cos(\omega_i t)\cos(\omega_i (t+k))\big] = \sum_{i=0}^{d_{model}/2-1} \cos(\omega_i k).$$
#
# The position $t$ has cancelled. The left-hand side by brute force from the table, for every $t$ and a
# few offsets $k$:

# %%
for k in [1, 7, 50]:
    dots = [float(pe[t] @ pe[t + k]) for t in range(max_len - k)]  # one dot product per t
    formula = float(torch.cos(w * k).sum())  # sum_i cos(omega_i k)
    print(
        f"k={k:3d}: PE_t . PE_t+k over {len(dots)} values of t lies in [{min(dots):.6f}, {max(dots):.6f}];"
        f"  sum_i cos(w_i k) = {formula:.6f}"
    )
    gap = max(abs(d - formula) for d in dots)
    assert gap < 1e-10, f"k={k}: a dot product differs from the formula by {gap:.3g}"

# %% [markdown]
# ### The Gram matrix is Toeplitz
#
# Collect all the dot products in the Gram matrix $G = PE\,PE^\top$, $G_{st} = PE_s \cdot PE_t$.
# Because $G_{st} = \sum_i \cos(\omega_i (t-s))$ depends on $t - s$ only, $G$ is constant along
# every diagonal: a **Toeplitz** matrix, $G_{s+1,t+1} = G_{st}$. We check it for several widths and
# lengths, and against the closed form.


# %%
def is_toeplitz(G, atol=1e-9):
    """True when every diagonal of the square matrix G is constant: G[s+1, t+1] == G[s, t]."""
    return bool(torch.allclose(G[1:, 1:], G[:-1, :-1], atol=atol, rtol=0))


print(f"PE PE^T at d_model = {d_model} over {max_len} positions is Toeplitz: {is_toeplitz(pe @ pe.T)}")

# %% tags=["hide-input"]
for d in [2, 16, 64, 512]:
    for n in [5, 50, 200]:
        P = sinusoidal_encoding(n, d, dtype=torch.float64)  # (n, d)
        G = P @ P.T  # (n, n) Gram matrix
        f_d = torch.cos(torch.arange(n, dtype=torch.float64)[:, None] * angular_frequencies(d)).sum(1)  # (n,)
        gap = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs()  # (n, n) |t - s|
        closed = f_d[gap]  # (n, n) sum_i cos(w_i (t - s))
        assert is_toeplitz(G) and torch.allclose(G, closed, atol=1e-9)
print("✓ PE PE^T is Toeplitz and equals sum_i cos(w_i (t - s)) for d_model in {2, 16, 64, 512}, lengths {5, 50, 200}")

# %% [markdown]
# The check can fail: random rows, or $t / n$ repeated across columns, are not Toeplitz.

# %% tags=["hide-input"]
random_tables = [random_pairs(50, 16, seed)[0] for seed in SEEDS]  # five (50, 16) random "encodings"
L = (torch.arange(50, dtype=torch.float64) / 50)[:, None].repeat(1, 16)  # (50, 16) linear t/n
print(
    "random rows -> Toeplitz?",
    [is_toeplitz(R @ R.T) for R in random_tables],
    "| linear t/n rows -> Toeplitz?",
    is_toeplitz(L @ L.T),
)
assert not any(is_toeplitz(R @ R.T) for R in random_tables) and not is_toeplitz(L @ L.T)

# %% [markdown]
# The Gram matrix as an image: the stripes run along the diagonals.

# %%
G = pe[:100] @ pe[:100].T  # (100, 100)
fig, ax = plt.subplots(figsize=(4.5, 4), layout="constrained")
im = ax.imshow(G.numpy(), cmap="viridis")
ax.set(title=f"Gram matrix PE PE^T, d_model={d_model}", xlabel="position t", ylabel="position s")
fig.colorbar(im, ax=ax, shrink=0.8)
plt.show()

# %% [markdown]
# ### Distance-aware, not direction-aware
#
# Cosine is even, so $\sum_i \cos(\omega_i k) = \sum_i \cos(-\omega_i k)$: the word $k$ places
# **after** $t$ and the word $k$ places **before** it get the same dot product with $PE_t$. Liang
# Hong's slides derive this sum and name two properties, *distance aware* and *direction aware*; the sum
# has the first for near offsets (section 3), not the second. Other bilinear forms can tell direction (*Going further*).
# The plot: $f(k) = PE_t \cdot PE_{t+k}$ at $t = 100$, on both sides.

# %%
t0 = 100
ks = torch.arange(-100, 100)  # (200,) offsets so that t0 + k stays inside the table
f_table = pe[t0 + ks] @ pe[t0]  # (200,) PE_{t0+k} . PE_{t0}
f_formula = torch.cos(ks[:, None].double() * w).sum(1)  # (200,)
assert torch.allclose(f_table, f_formula, atol=1e-10)
assert torch.allclose(f_table[ks > 0][:99], f_table[ks < 0].flip(0)[:99], atol=1e-10)  # f(k) == f(-k)
print("✓ from the table, PE_t . PE_t+k equals the sum of cos(w_i k), and f(k) = f(-k) for every k from 1 to 99")

fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
ax.plot(ks.numpy(), f_table.numpy(), lw=1.5)
ax.axvline(0, color="0.6", lw=0.8)
ax.set(
    xlabel="offset k",
    ylabel="PE_t . PE_t+k",
    title=f"Dot product against offset (d_model={d_model}, t={t0}): symmetric in k",
)
plt.show()

# %% [markdown]
# ## 2. $PE_{t+k} = PE_t\, M_k$: the fixed linear transformation is a rotation
#
# The reading notes quote the paper's reason for sinusoids (section 3.5): "we hypothesized it would allow
# the model to easily learn to attend by relative positions, since for any fixed offset $k$, $PE_{pos+k}$
# can be represented as a linear function of $PE_{pos}$". The angle-addition formulas give that function.
# For pair $i$, with $a = \omega_i t$ and $b = \omega_i k$, and the pair written as a row, as the
# table stores it:
#
# $$\begin{pmatrix}\sin(a+b) & \cos(a+b)\end{pmatrix}
#   = \begin{pmatrix}\sin a & \cos a\end{pmatrix}
#     \begin{pmatrix}\cos b & -\sin b\\ \sin b & \cos b\end{pmatrix}.$$
#
# So $PE_{t+k} = PE_t\, M_k$ with $M_k$ block-diagonal, a $2\times 2$ rotation by $\omega_i k$ in
# block $i$. It does not depend on $t$: the same matrix moves *every* position $k$ steps on; in code,
# `pe[t] @ M_k == pe[t + k]`. Linear is what a learned bilinear score can use: with $A = M_k$,
# $PE_s\, A\, PE_t^\top = PE_{s+k} \cdot PE_t$, largest where $t = s + k$, for every $s$.
#
# **Predict first.** What is the top-left entry $M_5[0, 0]$ at $d_{model} = 128$?

# %%
my_guess_corner = None  # your answer: a number

# %% [markdown]
# First naively, block by block:


# %%
def rotation_naive(k, d_model, base=10000.0):
    """M_k built one 2x2 block at a time."""
    w = angular_frequencies(d_model, base)  # (d_model/2,)
    M = torch.zeros(d_model, d_model, dtype=torch.float64)  # (d_model, d_model)
    for i in range(d_model // 2):
        b = float(w[i]) * k
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[math.cos(b), -math.sin(b)], [math.sin(b), math.cos(b)]]
        )
    return M


k = 5
M = rotation_naive(k, d_model)  # (d_model, d_model)
assert torch.allclose(M, relative_rotation(k, d_model, dtype=torch.float64), atol=1e-15)
print("✓ the naive M_k equals utils.positional.relative_rotation")
print(M[:4, :4])
assert math.isclose(float(M[0, 0]), check.predict_rotation_corner.reference, abs_tol=1e-6)
print(f"M_{k}[0, 0] = cos(w_0 * {k}) = cos({k} radians) = {float(M[0, 0]):.3f}")
print(f"nonzero entries of M_{k}: {int((M != 0).sum())} of {M.numel()}")

# %%
check.predict_rotation_corner(my_guess_corner)

# %% [markdown]
# It maps every row of the table to the row $k$ steps later, for positive and negative $k$:

# %% tags=["hide-input"]
offsets = [1, 5, 37, -3, -60]
for k in offsets:
    M = relative_rotation(k, d_model, dtype=torch.float64)  # (d_model, d_model)
    src = pe[max(0, -k) : max_len - max(0, k)]  # (max_len - |k|, d_model) rows t
    dst = pe[max(0, k) : max_len - max(0, -k)]  # (max_len - |k|, d_model) rows t + k
    gap = (src @ M - dst).abs().max().item()
    assert gap < 1e-12, f"k={k}: PE_t M_k differs from PE_t+k by {gap:.3g}"
print(f"✓ PE_t M_k = PE_t+k for every row t of the table and k in {offsets}")

# %% [markdown]
# A rotation is **orthogonal** ($M_k M_k^\top = I$: it keeps lengths and dot products, which is
# why $|PE_t|$ is the same for all $t$), and rotations **compose** by adding angles,
# $M_a M_b = M_{a+b}$; so $M_{-k} = M_k^{-1} = M_k^\top$ and $M_0 = I$.


# %% tags=["hide-input"]
def Mk(k):
    return relative_rotation(k, d_model, dtype=torch.float64)  # (d_model, d_model)


eye = torch.eye(d_model, dtype=torch.float64)
for a, b in [(1, 2), (5, 37), (-4, 9), (100, -100)]:
    assert torch.allclose(Mk(a) @ Mk(a).T, eye, atol=1e-12)
    assert torch.allclose(Mk(a) @ Mk(b), Mk(a + b), atol=1e-12)
assert torch.allclose(Mk(-7), Mk(7).T, atol=1e-15) and torch.equal(Mk(0), eye)
print("✓ M_k is orthogonal, M_a M_b = M_(a+b), M_-k = M_k^T, M_0 = I")
for k in [1, 5, 37, -3, -60]:
    rows = range(max(0, -k), max_len - max(0, k))  # every s with s + k in the table
    best = torch.stack([(pe[s] @ Mk(k) @ pe.T).argmax() for s in rows])  # (len(rows),) t with the largest score
    assert torch.equal(best, torch.tensor(list(rows)) + k)
print("✓ the score PE_s M_k PE_t^T is largest at t = s + k, for every s, at k = 1, 5, 37, -3 and -60")

# %% [markdown]
# The dot-product identity of section 1 follows in one line:
# $PE_t \cdot PE_{t+k} = PE_{t+k}\, PE_t^\top = PE_t\, M_k\, PE_t^\top$. In each $2\times2$ block the
# off-diagonal $\pm\sin(\omega_i k)$ terms cancel, leaving only its diagonal $\cos(\omega_i k)$, because
# for one pair with $(s, c) = (\sin a, \cos a)$,
#
# $$\begin{pmatrix}s & c\end{pmatrix}
#   \begin{pmatrix}\cos b & -\sin b\\ \sin b & \cos b\end{pmatrix}
#   \begin{pmatrix}s & c\end{pmatrix}^\top = (s^2 + c^2)\cos b = \cos b.$$

# %% tags=["hide-input"]
t, k = 42, 11
assert math.isclose(float(pe[t] @ Mk(k) @ pe[t]), float(torch.cos(w * k).sum()), abs_tol=1e-10)
print(f"PE_{t} M_{k} PE_{t}^T = {float(pe[t] @ Mk(k) @ pe[t]):.6f} = sum_i cos(w_i * {k})")

# %% [markdown]
# ## Explore: the offset explorer
#
# Sections 1 and 2 in one figure: $PE_t \cdot PE_{t+k}$ against $t$ (flat), against $k$, and pair $i$'s
# point $(\sin \omega_i t, \cos \omega_i t)$ at $t$ and $t + k$, an angle $\omega_i k$ apart (the arc shows what
# is left of $\omega_i k$ after whole turns). Run the notebook to get the sliders.

# %%
fig = plot_offset_explorer(d_model=64, base=10000.0, k=10, pair=0, t=3)
plt.show()

# %% tags=["nbval-ignore-output"]
offset_explorer()

# %% [markdown]
# Things to try: move `k` and watch the left panel stay flat while its level follows the middle
# curve; set `pair i` to a slow pair (large $i$) and see the rotation angle shrink.
# > **Going further:** why the `base` slider leaves the default pair $i = 0$ alone.

# %% [markdown]
# ## 3. The dot product decays with distance — but not monotonically
#
# The reading notes say the dot product "decays symmetrically and smoothly". Symmetric and smooth, yes
# (section 1; a sum of cosines). But it does not fall at every step: the fast pairs (small
# $i$, $\omega_i$ near 1) wobble with periods from $2\pi$ up, and when enough of them swing back the sum
# rises again. So the score keeps near offsets in order but not far ones, some of which score almost alike.
# We mark every $k$ with $f(k+1) > f(k)$, and find the two offsets in $0 \dots 200$, at least 5 apart, with the
# closest scores.

# %%
ks = torch.arange(0, 201, dtype=torch.float64)  # (201,)
f = torch.cos(ks[:, None] * w).sum(1)  # (201,) f(k) = sum_i cos(w_i k)
rises = (f[1:] > f[:-1]).nonzero().flatten()  # k with f(k+1) > f(k)
apart = (ks[:, None] - ks[None, :]).abs() >= 5  # (201, 201) pairs of offsets at least 5 apart
closeness = torch.where(apart, (f[:, None] - f[None, :]).abs(), math.inf)  # (201, 201) |f(a) - f(b)|
k_a, k_b = sorted(divmod(int(closeness.argmin()), len(ks)))  # the two offsets with the closest scores
far_best = torch.cat([f[j + 1 :].max()[None] for j in range(11)])  # (11,) best score beyond each k = 0 .. 10
print(f"f(0)={f[0]:.2f}, f(10)={f[10]:.2f}, f(50)={f[50]:.2f}, f(100)={f[100]:.2f}, f(200)={f[200]:.2f}")
print(
    f"f rises at {len(rises)} of 200 steps, the first at k = {int(rises[0])}: f(11) = {f[11]:.4f} < f(12) = {f[12]:.4f}"
)
print(
    f"closest scores: f({k_a}) = {f[k_a]:.4f} and f({k_b}) = {f[k_b]:.4f}, {abs(f[k_a] - f[k_b]) / f[0]:.3%} of f(0) apart"
)

# %% tags=["hide-input"]
assert torch.all(f[1:12] < f[:11])  # strictly falling for the first 11 steps
assert len(rises) > 0 and rises[0] == 11 and f[12] > f[11]  # ...then it rises
assert f[200] < f[0] / 2  # overall it does decay
assert (k_a, k_b) == (121, 143) and abs(f[k_a] - f[k_b]) < 0.002 and torch.all(f[:11] > far_best)
print("✓ f falls for the first 11 steps, then rises at k = 11; f(200) is below half of f(0)")
print(f"✓ offsets {k_a} and {k_b} score almost alike; each of k = 0 .. 10 scores above every farther offset up to 200")

# %%
fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
ax.plot(ks.numpy(), f.numpy(), lw=1.2, label="sum_i cos(w_i k)")
ax.plot(rises.numpy(), f[rises].numpy(), "o", ms=3, color="C3", label="f(k+1) > f(k)")
ax.plot([k_a, k_b], [f[k_a], f[k_b]], "s", ms=6, mfc="none", color="k", label=f"k = {k_a} and {k_b}: almost alike")
ax.axhline(float(f[k_a]), color="0.6", lw=0.8, ls="--")
ax.set(xlabel="offset k", ylabel="PE_t . PE_t+k", title=f"Decay with distance is not monotone (d_model={d_model})")
ax.legend()
plt.show()

# %% [markdown]
# How far does this go? The fastest pair repeats every $2\pi$ positions, the slowest at
# $d_{model} = 128$ every $2\pi \cdot 10000^{126/128}$ (printed below).
#
# **Predict first.** Over the long range $1000 \le k \le 10\,000$, what is the largest value of
# $f(k)/f(0)$? Does the sum of periodic waves come back near its start, $f(0)$, somewhere?

# %%
my_guess_long_range = None  # your answer: a number between -1 and 1

# %%
far = torch.arange(0, 10001, dtype=torch.float64)  # (10001,) offsets 0 .. 10000
ratio = torch.cos(far[:, None] * w).sum(1) / (d_model / 2)  # (10001,) f(k) / f(0)
peak = ratio[1000:].max().item()
slowest_128 = 2 * math.pi / float(w[-1])
slowest_cos = torch.cos(far[1000:] * w[-1]).min().item()  # the slowest pair's lowest cosine in the range
print(
    f"slowest wavelength at d_model = {d_model}: {slowest_128:,.0f} positions; its cosine stays above {slowest_cos:.2f}"
)
print(f"largest f(k) / f(0) for 1000 <= k <= 10000: {peak:.3f}, at k = {1000 + int(ratio[1000:].argmax())}")
print(f"largest for 5000 <= k <= 10000: {ratio[5000:].max().item():.2f}")
fig, ax = plt.subplots(figsize=(8, 2.6), layout="constrained")
ax.plot(far.numpy(), ratio.numpy(), lw=0.4)
ax.axhline(1, color="0.6", lw=0.8, ls="--")
ax.set(xlabel="offset k", ylabel="f(k) / f(0)", title=f"f(k) up to k = 10,000 (d_model={d_model}): it never returns")
plt.show()

# %% tags=["hide-input"]
assert abs(peak - check.predict_long_range.reference) < 0.005 and slowest_cos > 0.35
assert 1000 + int(ratio[1000:].argmax()) == check.LONG_RANGE_AT and 0.15 < ratio[5000:].max() < 0.25, (
    "the peak is at the start; later ones fall"
)
print(f"✓ from k = 1000 to 10,000, f(k) / f(0) is largest at k = {check.LONG_RANGE_AT}, near the start of the range")
print("✓ from k = 5000 on it stays below a quarter, and the slowest pair's cosine stays positive throughout")
later = ratio[5000:]  # (5001,) f(k) / f(0) for k = 5000 .. 10000
peaks = later[1:-1][(later[1:-1] > later[:-2]) & (later[1:-1] > later[2:])]  # its local maxima
assert len(peaks) > 100 and peaks.median() < 0.1
print("✓ from k = 5000 on, most of its peaks are below a tenth of f(0)")

# %%
check.predict_long_range(my_guess_long_range)

# %% [markdown]
# At $d_{model} = 128$ the largest value sits at the start of the range, where $f$ is still decaying.
# Over these 10,000 positions the 64 waves never line up again, though the
# slowest has not yet made a quarter turn (printed above).
#
# > **Going further:** the long-range peak against near offsets, and at other widths (narrow encodings
# > come back).

# %% [markdown]
# ## 4. Random high-dimensional vectors are nearly orthogonal
#
# A token is a word vector plus its position's encoding. What does a dot product see of each? That rests on how
# random directions meet. For two independent random directions $a, b$ in $\mathbb{R}^d$ (say Gaussian entries), the cosine
# similarity $\cos\theta = a\cdot b / (|a||b|)$ has mean 0 and $\mathbb{E}[\cos^2\theta] = 1/d$ (by
# symmetry, each of the $d$ coordinates of a unit vector contributes $1/d$ to its squared length).
# So its standard deviation is exactly $1/\sqrt d$. We measure $\mathrm{std}(\cos\theta)\cdot\sqrt d$
# (it should be 1) from 4000 pairs per $d$ and seed.
#
# **Predict first.** In $d = 512$ dimensions, what share of random pairs lies within 5° of
# perpendicular ($|\cos\theta| < \sin 5°$)?

# %%
my_guess_near_perpendicular = None  # your answer: a share between 0 and 1, e.g. 0.3

# %% tags=["nbval-ignore-output"]
dims = [2, 8, 32, 128, 512, 2048]
cos_ratio = {d: [] for d in dims}  # std(cos) * sqrt(d), one value per seed
near_90 = {5: [], 10: []}  # at d = 512: share of pairs within 5 and 10 degrees of perpendicular
cos_samples = {}  # seed 0's samples, for the figure
for d in dims:
    for seed in SEEDS:
        a, b = random_pairs(4000, d, seed)  # (4000, d) each
        cos = torch.nn.functional.cosine_similarity(a, b, dim=1)  # (4000,)
        cos_ratio[d].append(cos.std().item() * math.sqrt(d))
        cos_samples.setdefault(d, cos)
        if d == 512:
            for deg in near_90:
                near_90[deg].append((cos.abs() < math.sin(math.radians(deg))).double().mean().item())
    lo, med, hi = spread(cos_ratio[d])
    print(f"d={d:5d}: std of cos x sqrt(d): median {med:.3f}, range {lo:.3f} .. {hi:.3f} over {len(SEEDS)} seeds")
for deg, shares in near_90.items():
    lo, med, hi = spread(shares)
    print(f"d=  512: pairs within {deg:2d} degrees of perpendicular: median {med:.2%}, range {lo:.2%} .. {hi:.2%}")

# %% tags=["hide-input"]
assert all(abs(r - 1) < 0.05 for d in dims for r in cos_ratio[d])
assert min(near_90[5]) > 0.93 and min(near_90[10]) > 0.999
print(f"✓ std of cos = 1/sqrt(d) for d in {dims}, in each of {len(SEEDS)} seeds (4000 pairs each)")
print(
    "✓ at d = 512, in every seed the great majority of pairs lie within 5 degrees of perpendicular, nearly all within 10"
)
std_512, sin_5 = 1 / math.sqrt(512), math.sin(math.radians(5))
bell = math.erf(sin_5 / std_512 / math.sqrt(2))  # share of a normal curve within sin(5 deg) / std of its mean
print(
    f"std of cos at d = 512: 1/sqrt(512) = {std_512:.3f}; sin(5 deg) = {sin_5:.3f} = {sin_5 / std_512:.2f} std; "
    f"a normal curve holds {bell:.3f} of its mass within that"
)
assert abs(bell - check.predict_near_perpendicular.reference) < 0.005 and 1.9 < sin_5 / std_512 < 2.0
assert all(abs(s - bell) < 0.01 for s in near_90[5])  # each seed's share within a point of the curve's
print("✓ in every seed the measured share is close to the normal curve's")

# %%
check.predict_near_perpendicular(my_guess_near_perpendicular)

# %% [markdown]
# So in 512 dimensions about 95% of random pairs lie within 5° of perpendicular, and virtually all
# within 10°. The histograms (seed 0) show the cosine concentrating around 0 as $d$ grows:

# %%
fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
for d in [8, 32, 128, 512]:
    ax.hist(cos_samples[d].numpy(), bins=80, range=(-1, 1), histtype="step", density=True, label=f"d={d}")
ax.set(
    xlabel="cosine similarity of two random vectors", ylabel="density", title="Concentration around 0: std = 1/sqrt(d)"
)
ax.legend()
plt.show()

# %% [markdown]
# ### Why PE is added, not concatenated
#
# The paper gives the encodings "the same dimension $d_{model}$ as the embeddings, so that the two can be
# summed" (section 3.5); the reading notes explain "added but not concatenated" by "Near orthogonality in high
# dim space". Concatenating, $[e; PE_t]$, keeps word and position apart but costs width; adding mixes them, and
# nearly orthogonal vectors should stay apart in the sum. The experiment, `word_recovery(d, seed)`, five seeds
# per width: $V$ random word vectors with $\mathcal N(0,1)$ entries ($|e| \approx \sqrt d$, comparable to
# $|PE_t| = \sqrt{d/2}$); each token is $x = e_w + PE_t$ at a random position; we decode the word as
# $\arg\max_v x \cdot e_v$, as an output layer sharing the embedding weights does (section 3.4). Concatenation
# decodes exactly as well as the bare embeddings (its PE block is orthogonal to $[e_v; 0]$).

# %% tags=["nbval-ignore-output"]
word_dims = [4, 8, 16, 32, 64, 128, 256, 512]
sizes = dict(vocab_size=1000, max_len=64, n_tokens=2000)
print(f"V = {sizes['vocab_size']} words, {sizes['n_tokens']} tokens, positions t < {sizes['max_len']}")
recovery = {d: [word_recovery(d, seed, **sizes) for seed in SEEDS] for d in word_dims}  # (added, concat) per seed
print(f"measured at d = {word_dims}, {len(SEEDS)} seeds each: medians and ranges in the figure below")

# %% tags=["hide-input", "nbval-ignore-output"]
print("words recovered at equal total width, e + PE against [e; PE] with e in half of it (range over seeds):")
for d in [4, 8, 16, 32]:
    added, concat = spread([a for a, _ in recovery[2 * d]]), spread([c for _, c in recovery[d]])
    print(f"width {2 * d:3d}: e + PE {added[0]:6.1%} .. {added[2]:6.1%}, [e; PE] {concat[0]:6.1%} .. {concat[2]:6.1%}")

# %% tags=["hide-input"]
assert all(added == concat == 1.0 for d in word_dims if d >= 128 for added, concat in recovery[d])
assert all(added > 0.995 and concat == 1.0 for added, concat in recovery[64])  # within half a point of 100%
assert all(added < concat for d in [4, 8, 16, 32] for added, concat in recovery[d])
assert all(added < concat - 0.1 for d in [8, 16] for added, concat in recovery[d])
assert all(0.2 < concat < 0.3 for _, concat in recovery[8]), (
    "at d = 8 even the bare embeddings lose most dot-product votes"
)
print("✓ at equal d, in every seed: from d = 128 on, e + PE recovers every word; at 64 adding almost every word and")
print("  concatenation every word; at 4 to 32 adding recovers fewer, at 8 and 16 over 10 points fewer")
equal_width = [(added, concat) for d in [4, 8, 16] for (added, _), (_, concat) in zip(recovery[2 * d], recovery[d])]
assert all(added > concat + 0.05 for added, concat in equal_width)  # same seed, same total width
print("✓ at equal total width 8, 16 and 32, adding recovers more words than concatenating, in every seed")
assert all(added > 0.99 and concat > 0.99 for (added, _), (_, concat) in zip(recovery[64], recovery[32]))
print("✓ at equal total width 64 both recover over 99% of the words, in every seed")

# %%
fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
variants = [("added: e + PE_t (width d)", "o-"), ("concatenated: [e; PE_t] (width 2d)", "s--")]
for i, (label, style) in enumerate(variants):
    lo, med, hi = zip(*[spread([run[i] for run in recovery[d]]) for d in word_dims])
    ax.plot(word_dims, med, style, color=f"C{i}", label=label + ", median over seeds (band: range)")
    ax.fill_between(word_dims, lo, hi, color=f"C{i}", alpha=0.2)
ax.set(
    xscale="log",
    xlabel="d",
    ylabel="word recovered",
    title="Adding loses little once d is large (equal from d = 128; at d = 64 within half a point)",
)
ax.set_xticks(word_dims, [str(d) for d in word_dims])
ax.legend()
plt.show()

# %% [markdown]
# Concatenation's low share at small $d$ is not PE's doing: among 1000 random words in 8 dimensions, a word's
# own vector often loses the dot product to a longer one. At equal total width, with PE in half of $[e; PE]$'s
# columns, adding wins at 8, 16 and 32 (at 16 about half the words against a quarter); at width 64 both
# recover nearly every word. So the dot product sees the word through the added position once $d$ is large.
# The position, read back the same way, pays more: often a step or two off.
#
# > **Going further:** what adding costs the position; PE in only 4 columns; is the reading notes' "PE only takes
# > small number of dimensions" true?

# %% [markdown]
# ## 5. Why dot products, and why divide by $\sqrt{d_k}$
#
# Attention's score is itself a dot product, of a query with a key: why, and how large does it get?
# The paper (section 3.2.1) names two common scores. **Additive attention**
# (Bahdanau et al., 2015) feeds both into a small feed-forward network with one hidden layer,
# $v^\top \tanh(W_1 q + W_2 k)$. **Dot-product attention** takes $q \cdot k$ and "is identical to our
# algorithm, except for the scaling factor of $\frac{1}{\sqrt{d_k}}$". The two are similar in theoretical
# complexity, the paper says, but the dot product "is much faster and more space-efficient in practice, since it
# can be implemented using highly optimized matrix multiplication code": all scores are one product $QK^\top$.


# %% [markdown]
# ### How large dot products grow
#
# The paper adds (citing earlier work) that "for small values of $d_k$ the two mechanisms perform similarly",
# but "additive attention outperforms dot product attention without scaling for larger values of $d_k$", and
# writes "We suspect that" large dot products push the softmax into regions of extremely small gradients. Its
# footnote 4 works out how large, for independent $q, k \in \mathbb{R}^{d_k}$ with independent entries of mean 0
# and variance 1.
#
# **Predict first.** At the paper's $d_k = 64$, what is $\mathrm{Var}(q \cdot k)$?

# %%
my_guess_score_variance = None  # your answer: a number

# %% [markdown]
# We measure it from 10 000 pairs per $d_k$ and seed, five seeds.

# %% tags=["nbval-ignore-output"]
dks = [16, 64, 256, 512]
var_ratio = {d_k: [] for d_k in dks}  # Var(q.k) / d_k, one value per seed
for d_k in dks:
    for seed in SEEDS:
        q, key = random_pairs(10000, d_k, seed)  # (10000, d_k) each
        var_ratio[d_k].append((q * key).sum(1).var().item() / d_k)  # variance of 10000 dot products, over d_k
    lo, med, hi = spread(var_ratio[d_k])
    print(f"d_k={d_k:4d}: Var(q.k) / d_k: median {med:.3f}, range {lo:.3f} .. {hi:.3f} over {len(SEEDS)} seeds")

# %% tags=["hide-input"]
assert all(abs(r - 1) < 0.05 for d_k in dks for r in var_ratio[d_k])
assert all(abs(r * 64 - check.predict_score_variance.reference) < 64 * 0.05 for r in var_ratio[64])
print(f"✓ Var(q.k) = d_k for d_k in {dks}, in each of {len(SEEDS)} seeds (10000 pairs each)")

# %%
check.predict_score_variance(my_guess_score_variance)

# %% [markdown]
# Why footnote 4 holds: each product $q_j k_j$ has mean 0 and variance $\mathbb{E}[q_j^2]\mathbb{E}[k_j^2] = 1$,
# and the $d_k$ products are independent, so
#
# $$\mathrm{Var}(q \cdot k) = \sum_{j=1}^{d_k} \mathrm{Var}(q_j k_j) = d_k, \qquad
#   \mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1.$$

# %%
fig, ax = plt.subplots(figsize=(4.5, 3.2), layout="constrained")
ax.plot(dks, dks, color="0.6", lw=1, label="d_k")
lo, med, hi = zip(*[spread([r * d_k for r in var_ratio[d_k]]) for d_k in dks])
ax.errorbar(
    dks,
    med,
    yerr=[[m - l for m, l in zip(med, lo)], [h - m for m, h in zip(med, hi)]],
    fmt="o",
    color="C0",
    capsize=3,
    label="measured Var(q.k), range over seeds",
)
ax.set(xscale="log", yscale="log", xlabel="d_k", ylabel="variance", title="Var(q.k) = d_k")
ax.minorticks_off()
ax.set_xticks(dks, [str(d) for d in dks])
ax.set_yticks(dks, [str(d) for d in dks])
ax.legend()
plt.show()

# %% [markdown]
# ### What unscaled scores do to the softmax
#
# (The COMP7607 slides write the scaled score $q^\top k / \sqrt{d_k}$.) At the paper's $d_k = 64$ and at
# 512 we draw 1000 queries, each against its own 10 keys, five seeds, and measure, unscaled and scaled, the gap
# between the two largest scores, the largest weight, and the norm of the softmax's Jacobian
# $\mathrm{diag}(p) - p^\top p$: the paper's "extremely small gradients" are this Jacobian's.


# %%
def jacobian_norm(p):
    """Frobenius norm of the softmax Jacobian diag(p) - p^T p, one per row of p."""
    return (torch.diag_embed(p) - p[:, :, None] * p[:, None, :]).flatten(1).norm(dim=1)  # (n_q,)


# %% tags=["nbval-ignore-output"]
n_keys, n_q = 10, 1000
gaps, runs = {64: [], 512: []}, {}  # gaps[d_k]: one (n_q,) tensor of unscaled top-two gaps per seed
for d_k in gaps:
    for seed in SEEDS:
        scores = random_scores(n_q, n_keys, d_k, seed)  # (n_q, n_keys) unscaled q.k
        for name, s in [("unscaled q.k", scores), ("q.k / sqrt(d_k)", scores / math.sqrt(d_k))]:
            top2 = s.topk(2, dim=-1).values  # (n_q, 2) the two largest scores per query
            gap = top2[:, 0] - top2[:, 1]  # (n_q,)
            p = torch.softmax(s, dim=-1)  # (n_q, n_keys)
            top = p.max(dim=-1).values  # (n_q,) largest weight per query
            jac = jacobian_norm(p)  # (n_q,)
            stats = [gap.median(), top.median(), (top > 0.99).double().mean(), top.max(), jac.median(), jac.min()]
            runs.setdefault((d_k, name), []).append([float(v) for v in stats])
            if name == "unscaled q.k":
                gaps[d_k].append(gap)
typical = {key: [spread([r[i] for r in stats])[1] for i in (1, 4, 0)] for key, stats in runs.items()}  # top, jac, gap
print(
    f"typical largest weight, unscaled: {typical[64, 'unscaled q.k'][0]:.2f} at d_k = 64, "
    f"{typical[512, 'unscaled q.k'][0]:.4f} at 512; the top key leads the runner-up by "
    f"{typical[64, 'unscaled q.k'][2]:.1f} and {typical[512, 'unscaled q.k'][2]:.1f} units"
)
fig, axes = plt.subplots(1, 2, figsize=(8, 2.6), layout="constrained")
for ax, i, label in zip(axes, (0, 1), ("largest weight", "softmax Jacobian norm")):
    for j, name in enumerate(("unscaled q.k", "q.k / sqrt(d_k)")):
        ax.bar([x + 0.4 * j for x in (0, 1)], [typical[d, name][i] for d in gaps], width=0.4, label=name)
    ax.set(xticks=[0.2, 1.2], xticklabels=[f"d_k = {d}" for d in gaps], title=f"{label} (typical query)")
axes[0].legend(loc="lower left", fontsize=8)
plt.show()

# %% tags=["hide-input", "nbval-ignore-output"]
un, sc = "unscaled q.k", "q.k / sqrt(d_k)"
lowest = min(min(stats[5] for stats in runs[d_k, sc]) for d_k in gaps)  # over all 5 x 1000 queries, both sizes
one_hot_share = {d_k: spread([stats[2] for stats in runs[d_k, un]])[1] for d_k in gaps}  # the median seed's share
print(
    f"unscaled, one key gets over 0.99 of the weight in {one_hot_share[64]:.0%} of queries at d_k = 64 and "
    f"{one_hot_share[512]:.0%} at 512; scaled, in none, and no Jacobian norm is below {lowest:.2f}"
)

# %% tags=["hide-input"]
names = ["gap", "top", "one_hot", "max_top", "jac", "min_jac"]
measured = {key: dict(zip(names, zip(*stats))) for key, stats in runs.items()}
un64, sc64, un512, sc512 = (measured[d, name] for d in (64, 512) for name in ("unscaled q.k", "q.k / sqrt(d_k)"))
assert all(2.5 < g < 4 for g in un64["gap"]) and all(8.7 < g < 10.5 for g in un512["gap"])
assert all(0.35 < g < 0.5 for run in (sc64, sc512) for g in run["gap"])  # scaled median gap, each seed
assert min(un512["top"]) > 0.999 and min(un512["one_hot"]) > 2 / 3 and max(un512["jac"]) < 1e-3
assert all(0.9 < t < 0.99 for t in un64["top"]) and all(0.25 < s < 0.5 for s in un64["one_hot"])
assert max(un64["jac"]) < min(sc64["jac"]) / 3
assert all(max(run["top"]) < 0.4 and max(run["max_top"]) < 0.99 for run in (sc64, sc512))
assert all(min(run["min_jac"]) > 0.1 for run in (sc64, sc512))  # the smallest over every query of every seed
print("✓ unscaled, in every seed, the top two scores pull apart as d_k grows: at 64 the typical top weight is")
print("  above 0.9; at 512 most queries put nearly all their weight on one key and the Jacobian nearly vanishes")
print("✓ scaled, at both sizes no query puts nearly all its weight on one key, and every Jacobian norm is above 0.1")

# %% [markdown]
# So unscaled scores sharpen the softmax as $d_k$ grows: at 512 the top key typically leads by about 9
# units (its weight is $e^{\text{gap}}$ times the runner-up's). At the paper's 64 the lead is about 3 units, the
# typical top weight about 0.95, and a third of queries give one key over 0.99. That is what scaling buys at 64:
# weights that typically stay soft, whatever the number of keys. The gradient reaching $q \cdot k$ is a closer call:
# unscaled, it skips the factor $1/\sqrt{d_k}$ but passes a saturated softmax, and which wins depends on the
# number of keys. One query ($d_k = 512$, seed 0's median gap):

# %%
d_k = 512
median_q = int((gaps[d_k][0] - gaps[d_k][0].median()).abs().argmin())  # seed 0's query whose gap is the median
one_query = random_scores(n_q, n_keys, d_k, 0)[median_q]  # (n_keys,) its unscaled scores
fig, axes = plt.subplots(1, 2, figsize=(8, 2.4), sharey=True, layout="constrained")
for ax, (name, s) in zip(axes, [("unscaled q.k", one_query), ("q.k / sqrt(d_k)", one_query / math.sqrt(d_k))]):
    ax.bar(range(n_keys), torch.softmax(s, dim=-1).numpy())  # (n_keys,) this query's weights
    ax.set(title=name, xlabel="key", xticks=range(n_keys), ylim=(0, 1.05))
axes[0].set_ylabel("softmax weight")
fig.suptitle(f"One query's {n_keys} weights, d_k = {d_k} (seed 0, gap {float(gaps[d_k][0][median_q]):.1f}: the median)")
plt.show()

# %% [markdown]
# Would smaller keys do? In the paper's Table 3, a smaller $d_k$ (presumably still scaled) hurts quality.
#
# > **Going further:** the gradient end to end, with 2 to 50 keys; Table 3; what the additive score stores; a
# > word's score with itself, $q = k = x$, where the variance argument breaks.

# %% [markdown]
# ## 6. Softmax: shift invariance, temperature, soft arg-max
#
# Section 5 showed that the scores' size sets how sharp the softmax's weights are. Three properties:
#
# **Shift invariance.** For any constant $c$,
# $\mathrm{softmax}(x + c)_i = e^{x_i + c} / \sum_j e^{x_j + c} = e^c e^{x_i} / (e^c \sum_j e^{x_j})
# = \mathrm{softmax}(x)_i$. So subtracting $\max_j x_j$ is free.
#
# **Predict first.** The textbook formula $e^{x_i} / \sum_j e^{x_j}$ in float32, for the scores
# $x = (1001, 1002, 1003, 1000.5)$: how many of its four weights come out as `nan`?

# %%
my_guess_nans = None  # your answer: a number from 0 to 4


# %%
def softmax_naive(x):
    """exp(x) / sum(exp(x)) along the last axis, without the shift."""
    e = torch.exp(x)  # (..., n)
    return e / e.sum(-1, keepdim=True)


x = torch.tensor([1.0, 2.0, 3.0, 0.5])  # (4,)
for c in [-5.0, 3.0, 50.0]:
    assert torch.allclose(softmax_naive(x + c), softmax_naive(x), atol=1e-6)
print("✓ adding c = -5, 3 or 50 to every score leaves the softmax's weights unchanged")
big = x + 1000  # (4,) scores near 1000
shifted = softmax_naive(big - big.max())  # (4,)
print("naive softmax of x + 1000:", softmax_naive(big))
print("shifted by its max:       ", shifted)
assert torch.allclose(shifted, torch.softmax(x, -1), atol=1e-6)
assert int(torch.isnan(softmax_naive(big)).sum()) == check.predict_overflow_nans.reference
print("✓ shifted by its max, the weights equal softmax(x)")

# %%
check.predict_overflow_nans(my_guess_nans)

# %% [markdown]
# Every $e^{x_i}$ overflows to `inf`, and `inf / inf = nan`; shifted by the maximum, nothing overflows. Very
# negative scores fail too: every $e^{x_i}$ underflows to 0, and $0/0$ = `nan`; the shift fixes that as well,
# though not a row of $-\infty$ (lesson 04, section 3).

# %%
small = x - 1000  # (4,) scores near -1000
print("naive softmax of x - 1000:", softmax_naive(small))
print("shifted by its max:       ", softmax_naive(small - small.max()))
assert torch.isnan(softmax_naive(small)).all()
assert torch.allclose(softmax_naive(small - small.max()), torch.softmax(x, -1), atol=1e-6)
assert torch.isnan(torch.softmax(torch.full((4,), -math.inf), -1)).all()  # a row of -inf: no shift helps
print("✓ naive, every weight is nan; shifted, the weights equal softmax(x); a row of -inf stays nan even shifted")

# %% [markdown]
# **Temperature.** $\mathrm{softmax}(x / T)$: a high temperature $T$ flattens the weights towards
# uniform ($1/n$ each), a low one sharpens them towards the largest score.
#
# **Soft arg-max.** The reading notes call softmax a "softened" version of the arg-max. As
# $T \to 0$, $\mathrm{softmax}(x/T) \to$ the one-hot vector of $\arg\max x$ (when the maximum is
# unique): every other weight is at most $e^{(x_j - x_{max})/T}$, which tends to 0. The arg-max's one-hot
# vector has zero gradient almost everywhere; softmax is differentiable, so attention can be trained by gradient descent.

# %%
x = torch.tensor([1.0, 3.0, 2.5, 0.0, 2.0])  # (5,)
temps = [100.0, 3.0, 1.0, 0.3, 0.05]
weights = {T_: torch.softmax(x.double() / T_, dim=-1).float() for T_ in temps}  # each (5,), computed in float64
for T_, p in weights.items():
    print(f"T={T_:6.2f}: {p.numpy().round(4)}")

# %%
fig, axes = plt.subplots(1, len(temps), figsize=(12, 2.4), sharey=True, layout="constrained")
for ax, T_ in zip(axes, temps):
    ax.bar(range(5), weights[T_].numpy(), color=["C1" if i == x.argmax() else "C0" for i in range(5)])
    ax.set(title=f"T = {T_:g}", xticks=range(5), ylim=(0, 1.05))
axes[0].set_ylabel("softmax(x / T)")
fig.suptitle(f"x = {x.tolist()}: temperature from flat to one-hot")
plt.show()

# %% tags=["hide-input"]
tops = [weights[T_].max().item() for T_ in temps]
assert all(a < b for a, b in zip(tops, tops[1:]))  # sharper as T falls
assert torch.allclose(weights[100.0], torch.full((5,), 0.2), atol=0.01)  # nearly uniform
one_hot = torch.nn.functional.one_hot(x.argmax(), 5).float()  # (5,)
assert torch.allclose(weights[0.05], one_hot, atol=1e-4)  # nearly the arg-max's one-hot
print("✓ the weights sharpen as T falls: nearly uniform at T = 100, nearly the arg-max's one-hot at T = 0.05")
for T_ in temps:
    bound = torch.exp((x.double() - x.max()) / T_)  # (5,) e^((x_j - x_max) / T)
    assert torch.all(torch.softmax(x.double() / T_, dim=-1) <= bound)
print(f"✓ at every T in {temps}, each weight is at most e^((x_j - x_max) / T)")

# %% [markdown]
# > **Going further:** the soft arg-max $\sum_i i\,\mathrm{softmax}(x/T)_i$ is differentiable for every
# > $T > 0$, but its gradient vanishes as $T \to 0$, like the unscaled scores' of section 5.

# %% [markdown]
# ## Summary
#
# - $PE_t \cdot PE_{t+k} = \sum_i \cos(\omega_i k)$: independent of $t$ and even in $k$, so it sees distance,
#   not direction, and far distances can score almost alike ($f(121) \approx f(143)$ at $d_{model} = 128$).
#   $PE_{t+k} = PE_t M_k$, with $M_k$ block-diagonal $2\times2$ rotations; other bilinear forms, such as
#   the $J$ form, can tell direction.
# - The dot product decays with $|k|$, not monotonically; at $d_{model} = 128$ it never comes back above a
#   third of $f(0)$ between $k = 1000$ and $10\,000$ (narrow encodings do).
# - Random directions in $d$ dimensions have cosines of mean 0 and standard deviation $1/\sqrt d$. Adding PE
#   loses little of the word when $d$ is large, but blurs the position, mostly by a step or two from $d = 64$
#   (64 positions; at $d = 16$ about a third of the tokens are read more than 10 positions off).
#   At equal width it keeps more of the word than concatenating with PE in half the columns (widths 8 to 32),
#   less than with PE in 4 columns (16 and 32).
# - $\mathrm{Var}(q\cdot k) = d_k$ for $q, k$ with independent entries of mean 0 and variance 1. Unscaled, the
#   softmax is already sharp at the paper's $d_k = 64$ (typical top weight about 0.95) and nearly one-hot at 512,
#   where almost no gradient reaches $q\cdot k$ (10 keys). Scaling keeps the typical query's weights soft whatever
#   the number of keys; it passes back more gradient from $d_k = 128$ on with 10 keys, sooner with fewer, later with more.
# - Softmax is shift-invariant (subtract the max, or float32 returns `nan` for very large or very negative
#   scores), sharpens as the temperature falls, and tends to the arg-max's one-hot vector.
#
# ## Exercises
#
# Three exercises go beyond the main line; one builds section 6's stable softmax. Replace each stub's
# `raise NotImplementedError` with your code. Stuck?
# `check.signed_offset.hint()` prints a hint and `check.signed_offset.solution()` a solution
# (likewise for the other exercises).

# %% [markdown]
# **Exercise 1 (which way, and how far?).** Section 1 showed that the dot product
# $PE_t \cdot PE_{t+k}$ cannot tell $k$ from $-k$. The two vectors can. Write
# `signed_offset(pe_t, pe_t_plus_k)`: given two rows of the table (NumPy arrays of length
# $d_{model} \ge 8$, base 10000, $|k|$ at most 2000), return the integer $k$, positive when the second row
# is the later position, without building the table.


# %%
def signed_offset(pe_t, pe_t_plus_k):
    """The signed offset k between the rows PE_t and PE_{t+k}."""
    raise NotImplementedError  # your code here


check.signed_offset(signed_offset)

# %% [markdown]
# **Exercise 2 (choose the temperature).** Section 6 went from temperature to weights; go the other way.
# Write `temperature_for_weight(x, target)` returning the temperature $T > 0$ at which
# $\mathrm{softmax}(x / T)$ gives the largest score of `x` (a 1-D tensor with one largest entry) the weight
# `target` (between $1/n$ and 1), to within $10^{-4}$.


# %%
def temperature_for_weight(x, target):
    """The temperature T at which softmax(x / T) gives the arg-max of x the weight `target`."""
    raise NotImplementedError  # your code here


check.temperature_for_weight(temperature_for_weight)

# %% [markdown]
# **Exercise 3 (a stable softmax).** Write `stable_softmax(x, temperature)`: $\mathrm{softmax}(x / T)$
# along the last axis of a tensor, which must not return `nan` for scores like $[1000, 1001, 1002]$.


# %%
def stable_softmax(x, temperature=1.0):
    """softmax(x / temperature) along the last axis, without overflow."""
    raise NotImplementedError  # your code here


check.stable_softmax(stable_softmax)

# %% [markdown]
# **Exercise 4 (queries and keys of another size).** Footnote 4 assumed entries of variance 1. Suppose
# instead that all entries of $q$ and $k$ are independent with mean 0, $q$'s with standard deviation `std_q`
# and $k$'s with `std_k`. Write `score_scale(d_k, std_q, std_k)`: the number to divide $q \cdot k$ by so that
# the scores again have variance 1.


# %%
def score_scale(d_k, std_q, std_k):
    """The divisor that gives q . k variance 1 when q's entries have std std_q and k's have std std_k."""
    raise NotImplementedError  # your code here


check.score_scale(score_scale)

# %% [markdown]
# ## Going further
#
# Each detour below is checked like the main line.

# %% [markdown]
# ### Telling direction: the $J$ form
#
# *Why read it:* it shows how a bilinear score can tell before from after, and which forms cannot.
#
# Section 1's dot product cannot tell $k$ from $-k$, but the **vectors** differ ($PE_{t+k} \ne PE_{t-k}$),
# and another bilinear form can recover the sign: take $J$ block-diagonal with blocks
# $\left(\begin{smallmatrix}0 & 1\\-1 & 0\end{smallmatrix}\right)$ (section 2's rotation block with
# $b = -\pi/2$, a quarter turn). Each pair gives
# $\sin(\omega_i t)\cos(\omega_i(t+k)) - \cos(\omega_i t)\sin(\omega_i(t+k)) = -\sin(\omega_i k)$, so
# $PE_t\, J\, PE_{t+k}^\top = -\sum_i \sin(\omega_i k)$ (rows, as the table stores them): **odd** in
# $k$. Here at $t = 100$, $k = \pm 5$:
#
# > **Ahead:** attention's score with learned query and key projections (lesson 03) is such a bilinear form.
# > One head's $A$ has rank at most $d_k$, so with $d_k < d_{model}$ it can copy $M_k$ only on some pairs.

# %%
ks = torch.arange(-100, 100)  # (200,) section 1's offsets around t0 = 100
f_table = pe[t0 + ks] @ pe[t0]  # (200,) PE_{t0+k} . PE_{t0}
J = torch.block_diag(
    *[torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)] * (d_model // 2)
)  # (d_model, d_model)
g_table = pe[t0] @ J @ pe[t0 + ks].T  # (200,) PE_{t0} J PE_{t0+k}^T, one per k
assert torch.allclose(g_table, -torch.sin(ks[:, None].double() * w).sum(1), atol=1e-10)
assert torch.allclose(g_table[ks == 5], -g_table[ks == -5], atol=1e-12) and abs(float(g_table[ks == 5])) > 1
assert not torch.allclose(pe[t0 + 5], pe[t0 - 5])
print(f"PE_t . PE_t+5 = {float(f_table[ks == 5]):.4f} = PE_t . PE_t-5 = {float(f_table[ks == -5]):.4f}")
print(f"PE_t J PE_t+5^T = {float(g_table[ks == 5]):.4f}, PE_t J PE_t-5^T = {float(g_table[ks == -5]):.4f}")
print("✓ PE_t J PE_t+k^T = -sum_i sin(w_i k) for every k from -100 to 99: odd in k, though PE_t+5 and PE_t-5 differ")

# %% [markdown]
# Odd does not mean that the whole form's sign is minus the sign of $k$ everywhere. It is near $k = 0$, up to
# a limit that depends on the width: $|k| \le 3$ at $d_{model} = 8$, $|k| \le 977$ at 128, all of Exercise 1's
# range $|k| \le 2000$ at 512 (printed below). It rises across the five widths printed, but not at every
# width: $|k| \le 122$ at 30, only $|k| \le 53$ at 32. Beyond it the fast pairs' terms wrap around and the
# sum can take either sign: at $d_{model} = 128$, $k = +1739$ gives the sign that $k = -5$ gives.

# %% tags=["hide-input"]
k_far = 1739
pe_far = sinusoidal_encoding(t0 + k_far + 1, d_model, dtype=torch.float64)  # (t0 + k_far + 1, d_model)
g_far, g_back = float(pe_far[t0] @ J @ pe_far[t0 + k_far]), float(g_table[ks == -5])  # k = +1739 and k = -5
assert g_far > 1 and g_back > 1  # the same sign
k_range, t_range, widths = torch.arange(-2000, 2001), (2000, 2345, 2500), (8, 16, 64, 128, 512)  # (4001,)
moved = k_range != 0  # (4001,) the nonzero offsets
wrong_whole, wrong_slow, first_wrong = [], [], {}  # first_wrong[d]: the smallest |k| with the wrong sign
for d in widths:
    P = sinusoidal_encoding(2500 + 2001, d, dtype=torch.float64)  # (4501, d)
    J_d = torch.block_diag(*[torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)] * (d // 2))  # (d, d)
    for t in t_range:
        whole = P[t] @ J_d @ P[t + k_range].T  # (4001,) the whole J form
        slow = P[t, -2] * P[t + k_range, -1] - P[t, -1] * P[t + k_range, -2]  # (4001,) slowest pair: -sin(w k)
        wrong = moved & (torch.sign(whole) != -torch.sign(k_range))  # (4001,)
        wrong_whole.append(int(wrong.sum()))
        first_wrong[d] = int(k_range[wrong].abs().min()) if wrong.any() else None
        wrong_slow.append(int((torch.sign(slow[moved]) != -torch.sign(k_range[moved])).sum()))
by_width = wrong_whole[:: len(t_range)]  # the counts do not depend on t
assert wrong_whole == [n for n in by_width for _ in t_range] and min(by_width[:4]) > 0
assert sum(wrong_slow) == 0  # the slowest pair alone never wraps over this range
print(f"d_model = {d_model}: PE_t J PE_t+{k_far}^T = {g_far:+.2f} has the sign of PE_t J PE_t-5^T = {g_back:+.2f}")
print("✓ for |k| <= 2000 the whole form's sign is not always -k's at d_model = 8, 16, 64, 128")
print(f"  offsets k (of {int(moved.sum())}) where the whole form's sign is not -k's, at t = {t_range}:")
print("  " + ", ".join(f"{n} at d_model = {d}" for d, n in zip(widths, by_width)))
print(
    "  the sign is -k's for "
    + ", ".join(
        f"{f'|k| < {first_wrong[d]}' if first_wrong[d] else 'every |k| <= 2000'} at d_model = {d}" for d in widths
    )
)
assert first_wrong[8] == 4 and first_wrong[128] == 978 and first_wrong[512] is None
limits = [first_wrong[d] for d in widths[:4]]  # d_model = 8, 16, 64, 128
assert all(a < b for a, b in zip(limits, limits[1:]))
print("✓ among d_model = 8, 16, 64, 128, 512 the wrong sign starts further from k = 0 at each wider one")
k_pos = torch.arange(1, 2001)  # (2000,) k > 0; the form is odd in k
first_pos = {}  # first_pos[d]: the smallest k > 0 where PE_0 J PE_k^T = -sum_i sin(w_i k) is not negative
for d in (30, 32):
    P = sinusoidal_encoding(2001, d, dtype=torch.float64)  # (2001, d)
    J_d = torch.block_diag(*[torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)] * (d // 2))  # (d, d)
    first_pos[d] = int(k_pos[P[0] @ J_d @ P[k_pos].T >= 0].min())
print(f"  the sign is -k's for |k| < {first_pos[30]} at d_model = 30, but only |k| < {first_pos[32]} at 32")
assert first_pos[30] == 123 and first_pos[32] == 54
print("✓ not at every width: the wider 32 keeps the sign over a shorter range than 30")

# %% [markdown]
# Which forms are blind? Attention's learned form (lesson 03) on two encodings, $PE_s A\, PE_t^\top$, is blind
# when $A$ is diagonal with one weight $c_i$ per pair: it gives $\sum_i c_i \cos(\omega_i k)$, even in $k$. Two
# other kinds also tell $k$ from $-k$, but by an amount and a sign that change with $t$. Weighting a pair's sin
# and cos columns differently, by $a$ and $b$, makes score$(k)$ $-$ score$(-k)$ per pair
# $(a - b)\sin(2\omega_i t)\sin(\omega_i k)$ (nothing at $t = 0$). Coupling one pair to
# another, each column alike ($A_{0,2} = A_{1,3} = 1$, pair 0 against pair 1), gives
# $\cos(\omega_1 (t+k) - \omega_0 t)$, whose two sides differ by $-2\sin((\omega_1 - \omega_0) t)\sin(\omega_1 k)$.
# The $J$ form's difference is the same at every $t$. Here $a = 2$, $b = 1$, $k = \pm 1$:

# %% tags=["hide-input"]
A_w = torch.diag(torch.tensor([2.0, 1.0] * (d_model // 2), dtype=torch.float64))  # (d_model, d_model) sin x 2
inner = range(1, max_len - 1)  # positions t with both t - 1 and t + 1 in the table
tilt = torch.stack([pe[t] @ A_w @ (pe[t + 1] - pe[t - 1]) for t in inner])  # (198,) score(k = +1) - score(k = -1)
turn = torch.stack([pe[t] @ J @ (pe[t + 1] - pe[t - 1]) for t in inner])  # (198,) the same for the J form
A_x = torch.zeros(d_model, d_model, dtype=torch.float64)  # (d_model, d_model) pair 0 against pair 1
A_x[0, 2] = A_x[1, 3] = 1.0
cross = torch.stack([pe[t] @ A_x @ (pe[t + 1] - pe[t - 1]) for t in inner])  # (198,)
pair_wave = -2 * torch.sin((w[1] - w[0]) * torch.tensor(list(inner), dtype=torch.float64)) * torch.sin(w[1])
assert torch.allclose(cross, pair_wave, atol=1e-10)  # the formula above, at k = 1
print(
    f"sin columns x 2: score(k = +1) - score(k = -1) runs from {tilt.min():+.2f} to {tilt.max():+.2f} over t = 1 .. 198"
)
print(f"pair 0 against pair 1: from {cross.min():+.2f} to {cross.max():+.2f}")
print(f"J form: score(k = +1) - score(k = -1) = {turn[0]:+.2f} at every t")
assert tilt.min() < -1 and tilt.max() > 1 and abs(turn[0]) > 1 and torch.allclose(turn, turn[:1].expand(len(turn)))
assert cross.min() < -1 and cross.max() > 1
c_pair = torch.linspace(-1.0, 2.0, d_model // 2, dtype=torch.float64).repeat_interleave(2)  # (d_model,) c_i per pair
blind = torch.stack([pe[t] @ torch.diag(c_pair) @ (pe[t + 1] - pe[t - 1]) for t in inner])  # (198,)
assert blind.abs().max() < 1e-10
print("✓ a diagonal A with one weight per pair gives k = +1 and -1 the same score at every t")
print("✓ weighting within a pair, or coupling two pairs, separates k = +1 from -1 with a sign that changes with t;")
print("  the J form separates them the same way at every t")

# %% [markdown]
# ### Where the independence assumption breaks: a word's score with itself
#
# *Why read it:* footnote 4's $\mathrm{Var}(q \cdot k) = d_k$ assumes independent $q$ and $k$; a word's
# score with itself breaks that.
#
# In bare self-attention (lesson 03) a word's query and key are the same vector, $q = k = x$, and its score
# with itself is $x \cdot x = |x|^2$.
#
# **Predict first.** For $x$ with 64 independent $N(0, 1)$ entries, what is the mean of $x \cdot x$?

# %%
my_guess_self_score = None  # your answer: a number

# %% tags=["nbval-ignore-output"]
self_mean, self_var = {d_k: [] for d_k in dks}, {d_k: [] for d_k in dks}  # per seed, divided by d_k
for d_k in dks:
    for seed in SEEDS:
        x_self = random_pairs(10000, d_k, seed)[0]  # (10000, d_k) q = k = x
        self_scores = (x_self * x_self).sum(1)  # (10000,) x . x = |x|^2
        self_mean[d_k].append(self_scores.mean().item() / d_k)
        self_var[d_k].append(self_scores.var().item() / d_k)
    print(
        f"d_k={d_k:4d}: mean(x.x) / d_k {spread(self_mean[d_k])[0]:.3f} .. {spread(self_mean[d_k])[2]:.3f}, "
        f"Var(x.x) / d_k {spread(self_var[d_k])[0]:.2f} .. {spread(self_var[d_k])[2]:.2f}  (range over seeds)"
    )
uniform_var = []  # Var(x.x) / d_k for entries uniform on [-sqrt 3, sqrt 3]: mean 0, variance 1
for d_k in dks:
    for seed in SEEDS:
        gen = torch.Generator().manual_seed(seed)
        x_unif = (2 * torch.rand(10000, d_k, generator=gen, dtype=torch.float64) - 1) * math.sqrt(3)  # (10000, d_k)
        uniform_var.append((x_unif * x_unif).sum(1).var().item() / d_k)
fourth_unif = math.sqrt(3) ** 4 / 5  # E[x^4] = a^4 / 5 for x uniform on [-a, a]
print(
    f"uniform entries on [-sqrt 3, sqrt 3], E[x^4] - 1 = {fourth_unif - 1:.2f}: "
    f"Var(x.x) / d_k {min(uniform_var):.2f} .. {max(uniform_var):.2f}  (range over d_k and seeds)"
)

# %% tags=["hide-input"]
assert all(abs(m - 1) < 0.02 for ms in self_mean.values() for m in ms)
assert all(abs(v - 2) < 0.15 for vs in self_var.values() for v in vs)
assert all(abs(m * 64 - check.predict_self_score_mean.reference) < 1 for m in self_mean[64])
print(f"✓ for q = k = x with Gaussian entries: mean(x.x) = d_k, not 0, and Var(x.x) = 2 d_k, for d_k in {dks}, 5 seeds")
assert all(abs(v - (fourth_unif - 1)) < 0.05 for v in uniform_var)
print(f"✓ with uniform entries of variance 1 instead, Var(x.x) = (E[x^4] - 1) d_k = 0.8 d_k, for d_k in {dks}, 5 seeds")

# %%
check.predict_self_score_mean(my_guess_self_score)

# %% [markdown]
# Each $x_j^2$ has mean 1 and variance $\mathbb{E}[x_j^4] - 1$, so the fourth moment sets
# $\mathrm{Var}(x \cdot x)$: $2\,d_k$ for Gaussian entries, $0.8\,d_k$ for entries uniform on
# $[-\sqrt 3, \sqrt 3]$ (printed above). Either way a self-score scaled by $\sqrt{d_k}$ is about
# $\sqrt{d_k}$, not about 0: lesson 03 meets it as a map that looks almost only at the diagonal (its
# section 5 shows what different $W_q$, $W_k$ do to it).

# %% [markdown]
# **Separate $W_q$, $W_k$ bring the self-score back near 0.** The break above needs $q = k$. In the real model the query and the key come from separate projections, $q = xW_q$ and $k = xW_k$. With
# $W_q$ and $W_k$ drawn independently (entries of variance $1/d_{model}$, one common choice) the self-score
# is centred near 0 again, with variance near $d_k$.
#
# That does not make one word's $q$ and $k$ independent. For $x$ with independent $N(0, 1)$ entries,
# $q_j$ and $k_j$ have covariance $(W_q^\top W_k)_{jj}$: small, but not 0. The self-score's mean is the
# sum of these covariances, $\operatorname{tr}(W_q^\top W_k)$; they take both signs, so the sum stays near
# 0. Merely different matrices are not enough: with $W_k = W_q + 0.3\,W'$ ($W'$ another independent draw)
# the mean stays near that of $q = k$. Measured at $d_{model} = 512$, $d_k = 64$, 4000 words, five seeds:

# %% tags=["nbval-ignore-output"]
untied_mean, untied_var, near_mean = [], [], []  # self-score / sqrt(d_k), / d_k; one per seed
corr_max, corr_gap, trace_mean, both_signs = [], [], [], []  # q_j, k_j correlations; tr(W_q^T W_k) / sqrt(d_k)
near_trace = []  # tr(W_q^T W_near) / sqrt(d_k)
for seed in SEEDS:
    x_words = random_pairs(4000, 512, seed)[0]  # (4000, d_model)
    W_q, W_k = (W / math.sqrt(512) for W in random_pairs(512, 64, 100 + seed))  # (d_model, d_k) each
    q_w, k_w = x_words @ W_q, x_words @ W_k  # (4000, d_k) each: every word's query and key
    untied = (q_w * k_w).sum(1)  # (4000,) each word's score with itself
    untied_mean.append(untied.mean().item() / 8)
    untied_var.append(untied.var().item() / 64)
    cov = (W_q * W_k).sum(0)  # (d_k,) Cov(q_j, k_j) = (W_q^T W_k)_jj
    exact_corr = cov / (W_q.norm(dim=0) * W_k.norm(dim=0))  # (d_k,) corr(q_j, k_j) from the weights
    q_c, k_c = q_w - q_w.mean(0), k_w - k_w.mean(0)  # (4000, d_k) each, centred
    measured_corr = (q_c * k_c).sum(0) / (q_c.norm(dim=0) * k_c.norm(dim=0))  # (d_k,) over the 4000 words
    corr_max.append(exact_corr.abs().max().item())
    corr_gap.append((measured_corr - exact_corr).abs().max().item())
    trace_mean.append(cov.sum().item() / 8)
    both_signs.append(bool((cov > 0).any() and (cov < 0).any()))
    W_near = W_q + 0.3 * random_pairs(512, 64, 200 + seed)[0] / math.sqrt(512)  # (d_model, d_k) close to W_q
    near_mean.append(((x_words @ W_q) * (x_words @ W_near)).sum(1).mean().item() / 8)
    near_trace.append((W_q * W_near).sum().item() / 8)  # tr(W_q^T W_near) / sqrt(d_k): far from 0
print(
    f"separate W_q, W_k: mean self-score / sqrt(d_k) {min(untied_mean):.3f} .. {max(untied_mean):.3f}, "
    f"Var / d_k {min(untied_var):.2f} .. {max(untied_var):.2f}  (range over seeds)"
)
print(f"W_k = W_q + 0.3 W': mean self-score / sqrt(d_k) {min(near_mean):.2f} .. {max(near_mean):.2f}")
print(f"separate W_q, W_k: largest |corr(q_j, k_j)| over j {min(corr_max):.2f} .. {max(corr_max):.2f}")
lin_var = []  # nn.Linear's default init: entries uniform on +-1/sqrt(d_model), variance 1/(3 d_model)
for seed in SEEDS:
    x_words = random_pairs(4000, 512, seed)[0]  # (4000, d_model)
    gen = torch.Generator().manual_seed(300 + seed)
    U = torch.rand(2, 512, 64, generator=gen, dtype=x_words.dtype)  # (2, d_model, d_k) uniform on [0, 1)
    W_q, W_k = (2 * U - 1) / math.sqrt(512)  # (d_model, d_k) each
    lin_var.append(((x_words @ W_q) * (x_words @ W_k)).sum(1).var().item() / 64)
print(f"nn.Linear's default init: Var / d_k {min(lin_var):.3f} .. {max(lin_var):.3f}  (range over seeds)")

# %% tags=["hide-input"]
assert all(abs(m) < 0.2 for m in untied_mean) and all(0.85 < v < 1.15 for v in untied_var)
assert all(7 < m < 9 for m in near_mean)  # q = k would give sqrt(d_k) = 8

assert all(0.05 < c < 0.25 for c in corr_max) and max(corr_gap) < 0.08 and all(both_signs)
assert all(abs(m - t) < 0.06 for m, t in zip(untied_mean, trace_mean))
assert all(abs(m - t) < 0.2 for m, t in zip(near_mean, near_trace)) and min(near_trace) > 5  # a trace far from 0

assert all(0.08 < v < 0.14 for v in lin_var)  # about 1/9: each q_j, k_j has variance 1/3
print("✓ in all 5 seeds, the mean self-score follows tr(W_q^T W_k): near 0 with variance near d_k for independent")
print("  W_q, W_k (near d_k / 9 with nn.Linear's default init), near sqrt(d_k) for W_q + 0.3 W', as for q = k;")
print("  and one word's q_j and k_j stay correlated, as W_q^T W_k predicts")

# %% [markdown]
# ### The explorer's `base` slider and pair 0
#
# $\omega_i = 1/\text{base}^{2i/d_{model}}$, so $\omega_0 = 1$ for every base: lowering `base` speeds up
# only the pairs $i \ge 1$. Pick one of those first.

# %% tags=["hide-input"]
bases = [10.0, 100.0, 1000.0, 10000.0, 100000.0]  # falling speeds: lower base, faster pairs
omegas = torch.stack([angular_frequencies(64, b) for b in bases])  # (5, 32) omega_i per base
assert torch.all(omegas[:, 0] == 1)  # pair 0: omega_0 = 1 whatever the base
assert torch.all(omegas[:-1, 1:] > omegas[1:, 1:])  # pairs i >= 1: faster for every lower base
print(f"✓ at d_model = 64, omega_0 = 1 for base in {bases}; every omega_i with i >= 1 grows as the base falls")

# %% [markdown]
# ### The first rise and the long-range peak, more closely
#
# *Why read it:* section 3 looked at $d_{model} = 128$ only. First, the first offset that scores below the
# long-range peak:

# %% tags=["hide-input"]
near = int((ratio < peak).nonzero()[0])  # the first offset that scores below the long-range peak
print(f"f(k) / f(0) first falls below {peak:.3f} at k = {near}; at k = 200 it is {ratio[200]:.3f}")
assert near == 148 and torch.all(ratio[:near] > peak) and ratio[200] < peak
print(
    f"✓ every offset below {near} scores higher than any from 1000 to 10,000; k = 200 lower than k = {check.LONG_RANGE_AT}"
)

# %% [markdown]
# At the other widths in the table $f$ also first rises within 200 offsets, later for wider encodings (never earlier, though
# some tie: 8 and 16, 256 and 384), and ends below $0.7\,f(0)$ at $k = 200$. Its long-range peak stays below
# $0.6\,f(0)$ from $d_{model} = 32$ up, but narrow encodings come back: at 8 four waves line up near
# $k = 2000\pi$, to nearly $f(0)$.

# %% tags=["hide-input"]
ks = torch.arange(0, 201, dtype=torch.float64)  # (201,) offsets 0 .. 200
table_widths = [8, 16, 32, 64, 128, 256, 512, 1024]
first_rise, end_ratio, other_peaks, other_at = {}, {}, {}, {}
for d in [*table_widths, *range(32, 257, 2)]:
    f_d = torch.cos(ks[:, None] * angular_frequencies(d)).sum(1)  # (201,) f(k) at width d
    first_rise[d], end_ratio[d] = int((f_d[1:] > f_d[:-1]).nonzero()[0]), float(f_d[200] / f_d[0])
    f_far = torch.cos(far[1000:, None] * angular_frequencies(d)).sum(1) / (d / 2)  # (9001,) f(k) / f(0), k >= 1000
    other_peaks[d], other_at[d] = f_far.max().item(), 1000 + int(f_far.argmax())
print("d_model:                    " + "".join(f"{d:6d}" for d in table_widths))
print("first rise at k:            " + "".join(f"{first_rise[d]:6d}" for d in table_widths))
print("f(200) / f(0):              " + "".join(f"{end_ratio[d]:6.2f}" for d in table_widths))
print("peak f(k) / f(0), k >= 1000:" + "".join(f"{other_peaks[d]:6.2f}" for d in table_widths))
print(
    f"long-range peak, largest over every even width from 32 to 256, 512 and 1024: "
    f"{max(v for d, v in other_peaks.items() if d >= 32):.2f}; at d_model = 8 it is at k = {other_at[8]}, "
    f"about 2000 pi = {2000 * math.pi:.0f}"
)
rising = [first_rise[d] for d in table_widths[1:]]  # d_model = 16 .. 1024
assert all(a < b for a, b in zip(rising, rising[1:])) and all(end_ratio[d] < 0.7 for d in table_widths)
every_width = {}  # first rise for every even width 2 .. 1024
for d in range(2, 1025, 2):
    f_d = torch.cos(ks[:, None] * angular_frequencies(d)).sum(1)  # (201,)
    every_width[d] = int((f_d[1:] > f_d[:-1]).nonzero()[0])
firsts = list(every_width.values())
assert all(a <= b for a, b in zip(firsts, firsts[1:])) and every_width[256] == every_width[384] == 24
print("✓ over every even width from 2 to 1024, a wider encoding never first rises earlier;", end=" ")
print(f"d_model = 256 and 384 both first rise at k = {every_width[384]}")
assert all(v < 0.6 for d, v in other_peaks.items() if d >= 32)
assert other_peaks[8] > 0.99 and 0.6 < other_peaks[16] < 0.8
print(
    "✓ from d_model = 32 up (every even width to 256, then 512 and 1024) the long-range peak never comes back near f(0)"
)

# %% [markdown]
# ### Reading the position back from $e + PE_t$
#
# *Why read it:* section 4 measured what adding PE costs the word; this measures what it costs the position.
#
# Section 4 read the word back through the added position. And the position through the word? We read it
# back by the same rule, $\arg\max_s x \cdot PE_s$, from the same tokens as section 4's
# `word_recovery` ($[e; PE_t]$ gives $t$ exactly). Their word vectors have length $\sqrt d$. The paper's
# embeddings are learned and multiplied by $\sqrt{d_{model}}$ (section 3.4); it gives no size for their
# entries, but if those start near $1/\sqrt{d_{model}}$, as in the reference implementation, they too start
# at length about $\sqrt{d_{model}}$.

# %% tags=["nbval-ignore-output"]
position_exact, position_near, position_far = ({d: [] for d in word_dims} for _ in range(3))  # per seed
for d in word_dims:
    table = sinusoidal_encoding(sizes["max_len"], d, dtype=torch.float64)  # (max_len, d)
    for seed in SEEDS:
        gen = torch.Generator().manual_seed(seed)  # the same words and positions as word_recovery(d, seed)
        emb = torch.randn(sizes["vocab_size"], d, generator=gen, dtype=torch.float64)  # (V, d)
        words = torch.randint(0, sizes["vocab_size"], (sizes["n_tokens"],), generator=gen)  # (n_tokens,)
        pos = torch.randint(0, sizes["max_len"], (sizes["n_tokens"],), generator=gen)  # (n_tokens,)
        miss = (((emb[words] + table[pos]) @ table.T).argmax(1) - pos).abs()  # (n_tokens,) |read s - true t|
        position_exact[d].append((miss == 0).double().mean().item())
        position_near[d].append((miss <= 2).double().mean().item())
        position_far[d].append((miss > 10).double().mean().item())
print(f"position read back from e + PE, over the {sizes['max_len']} positions (range over seeds):")
for d in [16, 64, 128, 512]:
    exact_range, near_range, far_range = spread(position_exact[d]), spread(position_near[d]), spread(position_far[d])
    print(
        f"d={d:3d}: exactly {exact_range[0]:6.1%} .. {exact_range[2]:6.1%}, "
        f"within 2 positions {near_range[0]:6.1%} .. {near_range[2]:6.1%}, "
        f"more than 10 off {far_range[0]:5.1%} .. {far_range[2]:5.1%}"
    )

# %% tags=["hide-input"]
for d in word_dims:  # [e_w; PE_t] . [0; PE_s] = PE_t . PE_s, largest at s = t
    table = sinusoidal_encoding(sizes["max_len"], d, dtype=torch.float64)  # (max_len, d)
    assert torch.equal((table @ table.T).argmax(1), torch.arange(sizes["max_len"]))
assert all(0.4 < e < 0.6 for e in position_exact[64]) and all(0.9 < e < 0.97 for e in position_exact[512])
assert all(n > 0.9 for d in word_dims if d >= 64 for n in position_near[d])
assert all(0.01 < f < 0.1 for f in position_far[64]) and all(f == 0 for f in position_far[512])
assert all(e < 1 for d in word_dims for e in position_exact[d])
print("✓ concatenated, every position is read back exactly; added, in every seed, about half the tokens miss it at")
print("  d = 64 and some still at 512, though from d = 64 on over 90% land within 2 positions")

# %% [markdown]
# The position pays more: neighbouring encodings score almost alike (section 3), so the word's push often moves
# the best match a step or two. Over these 64 positions it comes back exactly for about half the tokens at
# $d = 64$ and 93 to 95% at 512, within two positions for over 90% from $d = 64$ on; at $d = 64$ a few percent
# land more than ten positions off.

# %% [markdown]
# ### Does PE take only a few dimensions?
#
# *Why read it:* it tests the reading notes' second reason for adding PE: true over a sentence, not over
# long spans.
#
# The reading notes add that "PE only takes small number of dimensions". A linear layer mixes columns, so
# what it can tell apart is a *subspace*: the question is how many directions carry PE's variation, not
# how many columns. We count both for positions $0 \dots n-1$ at $d_{model} = 512$: the principal
# directions (singular values of the table with each column's mean removed, largest first) and the
# columns in order (`pe_variance_share(n, d_model)`, the cumulative share column by column). Positions
# $0 \dots n-1$ span at most $n-1$ directions. The slow pairs (large $i$) hardly move over a short span
# ($\sin \approx 0$, $\cos \approx 1$), but they do turn over long ones: the slowest ($i = 255$) has
# wavelength $2\pi \cdot 10000^{510/512}$ positions (printed below).

# %%
slowest = 2 * math.pi / float(angular_frequencies(512)[-1])  # wavelength of pair i = 255
lines = [f"wavelength of the slowest pair at d_model = 512: {slowest:,.0f} positions"]
lines.append("share of PE's variance over positions 0..n-1, d_model = 512:")
spans, in_directions, in_columns, cumulative = [50, 100, 200, 1000, 10000], {}, {}, {}
for n in spans:
    table = sinusoidal_encoding(n, 512, dtype=torch.float64)  # (n, 512)
    power = torch.linalg.svdvals(table - table.mean(0)) ** 2  # (min(n, 512),) variance per principal direction
    share_dir = power.cumsum(0) / power.sum()  # (min(n, 512),) cumulative share, largest direction first
    share = pe_variance_share(n, 512)  # (512,) cumulative share, column by column
    cumulative[n] = share_dir, share
    in_directions[n] = [int((share_dir < level).sum()) + 1 for level in (0.95, 0.99)]
    in_columns[n] = [int((share < level).sum()) + 1 for level in (0.95, 0.99)]
    lines.append(
        f"  n = {n:5d}: 95% / 99% lies in {in_directions[n][0]:3d} / {in_directions[n][1]:3d} principal directions, "
        f"in the first {in_columns[n][0]} / {in_columns[n][1]} columns; first 256 columns hold {share[255]:5.1%}"
    )
print("\n".join(lines))

# %% tags=["hide-input"]
assert math.isclose(slowest, 2 * math.pi * 10000 ** (510 / 512), rel_tol=1e-9)
first_256 = {n: float(cumulative[n][1][255]) for n in spans}  # share held by the first 256 columns
assert first_256[100] > 0.98 and 200 < in_columns[100][0] < 256
assert 0.7 < first_256[1000] < 0.8  # about three quarters
assert 0.5 < first_256[10000] < 0.6 and in_columns[10000][0] > 400  # barely more than half
for share_dir, share in cumulative.values():  # guaranteed (Eckart-Young, below): checks the two computations
    assert torch.all(share_dir >= share[: len(share_dir)] - 1e-12)
short = [n for n in spans if n <= 200]  # sentence-length spans
assert all(in_directions[n][0] < 512 / 8 and in_directions[n][0] < (n - 1) / 3 for n in short)
assert all(in_directions[a][0] < in_directions[b][0] for a, b in zip(spans, spans[1:]))
assert 100 < in_directions[1000][0] and 200 < in_directions[10000][0]
print(
    "✓ over sentence-length spans (50 to 200 positions) 95% of PE's variance lies in a small share of the 512 directions"
)
print("✓ longer spans need many more directions")

# %% [markdown]
# So over a sentence the notes are right, once we count directions: 95% of PE's variation lies in 14, 27
# and 51 of the 512 directions over 50, 100 and 200 positions, though it is spread over 182 to 248 columns
# (printed above). The count grows with the span: 131 directions over a thousand positions, 252 over ten
# thousand, as the slow pairs start to turn. "Few dimensions" holds for sentence-length spans only.
# Directions never need more than columns, by construction: the first $m$ columns span an $m$-dimensional
# subspace, and the top $m$ principal directions hold at least as much variance as any $m$-dimensional
# subspace (Eckart–Young).

# %% [markdown]
# ### Concatenating with PE in a few columns
#
# *Why read it:* section 4 gave PE half the columns of $[e; PE_t]$; with a narrow PE block concatenation
# wins, at a price.
#
# If position needs few columns, concatenation can give it few: at total width $W$, $e$ in $W - 4$ columns and
# PE in 4 ($\omega = 1$ and $0.01$). Its word share is the bare share at width $W - 4$
# (`word_recovery(W - 4, seed)`), since the PE block is still orthogonal to $[e_v; 0]$. Same sizes
# and five seeds as section 4, against $e + PE_t$ at width $W$:

# %% tags=["nbval-ignore-output"]
narrow = {W: [word_recovery(W - 4, seed, **sizes)[1] for seed in SEEDS] for W in [8, 16, 32, 64]}  # per seed
for W, concat_runs in narrow.items():
    added, concat = spread([a for a, _ in recovery[W]]), spread(concat_runs)
    print(
        f"width {W:2d}: e + PE {added[0]:6.1%} .. {added[2]:6.1%}, "
        f"[e; PE in 4 columns] {concat[0]:6.1%} .. {concat[2]:6.1%}  (range over seeds)"
    )
pe4 = sinusoidal_encoding(sizes["max_len"], 4, dtype=torch.float64)  # (max_len, 4)
f4 = pe4 @ pe4[0]  # (max_len,) f(k) = cos k + cos(0.01 k)
print(f"4-column PE: f(0) = {f4[0]:.2f}, f(1) = {f4[1]:.2f}, f(3) = {f4[3]:.2f}, f(6) = {f4[6]:.2f}")

# %% tags=["hide-input"]
pairs = {W: list(zip([a for a, _ in recovery[W]], narrow[W])) for W in narrow}  # (added, concat) per seed
assert all(concat < added - 0.05 for added, concat in pairs[8])  # at width 8 it is the half split
assert all(concat > added for W in [16, 32] for added, concat in pairs[W])
assert all(concat == 1.0 and added > 0.995 for added, concat in pairs[64])
print("✓ in every seed, with PE in 4 columns concatenating recovers more words than adding at widths 16 and 32,")
print("  fewer at 8; at 64 it recovers every word and adding over 99.5%")
assert torch.equal((pe4 @ pe4.T).argmax(1), torch.arange(sizes["max_len"]))

assert all(f4[k + 1] < f4[k] for k in range(3)) and f4[4] > f4[3]  # falls for three steps, then rises
assert f4[6] > f4[1] and f4[6] > 0.95 * f4[0]
print(
    f"✓ the 4-column PE reads back all {sizes['max_len']} positions exactly, but does not keep near offsets in order:"
)
print("  it falls for three steps, then offset 6 scores above offset 1, within 5% of offset 0")

# %% [markdown]
# So the half split was not the only answer: with PE in 4 columns, concatenation keeps more of the word at
# widths 16 and 32 in every seed and still reads every position back exactly. The price is what section 3
# valued: $f(k) = \cos k + \cos(0.01 k)$ falls for three steps and rises again, so offset 6 scores almost like
# offset 0 (printed above). How many columns position deserves depends on what attention must read from it.
# And after the first linear layer the two forms are closer than they look: with $W$'s rows split into $W_e$
# and $W_p$, $[e; PE_t]\, W = e\, W_e + PE_t\, W_p$, an addition of a projected PE.

# %% [markdown]
# ### The additive score: what it builds, how large it grows
#
# *Why read it:* section 5 quotes the paper's "more space-efficient in practice"; this counts what that means,
# and shows why additive scores need no scale factor of their own.
#
# Computed for all pairs at once, as one tensor expression, the additive score builds a hidden vector of size
# $d_a$ for every query–key pair; the dot product builds one number per pair. Both cost $O(n^2 d)$ operations
# with $d_a = d$ (plus projecting each query and key once), so this is a count of what each stores, not a gap
# in work; a loop over queries would need only $T_k\,d_a$ numbers at a time.


# %%
def additive_scores(Q, K, W_1, W_2, v):
    """Bahdanau's v . tanh(q W_1 + k W_2) for every query-key pair, and the hidden tensor it builds."""
    hidden = torch.tanh((Q @ W_1)[:, None, :] + (K @ W_2)[None, :, :])  # (T_q, T_k, d_a)
    return hidden @ v, hidden  # (T_q, T_k), (T_q, T_k, d_a)


additive_sizes = [(10, 16), (50, 64), (100, 64), (100, 128), (200, 256)]  # (queries = keys, d_k = d_a)
built = {}  # per size: how many numbers the dot product and the additive score build
gen = torch.Generator().manual_seed(0)
for n, d_k in additive_sizes:
    Q, K = torch.randn(2, n, d_k, generator=gen, dtype=torch.float64)  # (n, d_k) each
    W_1, W_2 = torch.randn(2, d_k, d_k, generator=gen, dtype=torch.float64) / math.sqrt(d_k)  # (d_k, d_a) each
    v = torch.randn(d_k, generator=gen, dtype=torch.float64)  # (d_a,), d_a = d_k
    scores_add, hidden = additive_scores(Q, K, W_1, W_2, v)  # (n, n), (n, n, d_a)
    built[n, d_k] = (Q @ K.T).numel(), hidden.numel()
n, d_k = additive_sizes[-1]
print(
    f"{n} queries and {n} keys, d_k = d_a = {d_k}: the dot product builds {built[n, d_k][0]:,} numbers "
    f"(one per pair), the additive score {built[n, d_k][1]:,} ({d_k} per pair)"
)

# %% tags=["hide-input"]
gen = torch.Generator().manual_seed(0)
Q, K = torch.randn(4, 8, generator=gen), torch.randn(5, 8, generator=gen)  # (T_q, d_k), (T_k, d_k)
W_1, W_2, v = torch.randn(8, 6, generator=gen), torch.randn(8, 6, generator=gen), torch.randn(6, generator=gen)
looped = torch.tensor([[float(v @ torch.tanh(q @ W_1 + k @ W_2)) for k in K] for q in Q])  # (4, 5) pair by pair
assert torch.allclose(additive_scores(Q, K, W_1, W_2, v)[0], looped, atol=1e-5)
print("✓ the vectorised additive scores equal v . tanh(q W_1 + k W_2) computed pair by pair")

# %% [markdown]
# **Additive scores grow with $v$, not with $d_a$ itself.** An additive score is at most $\sum_j |v_j|$ (each
# $\tanh$ lies in $(-1, 1)$). With $v \sim \mathcal N(0, 1)$ its spread grows like $\sqrt{d_a}$, and at
# $d_a = 512$ it makes the softmax nearly one-hot. But the usual initialisation already gives $v$ entries of
# size about $1/\sqrt{d_a}$ (`nn.Linear(d_a, 1)` draws them uniform on $\pm 1/\sqrt{d_a}$), and then the
# spread stays flat and the weights soft. The dot product's spread grows with $d_k$ when $q$ and $k$ have
# unit-variance entries, but it has such a weight too: $q = xW_q$, and drawing $W_q$ $\sqrt{d_k}$ times smaller
# divides every initial score by $\sqrt{d_k}$. T5 does that and drops the factor; for the initial scores the
# paper's fixed $1/\sqrt{d_k}$ is a convention, not a necessity (in training the two differ; see below).
# The sizes above, five seeds:

# %% tags=["nbval-ignore-output"]
additive_std = {size: [] for size in additive_sizes}  # per size: the additive scores' standard deviation, per seed
linear_std = {size: [] for size in additive_sizes}  # the same with nn.Linear's default v, uniform on +-1/sqrt(d_a)
for seed in SEEDS:
    gen = torch.Generator().manual_seed(seed)
    gen_v = torch.Generator().manual_seed(100 + seed)  # for nn.Linear's default v
    for n, d_k in additive_sizes:
        Q, K = torch.randn(2, n, d_k, generator=gen, dtype=torch.float64)  # (n, d_k) each
        W_1, W_2 = torch.randn(2, d_k, d_k, generator=gen, dtype=torch.float64) / math.sqrt(d_k)  # (d_k, d_a) each
        v = torch.randn(d_k, generator=gen, dtype=torch.float64)  # (d_a,), d_a = d_k
        scores_add, hidden = additive_scores(Q, K, W_1, W_2, v)  # (n, n), (n, n, d_a)
        additive_std[n, d_k].append(float(scores_add.std()))
        v_linear = (2 * torch.rand(d_k, generator=gen_v, dtype=torch.float64) - 1) / math.sqrt(d_k)  # (d_a,)
        linear_std[n, d_k].append(float((hidden @ v_linear).std()))
for n, d_k in additive_sizes:
    lo, _, hi = spread([sd / math.sqrt(d_k) for sd in additive_std[n, d_k]])
    print(
        f"{n:3d} queries and keys, d_a = {d_k:3d}: additive scores' std / sqrt(d_a) {lo:.2f} .. {hi:.2f} ({len(SEEDS)} seeds)"
    )
growth = [b / a for a, b in zip(additive_std[10, 16], additive_std[200, 256])]  # per seed, d_a from 16 to 256
print(
    f"the additive scores' std grows {min(growth):.1f} .. {max(growth):.1f} times from d_a = 16 to 256 (sqrt(16) = 4)"
)
every_linear = [sd for sds in linear_std.values() for sd in sds]  # every size and seed
print(
    f"with nn.Linear's default v, the std over every size and seed: {min(every_linear):.2f} .. {max(every_linear):.2f}"
)


def fitted_power(pairs):
    """The slope of log std against log d_a, least squares over (d_a, std) pairs: std ~ d_a ** slope."""
    x, y = torch.tensor([[math.log(d_a), math.log(sd)] for d_a, sd in pairs], dtype=torch.float64).T  # (n,) each
    return float(((x - x.mean()) * (y - y.mean())).sum() / (x - x.mean()).pow(2).sum())


power_per_seed = [fitted_power([(d_a, sds[i]) for (_, d_a), sds in additive_std.items()]) for i in range(len(SEEDS))]
power_all = fitted_power([(d_a, sd) for (_, d_a), sds in additive_std.items() for sd in sds])
print(
    f"fitted std ~ d_a ** p: p = {power_all:.2f} over all sizes and seeds, "
    f"{min(power_per_seed):.2f} .. {max(power_per_seed):.2f} seed by seed (sqrt: p = 0.5)"
)

# %% tags=["hide-input"]
ratio_sqrt = [sd / math.sqrt(d_a) for (_, d_a), sds in additive_std.items() for sd in sds]  # every size and seed
assert all(0.45 < r < 0.9 for r in ratio_sqrt)  # a constant spread would shrink it 4 times from 16 to 256
assert all(2 < g < 8 for g in growth)  # sqrt growth gives 4; a constant spread 1, a linear one 16
assert 0.45 < power_all < 0.55 and all(0.4 < p < 0.65 for p in power_per_seed)  # rules out d_a^0.3 and d_a^0.7
linear_growth = [b / a for a, b in zip(linear_std[10, 16], linear_std[200, 256])]  # per seed, d_a from 16 to 256
assert all(0.3 < sd < 0.7 for sd in every_linear) and all(0.5 < g < 1.5 for g in linear_growth)  # flat, not sqrt
top_additive = {"N(0, 1)": [], "N(0, 1) / sqrt(d_a)": [], "nn.Linear": []}  # median top weight at d_a = 512
for seed in SEEDS:
    g = torch.Generator().manual_seed(seed)
    q, keys = torch.randn(1000, 512, generator=g), torch.randn(1000, 10, 512, generator=g)  # (1000, d), (1000, 10, d)
    W_1, W_2 = torch.randn(2, 512, 512, generator=g) / math.sqrt(512)  # (d, d_a) each
    v = torch.randn(512, generator=g)  # (d_a,)
    v_linear = (2 * torch.rand(512, generator=torch.Generator().manual_seed(100 + seed)) - 1) / math.sqrt(512)
    hidden = torch.tanh((q @ W_1)[:, None, :] + keys @ W_2)  # (1000, 10, d_a): 1000 queries, 10 keys each
    for name, v_a in [("N(0, 1)", v), ("N(0, 1) / sqrt(d_a)", v / math.sqrt(512)), ("nn.Linear", v_linear)]:
        top_additive[name].append(float(torch.softmax(hidden @ v_a, -1).max(-1).values.median()))
assert min(top_additive["N(0, 1)"]) > 0.97
assert max(top_additive["N(0, 1) / sqrt(d_a)"]) < 0.3 and max(top_additive["nn.Linear"]) < 0.3
print("✓ in every seed, with v ~ N(0, 1) the additive scores' std grows like sqrt(d_a) (fitted power near 1/2, far")
print("  from 0 or 1), and at d_a = 512 the typical top weight (10 keys) is over 0.97; with v / sqrt(d_a) or")
print("  nn.Linear's default v the std stays flat and that weight under 0.3")

# %% [markdown]
# Folding the factor into $W_q$ matches the fixed factor only at the start. The paper trains with Adam
# (section 5.3), whose first step on a weight does not depend on the gradient's scale: $W_q$ moves by the
# same amount either way, and without the factor the scores move $\sqrt{d_k}$ times as far. So under Adam the
# factor also sets how fast the scores move. One Adam step at $d_k = 64$ (10 tokens), five seeds:


# %% tags=["hide-input"]
def adam_score_step(x, W_q, W_k, factor, target):
    """One Adam step on W_q (lr 0.01) for a loss on softmax(factor * x W_q W_k^T x^T); the scores before and after."""
    W_q = W_q.clone().requires_grad_()
    opt = torch.optim.Adam([W_q], lr=0.01)
    before = (factor * x @ W_q @ W_k.T @ x.T).detach()  # (n, n)
    loss = (torch.softmax(factor * x @ W_q @ W_k.T @ x.T, -1) - target).pow(2).sum()
    loss.backward()
    opt.step()
    return before, (factor * x @ W_q @ W_k.T @ x.T).detach()


for seed in SEEDS:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(10, 64, generator=g, dtype=torch.float64)  # (n, d_model): 10 tokens
    W_q, W_k = torch.randn(2, 64, 64, generator=g, dtype=torch.float64) / 8  # (d_model, d_k) each, d_k = 64
    target = torch.softmax(torch.randn(10, 10, generator=g, dtype=torch.float64), -1)  # (n, n)
    fixed_0, fixed_1 = adam_score_step(x, W_q, W_k, 1 / 8, target)  # the paper: 1/sqrt(d_k) on the scores
    folded_0, folded_1 = adam_score_step(x, W_q / 8, W_k, 1.0, target)  # T5: W_q drawn sqrt(d_k) times smaller
    assert torch.allclose(fixed_0, folded_0, atol=1e-12)  # the same initial scores
    moved = float((folded_1 - folded_0).norm() / (fixed_1 - fixed_0).norm())
    assert abs(moved - 8) < 0.01 and float((fixed_1 - fixed_0).norm()) > 1e-3
print("✓ in every seed both start with the same scores, and after one Adam step the scores without the factor")
print("  have moved sqrt(d_k) = 8 times as far as with it")

# %% [markdown]
# ### End to end: the gradient that reaches $q \cdot k$
#
# *Why read it:* section 5's softmax Jacobian is one factor; this follows the gradient from the output.
#
# The gradient that reaches the raw $q \cdot k$ (and so $q$, $k$, $W_q$, $W_k$) also passes,
# when scaled, through the factor $1/\sqrt{d_k}$. We send a random gradient $u$ back from the attention output
# $\sum_j p_j v_j$ (random $v_j$) and measure it, with section 5's 10 keys per query, then with 2, 5 and 50.
# First, section 5's own measurements seed by seed:


# %% tags=["hide-input", "nbval-ignore-output"]
def seed_range(d_k, name, i, fmt):
    """The range over the seeds of section 5's statistic i (0 gap, 2 share over 0.99, 4 Jacobian norm), as 'lo .. hi'."""
    column = [stats[i] for stats in runs[d_k, name]]  # one value per seed
    return f"{min(column):{fmt}} .. {max(column):{fmt}}"


print(f"section 5, each seed's median over {n_q} queries of {n_keys} keys, range over {len(SEEDS)} seeds:")
print(
    f"  top key's lead: unscaled {seed_range(64, un, 0, '.2f')} at d_k = 64, {seed_range(512, un, 0, '.2f')} at 512; "
    f"scaled {seed_range(64, sc, 0, '.2f')} and {seed_range(512, sc, 0, '.2f')}"
)
print(
    f"  share of queries with one key over 0.99, unscaled: {seed_range(64, un, 2, '.0%')} and {seed_range(512, un, 2, '.0%')}"
)
print(f"  Jacobian norm, unscaled: {seed_range(64, un, 4, '.2g')} at d_k = 64, {seed_range(512, un, 4, '.1g')} at 512")

# %% tags=["nbval-ignore-output"]
reach_dks, key_counts = [16, 64, 128, 256, 512], [2, 5, 10, 50]  # the d_k and the keys per query measured
reach = {}  # reach[keys, d_k, name]: per seed, the median over queries of |dL / d(q.k)|, the gradient at q.k
top_weight = {}  # top_weight[keys, d_k, name]: per seed, the median over queries of the largest weight
for key_count in key_counts:
    for d_k in reach_dks:
        for seed in SEEDS:
            gen = torch.Generator().manual_seed(seed)
            q = torch.randn(n_q, d_k, generator=gen, dtype=torch.float64)  # (n_q, d_k), entries N(0, 1) as before
            keys = torch.randn(n_q, key_count, d_k, generator=gen, dtype=torch.float64)  # (n_q, key_count, d_k)
            values = torch.randn(n_q, key_count, d_k, generator=gen, dtype=torch.float64)  # (n_q, key_count, d_k)
            u = torch.randn(n_q, d_k, generator=gen, dtype=torch.float64)  # (n_q, d_k) the gradient at the output
            for name, scale in [("unscaled", 1.0), ("scaled", 1 / math.sqrt(d_k))]:
                raw = torch.einsum("nd,ntd->nt", q, keys).requires_grad_()  # (n_q, key_count) q.k
                weights_qk = torch.softmax(raw * scale, dim=-1)  # (n_q, key_count)
                top_weight.setdefault((key_count, d_k, name), []).append(weights_qk.max(-1).values.median().item())
                out = torch.einsum("nt,ntd->nd", weights_qk, values)  # (n_q, d_k)
                (out * u).sum().backward()  # the loss u . out
                reach.setdefault((key_count, d_k, name), []).append(raw.grad.norm(dim=1).median().item())
ratios = {
    (c, d_k): [a / b for a, b in zip(reach[c, d_k, "unscaled"], reach[c, d_k, "scaled"])]
    for c in key_counts
    for d_k in reach_dks
}
print(f"|dL / d(q.k)| unscaled / scaled: range over {len(SEEDS)} seeds of each seed's median over {n_q} queries")
print(f"{'d_k':>5s}" + "".join(f"{f'{c} keys':>20s}" for c in key_counts))
for d_k in reach_dks:
    row = "".join(f"{f'{min(ratios[c, d_k]):.2g} .. {max(ratios[c, d_k]):.2g}':>20s}" for c in key_counts)
    print(f"{d_k:5d}{row}")
scaled = {c: [g for d_k in reach_dks for g in reach[c, d_k, "scaled"]] for c in key_counts}  # every d_k and seed
scaled_ranges = ", ".join(f"{c} keys {min(v):.2g} .. {max(v):.2g}" for c, v in scaled.items())
print(f"the scaled gradient itself, over every d_k: {scaled_ranges}")
tops_64 = ", ".join(
    f"{c} keys {min(top_weight[c, 64, 'unscaled']):.3f} .. {max(top_weight[c, 64, 'unscaled']):.3f}" for c in key_counts
)
print(f"typical largest weight, unscaled, d_k = 64: {tops_64}")

# %% tags=["hide-input"]
assert all(r > 1.5 for r in ratios[10, 16]) and all(0.9 < r < 1.4 for r in ratios[10, 64])
assert all(r < 0.8 for r in ratios[10, 128]) and all(r < 0.2 for r in ratios[10, 256])
assert all(r < 0.02 for r in ratios[10, 512])
assert all(0.25 < g < 0.35 for d_k in reach_dks for g in reach[10, d_k, "scaled"])
print("✓ with 10 keys, in every seed, the gradient reaching q.k is larger unscaled at d_k = 16, 0.9 to 1.4 times the")
print("  scaled one at 64, smaller from 128 on and under 2% of it at 512; scaled, about the same size at every d_k")
assert all(r > 3 for r in ratios[50, 64]) and all(r > 1.5 for r in ratios[50, 128])
assert all(0.05 < r < 0.5 for r in ratios[50, 512])
assert all(r < 0.05 for r in ratios[2, 64]) and all(r < 1 for r in ratios[2, 16])
assert all(0.3 < r < 0.55 for r in ratios[5, 64]) and all(r > 1 for r in ratios[5, 16])
few_to_many = zip(*(ratios[c, 64] for c in key_counts))  # per seed: the ratio at d_k = 64 for 2, 5, 10, 50 keys
assert all(a < b < c < d for a, b, c, d in few_to_many)
print("✓ in every seed, the more keys, the more gradient unscaled scores pass back: at d_k = 64 over 3 times the")
print("  scaled with 50 keys, a third to a half with 5, under 5% with 2 (already less at 16)")
fewer_saturate = zip(*(top_weight[c, 64, "unscaled"] for c in key_counts))  # per seed, 2, 5, 10, 50 keys
assert all(a > b > c > d for a, b, c, d in fewer_saturate)
soft_scaled = max(t for c in key_counts for d_k in reach_dks for t in top_weight[c, d_k, "scaled"])
assert soft_scaled < 0.8  # scaled, the typical query's weights stay soft whatever the number of keys
print("✓ at d_k = 64, in every seed, the fewer keys, the nearer the typical unscaled top weight is to 1;")
print("  scaled, it stays under 0.8 for 2 to 50 keys at every d_k")

# %% [markdown]
# So, with 10 keys, unscaled scores pass back more at $d_k = 16$, 0.98 to 1.3 times as much at the paper's 64, and less
# from 128 on: under 2% at 512. That fits the paper's suspicion (section 3.2.1) that small gradients are why
# unscaled dot products fall behind additive attention for larger $d_k$. The crossover moves with the number of
# keys, both ways: with 50 keys unscaled scores still pass back more at 128; with 5, about a third to a half
# as much at 64; with 2, under 5% at 64 and already less at 16. The cause is saturation: with fewer keys the top
# one stands further ahead and takes more of the weight (the typical top weights, printed above). Few keys is no
# corner case: under a causal mask (lesson 04) the $i$-th query sees $i$ keys.

# %% [markdown]
# ### Smaller keys, still scaled: Table 3
#
# *Why read it:* the paper measured what a smaller $d_k$ costs a trained model.
#
# Table 3's rows (B) shrink $d_k$ alone (in the paper's model, so presumably still dividing by $\sqrt{d_k}$;
# the paper does not say), so they measure a smaller $d_k$, not
# smaller keys in place of scaling: "reducing the attention key size $d_k$
# hurts model quality", which suggests "that determining compatibility is not easy and that a more sophisticated
# compatibility function than dot product may be beneficial" (section 6.2). Rows (A) keep
# $h\,d_k$, shrinking $d_v$ with $d_k$: "single-head attention is 0.9 BLEU worse than the best setting", and
# "quality also drops off with too many heads" (lesson 05). English-to-German development set; lower PPL, higher
# BLEU are better:
#
# | Table 3 | $h$ | $d_k$ | $d_v$ | PPL (dev) | BLEU (dev) | params $\times 10^6$ |
# |---|---|---|---|---|---|---|
# | base | 8 | 64 | 64 | 4.92 | 25.8 | 65 |
# | (A) | 1 | 512 | 512 | 5.29 | 24.9 | |
# | (A) | 4 | 128 | 128 | 5.00 | 25.5 | |
# | (A) | 16 | 32 | 32 | 4.91 | 25.8 | |
# | (A) | 32 | 16 | 16 | 5.01 | 25.4 | |
# | (B) | 8 | 16 | 64 | 5.16 | 25.1 | 58 |
# | (B) | 8 | 32 | 64 | 5.01 | 25.4 | 60 |

# %% [markdown]
# ### The softmax's gradient: how large it gets, how fast it vanishes
#
# *Why read it:* "softmax is the differentiable arg-max" is true, but its gradient can be too small to use.
#
# First, the Jacobian norm of section 5. It is near zero for one-hot weights, but the softest weights do not
# give the largest: uniform weights over $n$ keys give $\sqrt{n-1}/n$, so an even split between two keys ($1/2$)
# beats uniform over 10. And $1/2$ is the most any weights can give. With $S_m = \sum_i p_i^m$, expanding gives
# $\|\mathrm{diag}(p) - p^\top p\|_F^2 = S_2 - 2S_3 + S_2^2$; Cauchy–Schwarz gives $S_2^2 \le S_1 S_3 = S_3$,
# so the square is at most $S_2 - S_2^2 = S_2(1 - S_2) \le 1/4$, with equality only for an even split between
# two keys. Random weight vectors on 10 keys illustrate it:

# %%
two = jacobian_norm(torch.tensor([[0.5, 0.5], [0.999, 0.001]], dtype=torch.float64))  # (2,)
print(f"p = (0.5, 0.5): Jacobian norm {two[0]:.3f};  p = (0.999, 0.001): {two[1]:.3f}")
split = {n: float(jacobian_norm(torch.full((1, n), 1 / n, dtype=torch.float64))) for n in (2, 3, 10)}
print(", ".join(f"uniform over {n} keys: {v:.2f}" for n, v in split.items()))
largest, identity_gap = [], []  # the largest norm over 20000 random weight vectors on 10 keys, per seed
for seed in SEEDS:
    g = torch.Generator().manual_seed(seed)
    logits = (
        torch.randn(20000, 10, generator=g, dtype=torch.float64)
        * torch.rand(20000, 1, generator=g, dtype=torch.float64)
        * 6
    )
    p = torch.softmax(logits, dim=-1)  # (20000, 10) soft to near one-hot
    largest.append(float(jacobian_norm(p).max()))
    S2, S3 = p.pow(2).sum(1), p.pow(3).sum(1)  # (20000,) each
    identity_gap.append(float((jacobian_norm(p) ** 2 - (S2 - 2 * S3 + S2**2)).abs().max()))
print(f"largest over 20000 random weight vectors on 10 keys: {min(largest):.4f} .. {max(largest):.4f} (5 seeds)")

# %% tags=["hide-input"]
assert torch.allclose(two, torch.tensor([2 * 0.5 * 0.5, 2 * 0.999 * 0.001], dtype=torch.float64))  # 2 p_1 p_2
assert all(abs(v - math.sqrt(n - 1) / n) < 1e-12 for n, v in split.items())

assert max(identity_gap) < 1e-12 and max(largest) <= 0.5 + 1e-12 and min(largest) > split[10]
print("✓ two keys give 2 p_1 p_2 and uniform weights sqrt(n - 1) / n; every random weight vector's squared norm is")
print("  S_2 - 2 S_3 + S_2^2, and in every seed the best stays below 1/2 and beats uniform over 10 keys")

# %% [markdown]
# Now the soft arg-max. Take section 6's scores again. The soft arg-max is the expected index $\sum_i i\,\mathrm{softmax}(x/T)_i$; it tends to
# $\arg\max x = 1$ as $T$ falls. It is differentiable for every $T > 0$, unlike the hard arg-max,
# whose index is an integer with no gradient (its one-hot vector has zero gradient almost everywhere).
# But how large is that gradient? Once $T$ is well below the gap between the two largest scores ($3 - 2.5 = 0.5$ here), the runner-up's weight is about
# $e^{-0.5/T}$, and the gradient shrinks with it. Exactly, with $p = \mathrm{softmax}(x/T)$ and $s$ the
# soft arg-max, $\partial s / \partial x_j = p_j\,(j - s)/T$: the winner's and the runner-up's scores each
# get about $e^{-0.5/T}/T$ (with opposite signs), so the gradient's length is about
# $\sqrt 2\, e^{-0.5/T}/T$. `soft_argmax_gradient(x, T)` returns the gradient by autograd; we compare it with
# the formula, computing $j - s$ as $\sum_i p_i\,(j - i)$ so that nothing cancels. All in float64, and once
# in float32.

# %% tags=["nbval-ignore-output"]
x = torch.tensor([1.0, 3.0, 2.5, 0.0, 2.0])  # (5,) section 6's scores
x64 = x.double()  # (5,)
gap = float(x64.topk(2).values[0] - x64.topk(2).values[1])  # 0.5
index = torch.arange(5.0, dtype=torch.float64)  # (5,) the positions 0..4
grad_norms, exact_norms, autograd = {}, {}, {}
for T_ in [1.0, 0.3, 0.1, 0.03, 0.01]:
    p = torch.softmax(x64 / T_, -1)  # (5,)
    soft_index = float((index * p).sum())
    autograd[T_] = soft_argmax_gradient(x64, T_)  # (5,)
    grad_norms[T_] = autograd[T_].norm().item()
    exact_norms[T_] = (p * ((index[:, None] - index[None, :]) @ p) / T_).norm().item()  # p_j sum_i p_i (j - i) / T
    print(
        f"T={T_:5.2f}: soft arg-max = {soft_index:.4f}; gradient length: autograd {grad_norms[T_]:.1e}, "
        f"formula {exact_norms[T_]:.1e}, sqrt(2) e^(-gap/T) / T = {math.sqrt(2) * math.exp(-gap / T_) / T_:.1e}"
    )
float32_norm = soft_argmax_gradient(x, 0.003).norm().item()
print(f"T= 0.003 in float32: autograd gradient length {float32_norm}")
T_grid = torch.logspace(-2, 1, 3001, dtype=torch.float64)  # (3001,) temperatures from 0.01 to 10
p_grid = torch.softmax(x64 / T_grid[:, None], -1)  # (3001, 5)
grid_norms = (p_grid * (p_grid @ (index[:, None] - index[None, :]).T) / T_grid[:, None]).norm(dim=1)  # (3001,)
T_peak = float(T_grid[grid_norms.argmax()])
print(
    f"for these scores the gradient is longest at T = {T_peak:.2f} ({T_peak / gap:.1f} x the gap): {grid_norms.max():.3f}, "
    f"against {exact_norms[0.3]:.3f} at T = 0.3 and {exact_norms[1.0]:.3f} at T = 1"
)

# %% tags=["hide-input"]
assert abs(soft_index - 1.0) < 1e-6  # at T = 0.01 the soft arg-max is the arg-max
assert grad_norms[1.0] > 0.1  # at T = 1 the gradient is far from zero
assert all(math.isclose(grad_norms[T_], exact_norms[T_], rel_tol=1e-6) for T_ in [1.0, 0.3, 0.1, 0.03])
small_T = [0.1, 0.03, 0.01]
assert all(exact_norms[a] > exact_norms[b] > 0 for a, b in zip(small_T, small_T[1:]))  # shrinking, never 0
assert exact_norms[0.3] > 1.2 * exact_norms[1.0]  # sharper, yet more gradient
assert 0.7 < T_peak / gap < 0.9 and exact_norms[0.3] < 0.97 * float(grid_norms.max())  # a peak between 0.3 and 1
assert all(0.9 < exact_norms[T_] / (math.sqrt(2) * math.exp(-gap / T_) / T_) < 1.1 for T_ in small_T)
assert exact_norms[0.01] < 1e-18 and float32_norm == 0.0  # vanishing; in float32 it underflows to exactly 0
assert autograd[0.01][1] == 0.0 and math.isclose(grad_norms[0.01], exact_norms[0.01] / math.sqrt(2), rel_tol=1e-6)
x_req = x.clone().requires_grad_()  # (5,)
assert x_req.argmax().grad_fn is None and x_req.max().grad_fn is not None and not x_req.argmax().is_floating_point()
print("✓ autograd matches the formula from T = 1 down to 0.03; the gradient peaks between T = 1 and 0.3, then shrinks")
print("  like sqrt(2) e^(-gap/T) / T, above 0 in float64 and exactly 0 in float32 at T = 0.003 (at T = 0.01")
print("  float64 autograd already drops the winner's part); the arg-max itself has no gradient, the max has one")
tie = torch.softmax(torch.tensor([3.0, 1.0, 3.0]) / 0.01, -1)  # (3,)
assert torch.allclose(tie, torch.tensor([0.5, 0.0, 0.5]), atol=1e-6)
print("with a tie at the top, T=0.01 gives", tie.numpy().round(4))

# %% [markdown]
# So the soft arg-max is smooth, but its gradient vanishes as it approaches the hard arg-max: at
# $T = 0.01$ it is about $10^{-20}$, far too small to learn from, and in float32 it becomes exactly 0
# a little further on. Already at $T = 0.01$, float64 autograd loses part of it: the soft arg-max rounds to
# exactly 1, so the winner's term $p_1 (1 - s)/T$ comes out as 0 and autograd reports $1/\sqrt 2$ of the
# true length (both printed above). A sharper softmax does not always pass back less: for these scores the
# gradient is longest near $T = 0.4$ (0.8 times their gap, not a rule), and already shorter at 0.3,
# though still longer than at $T = 1$ (printed above). Large unscaled
# scores act like a temperature of $1/\sqrt{d_k}$ relative to the scaled ones, with the same two regimes:
# in the end-to-end table above (10 keys), about as much gradient as scaled or a little more at $d_k = 64$, almost none at 512. With a
# tie for the maximum, the limit splits the weight.

# %% [markdown]
# ## Sources
#
# - Vaswani et al., "Attention Is All You Need", NeurIPS 2017: section 3.2.1 and footnote 4 (additive vs
#   dot-product attention, $\mathrm{Var}(q \cdot k) = d_k$, the $1/\sqrt{d_k}$ scale), Table 3 rows (A) and (B) and
#   section 6.2 (smaller $d_k$ hurts; "determining compatibility is not easy and that a more sophisticated
#   compatibility function than dot product may be beneficial"), section 3.4 (embeddings
#   multiplied by $\sqrt{d_{model}}$), section 3.5 (sinusoidal encoding, "a linear function of $PE_{pos}$").
# - Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly Learning to Align and Translate",
#   ICLR 2015: additive attention.
# - Raffel et al., "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer", JMLR 2020
#   (T5): attention without the $1/\sqrt{d_k}$ factor; its code's Mesh TensorFlow initialisation (noted in Hugging
#   Face's `T5Attention`) draws $W_q$ smaller instead.
# - Slides "Attention is all you need — RNN is unnecessary" (Liang Hong, 17 March 2023): the sum
#   $\sum_i \cos(\omega_i \Delta t)$, distance aware versus direction aware.
# - Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong): the scaled score
#   $q^\top k / \sqrt{d_k}$.
# - Reading notes on the paper (June 2020): the fixed linear transformation, "decays symmetrically
#   and smoothly", added not concatenated, near orthogonality, softmax as a softened arg-max.
