# %% [markdown]
# # 03 · Self-attention
#
# **Goals.** By the end of this lesson you can
#
# - compute softmax attention for one query over a memory of key–value pairs, by hand and vectorised;
# - read queries, keys and values as a *soft* dictionary look-up whose temperature → 0 limit is a hard one
#   (when one key scores best);
# - build parameter-free self-attention and read its matrix for "YOUR CAT IS A LOVELY CAT";
# - prove that self-attention is permutation **equivariant** (not invariant), and what breaks this;
# - see what projecting queries and keys makes possible: trained $W_q, W_k$ make adjectives look at the nouns.
#
# **Prerequisites.** [01 · Positional encoding](01_positional_encoding.ipynb) and
# [02 · Dot-product identities](02_dot_product_identities.ipynb) (softmax, temperature, the $1/\sqrt{d_k}$ scale).

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

from utils.attention import scaled_dot_product_attention
from utils.course.exercises import lesson03 as check
from utils.experiments.attention_map import attention_map, token_embeddings
from utils.experiments.attention_patterns import (
    NOUNS,
    VOCAB,
    adjective_noun_batch,
    attention_properties,
    projected_weights,
    random_projections,
    sentence_map,
    train_adjective_noun,
    weight_on,
)
from utils.figures.plotting import plot_attention, plot_attention_explorer
from utils.figures.widgets import attention_explorer
from utils.masks import causal_mask
from utils.positional import sinusoidal_encoding

torch.set_printoptions(precision=4, sci_mode=False)
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. One query over a memory of key–value pairs
#
# The paper (section 3.2) defines attention in two sentences: "An attention function can be described as
# mapping a query and a set of key-value pairs to an output, where the query, keys, values, and output are
# all vectors. The output is computed as a weighted sum of the values, where the weight assigned to each
# value is computed by a compatibility function of the query with the corresponding key."
#
# The COMP7607 lecture slides ("Transformers", lecture 4) draw it as a **query** $q$ looking at a
# **memory** of key–value pairs $(k_1, v_1) \dots (k_4, v_4)$. Each key gets a score (the slide's compatibility
# function is $q \cdot k_i$; we divide it by $\sqrt{d_k}$, as the paper's equation 1 does, lesson 02), the scores go
# through a softmax, and the weights (0.6, 0.1, 0.2, 0.1 in the slide) mix the values into one
# **context vector** $c$:
#
# $$\text{score}_i = \frac{q \cdot k_i}{\sqrt{d_k}}, \qquad
#   \alpha = \operatorname{softmax}(\text{score}), \qquad c = \sum_i \alpha_i v_i .$$
#
# The collapsed cell below stages a memory with the slide's weights: it moves each random key along $q$ until
# its score is $\log \alpha_i + 1$ (softmax only sees score differences, lesson 02).

# %% tags=["hide-input"]
gen = torch.Generator().manual_seed(1)
d_k, d_v, n = 4, 3, 4
slide_weights = torch.tensor([0.6, 0.1, 0.2, 0.1], dtype=torch.float64)  # (n,)
q = torch.randn(d_k, generator=gen, dtype=torch.float64)  # (d_k,)
K = torch.randn(n, d_k, generator=gen, dtype=torch.float64)  # (n, d_k)
V = torch.randn(n, d_v, generator=gen, dtype=torch.float64)  # (n, d_v)
target = slide_weights.log() + 1.0  # (n,) the scores we want
a = (target * math.sqrt(d_k) - K @ q) / (q @ q)  # (n,) how far to move each key along q
K = K + a[:, None] * q  # (n, d_k) now q·k_i/√d_k = target_i

# %% [markdown]
# First with plain Python loops: one score per key, exponentiate, normalise, then a weighted sum of the
# values, one coordinate at a time.

# %%
scores = [sum(q[j].item() * K[i, j].item() for j in range(d_k)) / math.sqrt(d_k) for i in range(n)]
exps = [math.exp(s) for s in scores]
alpha = [e / sum(exps) for e in exps]
context = [sum(alpha[i] * V[i, j].item() for i in range(n)) for j in range(d_v)]
print("weights:", [round(a, 4) for a in alpha])
print("context vector c:", [round(c, 4) for c in context])
assert np.allclose(alpha, slide_weights.numpy()), "the weights should be the slide's 0.6, 0.1, 0.2, 0.1"
print("✓ the loops reproduce the slide's weights", ", ".join(f"{w:g}" for w in slide_weights.tolist()))

# %% [markdown]
# Vectorised, the whole thing is two matrix products around a softmax: $c = \operatorname{softmax}(q K^\top/\sqrt{d_k})\,V$.

# %%
alpha_vec = torch.softmax(q @ K.T / math.sqrt(d_k), dim=-1)  # (n,)
context_vec = alpha_vec @ V  # (d_v,)
print("weights:", alpha_vec.numpy().round(4))

# %% [markdown]
# `utils.attention.scaled_dot_product_attention(q, k, v, mask=None)` does the same for any number of
# queries at once (shape $(\dots, T_q, d_k)$) and returns both the output and the weights. One query is a
# batch of one row.

# %%
out, weights = scaled_dot_product_attention(q[None], K, V)  # (1, d_v), (1, n)
print("context vector c:", out[0].numpy().round(4))

# %% tags=["hide-input"]
assert torch.allclose(alpha_vec, torch.tensor(alpha, dtype=torch.float64))
assert torch.allclose(context_vec, torch.tensor(context, dtype=torch.float64))
assert torch.allclose(out[0], context_vec) and torch.allclose(weights[0], alpha_vec)
print("✓ the loops, the vectorised lines and utils give the same weights and context vector")

# %% [markdown]
# **Predict first.** Double the query, $q \to 2q$. What weight does the first key, $k_1$, get now (it had 0.6)?

# %%
my_guess_doubled = None  # your answer: a number between 0 and 1

# %%
alpha_doubled = torch.softmax((2 * q) @ K.T / math.sqrt(d_k), dim=-1)  # (n,)
print("weights for 2q:", alpha_doubled.numpy().round(3))

# %% tags=["hide-input"]
assert abs(alpha_doubled[0].item() - check.predict_doubled_query.reference) < 5e-4

# %%
check.predict_doubled_query(my_guess_doubled)

# %% [markdown]
# ## 2. Queries, keys and values: a soft dictionary
#
# The YOUR CAT slide deck says "The Internet says that these terms come from the database terminology or the
# Python-like dictionaries". In a dictionary, the **query** is what we look for, the **key** is what each
# entry is looked up by, the **value** is what the entry returns.
# A dictionary look-up is *hard*: it returns the value of exactly one key. Attention is *soft*: it returns
# a blend of all values, weighted by how well each key matches the query.
#
# Divide the scores by a temperature $\tau$. As $\tau \to 0$ the softmax tends to a one-hot vector on the best
# matching key (the arg max, when one key matches best), and attention becomes the hard look-up. Here the query is a noisy copy of
# the key of "cat"; the values of dog, cat, car and sky are $(0, 0), (1, 1), (2, 2), (3, 3)$.
#
# At $\tau = 1$:

# %%
words = ["dog", "cat", "car", "sky"]
gen = torch.Generator().manual_seed(2)
keys = torch.nn.functional.normalize(torch.randn(4, 8, generator=gen), dim=-1)  # (n, d_k) unit keys
values = torch.arange(4.0)[:, None] * torch.ones(4, 2)  # (n, d_v) value of entry i is (i, i)
hard = dict(zip(words, values))  # the Python dictionary
query = keys[1] + 0.2 * torch.randn(8, generator=gen)  # (d_k,) close to the key of "cat"
w_warm = scaled_dot_product_attention(query[None], keys, values)[1][0]  # (n,) weights at tau = 1
print("weights at tau = 1:", ", ".join(f"{word} {weight:.2f}" for word, weight in zip(words, w_warm.tolist())))

# %% [markdown]
# **Predict first.** At $\tau = 0.1$, what weight does "cat" get? Dividing the scores by $\tau$ raises each
# unnormalised weight $e^{s}$ to the power $1/\tau$.

# %%
my_guess_cold = None  # your answer: a number between 0 and 1

# %%
temperatures = [1.0, 0.3, 0.1, 0.01]
soft = {}
for tau in temperatures:  # dividing q by tau divides every score by tau
    out, w = scaled_dot_product_attention(query[None] / tau, keys, values)  # (1, d_v), (1, n)
    soft[tau] = (out[0], w[0])
    print(f"tau={tau:<5} weights={w[0].numpy().round(4)}  output={out[0].numpy().round(4)}")

# %% [markdown]
# At high temperature every entry contributes; at $\tau = 0.01$ essentially only "cat" does, and the output is
# the dictionary's answer `hard["cat"]`.

# %%
fig, axes = plt.subplots(1, len(temperatures), figsize=(11, 2.6), sharey=True, layout="constrained")
for ax, tau in zip(axes, temperatures):
    ax.bar(words, soft[tau][1].numpy(), color="tab:blue")
    ax.set(title=f"τ = {tau}", ylim=(0, 1))
axes[0].set_ylabel("attention weight")
plt.show()

# %% tags=["hide-input"]
best = int(torch.argmax(keys @ query))  # the hard look-up picks the best-matching key
assert words[best] == "cat"
out_cold, w_cold = soft[0.01]
assert w_cold[best] > 0.999, "at tau=0.01 the weight is almost one-hot"
assert torch.allclose(out_cold, hard["cat"], atol=1e-2), "and the output is the dictionary's value"
entropies = [-(soft[t][1] * soft[t][1].log()).sum().item() for t in temperatures]
assert all(a > b for a, b in zip(entropies, entropies[1:])), "lower temperature, sharper weights"
assert 0.9 < soft[0.1][1][best].item() < 0.999, "at tau=0.1 cat's weight is close to 1, not yet 1"
assert abs(soft[0.1][1][best].item() - check.predict_cold_lookup.reference) < 1e-3  # the prediction's reference
print("✓ temperature -> 0 gives the hard look-up hard['cat']; at 0.1 cat's weight is close to 1, not yet 1")

# %%
check.predict_cold_lookup(my_guess_cold)

# %% [markdown]
# ## 3. Self-attention with no parameters
#
# In **self**-attention the queries, keys and values are all the same sentence X. The paper (section 2):
# "Self-attention, sometimes called intra-attention is an attention mechanism relating different positions
# of a single sequence in order to compute a representation of the sequence."
#
# The reading notes on the paper give the simplest self-attention in three lines of PyTorch, for a batch
# x of shape (b, t, k): the three lines of the function below. It has no $1/\sqrt{d_k}$; since `utils`
# divides by $\sqrt{d_k}$, the two agree when we multiply the queries by $\sqrt{d_k}$.


# %%
def simplest_self_attention(x):
    """The reading notes' parameter-free self-attention, their three lines: softmax(x xᵀ) x, without scaling."""
    raw_weights = torch.bmm(x, x.transpose(1, 2))  # (b, t, t)
    weights = F.softmax(raw_weights, dim=2)  # (b, t, t)
    y = torch.bmm(weights, x)  # (b, t, k)
    return y, weights


gen = torch.Generator().manual_seed(0)
x = torch.randn(2, 5, 8, generator=gen, dtype=torch.float64)  # (b, t, k)
y, w = simplest_self_attention(x)  # (b, t, k), (b, t, t)
y_utils, w_utils = scaled_dot_product_attention(x * math.sqrt(8), x, x)  # (b, t, k), (b, t, t)
assert torch.allclose(y, y_utils) and torch.allclose(w, w_utils)
print("✓ the reading notes' bmm version == utils with q·√d_k")

# %% [markdown]
# The Transformer's version (the paper, section 3.2.1, equation 1) scales:
# $\text{Attention}(Q, K, V) = \operatorname{softmax}(QK^\top/\sqrt{d_k})\,V$, here with $Q = K = V = X$. The
# Transformer itself first projects $X$: $Q = XW_q$, $K = XW_k$, $V = XW_v$, with learned matrices; below we
# add them in section 4, and section 5 shows what they are for.


# %%
def self_attention(X):
    """Scaled, parameter-free self-attention: softmax(X Xᵀ / √d_model) X."""
    d_model = X.shape[-1]
    A = torch.softmax(X @ X.transpose(-2, -1) / math.sqrt(d_model), dim=-1)  # (..., seq, seq)
    return A @ X, A  # (..., seq, d_model), (..., seq, seq)


Y, A = self_attention(x)  # (b, t, k), (b, t, t)
Y_utils, A_utils = scaled_dot_product_attention(x, x, x)  # (b, t, k), (b, t, t)
assert torch.allclose(Y, Y_utils) and torch.allclose(A, A_utils)
print("✓ self_attention == utils")

# %% [markdown]
# ### YOUR CAT IS A LOVELY CAT
#
# The YOUR CAT slide deck's example: $seq = 6$ and $d_{model} = d_k = 512$. Each word gets a fixed random
# embedding with $N(0, 1)$ entries (`utils.experiments.attention_map.token_embeddings`, seeded by the word, so
# both CATs get the same vector, as an embedding table would). No positional encoding yet.
#
# **Predict first.** Lesson 02's Going further (*a word's score with itself*) showed that this score, $|x|^2/\sqrt{512}$, is about
# $\sqrt{512} \approx 22.6$, while two unrelated words score about $N(0, 1)$. What weight does the first CAT
# put on itself? (From here on, rows and columns count from 0, as in Python: YOUR is row 0, the CATs are
# rows 1 and 5.)

# %%
my_guess_cat = None  # your answer: a number between 0 and 1

# %%
sentence = "YOUR CAT IS A LOVELY CAT".split()
seq, d_model = len(sentence), 512
X = token_embeddings(sentence, d_model).float()  # (seq, d_model)
Y, A = self_attention(X)  # (seq, d_model), (seq, seq)
print(A.numpy().round(4))
assert X.shape == (6, 512) and A.shape == (6, 6)

# %% tags=["hide-input"]
assert abs(A[1, 1].item() - check.predict_cat_self_weight.reference) < 1e-4

# %%
check.predict_cat_self_weight(my_guess_cat)

# %% [markdown]
# Far more peaked than the slide deck's matrix (whose numbers, it says, "are random"): $e^{\text{self-score}}$
# swamps the rest of the row.

# %%
scores = X @ X.T / math.sqrt(d_model)  # (seq, seq)
print(f"expected self score: sqrt(512) = {math.sqrt(d_model):.1f}")
print("self scores:", scores.diagonal().numpy().round(1))
different = [scores[i, j].item() for i in range(seq) for j in range(seq) if sentence[i] != sentence[j]]
print("scores between different words: min", round(min(different), 1), "max", round(max(different), 1))

# %% [markdown]
# One sentence's embeddings are one draw; the same holds over 20 embedding tables
# (`token_embeddings(..., seed=s)`):

# %% tags=["hide-input"]
self_scores, other_scores, single_diag = [], [], []
for s in range(20):
    X_s = token_embeddings(sentence, d_model, seed=s)  # (seq, d_model) float64
    scores_s = X_s @ X_s.T / math.sqrt(d_model)  # (seq, seq)
    self_scores += scores_s.diagonal().tolist()
    other_scores += [scores_s[i, j].item() for i in range(seq) for j in range(seq) if sentence[i] != sentence[j]]
    single_diag += [torch.softmax(scores_s, dim=-1)[i, i].item() for i in (0, 2, 3, 4)]
other = torch.tensor(other_scores)
print(
    f"self scores {min(self_scores):.1f} to {max(self_scores):.1f}; other scores mean {other.mean():.1f}, "
    f"std {other.std():.1f}"
)
assert min(self_scores) > 15 and max(self_scores) < 30, "self scores near sqrt(512)"
assert abs(other.mean()) < 0.2 and 0.8 < other.std() < 1.2 and other.abs().max() < 5, "other scores ~ N(0, 1)"
assert min(single_diag) > 0.9999, "words that occur once attend (almost) only to themselves"
print(
    "✓ in all 20 tables: self scores near sqrt(512), other scores ~ N(0, 1), and a word that occurs once puts "
    "over 0.9999 of its weight on itself"
)

# %% [markdown]
# Without positional encoding the two CATs are the same vector: the same query, so rows 1 and 5 are
# identical, and the same key, so columns 1 and 5 are identical too. Self-attention with no position
# information (PE, a position bias or a mask) cannot tell them apart.

# %%
print("row CAT (1):", A[1].numpy().round(4))
print("row CAT (5):", A[5].numpy().round(4))
assert torch.allclose(A[1], A[5], atol=1e-6) and torch.allclose(Y[1], Y[5], atol=1e-5), "identical rows"
assert torch.allclose(A[:, 1], A[:, 5], atol=1e-6), "identical columns"
assert torch.allclose(A[1, [1, 5]], torch.tensor([0.5, 0.5]), atol=1e-6)
print("✓ the two CATs have identical rows and columns, and each CAT splits its weight evenly between them")
fig = plot_attention(sentence, A.numpy(), title="softmax(XXᵀ/√512), no PE: the identity, except the CATs split")

# %% [markdown]
# No accident of the draw: if $x_1 = x_5$, rows 1 and 5 are computed from the same numbers, and in every
# row the scores in columns 1 and 5 are equal. So it holds at inference for any attention without position
# information, projections included ($x_1 W_q = x_5 W_q$, section 5). Over the 20 tables:


# %% tags=["hide-input"]
def cats_alike(A_s):
    """True if the two CATs (positions 1 and 5) have identical rows and identical columns in A_s (seq, seq)."""
    return torch.allclose(A_s[1], A_s[5], atol=1e-6) and torch.allclose(A_s[:, 1], A_s[:, 5], atol=1e-6)


for s in range(20):
    X_s = token_embeddings(sentence, d_model, seed=s)  # (seq, d_model)
    gen_s = torch.Generator().manual_seed(s)
    W_qs, W_ks = torch.randn(2, d_model, d_model, generator=gen_s, dtype=torch.float64) / math.sqrt(d_model)
    assert cats_alike(self_attention(X_s)[1]), "no projections"
    assert cats_alike(scaled_dot_product_attention(X_s @ W_qs, X_s @ W_ks, X_s)[1]), "random W_q, W_k"
    X_s[5, 0] += 0.5  # nudge the second CAT by 0.5 in one of its 512 coordinates
    assert not cats_alike(self_attention(X_s)[1]), "the comparison sees a small difference"
print(
    "✓ by construction, as argued: identical CATs give identical rows and columns in all 20 tables, with or "
    "without random W_q, W_k; nudging one CAT by 0.5 in one coordinate is enough to make them differ"
)

# %% [markdown]
# > **Going further:** where else queries, keys and values come from; the deck's "random" matrix checked
# > (*Errata in the sources*); a causal mask also tells the CATs apart.

# %% [markdown]
# ## 4. Permutation equivariance (not invariance)
#
# The YOUR CAT slide deck says "Self-Attention is permutation invariant since it does not cater the order of
# words, and treats each word independently (if you do not consider the contribution of the positional
# encoding)", and, two lines on, "If u rearrange the inputs, attention values will remain the same". The reading
# notes have the right word: **equivariant**. Let $P$ be a permutation matrix
# ($PX$ reorders the rows of $X$). Softmax works row by row, and reordering both rows and columns of its input
# reorders its output the same way, so
#
# $$A(PX) = \operatorname{softmax}\!\Big(\tfrac{PX\,(PX)^\top}{\sqrt{d}}\Big)
#         = \operatorname{softmax}\!\Big(P\,\tfrac{XX^\top}{\sqrt{d}}\,P^\top\Big) = P\,A(X)\,P^\top,$$
# $$\text{Attention}(PX) = A(PX)\,PX = P\,A(X)\,P^\top P\,X = P\,A(X)\,X = P\,\text{Attention}(X),$$
#
# using $P^\top P = I$. The outputs are the same vectors, in the permuted order.
#
# Section 3's map would make a poor demonstration: there each output is about its own input, and a map that
# does not mix positions at all is trivially equivariant. So we use one that mixes: the Transformer's, which
# projects the input first and the output last, $\text{Attention}(XW_q, XW_k, XW_v)\,W_o$. (The deck: "Self-Attention
# requires no parameters", then "This will change later".) Ours uses four random `torch.nn.Linear` layers
# ($d_{model} \times d_{model}$, with biases). They act on each position separately, $(PX)W + b = P(XW + b)$, so
# the derivation above goes through.


# %%
@torch.no_grad()
def projected_attention(X):
    """Attention(X W_q, X W_k, X W_v) W_o: self-attention with the Transformer's learned projections."""
    out, A = scaled_dot_product_attention(W_q(X), W_k(X), W_v(X))  # (seq, d_model), (seq, seq)
    return W_o(out), A  # (seq, d_model), (seq, seq)


torch.manual_seed(0)
W_q, W_k, W_v, W_o = (torch.nn.Linear(d_model, d_model) for _ in range(4))
Z, A_mix = projected_attention(X)  # (seq, d_model), (seq, seq)
one_perm = torch.randperm(seq, generator=torch.Generator().manual_seed(1))  # (seq,)
P = torch.eye(seq)[one_perm]  # (seq, seq) permutation matrix: P @ X == X[one_perm]
Z_p, A_p = projected_attention(P @ X)  # (seq, d_model), (seq, seq)
print("P reorders the sentence to:", " ".join(sentence[i] for i in one_perm))
assert torch.allclose(Z_p, P @ Z, atol=1e-5), "Attention(PX) = P Attention(X)"
print("✓ Attention(PX) = P Attention(X): the same six output vectors, in the new order")

# %% tags=["hide-input"]
print(f"weights: smallest {A_mix.min():.2f}, largest {A_mix.max():.2f}")
assert A_mix.min() > 0.05 and A_mix.max() < 0.5, "every output is a blend of all six words"
assert torch.allclose(A_p, P @ A_mix @ P.T, atol=1e-6), "A(PX) = P A(X) Pᵀ"
print("✓ every output mixes all six words, and A(PX) = P A(X) Pᵀ: the map's rows and columns move together")

# %% [markdown]
# The same for 20 random permutations and five initialisations; section 3's map passes too, but there
# $\text{Attention}(X) \approx X$:

# %% tags=["hide-input"]
gen = torch.Generator().manual_seed(0)
for init in range(5):  # five initialisations of the four layers, 20 permutations each
    torch.manual_seed(init)
    W_q, W_k, W_v, W_o = (torch.nn.Linear(d_model, d_model) for _ in range(4))
    Z_i, A_i = projected_attention(X)  # (seq, d_model), (seq, seq)
    assert A_i.min() > 0.05 and A_i.max() < 0.5, "it mixes positions"
    for _ in range(20):
        perm = torch.randperm(seq, generator=gen)  # (seq,)
        Z_p, A_p = projected_attention(X[perm])  # (seq, d_model), (seq, seq)
        assert torch.allclose(Z_p, Z_i[perm], atol=1e-5), "Attention(PX) = P Attention(X)"
        assert torch.allclose(A_p, A_i[perm][:, perm], atol=1e-6), "A(PX) = P A(X) Pᵀ"
for _ in range(20):
    perm = torch.randperm(seq, generator=gen)  # (seq,)
    assert torch.allclose(self_attention(X[perm])[0], Y[perm], atol=1e-5)
assert (Y - X).abs().max() < 1e-4, "section 3's map is about the identity"
print("✓ equivariant for 20 random permutations, 5 initialisations of W_q, W_k, W_v, W_o, every weight over 0.05")
print("✓ section 3's map is equivariant too, but there every output is (almost exactly) its own input")
torch.manual_seed(0)
W_q, W_k, W_v, W_o = (torch.nn.Linear(d_model, d_model) for _ in range(4))  # back to the layers above

# %% [markdown]
# *Invariant* would mean $\text{Attention}(PX) = \text{Attention}(X)$: the same output rows in the same places.
#
# **Predict first.** Reverse the sentence (CAT LOVELY A IS CAT YOUR). How many of the six output rows change,
# compared position by position with the original's?

# %%
my_guess_reversed = None  # your answer: a number from 0 to 6

# %%
reverse = torch.arange(seq - 1, -1, -1)  # (seq,) CAT LOVELY A IS CAT YOUR
Z_rev, _ = projected_attention(X[reverse])  # (seq, d_model)
changed = int((~torch.isclose(Z_rev, Z, atol=1e-5).all(dim=-1)).sum())
print("changed output rows:", changed, "of", seq)
equivariant = torch.allclose(Z_rev, Z[reverse], atol=1e-5)
assert not torch.allclose(Z_rev, Z), "not invariant"
assert equivariant, "but equivariant"
print("✓ not invariant, but equivariant: the reversed sentence's outputs are the original outputs, reversed")

# %% tags=["hide-input"]
assert changed == check.predict_reversed_rows.reference

# %%
check.predict_reversed_rows(my_guess_reversed)

# %% [markdown]
# What *is* invariant is anything that forgets the order afterwards, e.g. a sum-pool over positions,
# $\sum_t \text{Attention}(X)_t$: it is the same for every order of the words. The slide deck's worry ("The cat sat" and
# "Sat cat the" look alike) is real: self-attention, then a sum, cannot tell them apart.

# %% tags=["hide-input"]
pooled, pooled_bare = Z.sum(dim=0), Y.sum(dim=0)  # (d_model,) each
for _ in range(20):
    perm = torch.randperm(seq, generator=gen)  # (seq,)
    assert torch.allclose(projected_attention(X[perm])[0].sum(dim=0), pooled, atol=1e-4)
    assert torch.allclose(self_attention(X[perm])[0].sum(dim=0), pooled_bare, atol=1e-4)
print("✓ the sum-pool of self-attention, with or without projections, is the same for 20 random orders")

# %% [markdown]
# ### Positional encoding breaks the symmetry
#
# The paper adds positional encodings for exactly this reason (section 3.5): "Since our model contains no
# recurrence and no convolution, in order for the model to make use of the order of the sequence, we must
# inject some information about the relative or absolute position of the tokens in the sequence". Add lesson
# 01's sinusoidal PE to the embeddings. Permuting the words now changes the encoding of each word that moves
# ($PX + PE \ne P(X + PE)$), so the outputs are no longer $P$ times the original outputs. (Swapping the two
# CATs leaves the sentence, and so its outputs, as they were: not swapped.)

# %%
PE = sinusoidal_encoding(seq, d_model)  # (seq, d_model)
Z_pe, _ = projected_attention(X + PE)  # (seq, d_model)
Z_rev_pe, _ = projected_attention(X[reverse] + PE)  # (seq, d_model)
gap = (Z_rev_pe - Z_pe[reverse]).abs().max(dim=-1).values  # (seq,) how far each output is from equivariance
moved = int((gap > 1e-3).sum())
print(
    f"rows that moved: {moved} of {seq}, by {gap.min():.2f} to {gap.max():.2f} (outputs up to {Z_pe.abs().max():.2f})"
)
assert not torch.allclose(Z_rev_pe, Z_pe[reverse], atol=1e-3), "with PE: no longer equivariant"
assert moved == seq
print("✓ with PE, reversing the sentence is no longer equivariant: every output row moves")

# %% tags=["hide-input"]
swap = torch.tensor([0, 5, 2, 3, 4, 1])  # (seq,) swaps the two CATs
assert torch.equal(X[swap], X) and torch.equal(projected_attention(X[swap] + PE)[0], Z_pe), "nothing changes"
assert not torch.allclose(Z_pe[swap], Z_pe, atol=1e-3), "the two CATs' outputs differ, so P times them would too"
print("✓ swapping the two CATs leaves the sentence and its outputs as they were, which is not P times the outputs")
Y_pe, A_pe = self_attention(X + PE)  # (seq, d_model), (seq, seq) section 3's map, with PE
Y_rev_pe, _ = self_attention(X[reverse] + PE)  # (seq, d_model)
bare_gap = Y_rev_pe - Y_pe[reverse]  # (seq, d_model)
PE_gap = PE - PE[reverse]  # (seq, d_model) what each output should be off by, if outputs ≈ inputs
assert (bare_gap.abs().max(dim=-1).values > 1e-3).all() and (bare_gap - PE_gap).abs().max() < 0.5
assert abs(bare_gap.abs().max() - PE_gap.abs().max()) < 0.05
for init in range(5):
    torch.manual_seed(init)
    W_q, W_k, W_v, W_o = (torch.nn.Linear(d_model, d_model) for _ in range(4))
    Z_i, _ = projected_attention(X + PE)  # (seq, d_model)
    assert not torch.allclose(projected_attention(X[reverse] + PE)[0], Z_i[reverse], atol=1e-3)
print("✓ with PE, not equivariant for any of the 5 initialisations")
print(f"✓ section 3's map with PE: outputs move by up to {bare_gap.abs().max():.2f}, its own encodings' difference")

# %% [markdown]
# In section 3's map with PE the two CATs are different vectors, with different rows and columns: each attends
# more to itself than to the other, here and in all 20 embedding tables. At inference the symmetry
# breaks only when something tells the positions apart: PE, a position bias, or a position-dependent mask, such
# as a causal one (Going further).

# %%
print("row CAT (1):", A_pe[1].numpy().round(4))
print("row CAT (5):", A_pe[5].numpy().round(4))
assert not torch.allclose(A_pe[1], A_pe[5], atol=1e-3)
assert A_pe[1, 1] > A_pe[1, 5] and A_pe[5, 5] > A_pe[5, 1]
assert list(attention_properties(A_pe, sentence, atol=1e-5).values()) == [True, True, False, False]
print("✓ with PE the CATs' rows and columns differ, and each CAT puts more weight on itself than on the other")
fig = plot_attention(sentence, A_pe.numpy(), title="softmax((X+PE)(X+PE)ᵀ/√512)")

# %% tags=["hide-input"]
PE64 = sinusoidal_encoding(seq, d_model, dtype=torch.float64)  # (seq, d_model)
margins = []
for s in range(20):
    A_s = self_attention(token_embeddings(sentence, d_model, seed=s) + PE64)[1]  # (seq, seq)
    margins += [(A_s[1, 1] - A_s[1, 5]).item(), (A_s[5, 5] - A_s[5, 1]).item()]
print(f"own weight minus the other CAT's, over 20 tables: {min(margins):.2f} to {max(margins):.2f}")
assert min(margins) > 0
print("✓ with PE, each CAT attends more to itself than to the other CAT, in all 20 tables")

# %% [markdown]
# ## 5. What projecting queries and keys makes possible
#
# Without projections the query and the key of a word are the same vector, so its score with itself is a
# squared length: with embeddings of unit-variance entries and $d_{model} = 512$, bare self-attention mostly
# looks at the word itself (section 3), and the layer has nothing to learn. The
# Transformer scores $q_i \cdot k_j = (x_i W_q) \cdot (x_j W_k)$ instead, with two different
# $d_{model} \times d_k$ matrices. The paper (section 3.2.2) found it "beneficial to linearly project the
# queries, keys and values $h$ times with different, learned linear projections" rather than attend once with
# $d_{model}$-wide vectors; its reason is about several heads (lesson 05): "to jointly attend to information
# from different representation subspaces at different positions". With one head, take $d_k = 64$ (the
# paper's $d_{model}/h$ with $h = 8$ heads) and first *random* matrices, entries $N(0, 1/d_{model})$, so that
# $x W$ has unit-variance entries like $x$:
#
# $$A = \operatorname{softmax}\!\Big(\frac{(X W_q)(X W_k)^\top}{\sqrt{d_k}}\Big).$$

# %%
d_k = 64
W_q_rand, W_k_rand = random_projections(d_model, d_k, seed=0)  # (d_model, d_k) each
A_rand = sentence_map(sentence, W_q_rand, W_k_rand)  # (seq, seq)
fig = plot_attention(sentence, A_rand.numpy(), title="random W_q, W_k: where each word looks is chance")

# %% tags=["hide-input"]
Q_rand, K_rand = X.double() @ W_q_rand.double(), X.double() @ W_k_rand.double()  # (seq, d_k) each
assert torch.allclose(A_rand, torch.softmax(Q_rand @ K_rand.T / math.sqrt(d_k), dim=-1), atol=1e-6)
print("✓ the map is the formula above, computed from the sentence's embeddings")

# %% [markdown]
# The near-identity is gone; where a word looks is now decided by the draw of $W_q, W_k$.
#
# **Predict first.** Over 20 random draws of $W_q, W_k$ (120 rows), in how many rows is the diagonal the
# row's largest weight? (The two CATs' identical columns make five distinct keys; a tie counts for the
# diagonal.)

# %%
my_guess_diagonal = None  # your answer: a number from 0 to 120

# %%
diag_rows, lovely_on_cat = 0, []
for s in range(20):
    A_s = sentence_map(sentence, *random_projections(d_model, d_k, seed=s))  # (seq, seq)
    diag_rows += sum(bool(A_s[i, i] >= A_s[i].max() - 1e-9) for i in range(seq))
    lovely_on_cat += weight_on(A_s, sentence, "LOVELY", "CAT")
    assert all(attention_properties(A_s, sentence, atol=1e-9).values()), "still identical CAT rows, columns"
print(f"rows whose largest weight is on the diagonal: {diag_rows} of {20 * seq} (chance, 1 in 5: {20 * seq // 5})")
print(
    f"LOVELY's weight on the two CATs over 20 draws: min {min(lovely_on_cat):.2f}, "
    f"median {float(np.median(lovely_on_cat)):.2f}, max {max(lovely_on_cat):.2f}"
)
assert 0.05 * 20 * seq < diag_rows < 0.3 * 20 * seq, "the diagonal is no longer special"
assert min(lovely_on_cat) < 0.3 and max(lovely_on_cat) > 0.7, "LOVELY's attention to CAT is a matter of chance"
print("✓ random W_q, W_k: diagonal not special, LOVELY -> CAT weight from below 0.3 to above 0.7")

# %% tags=["hide-input"]
assert diag_rows == check.predict_random_diagonal.reference  # the count the prediction below is checked against

# %%
check.predict_random_diagonal(my_guess_diagonal)

# %% [markdown]
# About chance, 1 in 5; and LOVELY's weight on the CATs is all over the place.

# %% [markdown]
# ### Training $W_q$ and $W_k$ on a task that needs a look elsewhere
#
# Now give the projections a reason. A tiny task: random six-word sentences (6 nouns, 6 adjectives, 8 other
# words), each with one noun (once or twice) and one or two adjectives. At each adjective $i$ the output
# $(AX)_i$ must name the noun: noun $n$ scores $(AX)_i \cdot x_n / \sqrt{512}$, and the loss is the
# cross-entropy over the six nouns. Only $W_q$ and $W_k$ are trained, from the random matrices above: 50 Adam
# steps of 32 sentences (`train_adjective_noun`), 8 seeds.

# %% tags=["nbval-ignore-output"]
trained = {
    s: train_adjective_noun(seed=s, d_model=d_model, d_k=d_k, steps=50, batch_size=32) for s in range(8)
}  # seed -> (W_q, W_k, losses)
lovely_trained = {
    s: weight_on(sentence_map(sentence, W_q_s, W_k_s), sentence, "LOVELY", "CAT")[0]
    for s, (W_q_s, W_k_s, _) in trained.items()
}
first = [losses[0] for _, _, losses in trained.values()]
last = [losses[-1] for _, _, losses in trained.values()]
print(f"over 8 seeds: first loss {min(first):.2f}–{max(first):.2f}, last at most {max(last):.1e}")
print(f"LOVELY's weight off the CATs after training: at most {max(1 - w for w in lovely_trained.values()):.1e}")

# %% tags=["hide-input", "nbval-ignore-output"]
lovely_before = [
    weight_on(sentence_map(sentence, *random_projections(d_model, d_k, seed=s)), sentence, "LOVELY", "CAT")[0]
    for s in trained
]
print(f"LOVELY on the CATs before training, same 8 seeds: {min(lovely_before):.2f}–{max(lovely_before):.2f}")

# %% [markdown]
# In every training seed, LOVELY now puts nearly all its weight on the two CATs:

# %% tags=["hide-input"]
assert set(sentence) <= set(VOCAB), "the sentence uses only the task's words"
assert min(lovely_trained.values()) > 0.95
assert all(losses[-1] < 0.5 * losses[0] for _, _, losses in trained.values()), "the loss fell"
print("✓ trained W_q, W_k: LOVELY puts nearly all its weight on the CATs, in 8 of 8 training seeds")

# %% [markdown]
# The map of the first seed: LOVELY puts half its weight on each CAT. Without positional encoding the two
# CATs are still one key (section 3), so LOVELY cannot prefer one. The rows of YOUR, IS and A are not in the
# loss; where they look is whatever training left, and differs from seed to seed.

# %%
A_trained = sentence_map(sentence, *trained[0][:2])  # (seq, seq)
fig = plot_attention(sentence, A_trained.numpy(), title="trained W_q, W_k: LOVELY looks at CAT")

# %% tags=["hide-input"]
lovely, targets = sentence.index("LOVELY"), {0: set(), 2: set(), 3: set()}  # rows YOUR, IS, A
for W_q_s, W_k_s, _ in trained.values():
    A_s = sentence_map(sentence, W_q_s, W_k_s)  # (seq, seq)
    assert all(attention_properties(A_s, sentence, atol=1e-6).values())
    assert abs(A_s[lovely, 1] - A_s[lovely, 5]) < 1e-6
    for row in targets:
        targets[row].add(sentence[int(A_s[row].argmax())])  # the word this row looks at most
assert all(len(words) >= 2 for words in targets.values()), "these rows were never trained: they differ by seed"
print("✓ after training, in all 8 seeds: identical CAT rows and columns, LOVELY splits evenly")
print("✓ the words YOUR, IS and A each look at most are not the same in all 8 seeds")

# %% [markdown]
# This is one thing the projections make possible: trained, $W_q$ and $W_k$ make the nouns' keys match the
# adjectives' queries.
# The paper
# (section 4) reports roles like this in its trained translator: "Not only do individual attention heads
# clearly learn to perform different tasks, many appear to exhibit behavior related to the syntactic and
# semantic structure of the sentences." Lessons 05–07 add heads and PE.
#
# > **Going further:** why the first loss is already below $\ln 6$; IS's row drifts to the CATs too in some
# > seeds; with two nouns an adjective does not always pick its own.

# %% [markdown]
# ## Explore: the attention-map explorer
#
# The explorer draws the self-attention matrix of a sentence (seeded random embeddings, $d_{model} = 16$ so
# that the weights are not all 0 or 1) and one query's row. Try: scaling off (near one-hot rows, the CATs'
# split evenly), a higher temperature (flatter), positional encoding (the CATs part ways), a mask (lesson 04).

# %% [markdown]
# Here is its default state:

# %%
fig = plot_attention_explorer("YOUR CAT IS A LOVELY CAT", query=1)

# %% [markdown]
# The first three effects, checked at the explorer's seed and, where they hold in general, for five seeds:

# %% tags=["hide-input"]
explorer_words = "YOUR CAT IS A LOVELY CAT".split()
A_unscaled = attention_map(explorer_words, scale=False, seed=0)[0]  # (seq, seq) at the explorer's seed
assert all(A_unscaled[i].max() > 0.98 for i in (0, 2, 3, 4))
assert all(abs(A_unscaled[i, j] - 0.5) < 0.01 for i in (1, 5) for j in (1, 5))
for s in range(5):
    A_default = attention_map(explorer_words, seed=s)[0]  # (seq, seq)
    A_cold = attention_map(explorer_words, scale=False, seed=s)[0]  # (seq, seq) unscaled
    assert all(abs(A_cold[i, 1] - A_cold[i, 5]) < 1e-9 for i in (1, 5)), "the CATs are one key"
    A_hot = attention_map(explorer_words, temperature=10.0, seed=s)[0]  # (seq, seq)
    assert (A_hot.max(dim=-1).values < A_default.max(dim=-1).values).all()
    A_causal = attention_map(explorer_words, mask_kind="causal", seed=s)[0]  # (seq, seq) row 0 sees one key
    A_causal_hot = attention_map(explorer_words, temperature=10.0, mask_kind="causal", seed=s)[0]  # (seq, seq)
    assert A_causal[0, 0] == A_causal_hot[0, 0] == 1, "a row with one allowed key stays one-hot"
    assert (A_causal_hot[1:].max(dim=-1).values < A_causal[1:].max(dim=-1).values).all()
    A_pos = attention_map(explorer_words, positional=True, seed=s)[0]  # (seq, seq)
    assert (A_pos[1] - A_pos[5]).abs().max() > 0.01
print("✓ unscaled, at the explorer's seed: every row but the CATs' puts nearly all its weight on one word;")
print("  the CATs' rows put nearly half on each CAT")
print("✓ in all 5 embedding seeds, with PE the two CATs' rows differ; temperature 10 makes every row flatter")
print("  than temperature 1, also under the causal mask except its first row, which sees only itself")
print("  (always: a rising temperature lowers the largest weight of a row whose unmasked scores are not all equal)")

# %% [markdown]
# And live (in Jupyter, Binder or Colab; on GitHub the widget does not run):

# %% tags=["nbval-ignore-output"]
attention_explorer("YOUR CAT IS A LOVELY CAT", query=1)

# %% [markdown]
# ## Summary
#
# - Attention mixes the values, weighted by the softmax of the query's scaled scores with the keys:
#   $c = \operatorname{softmax}(qK^\top/\sqrt{d_k})\,V$, a soft dictionary look-up that temperature $\to 0$
#   makes hard when one key matches best.
# - Bare self-attention $\operatorname{softmax}(XX^\top/\sqrt{d})\,X$ has no parameters. With random
#   512-dimensional embeddings of $N(0, 1)$ entries a word that occurs once looks (almost) only at itself;
#   without position information identical words get identical rows and columns.
# - It is permutation **equivariant**, not invariant. Positional encoding breaks the symmetry; learned
#   $W_q, W_k, W_v, W_o$ do not.
# - Random $W_q, W_k$ make the map chance; trained ones make adjectives look at the noun.
#
# ## Exercises
#
# Replace each stub's `raise NotImplementedError` with your code and run the cell; the checker prints ✓ or
# what is wrong. Each cell stands alone. Stuck? `check.attention_weights.hint()` gives a hint,
# `check.attention_weights.solution()` one solution (likewise for the others).

# %%
from utils.course.exercises import lesson03 as check

# %% [markdown]
# **1.** The attention weights of one query $q$ (shape `(d_k,)`) over keys $K$ (shape `(n, d_k)`):
# $\operatorname{softmax}(q K^\top / \sqrt{d_k})$, a tensor of shape `(n,)`.


# %%
def attention_weights(q, K):
    raise NotImplementedError


check.attention_weights(attention_weights)

# %% [markdown]
# **2. The diagonal loses.** In bare self-attention a word's score with itself, $x_i \cdot x_i$, is not
# always the largest of its row: $x_j$ beats it when $x_i \cdot x_j > x_i \cdot x_i$. Return embeddings `X`
# `(seq, d_model)` whose $\operatorname{softmax}(XX^\top/\sqrt{d_{model}})$ has its diagonal as the row
# maximum (ties count) in **only one** row, for any `seq` $\ge 2$ and `d_model` $\ge 1$ (checked up to 9 and
# 512). Why can it never be zero rows?


# %%
def diagonal_loses(seq, d_model):
    raise NotImplementedError


check.diagonal_not_max(diagonal_loses)

# %% [markdown]
# **3. A classifier that ignores word order.** Put a classifier head on parameter-free self-attention:
# the class scores of a sentence `X` `(seq, d_model)` are $\big(\sum_t \text{Attention}(X)_t\big)\,W_c$,
# with `W_c` of shape `(d_model, num_classes)` and
# $\text{Attention}(X) = \operatorname{softmax}(XX^\top/\sqrt{d_{model}})\,X$. Return the scores, shape
# `(num_classes,)`. The checker also reorders the words and checks that the scores stay the same: this
# head cannot tell "The cat sat" from "Sat cat the".


# %%
def pooled_classifier(X, W_c):
    raise NotImplementedError


check.pooled_classifier(pooled_classifier)

# %% [markdown]
# **4. Ties at zero temperature.** Section 2 let $\tau \to 0$ with one best-matching key. But several keys
# can tie for the best score, each with its own value: keys that differ only in directions orthogonal to $q$. Write `cold_limit(q, K, V)`: the limit of
# $\operatorname{softmax}(qK^\top/\tau)\,V$ as $\tau \to 0$, for a query `q` `(d_k,)`, keys `K` `(n, d_k)`
# and values `V` `(n, d_v)`, when several keys may tie for the best score. Return shape `(d_v,)`.


# %%
def cold_limit(q, K, V):
    raise NotImplementedError


check.cold_limit(cold_limit)

# %% [markdown]
# ## Going further
#
# ### Where the queries, keys and values come from
#
# *Why read it:* section 3's X is one sentence's embeddings; in the paper's model it is not always.
#
# The paper (section 3.2.3) uses attention in three ways. In its "encoder-decoder attention" layers,
# "the queries come from the previous decoder layer, and the memory keys
# and values come from the output of the encoder": the slide's memory, built in lesson 07. In its encoder's
# self-attention "all of the keys, values and queries come from the same place, in this case, the output of the
# previous layer in the encoder": X is the layer below's output, and in the first layer the embeddings plus
# positional encodings (in this lesson, the embeddings alone, or plus PE in section 4 and the Errata). The third, the decoder's self-attention, lets each
# position attend only to itself and the positions before it: the masking of lesson 04.
#
# ### The embeddings' scale
#
# *Why read it:* this lesson's section 3 used embeddings with $N(0, 1)$ entries; here is what the paper says.
#
# The paper, section 3.4: "In the embedding layers, we multiply those weights by $\sqrt{d_{model}}$." It gives
# neither a reason nor the weights' initialisation; if they start with entries $N(0, 1/512)$, the scaled
# embeddings have entries $N(0, 1)$, the case of section 3. The dimension alone does not make section 3's rows
# peaked: for entries $N(0, \sigma^2)$ the self-score is about $\sigma^2\sqrt{512}$, so with $\sigma^2 = 1/512$ it
# is about $1/\sqrt{512}$ and the rows are nearly uniform:

# %% tags=["hide-input"]
small_diag = []  # the same sentences with entries N(0, 1/512): every embedding divided by sqrt(512)
for s in range(20):
    X_s = token_embeddings(sentence, d_model, seed=s) / math.sqrt(d_model)  # (seq, d_model)
    small_diag += [self_attention(X_s)[1][i, i].item() for i in (0, 2, 3, 4)]
print(f"entries N(0, 1/512): a once-occurring word's weight on itself {min(small_diag):.3f} to {max(small_diag):.3f}")
assert all(abs(w - 1 / seq) < 0.02 for w in small_diag)
print("✓ with entries N(0, 1/512) every once-occurring word's weight on itself is within 0.02 of uniform, 1/6")

# %% [markdown]
# ### How many parameters has the attention layer?
#
# *Why read it:* the paper's per-head matrices and PyTorch's layers count their parameters differently.
#
# The paper (section 3.2.2) gives each of its $h = 8$ heads its own $W^Q_i, W^K_i \in \mathbb{R}^{d_{model}
# \times d_k}$ and $W^V_i \in \mathbb{R}^{d_{model} \times d_v}$, with $d_k = d_v = d_{model}/h = 64$, and adds one
# $W^O \in \mathbb{R}^{h d_v \times d_{model}}$ ("the projections are parameter matrices"; its equations have no
# bias terms). Side by side over the heads, that is
# four $d_{model} \times d_{model}$ matrices. We build ours with `torch.nn.Linear`, which adds a bias vector to each
# by default, as `torch.nn.MultiheadAttention` does: that is where our count differs from the paper's.

# %%
h = 8
d_head = d_model // h  # the paper's d_k = d_v = 64
paper_shapes = [(d_model, d_head)] * (3 * h) + [(h * d_head, d_model)]  # W^Q_i, W^K_i, W^V_i per head; W^O
n_paper = sum(rows * cols for rows, cols in paper_shapes)
torch.manual_seed(0)
W_q, W_k, W_v, W_o = (torch.nn.Linear(d_model, d_model) for _ in range(4))
n_params = sum(p.numel() for W in (W_q, W_k, W_v, W_o) for p in W.parameters())
n_biases = sum(W.bias.numel() for W in (W_q, W_k, W_v, W_o))
n_torch = {
    bias: sum(p.numel() for p in torch.nn.MultiheadAttention(d_model, h, bias=bias).parameters())
    for bias in (True, False)
}
print(f"the paper's attention layer at d_model={d_model}, h={h}: {n_paper:,} parameters, 4 x {d_model}^2")
print(f"ours, four nn.Linear with their default biases: {n_params:,}, of which {n_biases:,} biases")
assert n_paper == 4 * d_model**2 and n_params - n_biases == n_paper
assert n_torch[True] == n_params and n_torch[False] == n_paper
print("✓ nn.MultiheadAttention has the same count with its default biases, and the paper's with bias=False")

# %% [markdown]
# ### A causal mask carries position
#
# *Why read it:* it shows that "without position information" rules out more than PE, before lesson 04.
#
# "Without position information" rules out more than PE. Lesson 04's **causal mask** lets each word attend
# only to itself and the words before it. That tells every query where it stands: the first CAT (position 1)
# sees YOUR and itself, the second (position 5) sees the whole sentence. So a causal mask carries position,
# and with it the two CATs' rows differ, and so do their columns (column 5 is blocked for the queries at
# positions 0 to 4, column 1 only for position 0):

# %%
_, A_causal = scaled_dot_product_attention(X, X, X, mask=causal_mask(seq))  # (seq, seq)
print("causal mask, row CAT (1):", A_causal[1].numpy().round(4))
print("causal mask, row CAT (5):", A_causal[5].numpy().round(4))
rows_differ = cols_differ = 0
for s in range(20):
    X_s = token_embeddings(sentence, d_model, seed=s)  # (seq, d_model)
    A_s = scaled_dot_product_attention(X_s, X_s, X_s, mask=causal_mask(seq))[1]  # (seq, seq)
    rows_differ += (A_s[1] - A_s[5]).abs().max().item() > 0.1
    cols_differ += (A_s[:, 1] - A_s[:, 5]).abs().max().item() > 0.1
assert rows_differ == cols_differ == 20
print("✓ with a causal mask the two CATs' rows differ, and their columns differ, in all 20 embedding tables")

# %% [markdown]
# For the same reason a causal mask breaks the permutation equivariance of section 4: reverse the sentence and
# the outputs are no longer just reversed. How much that shows depends on how peaked the map is. At
# $d_{model} = 512$ every word returns almost exactly its own vector whatever it may see, so the outputs barely
# move; with the explorer's 16-dimensional embeddings they do:

# %%
flip = torch.arange(seq - 1, -1, -1)  # (seq,) the sentence reversed
moved = {}  # d -> max |Attention(PX) - P Attention(X)| per embedding table, causal mask
for d in (d_model, 16):
    moved[d] = []
    for s in range(20):
        X_s = token_embeddings(sentence, d, seed=s)  # (seq, d)
        Y_s, _ = scaled_dot_product_attention(X_s, X_s, X_s, mask=causal_mask(seq))  # (seq, d)
        Y_f, _ = scaled_dot_product_attention(X_s[flip], X_s[flip], X_s[flip], mask=causal_mask(seq))  # (seq, d)
        moved[d].append((Y_f - Y_s[flip]).abs().max().item())
print(f"causal mask, sentence reversed, d_model=16: outputs move by {min(moved[16]):.2f} to {max(moved[16]):.2f}")
assert min(moved[16]) > 0.05 and max(moved[d_model]) < 1e-6
print("✓ causal mask: not equivariant in any of 20 tables at d_model=16; at d_model=512 the outputs barely move")

# %% [markdown]
# Other masks that depend on position can tell the CATs apart too, but not all: letting query $i$ see key $j$
# only when $i - j$ mod 4 is 0 or 1 leaves the two CATs, four apart, alike. For very long sequences the paper
# (section 4, Table 1) proposes that self-attention "could be restricted to considering only a neighborhood of
# size r in the input sequence centered around the respective output position", and leaves it to future work:
# its model does not use it. With $r = 5$ (two words either side) the first CAT cannot see the
# second, four words away, nor the second the first:

# %% tags=["hide-input"]
offsets = torch.arange(seq)[:, None] - torch.arange(seq)[None, :]  # (seq, seq) i - j
r = 5  # the neighbourhood's size: the word itself and two either side
window = offsets.abs() <= r // 2  # (seq, seq) True where query i may see key j
window_hits = 0
for s in range(20):
    X_s = token_embeddings(sentence, d_model, seed=s)  # (seq, d_model)
    props = attention_properties(scaled_dot_product_attention(X_s, X_s, X_s, mask=window)[1], sentence, atol=1e-6)
    window_hits += (
        not props["identical tokens get identical rows"] and not props["identical tokens get identical columns"]
    )
assert window_hits == 20
every_fourth = torch.remainder(offsets, 4) <= 1  # (seq, seq) True where i - j mod 4 is 0 or 1
for d in (d_model, 16):
    for s in range(20):
        X_s = token_embeddings(sentence, d, seed=s)  # (seq, d)
        A_s = scaled_dot_product_attention(X_s, X_s, X_s, mask=every_fourth)[1]  # (seq, seq)
        assert all(attention_properties(A_s, sentence, atol=1e-6).values()), "the CATs stay alike"
print("✓ in all 20 tables (no PE), a centred window of size 5 tells the CATs' rows and columns apart; the mask")
print("  'i - j mod 4 is 0 or 1' leaves them identical (d = 512 and 16)")

# %% [markdown]
# ### Why the loss starts far below $\ln 6$
#
# *Why read it:* section 5's training starts well below a blind guess; this says why.
#
# Each unit of weight an adjective puts on the noun adds $|x_n|^2/\sqrt{512} \approx 22.6$ to that noun's score
# (section 3), while the other nouns' scores stay near 0. Untrained, an adjective already puts 0.2–0.3 of its
# weight on the noun on average (it is one or two of six words), so the right noun leads the best other one by
# about 4–6. What is left to learn is to look at the noun in every sentence, not only on average.

# %% tags=["hide-input", "nbval-ignore-output"]
E = token_embeddings(list(VOCAB), d_model)  # (vocab, d_model) the task's embeddings
start_weight, start_lead = [], []  # before training: adjectives' mean weight on the noun, right noun's mean lead
for s in range(8):
    ids, is_adj, noun = adjective_noun_batch(256, torch.Generator().manual_seed(s))  # 256 sentences
    X_b = E[ids]  # (batch, seq, d_model)
    A_b = projected_weights(X_b, *random_projections(d_model, d_k, seed=s))  # (batch, seq, seq)
    start_weight.append((A_b * (ids == noun[:, None])[:, None, :]).sum(dim=-1)[is_adj].mean().item())
    noun_scores = (A_b @ X_b)[is_adj] @ E[: len(NOUNS)].T / math.sqrt(d_model)  # (adjectives, nouns)
    right = noun_scores.gather(1, noun[:, None].expand_as(ids)[is_adj][:, None])  # (adjectives, 1)
    start_lead.append(
        (right - noun_scores.masked_fill(noun_scores == right, -math.inf).amax(dim=1, keepdim=True)).mean().item()
    )
print(
    f"before training: weight on the noun {min(start_weight):.2f}–{max(start_weight):.2f}, lead {min(start_lead):.1f}–{max(start_lead):.1f}"
)

# %% tags=["hide-input"]
assert all(losses[0] < math.log(6) for _, _, losses in trained.values()), "it started below a blind guess"
assert all(0.2 <= w <= 0.31 for w in start_weight) and all(3.5 <= g <= 6.5 for g in start_lead)
print(f"✓ in all 8 seeds the first loss is below ln 6 = {math.log(6):.2f}: untrained, adjectives already put 0.2–0.3")
print("  of their weight on the noun, a lead of about 4–6")

# %% [markdown]
# ### Beyond LOVELY: IS's row, and which noun
#
# *Why read it:* section 5 trained only the adjectives' rows; here is what else the trained $W_q, W_k$ do.
#
# Nothing stops other queries from matching the nouns' keys too: IS's row is not in the loss, but its query
# $x_{IS} W_q$ moves with $W_q$, and in several seeds it too puts most of its weight on the CATs.

# %% tags=["hide-input", "nbval-ignore-output"]
is_after = [weight_on(sentence_map(sentence, *trained[s][:2]), sentence, "IS", "CAT")[0] for s in trained]
print("IS on the CATs after training, seed by seed:", [round(w, 2) for w in is_after])

# %% tags=["hide-input"]
is_on_cat = [
    weight_on(sentence_map(sentence, W_q_s, W_k_s), sentence, "IS", "CAT")[0] for W_q_s, W_k_s, _ in trained.values()
]
is_high, is_low = sum(w > 0.8 for w in is_on_cat), sum(w < 0.5 for w in is_on_cat)
assert is_high >= 3 and is_low >= 2 and is_high + is_low == 8, "each seed clearly one way or the other"
print(
    f"✓ IS (its row is never in the loss) puts over 0.8 of its weight on the CATs in {is_high} of 8 seeds, "
    f"under half in the other {is_low}"
)

# %% [markdown]
# Which noun? Each training sentence has one noun, so training cannot teach an adjective to pick *its* noun,
# and without position nothing could. With two nouns, "YOUR LOVELY CAT SEES A BIG DOG":

# %% tags=["nbval-ignore-output"]
probe = "YOUR LOVELY CAT SEES A BIG DOG".split()
probe_maps = [sentence_map(probe, W_q_s, W_k_s) for W_q_s, W_k_s, _ in trained.values()]  # (7, 7) each
print("LOVELY on CAT, seed by seed:", [round(A_s[1, 2].item(), 2) for A_s in probe_maps])
print("BIG on DOG, seed by seed:   ", [round(A_s[5, 6].item(), 2) for A_s in probe_maps])

# %% tags=["hide-input"]
own = [A_s[1, 2] > 0.5 and A_s[5, 6] > 0.5 for A_s in probe_maps]  # both adjectives on their own noun
assert sum(own) <= 4 and any(A_s[5, 2] > 0.5 for A_s in probe_maps)
print(f"✓ both adjectives look mostly at their own noun in {sum(own)} of the 8 seeds (at most half);")
print("  BIG, in some seeds, looks mostly at CAT")

# %% [markdown]
# ### Errata in the sources
#
# What the YOUR CAT slide deck gets wrong about self-attention's matrix, with the checks. (Its "permutation
# invariant" is corrected in section 4.)
#
# *Why read it:* if you teach from the deck, or want to see what any self-attention matrix must satisfy
# and which ingredients (PE, $W_q \ne W_k$, a position bias) each property needs.
#
# #### What an attention matrix must satisfy
#
# The YOUR CAT slide deck prints a 6 × 6 attention matrix for this sentence, with the note "all values are
# random". The deck says Q, K and V "are just the input sentence", and also that each row captures "the
# position in the sentence (represented by the positional encodings)". Random numbers can still be
# checked: every attention matrix without dropout has properties 1 and 2 below (each row is a softmax; a row a
# mask blocks entirely is lesson 04's business), and every self-attention matrix of this sentence *without*
# position information (no PE, position bias or position-dependent mask) and without dropout also has 3 and 4:
#
# 1. no negative weight (each is $e^{\text{score}} > 0$ over a positive sum),
# 2. every row summing to 1 (up to the deck's rounding to three decimals: six numbers, each off by at most
#    0.0005, so within ±0.003),
# 3. identical rows for the two CATs,
# 4. identical columns for the two CATs.
#
# Here is the deck's matrix, typed in as printed:

# %%
deck_matrix = torch.tensor(
    [  # (seq, seq) from the YOUR CAT slide deck, "all values are random"
        [0.268, 0.119, 0.134, 0.148, 0.179, 0.152],  # YOUR
        [0.124, 0.278, 0.201, 0.128, 0.154, 0.115],  # CAT
        [0.147, 0.132, 0.262, 0.097, 0.218, 0.145],  # IS
        [0.210, 0.128, 0.206, 0.212, 0.119, 0.125],  # A
        [0.146, 0.158, 0.152, 0.143, 0.227, 0.174],  # LOVELY
        [0.195, 0.114, 0.203, 0.103, 0.157, 0.229],  # CAT
    ],
    dtype=torch.float64,
)

# %% [markdown]
# **Predict first.** Look at the matrix: which of the properties 1–4 does it break? Replace `None` by the
# set of their numbers (e.g. `{2}`) before you run the next cells; the check after them says whether you
# were right, and why.

# %%
my_prediction = None  # your answer: a set of property numbers, e.g. {1, 3}

# %%
deck_checks = attention_properties(deck_matrix, sentence, atol=0.003)  # name -> holds?
for k, (name, holds) in enumerate(deck_checks.items(), start=1):
    print(f"{k}. {name}: {'holds' if holds else 'BROKEN'}")
broken = {k for k, holds in enumerate(deck_checks.values(), start=1) if not holds}
print("row sums:", deck_matrix.sum(dim=-1).numpy().round(3))
print("broken:", sorted(broken))

# %% tags=["hide-input"]
assert torch.equal(deck_matrix, check.DECK) and broken == check.predict_broken_properties.reference

# %%
check.predict_broken_properties(my_prediction)

# %% [markdown]
# The rows sum to 1 (two give 1.001, the rounding) and no weight is negative, but the two CATs have
# different rows and columns (printed below), so the deck's matrix cannot come from the word embeddings
# alone. Our $A$ (no PE) has all four; attention dropout (weights zeroed at random, the rest scaled up)
# breaks even property 2. That dropout is an implementation choice (`nn.MultiheadAttention`'s `dropout`), not
# the paper's: its section 5.4 applies dropout "to the output of each sub-layer" and "to the sums of the
# embeddings and the positional encodings", with $P_{drop} = 0.1$. A position bias on the scores can break 3
# and 4: $-0.5\,|i - j|$ breaks both, as the CATs sit at different places; a bias linear in $i - j$ keeps the
# rows equal (per row it is a constant, which softmax ignores, plus a per-key term both CAT rows share).

# %% tags=["hide-input"]
ours = attention_properties(A, sentence, atol=1e-5)
print("deck, row CAT (1) on CAT (1), CAT (5):", deck_matrix[1, [1, 5]].tolist())
print("deck, row CAT (5) on CAT (5), CAT (1):", deck_matrix[5, [5, 1]].tolist())
assert broken == {3, 4}, "the deck's matrix breaks exactly properties 3 and 4"
assert deck_matrix[1, 1] > deck_matrix[1, 5] and deck_matrix[5, 5] > deck_matrix[5, 1], "each CAT prefers itself"
assert all(ours.values()), "the computed matrix has all four properties"
torch.manual_seed(0)
_, A_drop = scaled_dot_product_attention(X, X, X, dropout_p=0.1)  # (seq, seq) training-time dropout
assert not attention_properties(A_drop, sentence, atol=1e-5)["every row sums to 1"]
positions = torch.arange(len(sentence))  # (seq,)
distance_bias = -0.5 * (positions[:, None] - positions[None, :]).abs()  # (seq, seq)
A_bias = torch.softmax(X @ X.T / math.sqrt(X.shape[-1]) + distance_bias, dim=-1)  # (seq, seq)
biased = attention_properties(A_bias, sentence, atol=1e-5)
assert biased["every row sums to 1"] and not biased["identical tokens get identical rows"]
assert not biased["identical tokens get identical columns"]
linear_bias = -0.5 * (positions[:, None] - positions[None, :])  # (seq, seq)
A_linear = torch.softmax(X @ X.T / math.sqrt(X.shape[-1]) + linear_bias, dim=-1)  # (seq, seq)
linear = attention_properties(A_linear, sentence, atol=1e-5)
assert linear["identical tokens get identical rows"] and not linear["identical tokens get identical columns"]
print("✓ deck: rows sum to 1 up to its rounding, none negative, but CAT rows and columns differ; ours: all four;")
print(
    "  attention dropout breaks the row sums; a bias -0.5|i - j| the CATs' rows and columns, -0.5(i - j) columns only"
)

# %% [markdown]
# Could positional encoding explain the deck's matrix? It makes the two CATs different vectors, and section 4
# shows each CAT then attending more to itself than to the other, as the deck's do. But it cannot produce
# this matrix either. With queries and keys both $X + PE$, the scores are symmetric, $s_{ij} = s_{ji}$, and
# row $i$ is divided by its own sum $Z_i = \sum_k e^{s_{ik}}$, so $A_{ij} / A_{ji} = Z_j / Z_i$. Around any
# three words the sums cancel:
#
# $$A_{ij}\,A_{jk}\,A_{ki} = A_{ji}\,A_{kj}\,A_{ik}.$$
#
# The deck's IS, A, LOVELY break this by far more than its three-decimal rounding can explain. So a matrix
# like the deck's needs unbalanced cycles *and* position information (different CAT rows and columns).
# Unbalanced cycles need asymmetric scores, but asymmetry is not enough: a per-key term (for instance
# $W_q = W_k$ with different biases) makes $S \ne S^\top$ and still cancels around every cycle. Either
# ingredient alone falls short: $W_q \ne W_k$ without position information keeps the CATs' rows and columns
# identical (section 5), and PE with $Q = K$ keeps every cycle balanced. The table below tries these and a
# few position biases.


# %%
def cycle_log_ratio(A, i, j, k):
    """log(A_ij A_jk A_ki / (A_ji A_kj A_ik)): 0 whenever the scores are symmetric."""
    L = A.double().log()  # (seq, seq)
    return (L[i, j] + L[j, k] + L[k, i] - L[j, i] - L[k, j] - L[i, k]).item()


i, j, k = (sentence.index(w) for w in ("IS", "A", "LOVELY"))
forward = deck_matrix[i, j] * deck_matrix[j, k] * deck_matrix[k, i]
backward = deck_matrix[j, i] * deck_matrix[k, j] * deck_matrix[i, k]
print(f"deck, IS -> A -> LOVELY -> IS: {forward:.5f}; the other way round: {backward:.5f}")
cycle = [(i, j), (j, k), (k, i), (j, i), (k, j), (i, k)]
rounding = sum(0.0005 / (deck_matrix[a, b].item() - 0.0005) for a, b in cycle)  # largest log change from rounding
gap = abs(cycle_log_ratio(deck_matrix, i, j, k))  # |log(forward / backward)|
print(f"the two products differ by a factor e^{gap:.2f}; rounding to 3 decimals explains at most e^{rounding:.2f}")
assert gap > rounding
print("✓ the deck's IS -> A -> LOVELY cycle is unbalanced by more than its rounding can explain")


# %% tags=["hide-input"]
triples = [(a, b, c) for a in range(seq) for b in range(seq) for c in range(seq) if len({a, b, c}) == 3]
PE_3 = sinusoidal_encoding(seq, d_model, dtype=torch.float64)  # (seq, d_model)
worst_pe = max(
    abs(cycle_log_ratio(self_attention(token_embeddings(sentence, d_model, seed=s) + PE_3)[1], *t))
    for s in range(20)
    for t in triples
)
A_proj = projected_weights(X.double(), *random_projections(d_model, 64, seed=0))  # (seq, seq) W_q != W_k
worst_proj = max(abs(cycle_log_ratio(A_proj, *t)) for t in triples)
assert worst_pe < 1e-9 and worst_proj > 10 * rounding
print("✓ with Q = K = X + PE, every three-word cycle balances in all 20 tables; with W_q != W_k it need not")


# %% tags=["hide-input"]
def cat_breaks(A_s):
    """(CAT rows differ, CAT columns differ, some three-word cycle unbalanced) for one attention matrix."""
    props = attention_properties(A_s, sentence, atol=1e-6)
    unbalanced = max(abs(cycle_log_ratio(A_s, *t)) for t in triples) > 10 * rounding
    return (
        not props["identical tokens get identical rows"],
        not props["identical tokens get identical columns"],
        unbalanced,
    )


X_64, offset = X.double(), (positions[:, None] - positions[None, :]).double()  # (seq, d_model), (seq, seq) i - j
scores_64 = X_64 @ X_64.T / math.sqrt(d_model)  # (seq, seq) Q = K = X
variants = {}  # name -> list of cat_breaks, one per seed (or one for a fixed matrix)
for name, X_in, bias in [
    ("W_q != W_k, no PE", X_64, 0.0),
    ("W_q != W_k, with PE", X_64 + PE_3, 0.0),
    ("W_q != W_k, no PE, bias -0.5|i - j|", X_64, -0.5 * offset.abs()),
]:
    variants[name] = []
    for s in range(5):
        W_q_s, W_k_s = (W.double() for W in random_projections(d_model, 64, seed=s))  # (d_model, 64) each
        A_s = torch.softmax((X_in @ W_q_s) @ (X_in @ W_k_s).T / 8.0 + bias, dim=-1)  # (seq, seq)
        variants[name].append(cat_breaks(A_s))
fixed = {
    "Q = K = X, bias -0.5(i - j)^2 on earlier keys": torch.where(offset > 0, -0.5 * offset**2, 0.0),
    "Q = K = X, bias 1 where i - j = 1 mod 4": (torch.remainder(offset, 4) == 1).double(),
    "Q = K = X, bias -0.5|i - j|": -0.5 * offset.abs(),
}
for name, bias in fixed.items():
    variants[name] = [cat_breaks(torch.softmax(scores_64 + bias, dim=-1))]
gen_b = torch.Generator().manual_seed(0)
W_shared = torch.randn(d_model, 64, generator=gen_b, dtype=torch.float64) / math.sqrt(d_model)  # W_q = W_k
b_q, b_k = (torch.randn(64, generator=gen_b, dtype=torch.float64) for _ in range(2))  # different biases
S_b = (X_64 @ W_shared + b_q) @ (X_64 @ W_shared + b_k).T / 8.0  # (seq, seq) not symmetric
A_qk_bias = torch.softmax(S_b, dim=-1)  # (seq, seq)
variants["W_q = W_k, biases b_q != b_k"] = [cat_breaks(A_qk_bias)]
print(f"{'scores':46} {'CAT rows differ':>15} {'CAT columns differ':>18} {'unbalanced cycle':>16}")
for name, runs in variants.items():
    counts = [f"{sum(r[c] for r in runs)} of {len(runs)}" for c in range(3)]
    print(f"{name:46} {counts[0]:>15} {counts[1]:>18} {counts[2]:>16}")
expected = {  # (rows differ, columns differ, unbalanced) in how many runs
    "W_q != W_k, no PE": (0, 0, 5),
    "W_q != W_k, with PE": (5, 5, 5),
    "W_q != W_k, no PE, bias -0.5|i - j|": (5, 5, 5),
    "Q = K = X, bias -0.5(i - j)^2 on earlier keys": (1, 1, 1),
    "Q = K = X, bias 1 where i - j = 1 mod 4": (0, 0, 1),
    "Q = K = X, bias -0.5|i - j|": (1, 1, 0),
    "W_q = W_k, biases b_q != b_k": (0, 0, 0),
}
assert {name: tuple(sum(r[c] for r in runs) for c in range(3)) for name, runs in variants.items()} == expected
assert max(abs(cycle_log_ratio(torch.softmax(scores_64 - 0.5 * offset.abs(), dim=-1), *t)) for t in triples) < 1e-9
asymmetry = (S_b - S_b.T).abs().max().item()
assert asymmetry > 0.1 and max(abs(cycle_log_ratio(A_qk_bias, *t)) for t in triples) < 1e-9
print(
    f"✓ W_q = W_k with different biases: the scores are not symmetric (max |S - Sᵀ| = {asymmetry:.2f}), "
    "yet every cycle balances"
)

# %% [markdown]
# #### Is the diagonal always the largest?
#
# The YOUR CAT slide deck says "We expect values along the diagonal to be the highest". For the
# parameter-free attention it describes this mostly holds, as below, with one qualification: a longer vector
# whose direction is close enough to $x_i$'s wins (how close, below). What makes the diagonal no longer special
# is projecting: with random $W_q \ne W_k$ (section 5) the diagonal tops a row about as often as chance. Softmax keeps the
# order of the scores, and every score in a row is divided by the same $\sqrt{d}$, so the diagonal is the
# largest weight of row $i$ exactly when no score beats $x_i \cdot x_i = |x_i|^2$:
#
# $$\text{the diagonal is the maximum of row } i \iff x_i \cdot x_j \le |x_i|^2 \text{ for every } j
#   \iff |x_j| \cos\theta_{ij} \le |x_i| \text{ for every } j,$$
#
# with $\theta_{ij}$ the angle between $x_i$ and $x_j$: no other embedding reaches further along the direction
# of $x_i$ than $x_i$ itself. Call $r_{ij} = x_i \cdot x_j / |x_i|^2$ the **reach** of $x_j$ along $x_i$; the
# diagonal wins row $i$ when every reach is at most 1 (an identical word, like the second CAT, has reach
# exactly 1 and ties). Equal lengths are one way to get there: by Cauchy–Schwarz
# $|x_j| \cos\theta_{ij} \le |x_j| = |x_i|$; more generally, $|x_j| \le |x_i|$ for every $j$ is enough for
# row $i$. Enough, but not needed: our embeddings' lengths differ, and the diagonal still wins every row.


# %%
def reach(X):
    """r[i, j] = x_i . x_j / |x_i|^2: how far x_j reaches along the direction of x_i, in units of |x_i|."""
    G = X @ X.transpose(-2, -1)  # (seq, seq) all dot products
    return G / G.diagonal()[:, None]  # (seq, seq)


print("lengths |x_i|:", X.norm(dim=-1).numpy().round(1))
print("reach of each word along YOUR:", reach(X)[0].numpy().round(2))
assert all(A[i, i] >= A[i].max() - 1e-6 for i in range(seq))  # ties (the two CATs) up to rounding
print("✓ in every row the diagonal is the largest weight (the two CATs tie)")

# %% tags=["hide-input"]
ratios, diag_is_max, reaches = [], 0, []
for s in range(20):
    X_s = token_embeddings(sentence, d_model, seed=s)  # (seq, d_model)
    A_s = self_attention(X_s)[1]  # (seq, seq)
    lengths = X_s.norm(dim=-1)  # (seq,)
    ratios.append((lengths.max() / lengths.min()).item())
    diag_is_max += all(A_s[i, i] >= A_s[i].max() - 1e-12 for i in range(seq))
    r = reach(X_s)  # (seq, seq)
    reaches += [r[i, j].item() for i in range(seq) for j in range(seq) if sentence[i] != sentence[j]]
print(f"longest/shortest embedding over 20 tables: {min(ratios):.2f} to {max(ratios):.2f}")
print(f"largest reach of one word along another, over 20 tables: {max(reaches):.2f}")
assert diag_is_max == 20 and min(ratios) > 1.02 and max(reaches) < 0.5
print(f"✓ lengths differ, yet the diagonal is the row maximum in every row, in {diag_is_max} of 20 tables")

# %% [markdown]
# What saves the diagonal here is the angle, not the lengths. Random 512-dimensional vectors are nearly
# perpendicular (lesson 02: $\cos\theta$ has standard deviation $1/\sqrt{512}$), so every reach is small
# (printed above) and a word would need to be many times longer than another to reach past it. Two vectors of
# lengths 1 and 2 keep the diagonal too when they are perpendicular, $x_1 = (1, 0)$, $x_2 = (0, 2)$; and so
# do 200 random sets of six 512-dimensional embeddings whose lengths are spread by ±20%. From six equal lengths,
# one word must be stretched to many times its length before the diagonal loses a row (printed below). Then the rule
# itself is an identity (divide $x_i \cdot x_j \le |x_i|^2$ by $|x_i|^2$), so the last check in the collapsed cell below only
# illustrates it, on 1000 small random sets (in 1, 2, 3 or 8 dimensions, each vector scaled by a random
# factor between 0.2 and 5) where the diagonal often loses, sometimes wins against a much longer vector.

# %%
_, A_perp = self_attention(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))  # (2, 2): lengths 1 and 2, perpendicular
print(A_perp.numpy().round(4))
assert torch.equal(A_perp.argmax(dim=-1), torch.arange(2)), "the diagonal wins both rows"
print("✓ the diagonal wins both rows, though the vectors' lengths differ")

# %% tags=["hide-input"]
gen = torch.Generator().manual_seed(3)
kept = 0
for _ in range(200):
    X_t = torch.randn(seq, d_model, generator=gen, dtype=torch.float64)  # (seq, d_model)
    spread = torch.empty(seq, 1, dtype=torch.float64).uniform_(0.8, 1.2, generator=gen)  # (seq, 1)
    X_t = X_t / X_t.norm(dim=-1, keepdim=True) * math.sqrt(d_model) * spread  # lengths sqrt(512) +- 20%
    kept += bool(torch.equal(self_attention(X_t)[1].argmax(dim=-1), torch.arange(seq)))
assert kept == 200
print(f"✓ lengths spread by +-20%: the diagonal is the row maximum in every row of {kept} of 200 random sets")

gen_f, stretch = torch.Generator().manual_seed(4), []  # stretch: how far one word stretches before a row is lost
for _ in range(200):
    X_t = torch.randn(seq, d_model, generator=gen_f, dtype=torch.float64)  # (seq, d_model)
    X_t = X_t / X_t.norm(dim=-1, keepdim=True) * math.sqrt(d_model)  # all lengths sqrt(512)
    cos = (X_t @ X_t.T / d_model).fill_diagonal_(-1)  # (seq, seq) cosines between different words
    i, j = divmod(int(cos.argmax()), seq)  # the closest pair: x_j reaches past x_i once |x_j| > |x_i| / cos
    stretch.append(1 / cos[i, j].item())
    for factor, keeps in ((0.99, True), (1.01, False)):  # just short of that boundary, just past it
        X_f = X_t.clone()
        X_f[j] *= factor * stretch[-1]
        diag_wins = self_attention(X_f)[1].argmax(dim=-1) == torch.arange(seq)  # (seq,)
        assert bool(diag_wins.all()) == keeps and (keeps or not diag_wins[i]), "lost exactly past the boundary"
assert min(stretch) > 3
print(
    f"✓ from six equal lengths, the diagonal keeps every row until one word is stretched to {min(stretch):.1f} to "
    f"{max(stretch):.1f} times its length (over 200 random sets), and loses a row just past that point"
)

rows = agree = lost = won_though_shorter = 0  # won_though_shorter: another vector is twice as long
for trial in range(1000):
    d, n = [1, 2, 3, 8][trial % 4], 2 + trial % 5  # dimension 1, 2, 3 or 8; 2..6 vectors
    X_t = torch.randn(n, d, generator=gen, dtype=torch.float64)  # (n, d)
    X_t = X_t * torch.empty(n, 1, dtype=torch.float64).uniform_(0.2, 5.0, generator=gen)  # each scaled by 0.2..5
    wins = self_attention(X_t)[1].argmax(dim=-1) == torch.arange(n)  # (n,) the diagonal is the row maximum
    r = reach(X_t).fill_diagonal_(-math.inf)  # (n, n) reach of every other vector
    predicted = r.max(dim=-1).values < 1  # (n,) every reach below 1
    lengths = X_t.norm(dim=-1)  # (n,)
    rows, agree, lost = rows + n, agree + int((wins == predicted).sum()), lost + int((~wins).sum())
    won_though_shorter += int((wins & (2 * lengths < lengths.max())).sum())
assert agree == rows and lost > 100 and won_though_shorter > 100  # agree == rows could fail only on a float tie
print(
    f"✓ in {rows} rows of 1000 random sets the diagonal lost {lost}, each time to a reach above 1, "
    f"and won {won_though_shorter} rows where another vector is over twice as long"
)

# %% [markdown]
# So the diagonal loses exactly when some $x_j$ reaches past $x_i$: a longer vector ($|x_j| > |x_i|$) whose
# direction is close enough to that of $x_i$ ($\cos\theta_{ij} > |x_i| / |x_j|$). The smallest counterexample
# is one-dimensional: $a = 1$, $b = 2$. Then $a \cdot a = 1 < a \cdot b = 2$ (a reach of 2), so row $a$ is
# $\operatorname{softmax}(1, 2)$ and $a$ attends more to $b$ than to itself.

# %%
P1 = torch.tensor([[1.0], [2.0]])  # (seq=2, d_model=1): a and b
_, A1 = self_attention(P1)  # (2, 2)
print(A1.numpy().round(4))
assert A1[0, 1] > A1[0, 0] and abs(reach(P1)[0, 1] - 2) < 1e-4, "row a: b reaches twice as far along a as a itself"
assert torch.allclose(A1[0], torch.softmax(torch.tensor([1.0, 2.0]), dim=-1))
print("✓ row a is softmax(1, 2): a puts more weight on b, which reaches twice as far along a, than on itself")

# %% [markdown]
# The same in our sentence: give LOVELY a longer embedding that points partly along YOUR (related words
# have related embeddings), $x_{LOVELY} \leftarrow x_{LOVELY} + 1.2\,x_{YOUR}$. Its reach along YOUR becomes
# $1.2 + x_{LOVELY} \cdot x_{YOUR} / |x_{YOUR}|^2$, above 1 because the second term is small, so YOUR attends
# to LOVELY, not to itself — in this table and in all 20.

# %%
X_long = X.clone()  # (seq, d_model)
X_long[4] = X[4] + 1.2 * X[0]  # (d_model,) longer, and aligned with YOUR
_, A_long = self_attention(X_long)  # (seq, seq)
print("lengths:", X_long.norm(dim=-1).numpy().round(1))
print("row YOUR:", A_long[0].numpy().round(4))
assert A_long[0].argmax() == 4 and A_long[0, 4] > A_long[0, 0]
print("✓ row YOUR: the longer LOVELY gets the largest weight, more than YOUR itself")

# %% tags=["hide-input"]
for s in range(20):
    X_s = token_embeddings(sentence, d_model, seed=s)  # (seq, d_model)
    X_s[4] = X_s[4] + 1.2 * X_s[0]  # (d_model,)
    assert self_attention(X_s)[1][0].argmax() == 4 and reach(X_s)[0, 4] > 1
print("✓ counterexample: LOVELY reaches past YOUR, and YOUR's largest weight is on LOVELY, in all 20 tables")

# %% [markdown]
# ## Sources
#
# - Vaswani et al. (2017), "Attention Is All You Need", NeurIPS: section 2 (self-attention, "intra-attention"),
#   section 3.2 (the definition of attention), section 3.2.1 and equation 1 (scaled dot-product attention),
#   section 3.2.2 (the projections $W^Q_i, W^K_i, W^V_i, W^O$ and $d_k = d_{model}/h = 64$), section 3.2.3 (the
#   uses of attention), section 3.4 (embeddings times $\sqrt{d_{model}}$), section 3.5 (why positional encoding), section 4 (restricted self-attention, with
#   Table 1; what trained heads learn).
# - Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong): the query over a memory of
#   key–value pairs with weights 0.6, 0.1, 0.2, 0.1.
# - Slide deck "Transformers / Attention is all you need": the YOUR CAT IS A LOVELY CAT example, its
#   attention matrix ("all values are random"), the dictionary analogy, "requires no parameters … This will
#   change later", the sentence corrected here ("permutation invariant") and the one qualified here ("We
#   expect values along the diagonal to be the highest": true of its parameter-free attention unless a longer
#   vector's direction is close enough to win ($\cos\theta_{ij} > |x_i| / |x_j|$); with random $W_q \ne W_k$, section 5, the diagonal is no longer special).
# - Reading notes on the paper (June 2020): the `bmm` self-attention and "permutation equivariant".
