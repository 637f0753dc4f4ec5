# %% [markdown]
# # 09 · Attention at inference and at scale, by hand: KV cache, online softmax, tiled attention
#
# The earlier lessons computed attention as the paper writes it: the whole score matrix
# $QK^\top/\sqrt{d_k}$, a softmax over each row, a product with $V$. That is exact, and wasteful in two
# places that matter in practice:
#
# - **at inference**, greedy decoding (lesson 07) re-runs the decoder over *every* target position at every
#   step, although the earlier positions' keys and values never change; a **key-value cache** keeps them;
# - **at scale**, the whole $T \times T$ score matrix is held in memory; a softmax computed
#   **online** (a running maximum and sum) lets attention go through the keys **tile by tile** without
#   that matrix: the idea behind FlashAttention (Dao et al., 2022).
#
# **Goals.**
# - Build a key-value cache for the translator's decoder: the same logits (to rounding), its time per
#   token, its bytes.
# - Find softmax's maximum and sum in one pass: a running maximum and sum.
# - Compute attention tile by tile, skipping the tiles a causal mask removes, and measure its memory as
#   $T$ grows.
#
# **Prerequisites.** Lessons 02 (softmax), 04 (masking), 05 (multi-head attention) and 07 (the toy translator).

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
# As in lesson 07, everything random is seeded and torch uses one thread, so that the order in which
# numbers are summed does not depend on the computer's cores.

# %%
import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # idle threads sleep: steadier timings on a busy computer

import dataclasses
import math
import statistics
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from utils.attention import scaled_dot_product_attention
from utils.course.exercises import lesson09 as check
from utils.fast_attention import (
    causal_skipped_tiles,
    decode_step,
    greedy_steps,
    grouped_query_attention,
    kv_cache_bytes,
    loglog_slope,
    online_softmax,
    peak_tensor_bytes,
    start_cache,
    tiled_attention,
    time_encoder,
    time_per_token,
)
from utils.figures.progress import NotebookProgressLine
from utils.figures.tile_widget import plot_tiles, tile_explorer
from utils.masks import causal_mask
from utils.multihead import merge_heads, split_heads
from utils.translator import recipe
from utils.translator.data import make_dataset, to_tensors
from utils.translator.decode import greedy_decode
from utils.translator.evaluate import evaluate
from utils.translator.model import Seq2SeqTransformer
from utils.translator.train import noam_lr, train

torch.set_num_threads(1)
torch.manual_seed(0)
COLORS = {
    "uncached": "#c44e52",
    "cached": "#4c72b0",
    "plain": "#c44e52",
    "key blocks": "#4c72b0",
    "tiles": "#55a868",
}  # one colour per variant across the lesson

# %% [markdown]
# ## 1. The key-value cache
#
# A translator to decode with: lesson 07's, trained again with a shorter recipe, and a longer positional
# table (the sinusoidal encoding is fixed, so this changes no weight) so that we can force outputs of 64
# tokens. The cell prints what changes from lesson 07, as (lesson 07, here): fewer steps over fewer
# sentences, and a shorter warm-up and doubled `factor` that raise the peak learning rate.

# %%
DATA = dict(recipe.DATA, n_train=8000)
MODEL = dataclasses.replace(recipe.MODEL, max_len=80)  # a TranslatorConfig
TRAIN = dict(recipe.TRAIN, steps=700, warmup=150, factor=1.0)
ds = make_dataset(**DATA)
all_src, all_tgt = to_tensors(ds.train, ds.src_vocab, ds.tgt_vocab)  # (N, S), (N, T)
BOS, EOS = ds.tgt_vocab.bos_id, ds.tgt_vocab.eos_id
torch.manual_seed(recipe.MODEL_SEED)
model = Seq2SeqTransformer(MODEL)
print({k: getattr(MODEL, k) for k in ("d_model", "num_heads", "num_layers", "max_len")}, "|", TRAIN["steps"], "steps")
print(
    "changed from lesson 07:",
    {
        "n_train": (recipe.DATA["n_train"], DATA["n_train"]),
        **{k: (recipe.TRAIN[k], TRAIN[k]) for k in TRAIN if TRAIN[k] != recipe.TRAIN[k]},
        "max_len": (recipe.MODEL.max_len, MODEL.max_len),
    },
)
peak_lr = {
    name: noam_lr(t["warmup"], MODEL.d_model, t["warmup"], t["factor"])
    for name, t in (("07", recipe.TRAIN), ("here", TRAIN))
}
print(
    f"peak learning rate: {peak_lr['here'] / peak_lr['07']:.2f} times lesson 07's; each training sentence seen "
    f"{TRAIN['steps'] * TRAIN['batch_size'] / DATA['n_train']:.1f} times (lesson 07: "
    f"{recipe.TRAIN['steps'] * recipe.TRAIN['batch_size'] / recipe.DATA['n_train']:.1f})"
)

# %% tags=["nbval-ignore-output"]
history = train(model, all_src, all_tgt, **TRAIN, progress=NotebookProgressLine)
result = evaluate(model, ds.test, ds.src_vocab, ds.tgt_vocab)
print(
    f"{TRAIN['steps']} steps in {history['seconds']:.1f} s; held-out exact match {result['exact_match']:.3f}, "
    f"token accuracy {result['token_accuracy']:.3f}"
)

# %% tags=["hide-input"]
assert result["exact_match"] >= 0.85 and result["token_accuracy"] >= 0.9
print("✓ the shorter recipe still translates most held-out sentences exactly")

# %% [markdown]
# **What greedy decoding recomputes.** The paper's Table 1 gives self-attention $O(1)$ sequential
# operations: that holds when the whole sequence is known, as in training. Decoding takes $n$ steps in a
# row, since token $t+1$ needs token $t$, so each step's cost matters. To choose token $t+1$, lesson 07's
# `greedy_decode` runs the decoder on all $t$ tokens so far and keeps only the last position's logits.
#
# **Predict.** For an output of $n = 64$ tokens, how many positions does each decoder layer process in
# all, without a cache? (A count below settles it.)

# %%
my_guess_positions = None  # your answer: a number of positions

# %% [markdown]
# Why may we keep the old ones? The decoder's self-attention layers "allow each position in the decoder to
# attend to all positions in the decoder up to and including that position", masked "to preserve the
# auto-regressive property" (§3.2.3), so appending a token changes nothing at the earlier positions: not
# their hidden states, hence not their keys $x W^K$ and values $x W^V$. Checked for a 5-token prefix and a
# 6th token appended. The decoder's input is built as in lesson
# 07 (embedding $\times \sqrt{d_{model}}$ plus PE), and `layer(h, memory, causal_mask, src_mask)` runs one decoder layer on
# the hidden states `h`, attending to the encoder output `memory`:

# %%
model.eval()
src1 = torch.tensor([ds.src_vocab.encode(ds.test[0].src, eos=True)])  # (1, S)
ys = torch.tensor([[BOS] + ds.tgt_vocab.encode(ds.test[0].tgt)[:5]])  # (1, 6): <bos> and 5 tokens
a = model.decoder.layers[0].self_attn  # the first layer's self-attention, used by hand below
with torch.no_grad():
    x6 = model.tgt_embed(ys) * math.sqrt(model.d_model) + model.pe[:6]  # (1, 6, d_model): decoder input
    x5 = model.tgt_embed(ys[:, :5]) * math.sqrt(model.d_model) + model.pe[:5]  # (1, 5, d_model): one token fewer
    memory1, src_mask1 = model.encode(src1)  # (1, S, d_model), (1, 1, S)
    h5, h6 = x5, x6  # each layer's input, without and with the 6th token
    assert len(model.decoder.layers) >= 2  # at least one layer where the check can fail
    for i, layer in enumerate(model.decoder.layers):
        sa = layer.self_attn
        if i > 0:  # the first layer's inputs are the same embeddings: equal by construction
            assert torch.allclose(sa.W_k(h6)[:, :5], sa.W_k(h5), rtol=0, atol=1e-5)  # keys of the first 5 positions
            assert torch.allclose(sa.W_v(h6)[:, :5], sa.W_v(h5), rtol=0, atol=1e-5)  # values
        h5 = layer(h5, memory1, causal_mask(5), src_mask1)  # (1, 5, d_model): the next layer's input
        h6 = layer(h6, memory1, causal_mask(6), src_mask1)  # (1, 6, d_model)
    k5, v5 = split_heads(a.W_k(x5), a.num_heads), split_heads(a.W_v(x5), a.num_heads)  # (1, h, 5, d_k)
print(
    f"✓ in every decoder layer after the first ({len(model.decoder.layers) - 1} of {len(model.decoder.layers)}), "
    "the first 5 positions' keys and values stay the same when a 6th token is appended "
    "(in the first layer they match by construction: the same 5 embeddings go in)"
)

# %% [markdown]
# **One cached step by hand** (the first layer's self-attention). The new position brings one query, one
# key and one value; the key and value are appended to the cache, and the query attends over the whole
# cache, with no causal mask (the cache holds no later position). The result is the last row of the full
# self-attention.

# %%
with torch.no_grad():
    x_new = x6[:, -1:]  # (1, 1, d_model): only the new position's input
    q_new = split_heads(a.W_q(x_new), a.num_heads)  # (1, h, 1, d_k)
    k_cache = torch.cat([k5, split_heads(a.W_k(x_new), a.num_heads)], dim=2)  # (1, h, 6, d_k): one row more
    v_cache = torch.cat([v5, split_heads(a.W_v(x_new), a.num_heads)], dim=2)  # (1, h, 6, d_k)
    scores = q_new @ k_cache.transpose(-2, -1) / math.sqrt(a.d_k)  # (1, h, 1, 6)
    by_hand = a.W_o(merge_heads(torch.softmax(scores, -1) @ v_cache))  # (1, 1, d_model)
    full, _ = a(x6, x6, x6, causal_mask(6))  # (1, 6, d_model): every position recomputed
print("cache after the step:", tuple(k_cache.shape), "keys and", tuple(v_cache.shape), "values")
assert torch.allclose(by_hand[:, 0], full[:, -1], rtol=0, atol=1e-5)
print("✓ one cached step equals the last row of the full causal self-attention")

# %% [markdown]
# **Cross-attention** is cached differently: its keys and values come from the encoder output (the memory),
# which does not change while we decode, so they are computed **once** per layer before the first step.
#
# `utils.fast_attention` does this for every layer: `start_cache(model, memory, src_mask)` computes the
# cross-attention keys and values and starts empty self-attention caches; `decode_step(model, cache, tokens)`
# feeds one new token per sentence, appends one row to each layer's self-attention keys and values, and
# returns the next-token logits. Three steps on two sentences:

# %%
src2, _ = to_tensors(ds.test[:2], ds.src_vocab, ds.tgt_vocab)  # (2, S)
with torch.no_grad():
    memory, src_mask = model.encode(src2)  # (2, S, d_model), (2, 1, S)
    cache = start_cache(model, memory, src_mask)
    print("cross-attention keys per layer:", tuple(cache.cross_k[0].shape), "(batch, heads, S, d_k), computed once")
    token = torch.full((2,), BOS)  # (2,)
    for step in range(3):
        logits = decode_step(model, cache, token)  # (2, vocab)
        token = logits.argmax(-1)  # (2,)
        print(f"after step {step + 1}: self-attention keys per layer {tuple(cache.self_k[0].shape)}")
assert cache.self_k[0].shape[2] == 3 and cache.cross_k[0].shape[2] == src2.shape[1]

# %% [markdown]
# **Your prediction, counted.** Each decoder layer's feed-forward sub-layer runs once per position it is
# given, so a forward hook on it counts the positions each layer processes, for $n$ = 8, 16, 32 and 64
# forced steps (`greedy_steps` ignores `<eos>`), without and with the cache. (The cache saves the
# projections and the feed-forward of earlier positions; step $t$'s query still reads all $t$ cached keys.)


# %% tags=["hide-input"]
test_src, _ = to_tensors(ds.test, ds.src_vocab, ds.tgt_vocab)  # (500, S)


def positions_processed(src, steps, use_cache):
    """Positions all decoder layers process in greedy_steps(model, src, BOS, steps), per sentence."""
    seen = []
    hooks = [
        layer.ff.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[1]))
        for layer in model.decoder.layers
    ]
    greedy_steps(model, src, BOS, steps, use_cache=use_cache)
    for hook in hooks:
        hook.remove()
    return sum(seen)


lengths, batch_src = [8, 16, 32, 64], test_src[:64]  # (64, S)
num_layers = len(model.decoder.layers)
for n in lengths:
    assert positions_processed(batch_src[:2], n, use_cache=False) == num_layers * n * (n + 1) // 2
    assert positions_processed(batch_src[:2], n, use_cache=True) == num_layers * n
without = positions_processed(batch_src[:2], 64, use_cache=False) // num_layers  # per layer, n = 64
assert without == check.positions_without_cache.reference
print(
    f"✓ for n = {lengths} steps, each decoder layer processes 1 + 2 + ... + n = n(n + 1)/2 positions without "
    f"the cache ({without} at n = 64) and n with it"
)

# %%
check.positions_without_cache(my_guess_positions)

# %% [markdown]
# **Cached = uncached.** The two paths multiply matrices of different shapes, so their logits may differ in
# the last bits; greedy decoding can then pick another word only where its two best logits nearly tie.
# Checked on the whole held-out set (`use_cache=True` against the plain decoder, each output cut at the
# longest reference's length + 5), and on 64 forced steps on 100 sentences.


# %% tags=["hide-input"]
@torch.no_grad()
def gap_at_first_difference(src, plain, cached):
    """For each sentence decoded differently: the gap between the two best logits (uncached) at the first
    step where the outputs differ."""
    gaps = []
    for i, (a, b) in enumerate(zip(plain, cached)):
        if a != b:
            j = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            memory, src_mask = model.encode(src[i : i + 1])  # (1, S, d_model), (1, 1, S)
            best = model.decode(torch.tensor([[BOS] + a[:j]]), memory, src_mask)[0, -1].topk(2).values  # (2,)
            gaps.append((best[0] - best[1]).item())
    return gaps


cap = max(len(pair.tgt) for pair in ds.test) + 5  # decoding steps: the longest reference's length + 5
plain = greedy_decode(model, test_src, BOS, EOS, max_len=cap)
cached = greedy_decode(model, test_src, BOS, EOS, max_len=cap, use_cache=True)
ids_plain, logits_plain = greedy_steps(model, test_src[:100], BOS, 64, use_cache=False)  # (100, 64), (100, 64, V)
ids_cached, logits_cached = greedy_steps(model, test_src[:100], BOS, 64, use_cache=True)
differ = ids_plain != ids_cached  # (100, 64)
first = torch.where(differ.any(1), differ.int().argmax(1), differ.shape[1])  # (100,): first step that differs
same_input = torch.arange(differ.shape[1]) <= first[:, None]  # (100, 64): every earlier token agrees
top2 = logits_plain.topk(2, dim=-1).values  # (100, 64, 2)
gaps_plain = top2[..., 0] - top2[..., 1]  # (100, 64): the two best logits' gap at every forced step
forced_gaps = gaps_plain[differ & same_input]  # at each first difference
held_out_gaps = gap_at_first_difference(test_src, plain, cached)  # one per held-out sentence that differs
tie = 2e-4  # a near tie: two logits that may each be off by up to 1e-4

# %% tags=["hide-input", "nbval-ignore-output"]
n_same = sum(a == b for a, b in zip(plain, cached))
print(
    f"on this run: {n_same} of {len(plain)} sentences decode identically; "
    + (
        "no near tie changed a token"
        if not held_out_gaps
        else f"the {len(held_out_gaps)} that differ first differ where the two best logits nearly tie"
    )
)
print(
    f"on this run: {int((~differ.any(1)).sum())} of {len(differ)} forced runs give identical tokens; the two best "
    f"logits nearly tie at {int((gaps_plain < tie).sum())} of {gaps_plain.numel()} steps"
)

# %% tags=["hide-input"]
assert all(gap < tie for gap in held_out_gaps)
print(
    f"✓ on all {len(plain)} held-out sentences, cached and uncached greedy decoding pick the same tokens up to any "
    f"near tie of the two best logits (each cut at {cap} tokens; uncapped, decoding could run to {model.max_len - 1})"
)
diff = (logits_plain - logits_cached).abs()  # (100, 64, V)
assert (diff[same_input] < 1e-4).all() and (forced_gaps < tie).all()
print(
    f"✓ {logits_plain.shape[1]} forced steps on {logits_plain.shape[0]} sentences: the same logits at every step "
    "whose earlier tokens agree, so the same tokens up to any near tie"
)

# %% [markdown]
# **Time per generated token.** We force $n$ = 8, 16, 32, 64 steps on 64 held-out sentences at once and
# divide the decoder's time by $n$, in three rounds. The encoder runs once per batch before the clock starts
# (it is the same with or without the cache; its time is printed apart). Without the cache step $t$
# processes $t$ positions, so the time per token grows with $n$; with it, one position per step, so the
# cache's advantage grows with $n$. The times are this run's:

# %% tags=["nbval-ignore-output"]
per_token = {mode: {n: [] for n in lengths} for mode in ("uncached", "cached")}  # seconds per token, per round
for _ in range(3):
    for mode, times in per_token.items():
        for n in lengths:
            times[n] += time_per_token(model, batch_src, BOS, n, use_cache=(mode == "cached"), repeats=1)
encoder_ms = 1000 * statistics.median(time_encoder(model, batch_src, repeats=3))
fig, ax = plt.subplots(figsize=(6, 3.6))
for mode, times in per_token.items():
    med = [1000 * statistics.median(times[n]) for n in lengths]
    ax.plot(lengths, med, "o-", color=COLORS[mode], label=mode)
    print(f"{mode:>8}: " + ", ".join(f"n={n}: {m:.2f} ms" for n, m in zip(lengths, med)))
ax.set_xlabel("output length n (forced steps)")
ax.set_ylabel("ms per generated token (median of 3)")
ax.set_xscale("log", base=2)
ax.set_title("Without a cache each token costs more as the output grows")
ax.legend()
plt.show()
speedup = statistics.median(per_token["uncached"][64]) / statistics.median(per_token["cached"][64])
print(f"the encoder, once per batch (not in the times above): {encoder_ms:.2f} ms")
print(f"at n = 64 the cache is {speedup:.1f}x faster per token (median of 3)")
growth = statistics.median(t64 / t8 for t64, t8 in zip(per_token["uncached"][64], per_token["uncached"][8]))
print(f"without the cache, a token costs {growth:.1f}x as much at n = 64 as at n = 8 (median over 3 rounds)")
slowest_cached, fastest_uncached = max(per_token["cached"][64]), min(per_token["uncached"][64])
print(
    f"on this run, at n = 64, the slowest cached run beats the fastest uncached one: {slowest_cached < fastest_uncached}"
)

# %% [markdown]
# ## 2. How big is the cache?
#
# Unlike a recurrent decoder, whose state keeps a fixed size (its work, Table 1's $O(n \cdot d^2)$ per
# layer, is $O(d^2)$ a step), the cache grows by one key and one value per layer with every token, and
# step $t$ reads all $t$ keys and values: $O(t \cdot d)$ on top of the $O(d^2)$ projections. Each decoder
# layer stores a key and a value (the 2) for each head, position and sentence, each a vector of $d_k$
# numbers:
#
# $$\text{bytes} = \text{layers} \times 2 \times \text{heads} \times d_k \times \text{length} \times
# \text{bytes per number} \;(\times\ \text{batch}).$$
#
# Checked against the cache after the 3 steps above (2 sentences, float32), and for the cross-attention
# cache, whose length is the source length $S$:

# %%
num_layers, attn = len(model.decoder.layers), model.decoder.layers[0].self_attn
num_heads, d_k = attn.num_heads, attn.d_k
self_formula = kv_cache_bytes(num_layers, num_heads, d_k, cache.length, 4, batch=2)
cross_formula = kv_cache_bytes(num_layers, num_heads, d_k, src2.shape[1], 4, batch=2)
print(
    f"self-attention: {num_layers} x 2 x {num_heads} x {d_k} x {cache.length} x 4 x 2 = "
    f"{self_formula} bytes; the tensors hold {cache.nbytes('self')}"
)
print(
    f"cross-attention: {num_layers} x 2 x {num_heads} x {d_k} x {src2.shape[1]} x 4 x 2 = "
    f"{cross_formula} bytes; the tensors hold {cache.nbytes('cross')}"
)
assert cache.nbytes("self") == self_formula and cache.nbytes("cross") == cross_formula
print("✓ the formula gives the cache's bytes exactly")

# %% [markdown]
# Our translator's cache is tiny. The paper describes no cache, but the one its base model (6 layers, 8 heads
# of $d_k = 64$) would need is small. It decodes "with a beam size of 4" (§6.1): a batch of 4 in the
# formula, each of at most "input length + 50" tokens (we assume a 50-token input, in float32). A large
# decoder-only model is another matter: 32 layers, 32 heads of $d_k = 128$, 4096 positions in 16-bit floats
# (2 bytes), one sequence, no cross-attention.

# %%
paper = kv_cache_bytes(6, 8, 64, 50 + 50, 4, batch=4)  # base model, beam of 4, 100 output tokens, float32
paper_cross = kv_cache_bytes(6, 8, 64, 50, 4, batch=4)  # its cross-attention cache: 50 source positions
big = kv_cache_bytes(32, 32, 128, 4096, 2)  # one sequence, float16
print(
    f"the paper's base model, a beam of 4 hypotheses of 100 tokens: self-attention {paper / 2**20:.1f} MiB, "
    f"cross-attention {paper_cross / 2**20:.1f} MiB (one copy per hypothesis), {(paper + paper_cross) / 2**20:.1f} MiB in all"
)
print(f"the large decoder, one sequence of 4096 positions: {big:,d} bytes = {big / 2**30:.0f} GiB")

# %% [markdown]
# **Predict.** Grouped-query attention (below) keeps the 32 query heads but gives them only 8 key/value
# heads, each shared by 4 query heads. How many MiB does the cache of one sequence of the large decoder take then?

# %%
my_guess_gqa_mib = None  # your answer: MiB per sequence, 8 key/value heads

# %% [markdown]
# **Multi-query and grouped-query attention** shrink it. Multi-query attention (Shazeer, 2019) gives all
# the query heads *one* shared key head and value head; grouped-query attention (Ainslie et al., 2023) has
# `num_kv_heads` key/value heads, each shared by `num_heads / num_kv_heads` query heads (whether the model
# stays as accurate is a question of training, not measured here). Query head $i$ reads key/value head $\lfloor i / (h/g) \rfloor$; with $g = h$ it is ordinary
# multi-head attention. Checked against torch's `enable_gqa`:

# %% tags=["hide-input"]
torch.manual_seed(1)
batch, h, T, d = 2, 8, 10, 16
q = torch.randn(batch, h, T, d)  # (batch, h, T, d_k): 8 query heads
for g in (8, 2, 1):  # multi-head, grouped-query (4 query heads per key head), multi-query
    k, v = torch.randn(batch, g, T, d), torch.randn(batch, g, T, d)  # (batch, g, T, d_k): g key/value heads
    ours = grouped_query_attention(q, k, v, causal_mask(T))  # (batch, h, T, d_k)
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert torch.allclose(ours, theirs, rtol=0, atol=1e-5)
    if g == h:  # torch's plain multi-head attention, without grouping
        assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=0, atol=1e-5)
print(f"✓ with g = 8, 2 and 1 key/value heads for {h} query heads: equal to torch; g = h is plain multi-head attention")

# %% [markdown]
# For the large decoder above, the formula with 8 key/value heads (grouped) or 1 (multi-query) instead of
# 32 (only the key/value heads are cached; the 32 query heads are not):

# %%
mib = {g: kv_cache_bytes(32, g, 128, 4096, 2) / 2**20 for g in (32, 8, 1)}  # MiB per sequence, g key/value heads
for g, size in mib.items():
    print(f"{g:2d} key/value head{'s' if g > 1 else ' '}: {size:6.0f} MiB per sequence")
assert mib[8] == check.gqa_cache_mib.reference

# %%
check.gqa_cache_mib(my_guess_gqa_mib)

# %% [markdown]
# ## 3. Online softmax: the maximum and the sum in one pass
#
# The safe softmax of lesson 02 subtracts the row's maximum before exponentiating, which takes
# three passes over the scores: find $m = \max_j s_j$, sum $l = \sum_j e^{s_j - m}$, write $e^{s_j - m}/l$.
#
# **Predict.** Skip the maximum: for the float32 scores $[1000, 999, -5]$, what does
# $e^{s_0} / \sum_j e^{s_j}$ give? A number, or `"inf"` or `"nan"`?

# %%
my_guess_naive = None  # your answer: a number, "inf" or "nan"

# %%
row = torch.tensor([1000.0, 999.0, -5.0])
print(
    "exp(s) / sum exp(s):",
    (row.exp() / row.exp().sum()).tolist(),
    "| torch.softmax:",
    [round(p, 4) for p in torch.softmax(row, 0).tolist()],
)
naive = (row.exp() / row.exp().sum())[0].item()
assert math.isnan(naive) and math.isnan(check.naive_softmax_overflow.reference)

# %%
check.naive_softmax_overflow(my_guess_naive)

# %% [markdown]
# The **online** softmax (Milakov and Gimelshein, 2018) finds the maximum and the sum *together*, reading
# each score once. Keep a running maximum $m$ and a running sum $l = \sum e^{s_j - m}$ over the scores seen so
# far. When a new score $x$ arrives, $m' = \max(m, x)$, and the old terms, which were $e^{s_j - m}$, must
# become $e^{s_j - m'}$: multiply them by $e^{m - m'}$.
#
# $$m' = \max(m, x), \qquad l' = l\, e^{m - m'} + e^{x - m'}$$
#
# Starting from $m = -\infty$, $l = 0$. By hand, on plain Python numbers:


# %%
def online_softmax_by_hand(scores):
    """softmax of a list of numbers: one pass for the maximum and the sum, then one to write the outputs."""
    m, l = -math.inf, 0.0
    for x in scores:
        m_new = max(m, x)
        if m_new == -math.inf:  # nothing allowed yet: keep l = 0 (avoids -inf - -inf = nan)
            continue
        l = l * math.exp(m - m_new) + math.exp(x - m_new)  # rescale the old terms, add the new one
        m = m_new
    if l == 0:  # every score was -inf (a fully masked row): our rule gives zeros, never NaN
        return [0.0] * len(scores)
    return [math.exp(x - m) / l for x in scores]


rows = {
    "random": torch.randn(12).tolist(),
    "huge scores": [1000.0, 999.0, 1e4, -5.0, 1e4 - 1],
    "very negative": [-1e4, -1e4 - 3, -2e4, -1e4 + 1],
    "rising (max changes every step)": [0.0, 1.0, 2.0, 50.0, 51.0],
    "with masked entries": [2.0, -math.inf, 0.5, -math.inf],
}
for r in rows.values():
    ours = torch.tensor(online_softmax_by_hand(r), dtype=torch.float64)
    assert torch.allclose(ours, torch.softmax(torch.tensor(r, dtype=torch.float64), 0), rtol=0, atol=1e-12)
masked = [-math.inf] * 4
print(
    "fully masked row:",
    online_softmax_by_hand(masked),
    "| torch.softmax:",
    torch.softmax(torch.tensor(masked), 0).tolist(),
)
assert online_softmax_by_hand(masked) == [0.0] * 4
print("✓ equal to torch.softmax on every row above; a fully masked row gives zeros")

# %% [markdown]
# torch's softmax of a fully masked row is NaN; ours follows this collection's rule (lesson 04): a query
# with nothing to attend to gets zero weights. `utils.fast_attention.online_softmax` does the same for
# every row of a tensor at once, reading the scores one column (or one block of columns) at a time:

# %% tags=["hide-input"]
g = torch.Generator().manual_seed(2)
for shape, block in (((4, 7), 1), ((3, 5, 33), 8), ((2, 64), 64), ((6, 1), 1)):
    s = torch.randn(shape, generator=g, dtype=torch.float64) * 50  # scores, some large
    mask = torch.rand(shape, generator=g) > 0.3  # (..., n): True = may attend
    mask[..., 0, :] = False  # one fully masked row
    expected = torch.softmax(s.masked_fill(~mask, float("-inf")), -1).nan_to_num(0.0)  # torch, then our rule
    assert torch.allclose(online_softmax(s, mask, block_size=block), expected, rtol=0, atol=1e-12)
print("✓ at four shapes and block sizes: equal to torch.softmax, and a fully masked row all zeros")

# %% [markdown]
# ## 4. Tiled attention: scores a tile at a time
#
# Attention needs more than the softmax: the output of query $i$ is $o_i = \sum_j p_{ij} v_j$. The running
# sum trick extends to it. Keep, for each query, a running output $a = \sum_j e^{s_j - m} v_j$ next to $m$
# and $l$; when a block of keys raises the maximum to $m'$, multiply $a$ and $l$ by $e^{m - m'}$ and add the
# block's terms; at the end, $o = a / l$. So we can go through the keys **block by block**, and the queries
# too, holding a few $B \times B$ matrices at a time (section 5 counts them) instead of the $T \times T$
# matrix. This is the core of FlashAttention (Dao et al., 2022), which also fuses the loop into one GPU
# kernel (Going further). By hand, for one head:


# %%
def tiled_by_hand(q, k, v, B):
    """softmax(q k^T / sqrt(d_k)) v for q (T_q, d_k), k (T_k, d_k), v (T_k, d_v), one B x B tile at a time."""
    out = torch.empty(q.shape[0], v.shape[1], dtype=q.dtype)  # (T_q, d_v)
    for i in range(0, q.shape[0], B):
        qi = q[i : i + B] / math.sqrt(q.shape[1])  # (b, d_k): one block of queries
        m = torch.full((qi.shape[0], 1), -math.inf, dtype=q.dtype)  # (b, 1) running maximum
        l = torch.zeros(qi.shape[0], 1, dtype=q.dtype)  # (b, 1) running sum of exp(s - m)
        acc = torch.zeros(qi.shape[0], v.shape[1], dtype=q.dtype)  # (b, d_v) running sum of exp(s - m) v
        for j in range(0, k.shape[0], B):
            s = qi @ k[j : j + B].T  # (b, b): one tile of scores
            m_new = torch.maximum(m, s.max(-1, keepdim=True).values)  # (b, 1)
            p = torch.exp(s - m_new)  # (b, b)
            l = l * torch.exp(m - m_new) + p.sum(-1, keepdim=True)  # rescale, then add this tile
            acc = acc * torch.exp(m - m_new) + p @ v[j : j + B]  # (b, d_v)
            m = m_new
        out[i : i + B] = acc / l
    return out


torch.manual_seed(3)
q, k, v = (torch.randn(50, 16, dtype=torch.float64) for _ in range(3))  # (T, d_k) each
for B in (1, 7, 16, 50):
    ours = tiled_by_hand(q, k, v, B)  # (50, 16)
    assert torch.allclose(ours, scaled_dot_product_attention(q, k, v)[0], rtol=0, atol=1e-12)
    assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v), rtol=0, atol=1e-12)
print("✓ tiled by hand (blocks of 1, 7, 16, 50) equals utils and torch's attention")

# %% [markdown]
# **The causal mask skips tiles.** With a causal mask, a tile whose every key comes after every query of
# the tile (all $j > i$) contributes nothing: it need not be computed at all.
#
# **Predict.** For $T = 1000$ and blocks of $B = 100$, how many of the tiles are skipped?

# %%
my_guess_skipped_tiles = None  # your answer: the number of tiles skipped, T = 1000, B = 100

# %% [markdown]
# `utils.fast_attention.tiled_attention` is the same loop over batches and heads at once, with the causal
# mask: a tile crossing the diagonal is masked entry by entry, a tile entirely above it is skipped and
# counted. It equals `utils` attention and `torch.nn.functional.scaled_dot_product_attention` at several
# shapes, with and without the mask, and the number of skipped tiles is $n(n-1)/2$ for $n = \lceil T/B \rceil$
# tiles a side (then checked for every small $T$ and $B$):

# %% tags=["hide-input"]
torch.manual_seed(4)
for (batch, h, T, d), B in (((1, 1, 1000, 8), 100), ((2, 4, 37, 16), 5), ((3, 2, 64, 8), 16), ((1, 2, 10, 4), 32)):
    q, k, v = (torch.randn(batch, h, T, d, dtype=torch.float64) for _ in range(3))  # (batch, h, T, d_k)
    for causal in (False, True):
        out, stats = tiled_attention(q, k, v, block_size=B, causal=causal, return_stats=True)
        mask = causal_mask(T) if causal else None
        assert torch.allclose(out, scaled_dot_product_attention(q, k, v, mask)[0], rtol=0, atol=1e-12)
        assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal), rtol=0, atol=1e-12)
        n = -(-T // B)
        assert stats["skipped"] == (causal_skipped_tiles(T, B) if causal else 0)
        assert stats["computed"] + stats["skipped"] == n * n
    if (T, B) == (1000, 100):
        assert stats["skipped"] == check.skipped_tiles.reference  # T = 1000, B = 100, causal
        skipped_1000 = stats["skipped"]
print(f"T = 1000, B = 100, causal: {skipped_1000} of {10 * 10} tiles skipped")
print("✓ at four shapes, with and without the causal mask: equal to utils and torch")
pairs = [(T, B) for T in range(1, 40) for B in range(1, 12)]
for T, B in pairs:
    q = torch.randn(1, 1, T, 2, dtype=torch.float64)  # (batch, h, T, d_k): only the tile counts matter here
    _, stats = tiled_attention(q, q, q, block_size=B, causal=True, return_stats=True)
    n = -(-T // B)
    assert stats["skipped"] == n * (n - 1) // 2 == causal_skipped_tiles(T, B)
    assert stats["computed"] + stats["skipped"] == n * n
print(f"✓ for all {len(pairs)} pairs T = 1..39, B = 1..11, the causal mask skips exactly n(n-1)/2 tiles")

# %%
check.skipped_tiles(my_guess_skipped_tiles)

# %% [markdown]
# The fraction of tiles skipped, $n(n-1)/2$ of $n^2$, is $(n-1)/(2n)$: it approaches one half as the sequence
# grows.
#
# **The tiles, one key block at a time.** The picture below is the explorer's starting state: $T = 32$ in
# tiles of 8 with the causal mask. Tiles entirely above the diagonal are skipped (grey); query blocks go in
# order, so the rows above are done; in query 20's row (outlined), key block 0 is done, block 1 is the
# current one, and the right panel shows that query's scores, those read so far, and its running maximum
# $m$.

# %%
fig = plot_tiles(T=32, block_size=8, causal=True, query=20, key_block=1)
plt.show()

# %% [markdown]
# **Tile explorer.** Change $T$, the block size and the mask; pick a query row and step through the key
# blocks: watch the running maximum jump when a block holds a larger score, and stop once the mask
# removes every later key.

# %% tags=["nbval-ignore-output"]
tile_explorer()

# %% [markdown]
# ## 5. Measuring the memory
#
# The paper's Table 1 gives self-attention $O(n^2 \cdot d)$ operations per layer for $n$ positions; the
# $n \times n$ score matrix behind that $n^2$ is also what fills memory. The paper's reason not to worry
# (§4, quoted in lesson 00): self-attention is faster than recurrence "when the sequence length $n$ is smaller
# than the representation dimensionality $d$, which is most often the case with sentence representations".
# Below, $T = 4096$ positions meet $d_k = 16$: far outside that case. Table 1's last row, self-attention
# restricted to "a neighborhood of size r" centred on each query (§4), costs $O(r \cdot n \cdot d)$ but
# raises the maximum path length to $O(n/r)$ (exercise 4 tiles a one-sided, causal window); tiles stay
# exact. How does the memory grow with $T$, with and without tiles? We measure it: `utils.fast_attention.peak_tensor_bytes` watches every operation torch runs, adds the bytes of
# each new tensor's storage and subtracts them when it is freed, and records the largest total. It counts
# the tensors the operations return, not the inputs (nor scratch memory inside one kernel). A first check,
# on a $100 \times 100$ float32 matrix:

# %% tags=["hide-input"]
assert peak_tensor_bytes(lambda: torch.zeros(100, 100)) == 4 * 100**2
assert peak_tensor_bytes(lambda: torch.zeros(100, 100) + 1) == 2 * 4 * 100**2  # two matrices alive at once
print("✓ one 100 x 100 float32 matrix measures 40000 bytes; a matrix plus a new one, 80000")

# %% [markdown]
# Now one head with $d_k = 16$ for $T$ = 256 … 4096, three ways: the plain computation (`utils` attention,
# as in lesson 03), tiled over **key blocks** only (all queries
# against 128 keys at a time: a $T \times 128$ slab of scores, as Rabe and Staats, 2021, chunk the keys),
# and tiled over **queries and keys** ($256 \times 256$ tiles).
#
# **Predict.** When $T$ doubles from 2048 to 4096, by what factor does the plain computation's peak memory
# grow?

# %%
my_guess_memory_growth = None  # your answer: a factor, e.g. 3.0

# %% tags=["nbval-ignore-output"]
# at d_k = 64 with blocks of 128, tiled_attention's inf/NaN check of its whole inputs would set the tiled peak
Ts, d = [256, 512, 1024, 2048, 4096], 16
peak = {"plain": [], "key blocks": [], "tiles": []}
for T in Ts:
    q, k, v = (torch.randn(1, T, d) for _ in range(3))  # (1, T, d_k) each
    peak["plain"].append(peak_tensor_bytes(scaled_dot_product_attention, q, k, v))
    peak["key blocks"].append(peak_tensor_bytes(tiled_attention, q, k, v, block_size=128, query_block=T))
    peak["tiles"].append(peak_tensor_bytes(tiled_attention, q, k, v, block_size=256))
slopes = {name: loglog_slope(Ts, p) for name, p in peak.items()}
fig, ax = plt.subplots(figsize=(6.4, 4))
for name, p in peak.items():
    ax.loglog(Ts, np.array(p) / 2**20, "o-", base=2, color=COLORS[name], label=f"{name}: slope {slopes[name]:.2f}")
ax.set_xlabel("sequence length T")
ax.set_ylabel("peak memory of the tensors created (MiB)")
ax.set_title("Plain attention grows like T², tiled like T or slower")
ax.legend()
plt.show()
for name, p in peak.items():
    print(f"{name:>10}: " + ", ".join(f"{b / 2**20:.2f}" for b in p), "MiB")
print(f"at T = {Ts[-1]}: plain / tiles = {peak['plain'][-1] / peak['tiles'][-1]:.0f}")
print("fitted log-log slopes:", ", ".join(f"{name} {slope:.2f}" for name, slope in slopes.items()))
print(
    f"at T = {Ts[0]}: tiles {peak['tiles'][0] / 2**20:.2f} MiB, plain {peak['plain'][0] / 2**20:.2f} MiB "
    f"(tiles / plain = {peak['tiles'][0] / peak['plain'][0]:.2f})"
)

# %% tags=["hide-input"]
assert 1.8 <= slopes["plain"] <= 2.2 and 0.8 <= slopes["key blocks"] <= 1.2 and slopes["tiles"] < 0.5
assert peak["plain"][-1] >= 10 * peak["tiles"][-1] and peak["tiles"][0] > peak["plain"][0]
growth = peak["plain"][-1] / peak["plain"][-2]  # T = 4096 against T = 2048
assert abs(growth - check.memory_growth.reference) < 0.1
print(
    f"✓ plain attention's memory grows like T², key blocks like T, tiles slower; at T = {Ts[-1]} the tiles "
    f"need a tenth of the plain memory or less, at T = {Ts[0]} more"
)
output_bytes = [4 * T * d for T in Ts]  # the output, T x d_v float32 numbers
fixed = [p - o for p, o in zip(peak["tiles"], output_bytes)]  # what the tiles need beyond the output
assert len(set(fixed[1:])) == 1 and fixed[-1] > output_bytes[-1]
print(
    f"✓ from T = {Ts[1]} on, the tiled peak is the output plus the same number of bytes at every T, more than "
    f"the output itself even at T = {Ts[-1]}"
)

# %%
check.memory_growth(my_guess_memory_growth)

# %% [markdown]
# The square tiles grow slower than $T$ here because their $256 \times 256$ tiles of scores are a fixed
# cost that dominates at these sizes; what grows with $T$ is the output, $T \times d_v$ numbers, which any
# method must write. At the smallest $T$ = 256, one tile is the whole matrix, and the loop keeps three
# matrices of that size alive at once (the scores, the scores minus the running maximum, and their
# exponentials) where the plain computation keeps two (scores and weights): there the tiles need more.
# With more than one tile (from $T$ = 512 on), the previous tile's exponentials are held too: one matrix
# more.


# %% tags=["hide-input"]
matrix = 4 * 256**2  # bytes of one 256 x 256 float32 matrix: one tile, and the whole matrix at T = 256
held = {name: (peak[name][0] - output_bytes[0]) / matrix for name in ("plain", "tiles")}  # matrices beyond the output
assert Ts[0] == 256 and abs(held["plain"] - 2) < 0.2 and abs(held["tiles"] - 3) < 0.2
print(
    f"✓ at T = {Ts[0]}: besides the output, the tiles hold three {Ts[0]} x {Ts[0]} matrices at their peak, the plain computation two"
)
held_tiles = [(p - o) / matrix for p, o in zip(peak["tiles"][1:], output_bytes[1:])]  # T = 512 ... 4096
assert all(abs(n_held - 4) < 0.2 for n_held in held_tiles)
print(
    f"✓ at T = {', '.join(map(str, Ts[1:]))}: besides the output, the tiles hold four 256 x 256 matrices at their peak (one tile's worth more)"
)

# %% [markdown]
# > **Going further:** "The time of tiles" times our Python loop of tiles against the plain computation and
# > torch's fused kernel.
#
# ## Summary
#
# - Greedy decoding without a cache pushes $n(n+1)/2$ positions through each decoder layer for $n$ tokens.
#   With a causal decoder the earlier positions' keys and values never change, so a **key-value cache**
#   keeps them: each step computes one position; the cross-attention keys and values are computed once.
#   Same logits (to rounding), so the same tokens except after a near tie; on this run, faster per token at
#   $n = 64$.
# - The cache takes layers × 2 × heads × $d_k$ × length × bytes per sequence; multi-query and grouped-query
#   attention divide it by `num_heads / num_kv_heads`.
# - **Online softmax** finds the maximum and the sum in one pass, rescaling the partial sum by $e^{m - m'}$
#   when the maximum grows; it equals `torch.softmax` and gives zeros for a fully masked row.
# - **Tiled attention** carries the same rescaling into the output, so attention goes tile by tile without
#   the $T \times T$ matrix; the causal mask skips $n(n-1)/2$ of $n^2$ tiles. Measured memory grows like $T^2$
#   for the plain computation and like $T$ (or slower) tiled.
#
# ## Exercises
#
# Each checker prints ✓, what is wrong, or "not attempted yet". Stuck? `check.name.hint()`; the
# reference answer: `check.name.solution()`.
#
# **1. The online-softmax update.** Given the running maximum `m`, the running sum `l` of $e^{s - m}$ and a
# new score `x` (plain numbers), return `(m_new, l_new)`.

# %%
from utils.course.exercises import lesson09 as check


def my_online_update(m, l, x):
    raise NotImplementedError


check.online_update(my_online_update)

# %% [markdown]
# **2. The cache of a large model.** Return the bytes of the self-attention key-value cache of a decoder-only
# model with `num_layers` layers, `num_heads` query heads sharing `num_kv_heads` key/value heads of size
# `d_k`, for `batch` sequences of `length` positions stored with `bytes_per_value` bytes per number.

# %%
from utils.course.exercises import lesson09 as check


def my_cache_bytes(num_layers, num_heads, num_kv_heads, d_k, length, batch, bytes_per_value):
    raise NotImplementedError


check.cache_bytes(my_cache_bytes)

# %% [markdown]
# **3. Merge two halves (transfer).** Split one query's keys into two halves, computed separately (say, on two
# processors). Each half returns its running maximum `m`, its running sum `l` and its output `o`, already
# divided by its own `l`. Combine `(m1, l1, o1)` and `(m2, l2, o2)` into the attention output over all the
# keys.

# %%
from utils.course.exercises import lesson09 as check


def my_merge(part1, part2):
    raise NotImplementedError


check.merge_partials(my_merge)

# %% [markdown]
# **4. Tiles a sliding window skips (transfer).** Sliding-window attention lets each query read only a
# fixed number of recent positions (the paper's restricted self-attention centres its window on the query;
# a decoder's is one-sided); here query $i$ sees key $j$ when $i - \text{window} < j \le i$ (`window`
# keys, itself included). With tiles of `block_size` $\times$ `block_size` (the last row and column of tiles
# may be shorter), how many tiles of a length-`T` sequence have nothing left to read and can be skipped?
# Write `my_window_skipped(T, block_size, window)`.

# %%
from utils.course.exercises import lesson09 as check


def my_window_skipped(T, block_size, window):
    raise NotImplementedError


check.window_skipped_tiles(my_window_skipped)

# %% [markdown]
# **5. (open)** Give `decode_step` a preallocated cache: tensors of `max_len` rows written in place instead of
# `torch.cat` at every step (which copies the whole cache). Does the time per token at $n = 64$ change?

# %% [markdown]
# ## Going further
#
# ### The time of tiles
#
# *Why read it:* tiling saves memory; whether it saves time depends on the mask and on where the tiles live.
#
# Tiling does the same matrix products as the plain computation, plus the rescaling; with the causal mask
# it skips the tiles above the diagonal, which the plain computation computes and then masks. Our tiles are
# a Python loop that launches several torch operations per tile; on a CPU, torch's
# `scaled_dot_product_attention`, given (batch, heads, T, d_k) inputs, no dropout and one head size for q, k
# and v, runs its own fused FlashAttention-style kernel,
# `torch.ops.aten._scaled_dot_product_flash_attention_for_cpu`. Calling that kernel directly gives the same
# bits, at three shapes, with and without the causal mask; when v's head size differs, torch falls back to
# its unfused math path:

# %% tags=["hide-input"]
g = torch.Generator().manual_seed(0)
for shape in ((1, 1, 512, 64), (2, 4, 100, 16), (1, 2, 1, 32)):  # (batch, heads, T, d_k)
    for causal in (False, True):
        q, k, v = (torch.randn(*shape, generator=g) for _ in range(3))  # (batch, heads, T, d_k) each
        fused = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=causal)[0]
        assert torch.equal(F.scaled_dot_product_attention(q, k, v, is_causal=causal), fused)
print(
    "✓ on a CPU, with one head size for q, k and v, scaled_dot_product_attention gives bit for bit the output "
    "of torch's flash-attention kernel"
)
for shape, d_v in (((1, 2, 64, 16), 32), ((2, 4, 100, 16), 8)):  # (batch, heads, T, d_k), v's head size
    q, k = (torch.randn(*shape, generator=g) for _ in range(2))  # (batch, heads, T, d_k) each
    v = torch.randn(*shape[:-1], d_v, generator=g)  # (batch, heads, T, d_v)
    math_path = torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]
    assert torch.equal(F.scaled_dot_product_attention(q, k, v), math_path)
print("✓ with d_v different from d_k, it gives bit for bit torch's unfused math path instead")

# %% [markdown]
# Three ways, without and with the causal mask (median of 5, $T = 2048$, $d_k = 64$, blocks of 256): the
# plain computation (`utils` attention, the whole $T \times T$ matrix), our tiles, and torch's kernel:

# %% tags=["nbval-ignore-output"]
q, k, v = (torch.randn(1, 1, 2048, 64) for _ in range(3))  # (batch, heads, T, d_k)
mask = causal_mask(2048)  # (T, T)
ways = {
    "plain (utils)": (
        lambda: scaled_dot_product_attention(q, k, v),
        lambda: scaled_dot_product_attention(q, k, v, mask),
    ),
    "tiled (Python loop)": (
        lambda: tiled_attention(q, k, v, block_size=256),
        lambda: tiled_attention(q, k, v, block_size=256, causal=True),
    ),
    "torch (fused)": (
        lambda: F.scaled_dot_product_attention(q, k, v),
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    ),
}
timing = {(name, causal): [] for name in ways for causal in (False, True)}  # seconds, per round
for _ in range(5):
    for (name, causal), times in timing.items():
        start = time.perf_counter()
        ways[name][causal]()
        times.append(time.perf_counter() - start)
ms = {key: 1000 * statistics.median(t) for key, t in timing.items()}
print(f"{'':>20}  no mask   causal")
for name in ways:
    print(f"{name:>20}: {ms[name, False]:6.1f} ms {ms[name, True]:6.1f} ms")
for causal in (False, True):
    tiled = ms["tiled (Python loop)", causal]
    print(
        f"{'causal' if causal else 'no mask'}: tiled / plain time {tiled / ms['plain (utils)', causal]:.1f}, "
        f"tiled / torch {tiled / ms['torch (fused)', causal]:.1f}"
    )

# %% [markdown]
# The ratios depend on the sizes and the computer: the ones above are what this run measured. The speed
# FlashAttention reports on GPUs comes from doing the tiling *inside* one kernel: each tile of scores is
# computed and used in fast on-chip memory and never written to main memory, which a loop of separate
# operations cannot do.

# %% [markdown]
# ## Sources
#
# - Vaswani et al., "Attention Is All You Need", NeurIPS 2017: scaled dot-product attention (section 3.2.1),
#   the decoder's masked self-attention and encoder–decoder attention (3.2.3), self-attention's
#   $O(n^2 \cdot d)$ per layer and $O(1)$ sequential operations, and restricted self-attention's
#   $O(r \cdot n \cdot d)$ and $O(n/r)$ path (Table 1, section 4), beam search with a beam size of 4 and
#   outputs of at most input length + 50 (6.1).
# - Milakov and Gimelshein, "Online normalizer calculation for softmax", 2018: the running maximum and sum,
#   rescaled when the maximum changes.
# - Dao, Fu, Ermon, Rudra and Ré, "FlashAttention: Fast and Memory-Efficient Exact Attention with
#   IO-Awareness", NeurIPS 2022: attention computed tile by tile with the online-softmax rescaling, without
#   the $T \times T$ matrix, fused into one kernel.
# - Rabe and Staats, "Self-attention Does Not Need O(n²) Memory", 2021: attention over chunks of keys (and of
#   queries), with per-chunk maxima rescaled when combined; $O(\sqrt{n})$ memory in practice, $O(\log n)$ in
#   principle.
# - Shazeer, "Fast Transformer Decoding: One Write-Head is All You Need", 2019: multi-query attention.
# - Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints",
#   EMNLP 2023: grouped-query attention.
