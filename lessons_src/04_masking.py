# %% [markdown]
# # 04 · Masking
#
# **Goals.** By the end of this lesson you can
#
# - remove a key from attention exactly, with a score of $-\infty$ before the softmax;
# - build a padding mask for a batch of sentences of different lengths;
# - build a decoder's causal mask, and fix the COMP7607 slides' version of it;
# - test for leakage: with the causal mask, the future cannot change the past;
# - say why letting position $i$ see itself leaks nothing: the decoder's input is shifted right;
# - combine causal and padding masks, and know what a query with nothing to attend to returns.
#
# **Prerequisites.** [03 · Self-attention](03_self_attention.ipynb).
#
# **Conventions.** A sentence is a matrix `(T, d_model)`, one row per token. A mask is a boolean tensor,
# `True` = *may attend*, broadcastable to the scores' shape `(..., T_q, T_k)`, as in
# `torch.nn.functional.scaled_dot_product_attention`. (`torch.nn.MultiheadAttention` uses the opposite:
# `True` = *may not*.) Each numbered section has a **Predict**: write your guess before the cell that
# settles it, run that cell, then check your guess.

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
import itertools
import math

import numpy as np
import torch
import torch.nn.functional as F

from utils.attention import scaled_dot_product_attention
from utils.course.exercises import lesson04 as check
from utils.experiments.attention_map import MASK_KINDS, attention_map
from utils.experiments.next_token import CausalAttentionLM, chance, fit_next_token, shift_right
from utils.figures.plotting import plot_attention, plot_attention_explorer
from utils.figures.widgets import attention_explorer
from utils.masks import causal_mask, combine_masks, padding_mask

torch.set_printoptions(precision=4, sci_mode=False)
np.set_printoptions(precision=4, suppress=True)
SEEDS = range(5)  # a claim about random draws in general is checked over these five seeds

# %% [markdown]
# ## 1. $-\infty$ before the softmax removes a position exactly
#
# **Predict first.** Four keys all have the score 0, so each gets weight ¼. Set key 2's score to
# $-\infty$. What weight does key 0 get now?

# %%
my_guess_weight = None  # your answer: a number between 0 and 1

# %% [markdown]
# $\mathrm{softmax}(s)_j = e^{s_j} / \sum_l e^{s_l}$. With $s_j = -\infty$, $e^{s_j} = 0$: key $j$ gets
# weight exactly 0, and the other weights renormalise among themselves, as if key $j$ had never been
# there. This is how the paper masks the decoder (section 3.2.3): "We need to prevent leftward information
# flow in the decoder to preserve the auto-regressive property. We implement this inside of scaled
# dot-product attention by masking out (setting to $-\infty$) all values in the input of the softmax which
# correspond to illegal connections." (The YOUR CAT slide deck uses the same $-\infty$ before the softmax.)

# %%
equal = torch.zeros(4)  # (T_k,) four equal scores
equal[2] = float("-inf")  # remove key 2
w_equal = torch.softmax(equal, dim=-1)  # (T_k,)
print("weights with key 2 removed:", w_equal.numpy().round(4))
assert abs(w_equal[0].item() - check.predict_weight_after_removal.reference) < 1e-6

# %%
check.predict_weight_after_removal(my_guess_weight)

# %% [markdown]
# The same on random scores:

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
# with a mask that is False at key 2. A score of 0 instead of $-\infty$ does *not* remove the
# key ($e^0 = 1$).

# %% tags=["hide-input"]
full = torch.softmax(s, dim=-1)  # (T_k,)
zeroed = full * torch.tensor([1.0, 1, 0, 1, 1], dtype=torch.float64)  # (T_k,)
assert torch.allclose(w, zeroed / zeroed.sum())
mask = torch.tensor([True, True, False, True, True])  # (T_k,) True = may attend
q, k = s[None, :], torch.eye(5, dtype=torch.float64) * math.sqrt(5)  # scores q·k_j/√5 = s_j
_, w_utils = scaled_dot_product_attention(q, k, k, mask)  # (1, T_k)
assert torch.allclose(w_utils[0], w)
print("✓ -inf at key 2 = softmax, zero key 2, renormalise = utils with the mask False at key 2")
zero_score = s.clone()  # (T_k,)
zero_score[2] = 0.0
print("weight of key 2 with score 0 instead of -inf:", round(torch.softmax(zero_score, -1)[2].item(), 4))

# %% [markdown]
# Both facts for 5 seeds and 5 numbers of keys, removing a random key each time:

# %% tags=["hide-input"]
zero_score_weights = []
for seed, T_k in zip(SEEDS, (3, 5, 8, 13, 40)):
    g = torch.Generator().manual_seed(seed)
    s_r = torch.randn(T_k, generator=g, dtype=torch.float64) * 3  # (T_k,) scores
    j = int(torch.randint(T_k, (1,), generator=g))
    others = [l for l in range(T_k) if l != j]
    w_r = torch.softmax(s_r.index_fill(0, torch.tensor([j]), float("-inf")), dim=-1)  # (T_k,)
    assert w_r[j] == 0.0 and torch.allclose(w_r[others], torch.softmax(s_r[others], dim=-1))
    zero_score_weights.append(torch.softmax(s_r.index_fill(0, torch.tensor([j]), 0.0), dim=-1)[j].item())
assert min(zero_score_weights) > 0
print("✓ -inf: weight exactly 0 and the rest renormalised, for 5 of 5 seeds (T_k = 3 to 40)")
print(f"✓ score 0: the key keeps a weight between {min(zero_score_weights):.3f} and {max(zero_score_weights):.3f}")

# %% [markdown]
# ## 2. Padding masks
#
# Sentences in a batch have different lengths, but a tensor is rectangular: we pad the short ones with a
# `<pad>` token (id 0). The pad tokens are not words, so no query may attend to them: the padding mask is
# True on real tokens, with shape `(batch, 1, T)` so that it broadcasts over every query row of the
# scores `(batch, T_q, T_k)`. The paper omits them; batching needs them.

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
print("✓ padding_mask is the by-hand mask: True exactly on the real tokens, shape (batch, 1, T)")

# %% [markdown]
# Embed the tokens (a seeded embedding table, $d_{model} = 16$) and run masked self-attention. The
# weights of "THE CAT SAT":

# %% tags=["nbval-ignore-output"]
d_model = 16
torch.manual_seed(0)
embedding = torch.nn.Embedding(len(vocab), d_model)
with torch.no_grad():
    x = embedding(tokens)  # (batch, T, d_model)
out, weights = scaled_dot_product_attention(x, x, x, pad_mask)  # (batch, T, d_model), (batch, T, T)
print(weights[1].numpy().round(3))

# %% tags=["hide-input"]
assert torch.all(weights.masked_select(~pad_mask.expand(3, T, T)) == 0), "no query attends to a pad"
assert (weights.sum(-1) - 1).abs().max() < 1e-6
print("✓ no query attends to a pad, and every row of weights sums to 1")

# %%
fig = plot_attention(
    tokens=["THE", "CAT", "SAT", "<pad>", "<pad>", "<pad>"],
    weights=weights[1].numpy(),
    mask=pad_mask[1].expand(T, T).numpy(),
    title="THE CAT SAT, padding mask",
)

# %% [markdown]
# **Predict.** The batch has 3 × 6 = 18 positions: 11 real tokens and 7 pads. Replace every pad vector by
# something wild and run the masked attention again. How many of the 18 outputs change?

# %%
my_guess_changed = None  # your answer: a whole number from 0 to 18

# %% [markdown]
# Five wild replacements, with the mask and without it:

# %%
real = tokens != 0  # (batch, T)
out_nomask, _ = scaled_dot_product_attention(x, x, x)  # (batch, T, d_model)
changes_masked, changes_nomask, moved = [], [], []
for seed in SEEDS:
    g = torch.Generator().manual_seed(seed)
    wild = torch.randn(x.shape, generator=g) * 100  # (batch, T, d_model)
    x_wild = torch.where(real[..., None], x, wild)  # (batch, T, d_model) same words, different pads
    out_wild, _ = scaled_dot_product_attention(x_wild, x_wild, x_wild, pad_mask)  # (batch, T, d_model)
    out_nomask_wild, _ = scaled_dot_product_attention(x_wild, x_wild, x_wild)  # (batch, T, d_model)
    changes_masked.append((out_wild - out)[real].abs().max().item())
    changes_nomask.append((out_nomask_wild - out_nomask)[real].abs().max().item())
    moved.append((out_wild - out).abs().amax(dim=-1) > 1e-6)  # (batch, T) outputs that changed
print("outputs that change, with the mask (1 = changed):\n", moved[0].int())
assert max(changes_masked) < 1e-6 and min(changes_nomask) > 0.1
assert all(torch.equal(m, ~real) for m in moved)
assert int(moved[0].sum()) == check.predict_outputs_changed_by_pads.reference
print(f"✓ with the mask, new pads change none of the {int(real.sum())} real outputs, in 5 of 5 seeds")
print("✓ without it, they change the real outputs too, in 5 of 5 seeds")

# %%
check.predict_outputs_changed_by_pads(my_guess_changed)

# %% [markdown]
# The mask removes the pads as *keys*; each pad is still a *query*, and its output is meaningless (later
# lessons leave it out of the loss). The real outputs do not depend on the pads' values as long as they
# are finite and small enough that no score overflows. The largest changes, seed by seed:

# %% tags=["nbval-ignore-output"]
print("masked:  ", [f"{c:.1e}" for c in changes_masked])
print("no mask: ", [f"{c:.2f}" for c in changes_nomask])

# %% [markdown]
# > **Going further:** an `inf` or NaN pad puts NaN into the real outputs even with the mask; see
# > [the end of the lesson](#Going-further).

# %% [markdown]
# ## 3. The causal mask
#
# A decoder generates one word at a time, so while training, position $i$ must not see the words after
# it. The COMP7607 slides (lecture 4, "Transformer as Decoder") write this as
#
# $$e_{ij} = \begin{cases} q_i^\top k_j, & j < i \\ -\infty, & j \geq i \end{cases}$$
#
# with a table for "Happy mid autumn festival" whose first row is all $-\infty$. Let us run exactly that.

# %%
words = ["Happy", "mid", "autumn", "festival"]
n = len(words)
gen = torch.Generator().manual_seed(1)
qk = torch.randn(n, 8, generator=gen, dtype=torch.float64)  # (n, d_k) queries = keys = values
scores = qk @ qk.T / math.sqrt(8)  # (n, n)
e = scores.clone()  # (n, n)
for i in range(n):
    for j in range(n):
        if j >= i:  # the slides' rule
            e[i, j] = float("-inf")
slides_weights = torch.softmax(e, dim=-1)  # (n, n)
print(slides_weights.numpy().round(4))

# %% [markdown]
# The first row is all $-\infty$: the softmax computes $0/0$ = **NaN**. And $j \ge i$ also removes the
# diagonal, so no other word can see itself either (for "mid", the whole distribution sits on "Happy").

# %% tags=["hide-input"]
assert torch.isnan(slides_weights[0]).all(), "row 0 is NaN"
assert not torch.isnan(slides_weights[1:]).any() and torch.all(slides_weights.diagonal()[1:] == 0)
assert slides_weights[1, 0] == 1.0
print("✓ j < i: row 0 is NaN, the diagonal is 0, and 'mid' puts weight 1 on 'Happy'")

# %% [markdown]
# **Predict.** A NaN row flows into a loss over every position. So leave position 0 out: train with a loss
# over positions 1–3 only, which is finite. The value projection `W_v` is 8 × 8. How many of the 64
# entries of its gradient are NaN?

# %%
my_guess_nan = None  # your answer: a whole number from 0 to 64

# %% [markdown]
# Five initialisations of the smallest model with a trainable $W_v$ (a query and a value projection; the
# keys are left as they are):

# %%
slides_mask = torch.ones(n, n, dtype=torch.bool).triu()  # (n, n) True where the slides put -inf (j >= i)
nan_grads = []
for seed in SEEDS:
    torch.manual_seed(seed)
    # two trainable maps (weights and biases), a query and a value projection; the keys stay qk itself
    W_q, W_v = torch.nn.Linear(8, 8, dtype=torch.float64), torch.nn.Linear(8, 8, dtype=torch.float64)
    e_q = (W_q(qk) @ qk.T / math.sqrt(8)).masked_fill(slides_mask, float("-inf"))  # (n, n)
    out_q = torch.softmax(e_q, dim=-1) @ W_v(qk)  # (n, 8)
    loss = out_q.square().sum()  # (,) a loss over every position
    loss_later = out_q[1:].square().sum()  # (,) a loss over positions 1-3 only
    loss_later.backward()
    assert torch.isnan(loss) and torch.isfinite(loss_later)
    nan_grads.append(int(W_v.weight.grad.isnan().sum()))
print("NaN entries in W_v's gradient (loss over positions 1-3), per seed:", nan_grads, "of", W_v.weight.numel())
assert nan_grads == [W_v.weight.numel()] * 5 and nan_grads[0] == check.predict_nan_gradient_entries.reference
print("✓ the loss over positions 1-3 is finite, yet every entry of W_v's gradient is NaN, in 5 of 5 initialisations")

# %%
check.predict_nan_gradient_entries(my_guess_nan)

# %% [markdown]
# Backprop multiplies row 0's NaN weights by that row's zero gradient, and $0 \cdot \text{NaN} = \text{NaN}$.
# The paper's rule (section 3.2.3) keeps the diagonal: "self-attention layers in the decoder allow each
# position in the decoder to attend to all positions in the decoder up to and including that position."
# So position $i$ may attend to every $j \le i$, itself included, and gets $-\infty$ only for $j > i$ (the
# step "Mask (opt.)" between the scaling and the softmax in the paper's Figure 2). By hand, then
# `utils.masks.causal_mask`:

# %%
naive_causal = torch.zeros(n, n, dtype=torch.bool)  # (n, n)
for i in range(n):
    for j in range(n):
        naive_causal[i, j] = j <= i
print(naive_causal.int())
assert torch.equal(causal_mask(n), naive_causal)
print("✓ causal_mask is the by-hand mask: True exactly where j <= i")

# %%
out_c, causal_weights = scaled_dot_product_attention(qk, qk, qk, causal_mask(n))  # (n, d_k), (n, n)
print(causal_weights.numpy().round(4))
assert not torch.isnan(causal_weights).any()
assert torch.allclose(causal_weights.sum(-1), torch.ones(n, dtype=torch.float64))
assert torch.all(causal_weights.triu(1) == 0) and causal_weights[0, 0] == 1, "Happy sees only itself"
print("✓ j <= i: no NaN, rows sum to 1, nothing above the diagonal, 'Happy' sees only itself")
fig = plot_attention(words, causal_weights.numpy(), mask=causal_mask(n).numpy(), title="causal mask, j ≤ i")

# %% [markdown]
# ## 4. A leakage test
#
# If the mask works, changing the tokens after position $t$ cannot change any output at positions
# $\le t$. We check it for every $t$, through two stacked attention layers with their own random
# $W_q, W_k, W_v$ (a decoder is a stack: the mask must hold through all of it), for 5 initialisations
# and inputs. Without the mask, the past changes.
#
# **Predict first.** After this test we take each 6-token input and change only the token at position 2
# (the third), leaving the other five as they were. With the causal mask, how many of the 6 outputs
# change?

# %%
my_guess_outputs = None  # your answer: a whole number from 0 to 6


# %%
def decoder_stack(x, mask, layers):
    """Attention(xW_q, xW_k, xW_v) with a residual, once per layer: (T, d_model) -> (T, d_model)."""
    for W_q, W_k, W_v in layers:
        x = x + scaled_dot_product_attention(W_q(x), W_k(x), W_v(x), mask)[0]  # (T, d_model)
    return x


T_dec = 6
stacks = []  # (layers, input) per seed
for seed in SEEDS:
    torch.manual_seed(seed)
    layers = [[torch.nn.Linear(d_model, d_model, dtype=torch.float64) for _ in range(3)] for _ in range(2)]
    x_dec = torch.randn(T_dec, d_model, dtype=torch.float64)  # (T, d_model)
    stacks.append((layers, x_dec))
    y_dec = decoder_stack(x_dec, causal_mask(T_dec), layers)  # (T, d_model)
    y_open = decoder_stack(x_dec, None, layers)  # (T, d_model)
    for t in range(T_dec - 1):
        changed = x_dec.clone()  # (T, d_model)
        changed[t + 1 :] = torch.randn(T_dec - t - 1, d_model, dtype=torch.float64)  # a new future
        assert torch.allclose(decoder_stack(changed, causal_mask(T_dec), layers)[: t + 1], y_dec[: t + 1]), t
        assert not torch.allclose(decoder_stack(changed, None, layers)[: t + 1], y_open[: t + 1])
        assert torch.allclose(decoder_stack(x_dec[: t + 1], causal_mask(t + 1), layers), y_dec[: t + 1]), t
print(f"✓ causal: no leakage for any t in 0..{T_dec - 2}, in 5 of 5 seeds; without the mask, the past changes")
print("✓ causal: outputs 0..t equal a pass over tokens 0..t alone, for every t")

# %% [markdown]
# Now the prediction: change only token 2 of each input and list the output rows that move.

# %%
moved_causal, moved_open = [], []
g = torch.Generator().manual_seed(0)
for layers, x_dec in stacks:
    changed = x_dec.clone()  # (T, d_model)
    changed[2] = torch.randn(d_model, generator=g, dtype=torch.float64)  # a new token 2, the others kept
    for mask, moved_rows in ((causal_mask(T_dec), moved_causal), (None, moved_open)):
        diff = decoder_stack(changed, mask, layers) - decoder_stack(x_dec, mask, layers)  # (T, d_model)
        moved_rows.append((diff.abs().amax(dim=-1) > 1e-9).nonzero().flatten().tolist())
print(f"outputs that change with the causal mask: {moved_causal[0]} ({len(moved_causal[0])} of {T_dec})")
print(f"outputs that change without the mask:     {moved_open[0]} ({len(moved_open[0])} of {T_dec})")
assert all(m == [2, 3, 4, 5] for m in moved_causal) and all(m == list(range(T_dec)) for m in moved_open)
assert len(moved_causal[0]) == check.predict_changed_outputs.reference
print("✓ a new token 2 changes outputs 2 to 5 with the mask and all 6 without it, in 5 of 5 stacks")

# %%
check.predict_changed_outputs(my_guess_outputs)

# %% [markdown]
# The same fact as a picture of dependencies: the Jacobian block $\partial y_t / \partial x_s$ is zero
# whenever $s > t$ (and not zero for $s \le t$), so the matrix of their norms is lower triangular, for
# each of the 5 stacks:

# %%
for layers, x_dec in stacks:
    J = torch.autograd.functional.jacobian(
        lambda x: decoder_stack(x, causal_mask(T_dec), layers), x_dec
    )  # (T, d, T, d)
    dependence = J.abs().sum(dim=(1, 3))  # (T, T): row t, column s
    assert torch.equal(dependence > 0, causal_mask(T_dec))
print((dependence > 0).int())
print("✓ y_t depends on x_s exactly when s <= t, in 5 of 5 stacks")

# %% [markdown]
# ## 5. Seeing yourself leaks nothing: the input is shifted right
#
# The causal mask lets position $i$ see itself. Is that not a leak? It depends on what sits at position
# $i$ of the decoder's input. The paper (section 3.1): the masking, "combined with fact that
# the output embeddings are offset by one position, ensures that the predictions for position $i$ can
# depend only on the known outputs at positions less than $i$." Its Figure 1 labels that input
# "Outputs (shifted right)": the model is "auto-regressive [10], consuming the previously generated symbols"
# (section 3).
#
# Take the Chinese greeting 中秋节快乐 and its translation "Happy mid autumn festival". The decoder
# must predict the target $y = (y_1, \dots, y_5)$ = (Happy, mid, autumn, festival, `<eos>`). Its input
# is the target **shifted right** by one, $(y_0, y_1, \dots, y_4)$ with $y_0 = \langle bos \rangle$.
# Position $i$ (counted from 1 like the $y_i$) holds $y_{i-1}$, sees $y_{<i}$, and predicts $y_i$:

# %%
target = ["Happy", "mid", "autumn", "festival", "<eos>"]  # y_1 .. y_T, what the decoder must predict
decoder_input = ["<bos>"] + target[:-1]  # <bos>, y_1 .. y_{T-1}, what it reads
T_y = len(target)
mask_y = causal_mask(T_y)  # (T_y, T_y)
print(f"{'i':>2}  {'holds':9} {'mask row':9} {'position i sees':32} predicts")
for i in range(T_y):  # Python counts from 0; the table counts from 1, like y_1 .. y_T
    seen = " ".join(decoder_input[j] for j in range(T_y) if mask_y[i, j])
    row = "".join(str(int(m)) for m in mask_y[i])
    print(f"{i + 1:>2}  {decoder_input[i]:9} {row:9} {seen:32} {target[i]}")

# %% [markdown]
# Training feeds the decoder the true target, shifted (**teacher forcing**), and one pass gives all $T$
# next-word predictions at once: by section 4's test, output $i$ under the causal mask is what a pass over
# positions $\le i$ alone would give, so there is no need to run the decoder $T$ times.
# `utils.experiments.next_token.shift_right(targets, bos_id)` does the same to token ids. (Lesson 07
# gets it from `utils.translator.train.shift_targets`, whose targets already start with `<bos>`.)

# %% tags=["hide-input"]
ids = {word: idx for idx, word in enumerate(["<bos>"] + target)}
target_ids = torch.tensor([ids[word] for word in target])  # (T_y,)
assert shift_right(target_ids, bos_id=ids["<bos>"]).tolist() == [ids[word] for word in decoder_input]
print("✓ shift_right(target) is <bos> followed by the target without its last token")

# %% [markdown]
# The same for every position, and without the shift, every position sees its own answer:


# %% tags=["hide-input"]
def targets_seen(holds, mask):
    """For each position i, the indices of the targets it can read through the mask."""
    return [holds[mask[i]].tolist() for i in range(len(holds))]


# holds[j]: the index of the target at input position j, counting from 0 (-1 marks <bos>)
shifted = targets_seen(shift_right(torch.arange(T_y), bos_id=-1), mask_y)
unshifted = targets_seen(torch.arange(T_y), mask_y)
assert all(max(seen) < i for i, seen in enumerate(shifted))
assert [i for i, seen in enumerate(unshifted) if i in seen] == list(range(T_y))
print("✓ shifted: position i sees only y_<i; unshifted: all 5 positions see their own answer")

# %% [markdown]
# Would a model use that answer? Train the smallest decoder there is,
# `utils.experiments.next_token.CausalAttentionLM`: an embedding plus PE, one causally masked attention
# layer and a linear read-out (no residual). The data are **uniformly random** tokens (8 kinds, 6 per
# sequence): there is nothing to learn, so an honest model cannot beat chance, accuracy $1/8$ and
# cross-entropy $\ln 8$. Train 300 steps, for 5 seeds, with and without the shift (the loss covers
# every position), and measure at every position of 1000 sequences drawn after training:

# %%
acc_chance, ce_chance = chance(8)
results = {shift: [fit_next_token(shift=shift, seed=seed) for seed in SEEDS] for shift in (True, False)}


def accuracy_range(runs):
    """'min to max' of the accuracies and of the cross-entropies of (accuracy, cross-entropy) runs."""
    accs, ces = [a for a, _ in runs], [c for _, c in runs]
    return f"accuracy {min(accs):.3f} to {max(accs):.3f}, cross-entropy {min(ces):.3f} to {max(ces):.3f}"


# %% tags=["nbval-ignore-output"]
print(f"chance: accuracy {acc_chance:.3f}, cross-entropy {ce_chance:.3f}")
for shift, runs in results.items():
    print(f"{'shifted  ' if shift else 'unshifted'}: {accuracy_range(runs)} over 5 seeds")

# %% tags=["hide-input"]
assert all(abs(a - acc_chance) < 0.03 and c > ce_chance - 0.02 for a, c in results[True])
assert all(a > 0.95 and c < 0.2 for a, c in results[False])
print("✓ shifted: at chance, in 5 of 5 seeds")
print("✓ unshifted: almost always right on random tokens, in 5 of 5 seeds: it copies its input")

# %% [markdown]
# Without the shift, the model has learned to copy the token at its own position, which the diagonal of
# the mask shows it. At generation time that token is exactly the one it has to produce, so there is
# nothing to copy. With the shift the same mask is honest.
#
# **Predict.** What if we keep the unshifted input but use the slides' mask, $j < i$, which hides the
# diagonal? Position $i$ can then no longer read $y_i$ as a key or a value. Will the model be at
# `"chance"`, `"between"` chance and copying, or still `"copies"`?

# %%
my_guess_leak = None  # your answer: "chance", "between" or "copies"

# %% [markdown]
# Train it (`strict=True` is the mask $j < i$; position 0, with nothing to attend to, gets zeros), 5 seeds:

# %%
strict_fits = [fit_next_token(shift=False, seed=seed, strict=True, per_position=True) for seed in SEEDS]
strict_runs = [(accuracy, cross_entropy) for accuracy, cross_entropy, _ in strict_fits]


def verdict(accuracy):
    """'chance', 'copies' or 'between' for a held-out accuracy on 8 kinds of random tokens."""
    return "chance" if abs(accuracy - acc_chance) < 0.03 else "copies" if accuracy > 0.95 else "between"


# %% tags=["nbval-ignore-output"]
print(f"j < i, unshifted: {accuracy_range(strict_runs)} over 5 seeds")

# %% tags=["hide-input"]
assert {verdict(a) for a, _ in strict_runs} == {check.predict_strict_mask_unshifted.reference}
assert all(a > acc_chance + 0.1 and c < ce_chance - 0.2 for a, c in strict_runs)
print("✓ j < i on an unshifted input beats chance, without copying, in 5 of 5 seeds")

# %%
check.predict_strict_mask_unshifted(my_guess_leak)

# %% [markdown]
# The leak goes through the **query**: position $i$'s query is built from $y_i$, and it decides how to
# weigh the earlier tokens. How far that gets, position by position: [Going further](#The-leak-through-the-query).

# %% [markdown]
# ## 6. Causal and padding masks together
#
# A decoder on a padded batch needs both: query $i$ may attend to key $j$ when $j \le i$ **and** $j$ is a
# real token. `utils.masks.combine_masks` takes the logical AND with broadcasting:
# `(T, T) & (batch, 1, T) -> (batch, T, T)`.

# %%
both = combine_masks(causal_mask(T), pad_mask)  # (batch, T, T)
naive_both = torch.zeros(len(sentences), T, T, dtype=torch.bool)  # (batch, T, T)
for b in range(len(sentences)):
    for i in range(T):
        for j in range(T):
            naive_both[b, i, j] = j <= i and tokens[b, j].item() != 0
assert torch.equal(both, naive_both)
print("✓ combine_masks is the by-hand mask: True exactly where j <= i and key j is a real token")
print("mask for 'THE CAT SAT':\n", both[1].int())

# %% [markdown]
# Lesson 06 puts these masks in the Transformer's three attentions: the encoder's self-attention takes
# the source padding mask; the decoder's self-attention the causal mask AND the target padding mask; and
# the cross-attention, whose queries come from the decoder and keys from the encoder, the source padding
# mask again: its shape `(batch, 1, T_src)` broadcasts over any number of queries. Four queries on our
# padded batch of 6 keys:

# %% tags=["hide-input"]
queries = torch.randn(len(sentences), 4, d_model, generator=torch.Generator().manual_seed(0))  # (batch, T_q, d_model)
_, cross_w = scaled_dot_product_attention(queries, x, x, pad_mask)  # (batch, T_q, T_k)
assert cross_w.shape == (3, 4, 6) and torch.all(cross_w.masked_select(~pad_mask.expand(3, 4, T)) == 0)
assert (cross_w.sum(-1) - 1).abs().max() < 1e-6
print("✓ 4 queries, 6 keys: the (batch, 1, T) padding mask keeps every query off the pads")

# %% [markdown]
# With pads on the right, every query still sees at least key 0, a real word. But batches for generation
# are often padded on the **left** (so that every sentence ends at the same position). Then the first
# query of a short sentence is a pad and may attend to nothing: a **fully-masked row**.

# %%
assert both.any(dim=-1).all()  # right padding: every query row has a key
left = torch.tensor([[0, 0, 0, vocab["THE"], vocab["CAT"], vocab["SAT"]]])  # (1, T) left-padded
left_mask = combine_masks(causal_mask(T), padding_mask(left, 0))  # (1, T, T)
with torch.no_grad():
    x_left = embedding(left)  # (1, T, d_model)
empty_rows = ~left_mask.any(dim=-1)  # (1, T)
print(left_mask[0].int())
print("queries with nothing to attend to:", empty_rows[0].nonzero().flatten().tolist())
assert empty_rows[0].tolist() == [True, True, True, False, False, False]

# %% [markdown]
# A plain softmax over an all $-\infty$ row gives NaN, as in section 3. Our `scaled_dot_product_attention`
# returns **zero weights and a zero output** for such a row (the query attends to nothing), with no NaN
# in the forward or backward pass. Its first 4 rows and features:

# %% tags=["nbval-ignore-output"]
x_req = x_left.clone().requires_grad_()  # (1, T, d_model)
ours, ours_w = scaled_dot_product_attention(x_req, x_req, x_req, left_mask)  # (1, T, d_model), (1, T, T)
ours.sum().backward()
print(ours[0, :4, :4].detach().numpy().round(4))
plain = torch.softmax((x_left @ x_left.transpose(-2, -1)).masked_fill(~left_mask, float("-inf")), dim=-1)  # (1, T, T)
print("a plain softmax, row 0:", plain[0, 0].numpy())

# %% tags=["hide-input"]
assert torch.all(ours[0, :3] == 0) and torch.all(ours_w[0, :3] == 0)
assert not torch.isnan(ours).any() and not torch.isnan(x_req.grad).any()
assert torch.isnan(plain[0, :3]).all() and not torch.isnan(plain[0, 3:]).any()
for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
    x_typed = x_left.to(dtype, copy=True).requires_grad_()  # (1, T, d_model) a copy in that type
    out_typed, w_typed = scaled_dot_product_attention(x_typed, x_typed, x_typed, left_mask)
    out_typed.float().sum().backward()
    assert torch.all(out_typed[0, :3] == 0) and torch.all(w_typed[0, :3] == 0), dtype
    assert not torch.isnan(out_typed).any() and not torch.isnan(x_typed.grad).any(), dtype
print("✓ plain softmax: NaN in rows 0-2; utils: exact zeros there, and finite gradients")
print("✓ the same zeros, with no NaN, in float16, bfloat16, float32 and float64")

# %% [markdown]
# `F.scaled_dot_product_attention` (same mask convention as ours) does the same, in the torch version this
# lesson pins (printed first):

# %% tags=["nbval-ignore-output"]
torch_out = F.scaled_dot_product_attention(x_left, x_left, x_left, attn_mask=left_mask)  # (1, T, d_model)
print("torch", torch.__version__)
print(torch_out[0, :4, :4].numpy().round(4))

# %% tags=["hide-input"]
assert (torch_out[0] == 0).all(dim=-1).tolist() == [True, True, True, False, False, False]
assert (torch_out - ours.detach()).abs().max() < 1e-6
print("✓ F.scaled_dot_product_attention also returns zeros for the fully-masked rows, and equals utils elsewhere")

# %% [markdown]
# Some code masks with a large finite number, such as $-10^9$, instead of $-\infty$, often by *adding* a
# mask of 0s and $-10^9$s to the scores. On a row with at least one key, $e^{-10^9}$ is 0 in float32 and
# nothing changes. On a fully-masked row every score becomes $s - 10^9$; float32 numbers near $10^9$ are
# 64 apart, so each rounds to $-10^9$ (while $|s| < 32$), every key gets the same score, and the softmax
# is **uniform**: $1/6$ on every key, the three pads and the future words THE CAT SAT alike. The row
# silently breaks the causal mask as well. Now float16, a 2-byte format used to save memory, whose largest
# finite number is 65504.
#
# **Predict.** Build the same mask ($-10^9$ where masked, 0 where allowed), convert it to float16 and add
# it to float16 scores. What does the softmax give on a fully-masked row: `"uniform"`, `"nan"` or
# `"zeros"`?

# %%
my_guess_fp16 = None  # your answer: "uniform", "nan" or "zeros"


# %%
def row_kind(rows):
    """What softmax rows hold: 'nan', 'zeros', 'uniform' (every entry equal, summing to 1) or 'other'."""
    if torch.isnan(rows).all():
        return "nan"
    if (rows == 0).all():
        return "zeros"
    return "uniform" if torch.allclose(rows.float(), torch.full(rows.shape, 1 / rows.shape[-1]), atol=1e-3) else "other"


scores_left = x_left[0] @ x_left[0].T / math.sqrt(d_model)  # (T, T) float32
minus_1e9 = torch.zeros(T, T).masked_fill(~left_mask[0], -1e9)  # (T, T) float32: 0 or -1e9
w32 = torch.softmax(scores_left + minus_1e9, dim=-1)  # (T, T)
w16 = torch.softmax(scores_left.half() + minus_1e9.half(), dim=-1)  # (T, T) float16
print("row 0 in float32:", w32[0].numpy().round(4))
print("-1e9 stored in float16:", minus_1e9.half().min().item())
print("rows 0-2 in float32:", row_kind(w32[:3]), "| in float16:", row_kind(w16[:3]))

# %% tags=["hide-input"]
spacing = (torch.tensor(1e9).nextafter(torch.tensor(2e9)) - 1e9).item()  # the next float32 after 1e9, minus 1e9
assert torch.allclose(w32[0], torch.full((T,), 1 / T)), "1/6 on every key, the future words THE CAT SAT too"
assert minus_1e9.half().min().item() == float("-inf") and torch.finfo(torch.float16).max == 65504
assert spacing == 64 and scores_left[:3].abs().max() < spacing / 2
assert torch.all((scores_left + minus_1e9)[:3] == -1e9)  # float32 rounds every s - 1e9 to -1e9
w_inf = torch.softmax(scores_left.masked_fill(~left_mask[0], float("-inf")), dim=-1)  # (T, T)
assert torch.equal(w32[3:], w_inf[3:])  # rows with a key: -1e9 and -inf give the same weights in float32
assert row_kind(w32[:3]) == "uniform" and row_kind(w16[:3]) == check.predict_float16_masked_row.reference
assert torch.allclose(w16[3:].float(), w32[3:], atol=1e-3)  # rows with a key: the same in both
print(f"✓ float32 numbers near 1e9 are {spacing:.0f} apart, and rows 0-2 hold scores within ±32,")
print("  so an added -1e9 makes rows 0-2 uniform in float32, 1/6 on every key, the future ones too")
print("✓ in float16 -1e9 becomes -inf and rows 0-2 are NaN")
print("✓ rows 3-5 get the same weights from -1e9 as from -inf, and in float16 as in float32")

# %%
check.predict_float16_masked_row(my_guess_fp16)

# %% [markdown]
# So an added $-10^9$ gives a uniform row in float32 (while the scores are within $\pm 32$) and NaN in
# float16. Our `scaled_dot_product_attention` uses $-\infty$ and treats an empty row explicitly: a query
# that may attend to nothing receives nothing, zeros, in every float type.
#
# > **Going further:** $-10^9$ in float64 and through `masked_fill`; and `torch.nn.MultiheadAttention`,
# > which returns NaN or zeros for the same rows, depending on its flags. See
# > [the end of the lesson](#Going-further).

# %% [markdown]
# ## The explorer, with its mask control
#
# The attention-map explorer of lesson 03 has a mask dropdown: none, causal, padding (tokens equal to
# `<pad>`) and causal+padding. Masked cells are dotted and have weight 0. Every row that may attend to at
# least one key sums to 1; a row with nothing to attend to (a sentence that starts with `<pad>`, under
# causal+padding) is all zeros. Checked on two sentences, with every mask kind:

# %% tags=["hide-input"]
for sentence in ("YOUR CAT IS A LOVELY CAT <pad> <pad>", "<pad> YOUR CAT IS"):
    for kind in MASK_KINDS:
        w_map, m_map = attention_map(sentence, mask_kind=kind)  # (T, T), (T, T)
        allowed = m_map.any(-1)  # (T,) rows with at least one key
        assert torch.all(w_map[~m_map] == 0) and torch.all(w_map[~allowed] == 0)
        assert (w_map[allowed].sum(-1) - 1).abs().max() < 1e-6
print("✓ masked cells are 0; rows with a key sum to 1; rows with none are all zeros")

# %% [markdown]
# Its state with both masks on a padded sentence:

# %%
fig = plot_attention_explorer("YOUR CAT IS A LOVELY CAT <pad> <pad>", mask_kind="causal+padding", query=5)

# %% [markdown]
# Now live (on GitHub the widget is not live; run the notebook):

# %% tags=["nbval-ignore-output"]
attention_explorer("YOUR CAT IS A LOVELY CAT <pad> <pad>", mask_kind="causal+padding", query=5)

# %% [markdown]
# ## Summary
#
# - A score of $-\infty$ before the softmax gives that key weight exactly 0; the rest renormalise. A
#   score of 0 does not remove anything.
# - Padding mask: `(batch, 1, T)`, True on real tokens. It removes pads as keys: the real outputs do not
#   depend on the pads' values (finite, small enough that no score overflows); the pads' own outputs do.
# - Causal mask: True for $j \le i$. The COMP7607 slides' $j < i$ turns the first row into NaN, and
#   through backprop every entry of the value projection's gradient.
# - With the causal mask the future cannot change the past, through a whole stack of layers.
# - Seeing itself leaks nothing because the decoder's input is the target shifted right. Without the
#   shift a model copies its answer; with the slides' $j < i$ and no shift it still beats chance,
#   through its query.
# - Masks combine with a logical AND. A fully-masked row: plain softmax → NaN; an added $-10^9$ mask →
#   uniform in float32 while the scores are within ±32 (they round away), NaN once cast to float16;
#   `utils.attention.scaled_dot_product_attention` → zeros, as does `F.scaled_dot_product_attention` in
#   the torch version this lesson pins.
#
# ## Exercises
#
# Replace `raise NotImplementedError` with your code and run the cell. `check.masked_softmax.hint()` gives
# a hint, `check.masked_softmax.solution()` one solution (likewise for the others). Each cell uses only its
# own arguments. Exercises 2 to 4 build masks this lesson did not show, all in its convention: a bool
# tensor with one row per query $i$ and one column per key $j$, `True` = may attend.


# %% tags=["hide-input"]
from utils.course.exercises import lesson04 as check

# the examples the exercises below give are true (checked on the reference answers): a window of width
# 3, a window as wide as the sentence, an empty prefix
assert check.sliding_window_mask.reference(6, 3)[5].nonzero().flatten().tolist() == [3, 4, 5]
assert torch.equal(check.sliding_window_mask.reference(6, 6), causal_mask(6))
assert torch.equal(check.prefix_lm_mask.reference(6, 0), causal_mask(6))

# %% [markdown]
# **1.** A masked softmax over the last dimension: scores `(..., T_k)` and a bool mask of the same shape.
# Masked keys get weight 0, the others renormalise, and a row with no allowed key gives all zeros (no
# NaN).


# %%
def masked_softmax(scores, mask):
    raise NotImplementedError


check.masked_softmax(masked_softmax)

# %% [markdown]
# **2. A sliding window.** A model can let each token attend only to its recent past. The mask alone
# saves nothing, since the full score matrix is still computed; a kernel that skips the masked blocks
# bounds the cost on long texts. Build the causal mask of width `w`: query $i$ may attend to itself and the $w - 1$ tokens before it
# (with `w = 3`, query 5 sees keys 3, 4 and 5). With `w >= n` it is the causal mask of section 3.


# %%
def sliding_window_mask(n, w):
    raise NotImplementedError


check.sliding_window_mask(sliding_window_mask)

# %% [markdown]
# **3. A prefix language model.** The first `prefix_len` tokens are a prompt that is read all at once:
# every query may attend to the **whole** prefix (in both directions), and after the prefix the mask is
# causal. A prefix query sees no key after the prefix. With `prefix_len = 0` it is the causal mask.


# %%
def prefix_lm_mask(n, prefix_len):
    raise NotImplementedError


check.prefix_lm_mask(prefix_lm_mask)

# %% [markdown]
# **4. Packed sentences.** To spend no work on padding, a training batch can pack several sentences into
# one row: `lengths = [4, 3]` is a row of 7 tokens, sentence 0 at positions 0–3 and sentence 1 at 4–6. Build
# the mask for `T = sum(lengths)` tokens: causal **within** each sentence, and no query may attend to
# another sentence. The checker tries one to four sentences.


# %%
def packed_causal_mask(lengths):
    raise NotImplementedError


check.packed_causal_mask(packed_causal_mask)

# %% [markdown]
# ## Going further
#
# Three detours for when a NaN or a silently broken mask turns up in practice, and a fourth on how far
# section 5's query leaks.
#
# ### Pads that are not finite
#
# The padding mask protects the real outputs only from pads whose values are finite and small enough that
# no score overflows. A pad made entirely of `inf`,
# $-\infty$ or NaN turns the real outputs of its sentence into NaN, in two ways. As a key, its score is
# NaN: the dot product of a real query (whose entries have both signs) with an all-`inf` key adds
# $+\infty$ and $-\infty$ terms, and $\infty - \infty$ is NaN; adding the mask's $-\infty$ does not remove
# a NaN, so the softmax makes every weight of the row NaN. As a value alone (keys finite), it does get
# weight 0, but $0 \cdot \infty$ and $0 \cdot \text{NaN}$ are NaN:

# %% tags=["hide-input"]
padded = real & (~real).any(-1, keepdim=True)  # (batch, T): real tokens of the sentences that have pads
for bad in (float("inf"), float("-inf"), float("nan")):
    x_bad = torch.where(real[..., None], x, torch.tensor(bad))  # (batch, T, d_model) pads all `bad`
    raw_scores = x @ x_bad.transpose(-2, -1)  # (batch, T, T) real queries, bad keys
    out_key, w_key = scaled_dot_product_attention(x_bad, x_bad, x_bad, pad_mask)  # (batch, T, d_model), (batch, T, T)
    out_val, w_val = scaled_dot_product_attention(x, x, x_bad, pad_mask)  # (batch, T, d_model), (batch, T, T)
    assert torch.isnan(raw_scores.masked_select(real[:, :, None] & ~real[:, None, :])).all()
    assert torch.isnan(w_key[padded]).all() and torch.isnan(out_key[padded]).all()
    assert torch.isfinite(w_val).all() and (w_val.masked_select(~pad_mask.expand(3, T, T)) == 0).all()
    assert torch.isnan(out_val[padded]).all()
print(
    "✓ pads of inf, -inf or NaN as keys: every score of a real query with a pad is NaN, so are its weights and output"
)
print("✓ as values alone: every pad weight is 0, and every real output of a padded sentence is still NaN")

# %% [markdown]
# ### $-10^9$ in float64, and through `masked_fill`
#
# Section 6 added a $-10^9$ mask to float32 and float16 scores. In float64, numbers near $10^9$ are
# far closer together than 64, so the scores survive the addition, and a fully-masked row is the softmax
# of the *unmasked* scores: the row attends to everything, the future included. `masked_fill`, which
# *replaces* the scores by $-10^9$, gives uniform rows in float32 and float64, and refuses $-10^9$ on a
# float16 tensor:

# %% tags=["hide-input"]
one_e9 = torch.tensor(1e9, dtype=torch.float64)
spacing64 = (one_e9.nextafter(2 * one_e9) - one_e9).item()  # the next float64 after 1e9, minus 1e9
w64 = torch.softmax(scores_left.double() + minus_1e9.double(), dim=-1)  # (T, T) float64
assert spacing64 < 1e-6
assert torch.allclose(w64[:3], torch.softmax(scores_left.double()[:3], dim=-1))  # float64: as if unmasked
assert row_kind(w64[:3]) == "other" and torch.all(w64[:3] > 0)
for dtype in (torch.float32, torch.float64):
    filled = torch.softmax(scores_left.to(dtype).masked_fill(~left_mask[0], -1e9), dim=-1)  # (T, T)
    assert row_kind(filled[:3]) == "uniform"
try:
    scores_left.half().masked_fill(~left_mask[0], -1e9)
    fill = "works"
except RuntimeError as err:
    fill = f"RuntimeError ({err})"
assert fill.startswith("RuntimeError")
print(f"✓ float64 numbers near 1e9 are {spacing64:.1e} apart: an added -1e9 leaves rows 0-2 the softmax of")
print("  the unmasked scores, with weight on every key")
print("✓ masked_fill(-1e9), which replaces the scores, gives uniform rows in float32 and float64")
print("✓ masked_fill(-1e9) refuses a float16 tensor")

# %% [markdown]
# ### What `torch.nn.MultiheadAttention` does with a fully-masked row
#
# Section 6's left-padded sentence, through `torch.nn.MultiheadAttention` (whose boolean `attn_mask`
# means the opposite, True = *may not* attend, so we pass `~left_mask`), called as by default, with
# `need_weights=True`:

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
mha = torch.nn.MultiheadAttention(d_model, num_heads=1, batch_first=True)
mha_out, mha_w = mha(x_left, x_left, x_left, attn_mask=~left_mask)  # (1, T, d_model), (1, T, T)
print(mha_out[0, :4, :4].detach().numpy().round(4))

# %% [markdown]
# NaN in rows 0–2. That answer depends on a flag that seems to be only about what is returned: with
# `need_weights=False`, `nn.MultiheadAttention` returns no weights and computes the attention through
# `F.scaled_dot_product_attention`. The same inputs, both flags, in training and in evaluation mode
# (with gradients on, as in training):

# %% tags=["nbval-ignore-output"]
mha_runs = {}  # (mode, need_weights) -> (output (1, T, d_model), weights (1, T, T) or None)
for mode in ("train", "eval"):
    mha.train(mode == "train")
    for need_weights in (True, False):
        mha_runs[mode, need_weights] = mha(x_left, x_left, x_left, attn_mask=~left_mask, need_weights=need_weights)
print(mha_runs["eval", False][0][0, :4, :4].detach().numpy().round(4))  # need_weights=False, eval mode


# %% tags=["hide-input"]
for (mode, need_weights), (out_mha, w_mha) in mha_runs.items():
    held = row_kind(out_mha[0, :3])
    print(
        f"{mode:5} mode, need_weights={need_weights!s:5}: rows 0-2 {held}, weights",
        w_mha if w_mha is None else row_kind(w_mha[0, :3]),
    )
    assert held == ("nan" if need_weights else "zeros")
    assert not torch.isnan(out_mha[0, 3:]).any()
    assert (out_mha[0, 3:] - mha_out[0, 3:]).abs().max() < 1e-6  # rows 3-5: the same for every flag and mode
print("✓ with gradients on: NaN with need_weights=True, zeros with need_weights=False, in both modes")
print("✓ rows 3-5 are finite and the same for all four")

# %% [markdown]
# There is a third answer. `nn.MultiheadAttention` takes a fused inference "fast path", and with
# `need_weights=False` the rows are NaN again, when all of these hold:
#
# - evaluation mode, and nothing needs a gradient (under `torch.no_grad()`, as when a trained model is
#   used, or with frozen parameters and an input that does not require one);
# - self-attention: query, key and value are the same tensor;
# - batched (3-D), batch-first input, an **even** number of heads, a boolean mask;
# - the module's default options (bias on, no `add_zero_attn` or `bias_k`/`bias_v`, `kdim` = `vdim` =
#   `embed_dim`).
#
# The same input through a fresh module with 1, 2, 4, 8 and 16 heads (every head count that divides
# $d_{model} = 16$), in evaluation mode, `need_weights=False`, in six settings: gradients on,
# `torch.no_grad()`, frozen parameters (`requires_grad_(False)`), `torch.no_grad()` with a copy of the
# input as key and value, `torch.no_grad()` with the same mask as floats (0 where allowed, $-\infty$
# where masked; a 3-D `attn_mask` must have one mask per sequence *and head*, so we pass the 2-D mask of
# our one sequence), and `torch.no_grad()` with the sequence unbatched, shape `(T, d_model)`:

# %%
no_grad_runs = {}  # (num_heads, setting) -> what rows 0-2 hold
for num_heads in (1, 2, 4, 8, 16):
    torch.manual_seed(0)
    mha_h = torch.nn.MultiheadAttention(d_model, num_heads=num_heads, batch_first=True).eval()
    settings = ("gradients on", "no_grad", "frozen", "no_grad, key a copy", "no_grad, float mask", "no_grad, unbatched")
    for setting in settings:
        mha_h.requires_grad_(setting != "frozen")
        query = x_left[0] if setting.endswith("unbatched") else x_left  # (T, d_model) or (1, T, d_model)
        key = x_left.clone() if setting.endswith("copy") else query  # (1, T, d_model) or (T, d_model)
        blocked = ~left_mask[0]  # (T, T) True where masked, torch's convention
        if setting.endswith("float mask"):
            blocked = torch.zeros(blocked.shape).masked_fill(blocked, float("-inf"))  # (T, T) 0 or -inf
        with torch.set_grad_enabled(not setting.startswith("no_grad")):
            out_h, _ = mha_h(query, key, key, attn_mask=blocked, need_weights=False)  # (1, T, d_model) or (T, d_model)
        no_grad_runs[num_heads, setting] = row_kind(out_h.reshape(T, d_model)[:3])
nan_runs = [run for run, held in no_grad_runs.items() if held == "nan"]
print("rows 0-2 are NaN in:", nan_runs)
print(f"and zeros in the other {sum(held == 'zeros' for held in no_grad_runs.values())} of {len(no_grad_runs)}")

# %% tags=["hide-input"]
assert not x_left.requires_grad
assert nan_runs == [(num_heads, setting) for num_heads in (2, 4, 8, 16) for setting in ("no_grad", "frozen")]
assert all(held == "zeros" for run, held in no_grad_runs.items() if run not in nan_runs)
print("✓ need_weights=False, eval mode: NaN only with an even number of heads (2, 4, 8, 16), nothing needing a")
print("  gradient, a boolean mask, one batched tensor as query, key and value")
print("✓ the same mask as floats, a copy of the input as key and value, or an unbatched input gives zeros")

# %% [markdown]
# Those zeros are the attention's zeros plus the bias of the output projection $W^O$, which
# `nn.MultiheadAttention` sets to 0 when it is created. With another bias (as after training), the
# fully-masked rows hold that bias:

# %% tags=["hide-input"]
with torch.no_grad():
    mha.out_proj.bias.fill_(0.5)
    biased, _ = mha(x_left, x_left, x_left, attn_mask=~left_mask, need_weights=False)  # (1, T, d_model)
    mha.out_proj.bias.zero_()
assert (biased[0, :3] == 0.5).all()
print("✓ with out_proj.bias = 0.5, need_weights=False gives 0.5 in every entry of rows 0-2")

# %% [markdown]
# So the same situation gives zeros or NaN, depending on the function, on `need_weights`, and even on
# the number of heads and whether anything needs a gradient (in the torch version this lesson pins).
# `utils.attention.scaled_dot_product_attention` always gives zeros. A module with an output projection
# returns that projection's bias wherever its attention gives zeros, as `nn.MultiheadAttention` did above
# (lesson 05's `MultiHeadAttention` does the same).

# %% [markdown]
# ### The leak through the query
#
# Section 5's model with the mask $j < i$ on an unshifted input beats chance through its query.
# Position 0 has no key and position 1 has one, whose weight is 1 whatever the
# query, so the query can only help from position 2 on. What it can use: when $y_i$ already occurred
# among the earlier tokens, the query can put its weight on that copy and read $y_i$ from its value. On
# random tokens an earlier copy becomes likelier with $i$. As a yardstick (not a ceiling: the query
# can carry more), the exact accuracy of a rule
# that copies an earlier $y_i$ when there is one and otherwise guesses among the kinds not seen yet (from
# position 2 on; chance before), next to the trained models' accuracy:

# %%
# with k distinct kinds among y_<i, the rule is right with probability k/8 + (1 - k/8) / (8 - k) = (k + 1)/8
expected_distinct = [8 * (1 - (7 / 8) ** i) for i in range(6)]  # E[k] at position i, for 8 kinds
copy_rule = [acc_chance if i < 2 else (k + 1) / 8 for i, k in enumerate(expected_distinct)]

# %% tags=["nbval-ignore-output"]
by_position = np.array([per_position for _, _, per_position in strict_fits])  # (seeds, T)
print("position   copy rule   trained, min to max over 5 seeds")
for i in range(by_position.shape[1]):
    print(f"{i:>8}   {copy_rule[i]:9.3f}   {by_position[:, i].min():.3f} to {by_position[:, i].max():.3f}")

# %% tags=["hide-input"]
for i in range(2, 6):  # the rule applied to every y_i after every sequence of i earlier tokens
    hits = 0.0
    for prefix in itertools.product(range(8), repeat=i):
        seen = set(prefix)
        hits += sum(1.0 if y in seen else 1 / (8 - len(seen)) for y in range(8))  # copy, or guess an unseen kind
    assert abs(hits / 8 ** (i + 1) - copy_rule[i]) < 1e-12, i
mean_by_position = by_position.mean(axis=0)  # (T,)
assert np.all(np.abs(by_position[:, :2] - acc_chance) < 0.04)  # 1000 guesses each: chance give or take 4 sd
assert np.all(by_position[:, 2:] > acc_chance + 0.08)
assert np.all(np.diff(mean_by_position[2:]) > 0) and np.all(mean_by_position[2:] < np.array(copy_rule[2:]))
print(
    "✓ the copy rule's accuracy equals the rule applied to every token after every earlier sequence, positions 2 to 5"
)
print("✓ positions 0 and 1 at chance, positions 2 to 5 above it, in 5 of 5 seeds")
print("✓ averaged over the 5 seeds, accuracy rises from position 2 to 5, below the copy rule at each")

# %% [markdown]
# With $j < i$ and no residual, the query is the only way token $i$ reaches output $i$, and the route is
# open: change token $i$ alone in an untrained strict model, and output $i$ changes from position 2 on,
# while no earlier output does:

# %% tags=["hide-input"]
reached = []
for seed in SEEDS:
    torch.manual_seed(seed)
    lm = CausalAttentionLM(vocab_size=8, strict=True)
    y = torch.randint(0, 8, (1, 6))  # (1, T) unshifted input
    with torch.no_grad():
        for i in range(6):
            y_i = y.clone()  # (1, T)
            y_i[0, i] = (y_i[0, i] + 1) % 8  # a new token i, the others kept
            moved_out = ((lm(y_i) - lm(y))[0].abs().amax(dim=-1) > 1e-6).tolist()  # (T,) outputs that moved
            assert not any(moved_out[:i])
            if moved_out[i]:
                reached.append((seed, i))
assert reached == [(seed, i) for seed in SEEDS for i in range(2, 6)]
print("✓ with j < i, changing token i alone changes output i for i = 2 to 5, in 5 of 5 models")

# %% [markdown]
# ## Sources
#
# - Vaswani et al. (2017), "Attention Is All You Need", NeurIPS: section 3.1 (the decoder's masked
#   self-attention and the output embeddings offset by one position) and section 3.2.3 (masking by
#   setting illegal connections to $-\infty$ before the softmax).
# - Lecture slides "Transformers", HKU COMP7607 lecture 4 (Lingpeng Kong): the causal mask for "Happy
#   mid autumn festival", written with $j < i$, which this lesson corrects to $j \le i$.
# - Slide deck "Transformers / Attention is all you need": the YOUR CAT IS A LOVELY CAT example, and
#   setting scores to $-\infty$ before the softmax so that positions do not interact.
# - Reading notes on the paper (June 2020): "Masked self-attention in decoder: prevent looking
#   forward".
