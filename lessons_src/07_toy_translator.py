# %% [markdown]
# # 07 · A toy translator, trained on the CPU in about a minute
#
# The capstone: we assemble the encoder–decoder Transformer from the parts of the earlier lessons,
# train it on a made-up language pair, translate sentences of our own, and look inside its
# **cross-attention** — the attention whose queries come from the decoder and whose keys and values
# come from the encoder (seed 004). Nothing is downloaded: the data is generated, and every target
# word comes with its **gold alignment** (the source word it translates), so we can check whether an
# attention head really "looks at" the word it is translating.
#
# **Goals.**
# - Generate a language pair with reordering and agreement, and keep some word combinations out of
#   training so the test measures generalisation.
# - Turn sentences into padded batches of ids; see why teacher forcing makes *every target position* a
#   training example.
# - Build `Seq2SeqTransformer` from `utils` (embeddings × √d_model, sinusoidal PE, `Encoder`, `Decoder`),
#   train it with Adam and the paper's warm-up schedule, decode greedily, and measure held-out accuracy.
# - Compare every cross-attention head with the gold alignment; explore the maps with a widget.
# - Save and reload the trained model.
#
# **Prerequisites.** Lessons 01 (positional encoding), 03 (self-attention), 04 (masking),
# 05 (multi-head attention) and 06 (transformer blocks).

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    get_ipython().run_line_magic(
        "pip", "install -q 'attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand'"
    )

# %% [markdown]
# Everything random is seeded, and torch uses a fixed number of threads (a different thread count can
# sum floating-point numbers in a different order, which would change the trained weights slightly).
# We use one thread: for a model this small a second thread costs more in coordination than it saves
# (measured on a 2-core machine: 35 ms per training step with one thread, 45 ms with two).
# `OMP_WAIT_POLICY=PASSIVE` (set before torch is imported) lets an idle thread sleep instead of spinning:
# on a busy or shared machine (Binder, Colab, CI) spinning threads can make training many times slower.

# %%
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import tempfile
from pathlib import Path

import numpy as np
import torch

from utils.exercises import lesson07 as check
from utils.plotting import plot_cross_attention, plot_training_history
from utils.translator import grammar, recipe
from utils.translator.attention_maps import cross_attention_map
from utils.translator.checkpoint import load_checkpoint, save_checkpoint
from utils.translator.data import make_dataset, to_tensors
from utils.translator.decode import beam_search, greedy_decode, translate
from utils.translator.evaluate import evaluate
from utils.translator.model import Seq2SeqTransformer, parameter_counts
from utils.translator.torch_reference import TorchSeq2Seq, copy_into_ours
from utils.translator.train import noam_lr, shift_targets, train
from utils.widgets import cross_attention_explorer

torch.set_num_threads(recipe.TRAIN["num_threads"])
torch.manual_seed(0)
print("threads:", torch.get_num_threads())

# %% [markdown]
# ## 1. The data: English → "Neo", with gold alignments
#
# The source language is a small piece of English: `NP VERB NP [PREP NP]`, where a noun phrase is a
# determiner, up to two adjectives and a noun. Its translation into the invented language *Neo*
# differs in three ways that the model must learn:
#
# - **word order**: the verb goes to the end, a prepositional phrase becomes a *post*position phrase
#   placed before the object, and adjectives follow their noun;
# - **agreement that needs context**: Neo nouns are masculine or feminine; a determiner and its adjectives
#   take the noun's gender and number (`-o -a -i -e`), although in English the noun comes *after* them;
# - the Neo verb agrees with the subject's number (`-at` / `-ant`), many words before it.
#
# Every Neo word translates exactly one English word; `alignment[j]` is the index of that word.

# %%
ds = make_dataset(**recipe.DATA)
print(f"train {len(ds.train)}, validation {len(ds.val)}, test {len(ds.test)} sentence pairs")
print(f"vocabulary: {len(ds.src_vocab)} source tokens, {len(ds.tgt_vocab)} Neo tokens "
      f"(each with <pad>, <bos>, <eos>, <unk>)")
lengths = [len(p.src) for p in ds.train]
print(f"source sentences have {min(lengths)} to {max(lengths)} words")

# %% [markdown]
# Three training pairs, each Neo word followed by the index of the English word it translates:

# %%
for p in ds.train[:3]:
    print(" ".join(f"{w}[{i}]" for i, w in enumerate(p.src)))
    print("   ->", " ".join(f"{w}<{a}>" for w, a in zip(p.tgt, p.alignment)))

# %% [markdown]
# The alignment is a permutation of the source positions (one Neo word per English word), and it is
# *not* monotonic: the words are reordered.

# %%
for p in ds.train + ds.val + ds.test:
    assert sorted(p.alignment) == list(range(len(p.src)))
monotonic = sum(list(p.alignment) == sorted(p.alignment) for p in ds.train)
print(f"training pairs whose alignment keeps the word order: {monotonic} of {len(ds.train)}")
assert monotonic == 0

# %% [markdown]
# A gold alignment drawn as a matrix is what a perfect cross-attention head would look like:
# one bright cell per row (Neo word, top to bottom) at the English word it translates.

# %%
pair = grammar.reference_translation("the big dog sees a red cat near the tree".split())
example_src = "the big dog sees a red cat near the tree".split()
gold_matrix = np.zeros((len(pair[0]), len(example_src)))  # (T_tgt, T_src)
gold_matrix[np.arange(len(pair[0])), pair[1]] = 1.0
fig = plot_cross_attention(gold_matrix, example_src, pair[0], gold=pair[1], title="gold alignment")

# %% [markdown]
# **Held-out combinations.** Twelve adjective–noun pairs never occur in the training (or validation)
# sentences; every test sentence contains at least one of them. Each of those adjectives and nouns *is*
# seen in training, only with other partners, so the test asks the model to combine what it knows
# (e.g. to put the masculine ending on an adjective it has only seen with feminine nouns).

# %%
held = set(ds.heldout_pairs)
print("held out:", ", ".join(f"{a} {n}" for a, n in ds.heldout_pairs))
assert not any(grammar.adjective_noun_pairs(p.src) & held for p in ds.train + ds.val)
assert all(grammar.adjective_noun_pairs(p.src) & held for p in ds.test)
train_keys = {p.src for p in ds.train}
assert not train_keys & {p.src for p in ds.val} and not train_keys & {p.src for p in ds.test}
print("example test sentence:", " ".join(ds.test[0].src))

# %% [markdown]
# ## 2. Ids, padding and teacher forcing
#
# The vocabulary maps words to ids; ids 0–3 are `<pad>`, `<bos>` (begin), `<eos>` (end) and `<unk>`.
# A source sentence gets an `<eos>`; a target sentence is framed as `<bos> y_1 … y_n <eos>`.

# %%
BOS, EOS = ds.tgt_vocab.bos_id, ds.tgt_vocab.eos_id  # 1 and 2
ids = ds.tgt_vocab.encode(ds.train[0].tgt, bos=True, eos=True)
print(ids)
print(ds.tgt_vocab.decode(ids))
assert ds.tgt_vocab.decode(ids) == list(ds.train[0].tgt)

# %% [markdown]
# A batch pads every sentence to the longest with `<pad>` (id 0); masks will hide those positions.

# %%
src, tgt = to_tensors(ds.train[:4], ds.src_vocab, ds.tgt_vocab)  # (4, S), (4, T)
print("src", tuple(src.shape))
print(src)
print("tgt", tuple(tgt.shape))
print(tgt)

# %% [markdown]
# **Teacher forcing.** The decoder reads the *correct* previous words, not its own guesses, so one
# forward pass trains all positions at once: the input is `tgt[:, :-1]` and the label at position t
# is `tgt[:, t+1]`. Seed 004 puts it as "in RNN, the entire sequence is one training sample; in
# Transformers, every step is one training sample". Counted on the whole training set:

# %%
decoder_input, labels = shift_targets(tgt)  # (4, T-1) each
print("decoder input:", ds.tgt_vocab.itos[decoder_input[0, 0]], "...", "labels start:",
      ds.tgt_vocab.itos[labels[0, 0]])
all_src, all_tgt = to_tensors(ds.train, ds.src_vocab, ds.tgt_vocab)  # (N, S), (N, T)
examples = int((shift_targets(all_tgt)[1] != ds.tgt_vocab.pad_id).sum())
print(f"{len(ds.train)} sentences give {examples} next-token training examples "
      f"({examples / len(ds.train):.2f} per sentence)")
assert examples == sum(len(p.tgt) + 1 for p in ds.train)  # every Neo word, plus <eos>

# %% [markdown]
# ## 3. The model
#
# `Seq2SeqTransformer` assembles the parts of lessons 01–06: token embeddings multiplied by √d_model,
# plus the sinusoidal PE; an `Encoder` over the source (padding mask); a `Decoder` over the target
# (causal ∧ padding mask) whose cross-attention reads the encoder's output ("memory") through the
# source padding mask; and a linear layer to logits over the Neo vocabulary.
#
# One detail matters a lot at this size: the embeddings start with standard deviation d_model^-1/2,
# so that after the × √d_model scaling they are about as large as the PE (entries in [-1, 1]).
# torch's default `nn.Embedding` init is N(0, 1), which after scaling would be 8 times larger at
# d_model = 64 and drown the word positions (exercise 4 measures what that costs).

# %%
torch.manual_seed(recipe.MODEL_SEED)
model = Seq2SeqTransformer(len(ds.src_vocab), len(ds.tgt_vocab), **recipe.MODEL)
counts = parameter_counts(model)
for part, n in counts.items():
    print(f"{part:>18}: {n:7,d}")
print(f"{'total':>18}: {sum(counts.values()):7,d}")
assert sum(counts.values()) == sum(p.numel() for p in model.parameters())

# %% [markdown]
# The scales at initialisation: scaled embeddings vs PE entries, with our init and with torch's default.

# %%
d = model.d_model
ours_std = (model.src_embed.weight * d ** 0.5).std().item()
default_std = (torch.nn.Embedding(len(ds.src_vocab), d).weight * d ** 0.5).std().item()
pe_std = model.pe[:15].std().item()
print(f"std of embedding x sqrt(d_model): ours {ours_std:.2f}, torch default {default_std:.2f}; PE {pe_std:.2f}")
assert 0.8 < ours_std < 1.2 and default_std > 6 * pe_std

# %% [markdown]
# Three kinds of attention (seed 004), each with its mask: encoder self-attention (padding),
# decoder self-attention (causal, so position t cannot see the words it must predict), and
# cross-attention (padding of the source). Two checks on the untrained model: changing target words
# after position t leaves the logits at positions ≤ t unchanged, and adding source padding changes
# nothing at all.

# %%
model.eval()
s, t = to_tensors(ds.val[:3], ds.src_vocab, ds.tgt_vocab)  # (3, S), (3, T)
x_in = shift_targets(t)[0]  # (3, T-1)
with torch.no_grad():
    base = model(s, x_in)  # (3, T-1, vocab)
    changed = x_in.clone()
    changed[:, 4:] = 7  # rewrite the target from position 4 on
    assert torch.allclose(model(s, changed)[:, :4], base[:, :4], atol=1e-6)
    padded = torch.cat([s, torch.zeros(3, 5, dtype=torch.long)], dim=1)  # (3, S+5): five more <pad>
    assert torch.allclose(model(padded, x_in), base, atol=1e-5)
print("PASS: no leakage from future target words; source padding changes nothing")

# %% [markdown]
# Our model computes exactly what `torch.nn.Transformer` computes: build the same sizes with torch,
# copy its weights into ours, and compare the logits.

# %%
torch.manual_seed(1)
reference = TorchSeq2Seq(model.config).train()  # train mode, dropout 0: no torch "fast path"
ours = copy_into_ours(reference)
with torch.no_grad():
    got, expected = ours(s, x_in), reference(s, x_in)  # (3, T-1, vocab) each
real = x_in != 0
print(f"largest difference from torch.nn.Transformer: {(got - expected)[real].abs().max():.1e}")
assert torch.allclose(got[real], expected[real], atol=1e-5)

# %% [markdown]
# ## 4. Training
#
# Cross-entropy over every non-padding target position, Adam with β₁ = 0.9, β₂ = 0.98, ε = 10⁻⁹, and
# the paper's learning rate (section 5.3), which grows linearly for `warmup` steps and then decays as
# 1/√step:
#
# $$\text{lrate} = \text{factor}\cdot d_{\text{model}}^{-0.5}\cdot\min(\text{step}^{-0.5},\ \text{step}\cdot\text{warmup}^{-1.5})$$

# %%
cfg = recipe.TRAIN
lr = [noam_lr(k, model.d_model, cfg["warmup"], cfg["factor"]) for k in range(1, cfg["steps"] + 1)]
peak = int(np.argmax(lr)) + 1
print(f"peak learning rate {max(lr):.5f} at step {peak}; at the last step {lr[-1]:.5f}")
assert peak == cfg["warmup"]

# %% [markdown]
# Now train for a fixed number of steps (not a fixed time, so every run gives the same model). The
# progress bar and the timing vary from run to run, so nbval ignores this cell's output; the results
# below are checked.

# %%
# NBVAL_IGNORE_OUTPUT
history = train(model, all_src, all_tgt, steps=cfg["steps"], batch_size=cfg["batch_size"], warmup=cfg["warmup"],
                factor=cfg["factor"], label_smoothing=cfg["label_smoothing"], seed=cfg["seed"],
                num_threads=cfg["num_threads"])
print(f"{cfg['steps']} steps in {history['seconds']:.1f} s ({history['seconds'] / cfg['steps'] * 1000:.0f} ms per step)")

# %% [markdown]
# The loss per target token falls from about ln(vocabulary size) to almost zero; the learning rate
# follows the warm-up schedule.

# %%
first, last = np.mean(history["loss"][:10]), np.mean(history["loss"][-50:])
print(f"mean loss: first 10 steps {first:.2f} (ln {len(ds.tgt_vocab)} = {np.log(len(ds.tgt_vocab)):.2f}), "
      f"last 50 steps {last:.3f}")
print(f"target positions trained on: {sum(history['tokens']):,d}")
assert last < 0.05 * first
fig = plot_training_history(history["loss"], history["lr"])

# %% [markdown]
# ## 5. Greedy decoding, step by step
#
# At test time there is no correct previous word to feed in: the decoder starts from `<bos>`, picks
# the most likely next word, appends it, and repeats until it says `<eos>` (or a length guard stops it).
# Here is every step for one held-out sentence, with the three most likely next words.

# %%
sentence = ds.test[0]
src1 = torch.tensor([ds.src_vocab.encode(sentence.src, eos=True)])  # (1, S)
print("source:", " ".join(sentence.src))
with torch.no_grad():
    memory, src_mask = model.encode(src1)  # (1, S, d_model), (1, 1, S)
    ys = torch.tensor([[ds.tgt_vocab.bos_id]])  # (1, 1)
    for step in range(20):
        probs = model.decode(ys, memory, src_mask)[0, -1].softmax(-1)  # (vocab,): next-word distribution
        top = probs.topk(3)
        so_far = " ".join(ds.tgt_vocab.itos[i] for i in ys[0].tolist())
        options = ", ".join(f"{ds.tgt_vocab.itos[i]} {p:.2f}" for p, i in zip(top.values.tolist(), top.indices.tolist()))
        print(f"{so_far:<58} -> {options}")
        ys = torch.cat([ys, top.indices[:1].view(1, 1)], dim=1)  # (1, t + 1)
        if ys[0, -1] == ds.tgt_vocab.eos_id:
            break
step_by_step = ds.tgt_vocab.decode(ys[0].tolist())
assert step_by_step == ds.tgt_vocab.decode(greedy_decode(model, src1, BOS, EOS)[0])
print("PASS: the step-by-step output equals greedy_decode")
print("reference:", " ".join(sentence.tgt), "| same:", step_by_step == list(sentence.tgt))

# %% [markdown]
# ## 6. Held-out results
#
# On the test set (every sentence holds an adjective–noun combination never seen in training):
# exact match (the whole sentence right), token accuracy (words right at their position), and BLEU
# computed by `sacrebleu`.

# %%
result = evaluate(model, ds.test, ds.src_vocab, ds.tgt_vocab)
val_result = evaluate(model, ds.val, ds.src_vocab, ds.tgt_vocab)
print(f"held-out test: exact match {result['exact_match']:.3f}, token accuracy {result['token_accuracy']:.3f}, "
      f"BLEU {result['bleu']:.1f}")
print(f"validation:    exact match {val_result['exact_match']:.3f}")
assert result["exact_match"] >= 0.98 and result["token_accuracy"] >= 0.99 and result["bleu"] >= 95

# %% [markdown]
# The translations it still gets wrong, if any, next to the reference:

# %%
wrong = [(p, h) for p, h in zip(ds.test, result["hypotheses"]) if list(p.tgt) != h]
print(f"{len(wrong)} of {len(ds.test)} wrong")
for p, h in wrong[:5]:
    print(" ", " ".join(p.src), "\n    model:    ", " ".join(h), "\n    reference:", " ".join(p.tgt))

# %% [markdown]
# **Beam search** keeps the `beam_size` most probable partial translations at each step instead of one
# (scored by the sum of log-probabilities); `beam_size=1` is greedy decoding. Does it repair the
# mistakes above?

# %%
fixed = 0
for p, h in wrong:
    src_ids = torch.tensor([ds.src_vocab.encode(p.src, eos=True)])  # (1, S)
    assert beam_search(model, src_ids, BOS, EOS, beam_size=1) == greedy_decode(model, src_ids, BOS, EOS)[0]  # k = 1: greedy
    beam = ds.tgt_vocab.decode(beam_search(model, src_ids, BOS, EOS, beam_size=4))
    fixed += beam == list(p.tgt)
    print(f"beam (k=4): {' '.join(beam)}  ({'right' if beam == list(p.tgt) else 'still wrong'})")
print(f"beam search repairs {fixed} of {len(wrong)}")

# %% [markdown]
# `translate` is the learner-facing helper: a sentence in, a sentence out (greedy decoding). Try your
# own; `grammar.reference_translation` gives the rule-based answer to compare with.

# %%
for text in ["the quick wolf follows some young cats", "a small apple watches the black horses behind a boat"]:
    output = translate(model, text, ds.src_vocab, ds.tgt_vocab)
    reference = " ".join(grammar.reference_translation(text.split())[0])
    print(f"{text}\n  model:     {output}\n  reference: {reference}  ({'right' if output == reference else 'WRONG'})")
    src_ids = torch.tensor([ds.src_vocab.encode(text.split(), eos=True)])  # (1, S)
    assert output.split() == ds.tgt_vocab.decode(greedy_decode(model, src_ids, BOS, EOS)[0])

# %% [markdown]
# Unknown words and empty input get errors that say what to do.

# %%
for bad in ["the dog sees a zebra", ""]:
    try:
        translate(model, bad, ds.src_vocab, ds.tgt_vocab)
    except ValueError as err:
        print(f"{bad!r}: ValueError: {err}")
    else:
        raise AssertionError("expected a ValueError")

# %% [markdown]
# ## 7. Does cross-attention find the word it translates?
#
# For each decoder layer and head: run the reference translation through the model (teacher forcing),
# and at each Neo word take the source word with the largest cross-attention weight. The *alignment
# accuracy* is how often that word is the gold one. Nothing in training asked for this: the model was
# only told to predict the next word.

# %%
acc = result["alignment_accuracy"]  # (num_layers, num_heads)
print("alignment accuracy (rows: decoder layer, columns: head)")
print(np.array2string(acc.numpy(), precision=3))
best_layer, best_head = divmod(int(acc.argmax()), acc.shape[1])
print(f"best: layer {best_layer}, head {best_head}: {acc.max():.3f}")
assert acc.max() >= 0.80

# %% [markdown]
# The best head on the first held-out sentence that the model translates right (so the gold alignment
# applies to its output), with the gold alignment as circles: a static picture of the explorer's first
# state, so the lesson reads without running.

# %%
example = next(" ".join(p.src) for p, h in zip(ds.test, result["hypotheses"]) if list(p.tgt) == h)
m = cross_attention_map(model, example, ds.src_vocab, ds.tgt_vocab)
fig = plot_cross_attention(m["weights"][best_layer][best_head], m["src"], m["tgt"], m["gold"],
                           title=f"layer {best_layer}, head {best_head}")
assert m["gold"] is not None  # the model's translation equals the reference, so gold applies

# %% [markdown]
# **Cross-attention explorer.** Type a sentence (words from the vocabulary), pick a layer and a head.
# Circles mark the gold alignment when the sentence is grammatical and translated right.

# %%
# NBVAL_IGNORE_OUTPUT
cross_attention_explorer(model, ds.src_vocab, ds.tgt_vocab, sentence=example, layer=best_layer, head=best_head)

# %% [markdown]
# ## 8. Save and reload
#
# A checkpoint holds the configuration, the weights and both vocabularies — only tensors, numbers and
# strings, so it loads with `torch.load(weights_only=True)`, which refuses to run code hidden in a file.

# %%
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "translator.pt"
    save_checkpoint(path, model, ds.src_vocab, ds.tgt_vocab)
    loaded, src_vocab, tgt_vocab = load_checkpoint(path)
    try:
        load_checkpoint(path, model=Seq2SeqTransformer(len(ds.src_vocab), len(ds.tgt_vocab), d_model=32))
    except ValueError as err:
        print("mismatched model: ValueError:", err)
same = all(translate(loaded, " ".join(p.src), src_vocab, tgt_vocab) == translate(model, " ".join(p.src), ds.src_vocab,
                                                                                 ds.tgt_vocab) for p in ds.test[:50])
print("reloaded model translates the same:", same)
assert same

# %% [markdown]
# ## Summary
#
# - The data is generated with gold alignments; the test set holds combinations never seen in training.
# - Teacher forcing turns every target position into a training example.
# - `Seq2SeqTransformer` = embeddings × √d_model + PE → `Encoder` → `Decoder` (causal and padding masks)
#   → linear; it matches `torch.nn.Transformer` with copied weights.
# - With the warm-up schedule it learns this language pair in about a minute of CPU time and generalises
#   to the held-out combinations; greedy decoding stops at `<eos>` or a length guard, and beam search
#   keeps several candidates instead of one.
# - Some cross-attention heads learn, unasked, to look at the source word being translated.
#
# ## Exercises
#
# Each checker prints PASS, a specific failure, or "not attempted yet". Stuck? `check.name.hint()`;
# the reference answer: `check.name.solution()`.
#
# **1. The teacher-forcing shift.** Given `tgt` (batch, T) = `<bos> y_1 … y_n <eos>` (then padding),
# return `(decoder_input, labels)`.

# %%
def my_shift(tgt):
    raise NotImplementedError


check.teacher_forcing_shift(my_shift)

# %% [markdown]
# **2. Greedy decoding.** Write `decode(model, src, bos_id, eos_id, max_len)` with `model.encode(src)` and
# `model.decode(ys, memory, src_mask)`; return one list of ids per sentence, without `<bos>` and cut
# before `<eos>`, and never more than `max_len` steps.

# %%
def my_greedy(model, src, bos_id, eos_id, max_len):
    raise NotImplementedError


check.greedy_decoding(my_greedy)

# %% [markdown]
# **3. Alignment accuracy of one head.** Given one head's weights (T_tgt, T_src) and the gold alignment
# (one source index per Neo word, the last row — `<eos>` — has none), return the fraction of Neo words
# whose arg-max is the gold word.

# %%
def my_alignment_accuracy(weights, gold):
    raise NotImplementedError


check.alignment_accuracy(my_alignment_accuracy)

# %% [markdown]
# **4. (open)** Retrain with one change at a time and compare the held-out exact match and the best
# head's alignment accuracy: `label_smoothing=0.1`; half the steps; or torch's default embedding init
# (`torch.nn.init.normal_(model.src_embed.weight, std=1.0)`, the same for `tgt_embed`) — how much
# slower does it learn? Which heads align best, and in which layer?
