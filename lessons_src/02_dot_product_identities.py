# %% [markdown]
# # 02 · Dot-product identities
#
# Attention compares vectors with dot products. This lesson collects the identities that explain
# what a dot product "sees" in sinusoidal positional encodings, and why the Transformer scales
# and softmaxes its scores the way it does. Each identity is derived in a markdown cell and then
# checked numerically with an `assert`.
#
# **Goals.** By the end you can
# - show that $PE_t \cdot PE_{t+k} = \sum_i \cos(\omega_i k)$ does not depend on $t$ (the Gram
#   matrix is Toeplitz) and depends on $|k|$ only: distance-aware, not direction-aware;
# - build the "fixed linear transformation" $M_k$ with $PE_{t+k} = M_k\, PE_t$ and check that it
#   is a rotation;
# - find where the dot product's decay with distance is *not* monotone;
# - measure the near-orthogonality of random high-dimensional vectors, and see why PE is added to
#   word embeddings rather than concatenated;
# - measure $\mathrm{Var}(q \cdot k) = d_k$ and see why scores are divided by $\sqrt{d_k}$;
# - use softmax's shift invariance, its temperature, and its limit, the arg-max.
#
# **Prerequisites.** Lesson 01 (the sinusoidal formula and `utils.positional.sinusoidal_encoding`).

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    get_ipython().run_line_magic(
        "pip", "install -q 'attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand'"
    )

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from utils.positional import angular_frequencies, relative_rotation, sinusoidal_encoding

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. $PE_t \cdot PE_{t+k}$ depends on the offset $k$ only
#
# With $\omega_i = 1/10000^{2i/d_{model}}$, column $2i$ of $PE_t$ is $\sin(\omega_i t)$ and column
# $2i+1$ is $\cos(\omega_i t)$. Pair the columns up and use
# $\sin a \sin b + \cos a \cos b = \cos(a - b)$:
#
# $$PE_t \cdot PE_{t+k} = \sum_{i=0}^{d_{model}/2-1} \big[\sin(\omega_i t)\sin(\omega_i (t+k))
#   + \cos(\omega_i t)\cos(\omega_i (t+k))\big] = \sum_{i=0}^{d_{model}/2-1} \cos(\omega_i k).$$
#
# The position $t$ has cancelled. First the left-hand side, by brute force from the table, for every
# $t$ and a few offsets $k$:

# %%
d_model, max_len = 128, 200
pe = sinusoidal_encoding(max_len, d_model, dtype=torch.float64)  # (max_len, d_model)
w = angular_frequencies(d_model)  # (d_model/2,) omega_i, float64

for k in [0, 1, 7, 50]:
    dots = [float(pe[t] @ pe[t + k]) for t in range(max_len - k)]  # one dot product per t
    formula = float(torch.cos(w * k).sum())  # sum_i cos(omega_i k)
    print(f"k={k:3d}: PE_t . PE_t+k over {len(dots)} values of t lies in [{min(dots):.6f}, {max(dots):.6f}];"
          f"  sum_i cos(w_i k) = {formula:.6f}")
    assert max(abs(d - formula) for d in dots) < 1e-10

# %% [markdown]
# At $k = 0$ every pair contributes $\sin^2 + \cos^2 = 1$, so $|PE_t|^2 = d_{model}/2$ for every
# position: all encodings have the same length, $\sqrt{d_{model}/2}$.

# %%
norms = pe.norm(dim=1)  # (max_len,)
assert torch.allclose(norms, torch.full_like(norms, math.sqrt(d_model / 2)), atol=1e-12)
print(f"|PE_t| = {norms[0]:.4f} = sqrt({d_model}/2) for all {max_len} positions")

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


for d in [2, 16, 64, 512]:
    for n in [5, 50, 200]:
        P = sinusoidal_encoding(n, d, dtype=torch.float64)  # (n, d)
        G = P @ P.T  # (n, n) Gram matrix
        f_d = torch.cos(torch.arange(n, dtype=torch.float64)[:, None] * angular_frequencies(d)).sum(1)  # (n,)
        gap = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs()  # (n, n) |t - s|
        closed = f_d[gap]  # (n, n) sum_i cos(w_i (t - s))
        assert is_toeplitz(G) and torch.allclose(G, closed, atol=1e-9)
print("PASS: PE PE^T is Toeplitz and equals sum_i cos(w_i (t - s)) for d_model in {2, 16, 64, 512}, "
      "lengths {5, 50, 200}")

# %% [markdown]
# The check can fail: a table whose rows are *not* a function of position differences, such as
# random vectors or the normalised position $t / n$ repeated across columns, is not Toeplitz.

# %%
gen = torch.Generator().manual_seed(0)
R = torch.randn(50, 16, generator=gen, dtype=torch.float64)  # (50, 16) random "encodings"
L = (torch.arange(50, dtype=torch.float64) / 50)[:, None].repeat(1, 16)  # (50, 16) linear t/n
assert not is_toeplitz(R @ R.T) and not is_toeplitz(L @ L.T)
print("random rows -> Toeplitz?", is_toeplitz(R @ R.T), "| linear t/n rows -> Toeplitz?", is_toeplitz(L @ L.T))

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
# ## 2. Distance-aware, not direction-aware
#
# Cosine is even, so $\sum_i \cos(\omega_i k) = \sum_i \cos(-\omega_i k)$: the word $k$ places
# **after** $t$ and the word $k$ places **before** it get the same dot product with $PE_t$. Seed 000
# marks this: the encoding is *distance aware*, but its dot product is *not direction aware*.
# Here is $f(k) = PE_t \cdot PE_{t+k}$ against $k$, measured from the table at $t = 100$ on both sides.

# %%
t0 = 100
ks = torch.arange(-100, 100)  # (200,) offsets so that t0 + k stays inside the table
f_table = pe[t0 + ks] @ pe[t0]  # (200,) PE_{t0+k} . PE_{t0}
f_formula = torch.cos(ks[:, None].double() * w).sum(1)  # (200,)
assert torch.allclose(f_table, f_formula, atol=1e-10)
assert torch.allclose(f_table[ks > 0][:99], f_table[ks < 0].flip(0)[:99], atol=1e-10)  # f(k) == f(-k)

fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
ax.plot(ks.numpy(), f_table.numpy(), lw=1.5)
ax.axvline(0, color="0.6", lw=0.8)
ax.set(xlabel="offset k", ylabel="PE_t . PE_t+k", title=f"Dot product against offset (d_model={d_model}, t={t0}):"
       " symmetric in k")
plt.show()

# %% [markdown]
# The **vectors** do know the direction ($PE_{t+k} \ne PE_{t-k}$); only the plain dot product
# forgets it. A learned bilinear form can recover it: with $J$ block-diagonal with blocks
# $\left(\begin{smallmatrix}0 & 1\\-1 & 0\end{smallmatrix}\right)$, each pair gives
# $\sin(\omega_i t)\cos(\omega_i(t+k)) - \cos(\omega_i t)\sin(\omega_i(t+k)) = -\sin(\omega_i k)$, so
# $PE_t^\top J\, PE_{t+k} = -\sum_i \sin(\omega_i k)$: **odd** in $k$. Attention's $q^\top k$ with
# learned $W_q, W_k$ is such a bilinear form, $x_t^\top W_q W_k^\top x_s$.

# %%
J = torch.block_diag(*[torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)] * (d_model // 2))  # (d_model, d_model)
g_table = pe[t0 + ks] @ J.T @ pe[t0]  # (200,) PE_{t0}^T J PE_{t0+k}
assert torch.allclose(g_table, -torch.sin(ks[:, None].double() * w).sum(1), atol=1e-10)
assert torch.allclose(g_table[ks == 5], -g_table[ks == -5], atol=1e-12) and abs(float(g_table[ks == 5])) > 1
assert not torch.allclose(pe[t0 + 5], pe[t0 - 5])
print(f"PE_t . PE_t+5 = {float(f_table[ks == 5]):.4f} = PE_t . PE_t-5 = {float(f_table[ks == -5]):.4f}")
print(f"PE_t^T J PE_t+5 = {float(g_table[ks == 5]):.4f}, PE_t^T J PE_t-5 = {float(g_table[ks == -5]):.4f}")

# %% [markdown]
# ## 3. $PE_{t+k} = M_k\, PE_t$: the fixed linear transformation is a rotation
#
# Seed 004 quotes the paper: "for any fixed offset $k$, $PE_{pos+k}$ can be represented as a linear
# function of $PE_{pos}$". The angle-addition formulas give that function. For pair $i$, with
# $a = \omega_i t$ and $b = \omega_i k$:
#
# $$\begin{pmatrix}\sin(a+b)\\ \cos(a+b)\end{pmatrix}
#   = \begin{pmatrix}\cos b & \sin b\\ -\sin b & \cos b\end{pmatrix}
#     \begin{pmatrix}\sin a\\ \cos a\end{pmatrix}.$$
#
# So $M_k$ is block-diagonal, with a $2\times 2$ rotation by $\omega_i k$ in block $i$. It does not
# depend on $t$: the same matrix moves *every* position $k$ steps on. (Convention: $PE_t$ is a column
# here; for the table's rows it reads `pe[t] @ M_k.T == pe[t + k]`.) First naively, block by block:

# %%
def rotation_naive(k, d_model, base=10000.0):
    """M_k built one 2x2 block at a time."""
    w = angular_frequencies(d_model, base)  # (d_model/2,)
    M = torch.zeros(d_model, d_model, dtype=torch.float64)  # (d_model, d_model)
    for i in range(d_model // 2):
        b = float(w[i]) * k
        M[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = torch.tensor([[math.cos(b), math.sin(b)],
                                                             [-math.sin(b), math.cos(b)]])
    return M


k = 5
M = rotation_naive(k, d_model)  # (d_model, d_model)
assert torch.allclose(M, relative_rotation(k, d_model, dtype=torch.float64), atol=1e-15)
print("PASS: the naive M_k equals utils.positional.relative_rotation")
print(M[:4, :4])

# %% [markdown]
# It maps every row of the table to the row $k$ steps later, for positive and negative $k$:

# %%
for k in [1, 5, 37, -3, -60]:
    M = relative_rotation(k, d_model, dtype=torch.float64)  # (d_model, d_model)
    src = pe[max(0, -k): max_len - max(0, k)]  # (max_len - |k|, d_model) rows t
    dst = pe[max(0, k): max_len - max(0, -k)]  # (max_len - |k|, d_model) rows t + k
    err = (src @ M.T - dst).abs().max().item()
    print(f"k={k:4d}: max |PE_t M_k^T - PE_t+k| over {len(src)} rows = {err:.1e}")
    assert err < 1e-12

# %% [markdown]
# A rotation is **orthogonal** ($M_k M_k^\top = I$: it keeps lengths and dot products, which is
# why $|PE_t|$ is the same for all $t$), and rotations **compose** by adding angles,
# $M_a M_b = M_{a+b}$; so $M_{-k} = M_k^{-1} = M_k^\top$ and $M_0 = I$.

# %%
Mk = lambda k: relative_rotation(k, d_model, dtype=torch.float64)  # (d_model, d_model)
eye = torch.eye(d_model, dtype=torch.float64)
for a, b in [(1, 2), (5, 37), (-4, 9), (100, -100)]:
    assert torch.allclose(Mk(a) @ Mk(a).T, eye, atol=1e-12)
    assert torch.allclose(Mk(a) @ Mk(b), Mk(a + b), atol=1e-12)
assert torch.allclose(Mk(-7), Mk(7).T, atol=1e-15) and torch.equal(Mk(0), eye)
print("PASS: M_k orthogonal, M_a M_b = M_(a+b), M_-k = M_k^T, M_0 = I")

# %% [markdown]
# The dot-product identity of section 1 follows in one line:
# $PE_t \cdot PE_{t+k} = PE_t^\top M_k\, PE_t$, and only the diagonal blocks' $\cos(\omega_i k)$
# survive because, for one pair with $(s, c) = (\sin a, \cos a)$,
#
# $$\begin{pmatrix}s & c\end{pmatrix}
#   \begin{pmatrix}\cos b & \sin b\\ -\sin b & \cos b\end{pmatrix}
#   \begin{pmatrix}s \\ c\end{pmatrix} = (s^2 + c^2)\cos b = \cos b.$$

# %%
t, k = 42, 11
assert math.isclose(float(pe[t] @ Mk(k) @ pe[t]), float(torch.cos(w * k).sum()), abs_tol=1e-10)
print(f"PE_{t}^T M_{k} PE_{t} = {float(pe[t] @ Mk(k) @ pe[t]):.6f} = sum_i cos(w_i * {k})")

# %% [markdown]
# ## 4. The dot product decays with distance — but not monotonically
#
# Seed 004 says the dot product "decays symmetrically and smoothly". Symmetric: yes (section 2).
# Smooth: yes, it is a sum of cosines. But it does not fall at every step: the fast pairs (small
# $i$, $\omega_i$ near 1) wobble with period about $2\pi$, and when enough of them swing back the sum
# rises again. We list every $k$ where $f(k+1) > f(k)$.

# %%
ks = torch.arange(0, 201, dtype=torch.float64)  # (201,)
f = torch.cos(ks[:, None] * w).sum(1)  # (201,) f(k) = sum_i cos(w_i k)
rises = (f[1:] > f[:-1]).nonzero().flatten()  # k with f(k+1) > f(k)
print(f"f(0)={f[0]:.2f}, f(10)={f[10]:.2f}, f(50)={f[50]:.2f}, f(100)={f[100]:.2f}, f(200)={f[200]:.2f}")
print(f"f rises at {len(rises)} of 200 steps; the first ones: k = {rises[:8].tolist()}")
print(f"e.g. f(11) = {f[11]:.4f} < f(12) = {f[12]:.4f}")
assert torch.all(f[1:12] < f[:11])  # strictly falling for the first 11 steps
assert len(rises) > 0 and rises[0] == 11 and f[12] > f[11]  # ...then it rises
assert f[0] == d_model / 2 and f[200] < f[0] / 2  # overall it does decay

# %%
fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
ax.plot(ks.numpy(), f.numpy(), lw=1.2, label="sum_i cos(w_i k)")
ax.plot(rises.numpy(), f[rises].numpy(), "o", ms=3, color="C3", label="f(k+1) > f(k)")
ax.set(xlabel="offset k", ylabel="PE_t . PE_t+k", title=f"Decay with distance is not monotone (d_model={d_model})")
ax.legend()
plt.show()

# %% [markdown]
# ## 5. Random high-dimensional vectors are nearly orthogonal
#
# For two independent random directions $a, b$ in $\mathbb{R}^d$ (say Gaussian entries), the cosine
# similarity $\cos\theta = a\cdot b / (|a||b|)$ has mean 0 and $\mathbb{E}[\cos^2\theta] = 1/d$ (by
# symmetry, each of the $d$ coordinates of a unit vector contributes $1/d$ to its squared length).
# So its standard deviation is exactly $1/\sqrt d$: in 512 dimensions two random vectors are
# almost always within a few degrees of perpendicular. We measure it with 4000 pairs per $d$.

# %%
gen = torch.Generator().manual_seed(0)
dims = [2, 8, 32, 128, 512, 2048]
cos_samples = {}
for d in dims:
    a = torch.randn(4000, d, generator=gen, dtype=torch.float64)  # (4000, d)
    b = torch.randn(4000, d, generator=gen, dtype=torch.float64)  # (4000, d)
    cos_samples[d] = torch.nn.functional.cosine_similarity(a, b, dim=1)  # (4000,)
    std = cos_samples[d].std().item()
    print(f"d={d:5d}: std of cos = {std:.4f}, 1/sqrt(d) = {1 / math.sqrt(d):.4f}, ratio {std * math.sqrt(d):.3f}")
    assert abs(std * math.sqrt(d) - 1) < 0.05  # within 5% of 1/sqrt(d)

# %%
fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
for d in [8, 32, 128, 512]:
    ax.hist(cos_samples[d].numpy(), bins=80, range=(-1, 1), histtype="step", density=True, label=f"d={d}")
ax.set(xlabel="cosine similarity of two random vectors", ylabel="density",
       title="Concentration around 0: std = 1/sqrt(d)")
ax.legend()
plt.show()

# %% [markdown]
# ### Why PE is added, not concatenated (seed 004)
#
# Adding $PE_t$ to a word embedding $e$ mixes them in one vector. Concatenating, $[e; PE_t]$, keeps
# them apart for sure but doubles the width of every layer. In high dimensions the random-looking
# word embeddings and the encodings are nearly orthogonal, so the sum still tells the words apart.
# Experiment: a vocabulary of $V = 1000$ random word vectors (entries $\mathcal N(0,1)$, so
# $|e| \approx \sqrt d$, comparable to $|PE_t| = \sqrt{d/2}$); each token is $x = e_w + PE_t$ at a
# random position $t < 64$; we decode the word as $\arg\max_v x \cdot e_v$. Concatenation decodes
# exactly as well as the bare embeddings (the PE block is orthogonal to them), so it is the baseline.

# %%
gen = torch.Generator().manual_seed(4)
V, T, N = 1000, 64, 2000
word_dims = [4, 8, 16, 32, 64, 128, 256, 512]
acc_add, acc_concat = [], []
for d in word_dims:
    E = torch.randn(V, d, generator=gen, dtype=torch.float64)  # (V, d) word embeddings
    P = sinusoidal_encoding(T, d, dtype=torch.float64)  # (T, d)
    words = torch.randint(0, V, (N,), generator=gen)  # (N,)
    pos = torch.randint(0, T, (N,), generator=gen)  # (N,)
    x_add = E[words] + P[pos]  # (N, d)
    x_cat = torch.cat([E[words], P[pos]], dim=1)  # (N, 2d)
    E_cat = torch.cat([E, torch.zeros(V, d, dtype=torch.float64)], dim=1)  # (V, 2d) words live in the first half
    acc_add.append(((x_add @ E.T).argmax(1) == words).double().mean().item())
    acc_concat.append(((x_cat @ E_cat.T).argmax(1) == words).double().mean().item())
    print(f"d={d:4d}: word recovered from e + PE: {acc_add[-1]:6.1%}   from [e; PE] (width {2 * d}): {acc_concat[-1]:6.1%}")
assert all(a == c == 1.0 for d, a, c in zip(word_dims, acc_add, acc_concat) if d >= 64)
assert acc_add[word_dims.index(8)] < acc_concat[word_dims.index(8)] - 0.05  # in low d, adding costs

# %% [markdown]
# And the encoding itself uses little of the space: over the positions of a sentence, the slow
# pairs (large $i$) hardly move ($\sin \approx 0$, $\cos \approx 1$), so nearly all of PE's variation
# lives in the first, fast dimensions; the rest is a nearly constant offset that a layer can absorb.

# %%
P = sinusoidal_encoding(100, 512, dtype=torch.float64)  # (100, 512) positions of a 100-token sentence
var = P.var(dim=0)  # (512,) variance of each column over positions
share = (var.cumsum(0) / var.sum())  # (512,)
print(f"share of PE's variance over positions 0..99 in the first 64 / 128 / 256 of 512 columns: "
      f"{share[63]:.1%} / {share[127]:.1%} / {share[255]:.1%}")
assert share[255] > 0.98

# %%
fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
ax.plot(word_dims, acc_add, "o-", label="added: e + PE_t (width d)")
ax.plot(word_dims, acc_concat, "s--", label="concatenated: [e; PE_t] (width 2d)")
ax.set(xscale="log", xlabel="d", ylabel="word recovered", title="Adding loses little once d is large")
ax.set_xticks(word_dims, [str(d) for d in word_dims])
ax.legend()
plt.show()

# %% [markdown]
# ## 6. $\mathrm{Var}(q\cdot k) = d_k$, and why scores are divided by $\sqrt{d_k}$
#
# Let $q, k \in \mathbb{R}^{d_k}$ have independent entries with mean 0 and variance 1. Each product
# $q_j k_j$ has mean 0 and variance $\mathbb{E}[q_j^2]\mathbb{E}[k_j^2] = 1$, and the $d_k$ products
# are independent, so
#
# $$\mathrm{Var}(q \cdot k) = \sum_{j=1}^{d_k} \mathrm{Var}(q_j k_j) = d_k, \qquad
#   \mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1.$$

# %%
gen = torch.Generator().manual_seed(6)
dks = [16, 64, 256, 512]
measured = []
for d_k in dks:
    q = torch.randn(10000, d_k, generator=gen, dtype=torch.float64)  # (10000, d_k)
    k = torch.randn(10000, d_k, generator=gen, dtype=torch.float64)  # (10000, d_k)
    measured.append(((q * k).sum(1)).var().item())  # variance of 10000 dot products
    print(f"d_k={d_k:4d}: Var(q.k) = {measured[-1]:8.2f}, ratio to d_k {measured[-1] / d_k:.3f}")
    assert abs(measured[-1] / d_k - 1) < 0.05

# %%
fig, ax = plt.subplots(figsize=(4.5, 3.2), layout="constrained")
ax.plot(dks, dks, color="0.6", lw=1, label="d_k")
ax.plot(dks, measured, "o", label="measured Var(q.k)")
ax.set(xscale="log", yscale="log", xlabel="d_k", ylabel="variance", title="Var(q.k) = d_k")
ax.minorticks_off()
ax.set_xticks(dks, [str(d) for d in dks])
ax.set_yticks(dks, [str(d) for d in dks])
ax.legend()
plt.show()

# %% [markdown]
# What that does to attention: at $d_k = 512$ the unscaled scores have standard deviation
# $\sqrt{512} \approx 22.6$, so the largest of a handful of scores is typically tens of units
# above the next, and softmax puts almost all weight on it: nearly one-hot. Its gradient then
# almost vanishes (the softmax Jacobian is $\mathrm{diag}(p) - pp^\top$, near zero for one-hot $p$).
# Dividing by $\sqrt{d_k}$ brings the scores back to unit variance. We compare over 1000 queries,
# each against 10 keys.

# %%
gen = torch.Generator().manual_seed(7)
d_k, T, n_q = 512, 10, 1000
q = torch.randn(n_q, d_k, generator=gen)  # (n_q, d_k)
K = torch.randn(n_q, T, d_k, generator=gen)  # (n_q, T, d_k) ten keys per query
scores = torch.einsum("nd,ntd->nt", q, K)  # (n_q, T)
p_raw = torch.softmax(scores, dim=-1)  # (n_q, T)
p_scaled = torch.softmax(scores / math.sqrt(d_k), dim=-1)  # (n_q, T)


def jacobian_norm(p):
    """Frobenius norm of the softmax Jacobian diag(p) - p p^T, one per row of p."""
    return (torch.diag_embed(p) - p[:, :, None] * p[:, None, :]).flatten(1).norm(dim=1)  # (n_q,)


for name, p in [("unscaled q.k", p_raw), ("q.k / sqrt(d_k)", p_scaled)]:
    top = p.max(dim=-1).values  # (n_q,) largest weight per query
    print(f"{name:16s}: median largest weight {top.median():.4f}; share of queries with one weight > 0.99:"
          f" {(top > 0.99).double().mean():6.1%}; median Jacobian norm {jacobian_norm(p).median():.2e}")
assert p_raw.max(-1).values.median() > 0.999 and (p_raw.max(-1).values > 0.99).double().mean() > 0.7
assert p_scaled.max(-1).values.median() < 0.4 and (p_scaled.max(-1).values > 0.99).sum() == 0
assert jacobian_norm(p_raw).median() < 1e-3 < 0.1 < jacobian_norm(p_scaled).median()

# %% [markdown]
# ## 7. Softmax: shift invariance, temperature, soft arg-max
#
# **Shift invariance.** For any constant $c$,
# $\mathrm{softmax}(x + c)_i = e^{x_i + c} / \sum_j e^{x_j + c} = e^c e^{x_i} / (e^c \sum_j e^{x_j})
# = \mathrm{softmax}(x)_i$. Subtracting $\max_j x_j$ is therefore free, and it keeps $e^{x}$ from
# overflowing: with scores near 1000 the textbook formula gives `inf / inf = nan`.

# %%
def softmax_naive(x):
    """exp(x) / sum(exp(x)) along the last axis, without the shift."""
    e = torch.exp(x)  # (..., n)
    return e / e.sum(-1, keepdim=True)


x = torch.tensor([1.0, 2.0, 3.0, 0.5])  # (4,)
for c in [-5.0, 3.0, 50.0]:
    assert torch.allclose(softmax_naive(x + c), softmax_naive(x), atol=1e-6)
big = x + 1000  # (4,) scores near 1000
shifted = softmax_naive(big - big.max())  # (4,)
print("naive softmax of x + 1000:", softmax_naive(big))
print("shifted by its max:       ", shifted)
assert torch.isnan(softmax_naive(big)).all() and torch.allclose(shifted, torch.softmax(x, -1), atol=1e-6)

# %% [markdown]
# **Temperature.** $\mathrm{softmax}(x / T)$: a high temperature $T$ flattens the weights towards
# uniform ($1/n$ each), a low one sharpens them towards the largest score.
#
# **Soft arg-max (seed 004).** As $T \to 0$, $\mathrm{softmax}(x/T) \to$ the one-hot vector of
# $\arg\max x$ (when the maximum is unique): every other weight is
# $e^{(x_j - x_{max})/T} \to 0$. Arg-max itself jumps and has zero gradient almost everywhere;
# softmax is the smooth, differentiable version, so attention can be trained by gradient descent.

# %%
x = torch.tensor([1.0, 3.0, 2.5, 0.0, 2.0])  # (5,)
temps = [100.0, 3.0, 1.0, 0.3, 0.05]
weights = {T_: torch.softmax(x / T_, dim=-1) for T_ in temps}  # each (5,)
for T_, p in weights.items():
    print(f"T={T_:6.2f}: {p.numpy().round(4)}")
tops = [weights[T_].max().item() for T_ in temps]
assert all(a < b for a, b in zip(tops, tops[1:]))  # sharper as T falls
assert torch.allclose(weights[100.0], torch.full((5,), 0.2), atol=0.01)  # nearly uniform
one_hot = torch.nn.functional.one_hot(x.argmax(), 5).float()  # (5,)
assert torch.allclose(weights[0.05], one_hot, atol=1e-4)  # nearly the arg-max's one-hot

# %%
fig, axes = plt.subplots(1, len(temps), figsize=(12, 2.4), sharey=True, layout="constrained")
for ax, T_ in zip(axes, temps):
    ax.bar(range(5), weights[T_].numpy(), color=["C1" if i == x.argmax() else "C0" for i in range(5)])
    ax.set(title=f"T = {T_:g}", xticks=range(5), ylim=(0, 1.05))
axes[0].set_ylabel("softmax(x / T)")
fig.suptitle(f"x = {x.tolist()}: temperature from flat to one-hot")
plt.show()

# %% [markdown]
# The soft arg-max is differentiable: the expected index $\sum_i i\,\mathrm{softmax}(x/T)_i$ tends
# to $\arg\max x = 1$ as $T$ falls, and its gradient with respect to $x$ is non-zero, while the
# hard arg-max gives no gradient at all. With a tie for the maximum the limit splits the weight.

# %%
for T_ in [1.0, 0.1, 0.01]:
    xg = x.clone().requires_grad_(True)  # (5,)
    soft_index = (torch.arange(5.0) * torch.softmax(xg / T_, -1)).sum()  # scalar
    soft_index.backward()
    print(f"T={T_:5.2f}: soft arg-max = {soft_index.item():.4f}, |d/dx| = {xg.grad.norm():.4f}")
assert abs(soft_index.item() - 1.0) < 1e-6
xg = x.clone().requires_grad_(True)  # (5,)
(torch.arange(5.0) * torch.softmax(xg / 1.0, -1)).sum().backward()
assert xg.grad.norm() > 0.1  # at T = 1 the gradient is far from zero
assert xg.argmax().grad_fn is None and not xg.argmax().is_floating_point()  # arg-max: an int, no gradient
tie = torch.softmax(torch.tensor([3.0, 1.0, 3.0]) / 0.01, -1)  # (3,)
assert torch.allclose(tie, torch.tensor([0.5, 0.0, 0.5]), atol=1e-6)
print("with a tie at the top, T=0.01 gives", tie.numpy().round(4))

# %% [markdown]
# ## 8. Explore: the offset explorer
#
# The figure below shows, for one setting, the three facts of sections 1–3: $PE_t \cdot PE_{t+k}$
# against $t$ (a flat line at $\sum_i \cos(\omega_i k)$), the same dot product against the offset
# (the chosen $k$ marked), and the rotation picture of one frequency pair $i$: the point
# $(\sin \omega_i t, \cos \omega_i t)$ at positions $t$ and $t + k$, an angle $\omega_i k$ apart.
# Run the notebook to get the sliders.

# %%
from utils.plotting import plot_offset_explorer  # noqa: E402
from utils.widgets import offset_explorer  # noqa: E402

fig = plot_offset_explorer(d_model=64, base=10000.0, k=10, pair=0, t=3)
plt.show()

# %%
# NBVAL_IGNORE_OUTPUT
offset_explorer()

# %% [markdown]
# Things to try: move `k` and watch the left panel stay flat while its level follows the middle
# curve; set `pair i` to a slow pair (large $i$) and see the rotation angle shrink; lower `base`
# to make every pair faster and the middle curve wobble more.
#
# ## Summary
#
# - $PE_t \cdot PE_{t+k} = \sum_i \cos(\omega_i k)$: independent of $t$, so $PE\,PE^\top$ is
#   Toeplitz; even in $k$, so the dot product knows distance, not direction (a learned bilinear
#   form can recover direction).
# - $PE_{t+k} = M_k PE_t$ with $M_k$ block-diagonal $2\times2$ rotations by $\omega_i k$:
#   orthogonal, $M_a M_b = M_{a+b}$ (`utils.positional.relative_rotation`).
# - The dot product decays with $|k|$, smoothly but not monotonically (first rise at $k = 11$ for
#   $d_{model} = 128$).
# - Random vectors in $d$ dimensions have cosine similarity with standard deviation $1/\sqrt d$;
#   that is why adding PE to word embeddings loses little when $d$ is large.
# - $\mathrm{Var}(q\cdot k) = d_k$; unscaled softmax at $d_k = 512$ is nearly one-hot with a
#   vanishing gradient, which the $1/\sqrt{d_k}$ scale prevents.
# - softmax is shift-invariant (subtract the max for stability), sharpens as the temperature falls,
#   and tends to the arg-max's one-hot vector.
#
# ## Exercises
#
# Each cell below has a stub; replace `raise NotImplementedError` with your code and run the cell.
# Stuck? `check.offset_dot.hint()` prints a hint and `check.offset_dot.solution()` a solution
# (likewise for the other exercises).

# %%
from utils.exercises import lesson02 as check  # noqa: E402

# %% [markdown]
# **Exercise 1.** Write `offset_dot(k, d_model, base)` returning the number $PE_t \cdot PE_{t+k}$
# (a Python float) without building the table.

# %%
def offset_dot(k, d_model, base=10000.0):
    raise NotImplementedError


check.offset_dot(offset_dot)

# %% [markdown]
# **Exercise 2.** Write `rotation(k, d_model, base)` returning $M_k$, a (d_model, d_model) tensor
# with $M_k\, PE_t = PE_{t+k}$ ($PE_t$ a column), built from its $2\times2$ blocks.

# %%
def rotation(k, d_model, base=10000.0):
    raise NotImplementedError


check.rotation(rotation)

# %% [markdown]
# **Exercise 3.** Write `stable_softmax(x, temperature)`: $\mathrm{softmax}(x / T)$ along the last
# axis of a tensor, which must not return `nan` for scores like $[1000, 1001, 1002]$.

# %%
def stable_softmax(x, temperature=1.0):
    raise NotImplementedError


check.stable_softmax(stable_softmax)
