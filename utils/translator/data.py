"""The seeded data set: train / validation / test splits of sentence pairs, and padded tensor batches.

The test split holds adjective-noun combinations ("big cat") that never occur in training or validation,
so held-out accuracy measures generalisation, not recall.
"""

import dataclasses

import numpy as np
import torch

from utils import validation
from utils.translator import grammar
from utils.translator.vocab import Vocab


@dataclasses.dataclass(frozen=True)
class Pair:
    """A source sentence, its Neo translation, and alignment[j] = source index of Neo word j."""

    src: tuple
    tgt: tuple
    alignment: tuple


@dataclasses.dataclass
class Dataset:
    """The three splits, the held-out adjective-noun pairs and both vocabularies."""

    train: list
    val: list
    test: list
    heldout_pairs: list
    src_vocab: Vocab
    tgt_vocab: Vocab


def make_pair(words):
    """A Pair from a grammatical source sentence (list of words) and its reference translation."""
    tgt, alignment = grammar.reference_translation(words)
    return Pair(tuple(words), tuple(tgt), tuple(alignment))


def choose_heldout_pairs(rng, n):
    """n adjective-noun combinations to keep out of training: each noun at most once."""
    if not 0 <= n <= len(grammar.NOUNS):
        raise ValueError(f"n_heldout_pairs must be in [0, {len(grammar.NOUNS)}], got {n}")
    nouns = rng.permutation(len(grammar.NOUNS))
    adjs = rng.permutation(len(grammar.ADJECTIVES))
    return sorted((grammar.ADJECTIVES[adjs[k % len(adjs)]][0], grammar.NOUNS[nouns[k]][0]) for k in range(n))


def make_dataset(seed=0, n_train=20000, n_val=500, n_test=500, n_heldout_pairs=12):
    """Generate the splits deterministically from `seed`; all sentences are distinct across splits."""
    for name, value in (("n_train", n_train), ("n_val", n_val), ("n_test", n_test)):
        validation.positive_int(name, value)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    rng = np.random.default_rng(seed)
    heldout = choose_heldout_pairs(rng, n_heldout_pairs)
    held = set(heldout)
    seen, splits = set(), {"train": [], "val": [], "test": []}
    wanted = {"train": n_train, "val": n_val, "test": n_test}
    tries = 0
    while any(len(splits[k]) < wanted[k] for k in splits):
        tries += 1
        if tries > 50 * (n_train + n_val + n_test) + 10000:
            raise RuntimeError("could not generate enough distinct sentences; ask for fewer")
        words = grammar.sample_sentence(rng)
        key = " ".join(words)
        if key in seen:
            continue
        if grammar.adjective_noun_pairs(words) & held:
            split = "test"
        else:
            split = "train" if len(splits["train"]) < n_train else "val"
        if len(splits[split]) >= wanted[split]:
            continue
        seen.add(key)
        splits[split].append(make_pair(words))
    src_vocab = Vocab(grammar.source_words())
    tgt_vocab = Vocab(grammar.target_words())
    return Dataset(splits["train"], splits["val"], splits["test"], heldout, src_vocab, tgt_vocab)


def pad_sequences(seqs, pad_id):
    """Stack lists of ids of different lengths into a (len(seqs), longest) long tensor, padded on the right."""
    if not seqs:
        raise ValueError("seqs must hold at least one sequence, got none")
    longest = max(len(s) for s in seqs)
    out = torch.full((len(seqs), longest), pad_id, dtype=torch.long)  # (N, T)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


def to_tensors(pairs, src_vocab, tgt_vocab):
    """src (N, S): source ids + <eos>; tgt (N, T): <bos> + Neo ids + <eos>; both padded with <pad>."""
    if not pairs:
        raise ValueError("pairs must hold at least one Pair, got none")
    src = pad_sequences([src_vocab.encode(p.src, eos=True) for p in pairs], src_vocab.pad_id)  # (N, S)
    tgt = pad_sequences([tgt_vocab.encode(p.tgt, bos=True, eos=True) for p in pairs], tgt_vocab.pad_id)  # (N, T)
    return src, tgt


def batches(src, tgt, batch_size, seed, pad_id=0):
    """Endless shuffled batches (src (B, S), tgt (B, T)), trimmed to their longest sentence; seeded."""
    batch_size = validation.positive_int("batch_size", batch_size)
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(f"src and tgt must hold the same number of sentences, got {src.shape[0]} and {tgt.shape[0]}")
    gen = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(src.shape[0], generator=gen)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            idx = order[start:start + batch_size]
            s, t = src[idx], tgt[idx]  # (B, S), (B, T)
            s = s[:, :int((s != pad_id).sum(1).max())]  # drop all-padding columns
            t = t[:, :int((t != pad_id).sum(1).max())]
            yield s, t
