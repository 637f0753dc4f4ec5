"""The seeded data set: train / validation / test splits of sentence pairs, and padded tensor batches.

Two test splits: `test` holds new sentences drawn like the training ones; `test_unseen` holds sentences
whose translation needs a Neo word form (an adjective or a verb for one gender and number) that no
training or validation sentence contains, so it measures generalisation to new combinations.
with_subword_targets gives the same splits with a sub-word (byte-pair encoded) target vocabulary, and
DropoutTargets training targets that are cut afresh with BPE-dropout each time a sentence is drawn.
"""

import dataclasses
import hashlib

import numpy as np
import torch

from utils import subwords, validation
from utils.translator import grammar
from utils.translator.vocab import SubwordVocab, Vocab


@dataclasses.dataclass(frozen=True)
class Pair:
    """A source sentence, its Neo translation, alignment[j] = source index of Neo word j (None: no source
    word), role[j] (det, noun, adj, postp, particle, verb) and agrees_with[j] (the source index of the noun
    whose gender Neo word j takes, else None)."""

    src: tuple
    tgt: tuple
    alignment: tuple
    role: tuple = ()
    agrees_with: tuple = ()


@dataclasses.dataclass(frozen=True)
class HeldoutForm:
    """A Neo word form kept out of training: an adjective or a verb for one (gender, number) of its noun."""

    kind: str
    english: str
    gender: str
    number: str
    neo: str


@dataclasses.dataclass
class Dataset:
    """The splits, the held-out forms and both vocabularies.

    test: new sentences drawn like the training ones (in-distribution); test_unseen: sentences whose
    translation needs at least one held-out form, which no training or validation sentence contains.
    """

    train: list
    val: list
    test: list
    test_unseen: list
    heldout_forms: list
    src_vocab: Vocab
    tgt_vocab: Vocab


def make_pair(words):
    """A Pair from a grammatical source sentence (list of words) and its reference translation."""
    out = grammar.analyse(words)
    return Pair(
        tuple(words),
        tuple(w for w, *_ in out),
        tuple(a for _, a, _, _ in out),
        tuple(r for _, _, r, _ in out),
        tuple(g for *_, g in out),
    )


def choose_heldout_forms(rng, n_adjective_forms, n_verb_forms):
    """Adjective and verb forms to keep out of training: each adjective and each verb at most once, with the
    four (gender, number) in turn, so each still has its three other forms in training."""
    for name, value, limit in (
        ("n_adjective_forms", n_adjective_forms, len(grammar.ADJECTIVES)),
        ("n_verb_forms", n_verb_forms, len(grammar.VERBS)),
    ):
        validation.integer(name, value, minimum=0, maximum=limit)
    forms = []
    for kind, words, n_forms, form in (
        ("adjective", grammar.ADJECTIVES, n_adjective_forms, grammar.adjective_form),
        ("verb", grammar.VERBS, n_verb_forms, grammar.verb_form),
    ):
        first = int(rng.integers(4))  # the (gender, number) cycle through all four, from a random start
        for i, k in enumerate(rng.permutation(len(words))[:n_forms]):
            g, n = grammar.GENDER_NUMBER[(first + i) % 4]
            forms.append(HeldoutForm(kind, words[k][0], g, n, form(words[k][0], g, n)))
    return sorted(forms, key=lambda f: (f.kind, f.neo))


def make_dataset(seed=0, n_train=20000, n_val=500, n_test=500, n_test_unseen=500, n_adjective_forms=6, n_verb_forms=3):
    """Generate the splits deterministically from `seed`; all sentences are distinct across splits."""
    for name, value in (("n_train", n_train), ("n_val", n_val), ("n_test", n_test), ("n_test_unseen", n_test_unseen)):
        validation.positive_int(name, value)
    validation.seed("seed", seed)
    rng = np.random.default_rng(seed)
    heldout = choose_heldout_forms(rng, n_adjective_forms, n_verb_forms)
    held = {f.neo for f in heldout}
    seen, splits = set(), {"train": [], "val": [], "test": [], "test_unseen": []}
    wanted = {"train": n_train, "val": n_val, "test": n_test, "test_unseen": n_test_unseen}
    in_distribution = ("train", "val", "test")
    tries = 0
    while any(len(splits[k]) < wanted[k] for k in splits):
        tries += 1
        if tries > 50 * sum(wanted.values()) + 10000:
            raise RuntimeError("could not generate enough distinct sentences; ask for fewer")
        words = grammar.sample_sentence(rng)
        key = " ".join(words)
        if key in seen:
            continue
        pair = make_pair(words)
        if held & set(pair.tgt):
            split = "test_unseen"
        else:  # fill train, then validation, then the in-distribution test, in the order drawn
            split = next((k for k in in_distribution if len(splits[k]) < wanted[k]), None)
        if split is None or len(splits[split]) >= wanted[split]:
            continue
        seen.add(key)
        splits[split].append(pair)
    src_vocab = Vocab(grammar.source_words())
    tgt_vocab = Vocab(grammar.target_words())
    return Dataset(splits["train"], splits["val"], splits["test"], splits["test_unseen"], heldout, src_vocab, tgt_vocab)


def with_subword_targets(ds, num_merges):
    """`ds` with a sub-word target vocabulary: byte-pair encoding with `num_merges` merges learned on the
    training translations only (the source side stays word level). Splits and pairs are the same objects."""
    validation.instance("ds", ds, Dataset)
    bpe = subwords.train([" ".join(p.tgt) for p in ds.train], num_merges)
    return dataclasses.replace(ds, tgt_vocab=SubwordVocab(bpe))


def pad_sequences(seqs, pad_id):
    """Stack lists of ids of different lengths into a (len(seqs), longest) long tensor, padded on the right."""
    validation.non_empty("seqs", seqs, (list, tuple), "list of id lists")
    validation.token_id("pad_id", pad_id)
    if all(type(s) is list and all(type(t) is int and 0 <= t < 2**63 for t in s) for s in seqs):  # plain id lists
        longest = max(map(len, seqs))
        return torch.tensor([s + [pad_id] * (longest - len(s)) for s in seqs], dtype=torch.long)  # (N, T)
    seqs = [validation.id_list(f"seqs[{i}]", s) for i, s in enumerate(seqs)]
    longest = max(len(s) for s in seqs)
    out = torch.full((len(seqs), longest), pad_id, dtype=torch.long)  # (N, T)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


def to_tensors(pairs, src_vocab, tgt_vocab):
    """src (N, S): source ids + <eos>; tgt (N, T): <bos> + Neo ids + <eos>; both padded with <pad>."""
    validation.non_empty("pairs", pairs, (list, tuple), "list of Pairs")
    for i, p in enumerate(pairs):
        validation.instance(f"pairs[{i}]", p, Pair)
    validation.instance("src_vocab", src_vocab, Vocab)
    validation.instance("tgt_vocab", tgt_vocab, Vocab)
    src = pad_sequences([src_vocab.encode(p.src, eos=True) for p in pairs], src_vocab.pad_id)  # (N, S)
    tgt = pad_sequences([tgt_vocab.encode(p.tgt, bos=True, eos=True) for p in pairs], tgt_vocab.pad_id)  # (N, T)
    return src, tgt


class DropoutTargets:
    """Training targets cut afresh each time a sentence is drawn: BPE-dropout (Provilkov et al. 2020), each merge
    application skipped with probability `dropout`. Give it to `batches` (or translator.train) in place of the
    tgt tensor: each batch's targets are then <bos> + the Neo sub-word ids of a new cut + <eos>, padded.

    The cuts come from a torch.Generator seeded with `seed` when the batches start, so one training run is
    repeatable; the object itself holds no random state (its repr, a digest of what it holds, is a cache key)."""

    def __init__(self, pairs, tgt_vocab, dropout, seed=0):
        validation.non_empty("pairs", pairs, (list, tuple), "list of Pairs")
        for i, p in enumerate(pairs):
            validation.instance(f"pairs[{i}]", p, Pair)
        self.tgt_vocab = validation.instance("tgt_vocab", tgt_vocab, SubwordVocab)
        self.dropout = validation.probability("dropout", dropout, True, "a merge's chance to be skipped")
        self.seed = validation.seed("seed", seed)
        self.sentences = tuple(p.tgt for p in pairs)
        for i, words in enumerate(self.sentences):  # every symbol known to the vocabulary
            try:
                tgt_vocab.encode(list(words))
            except ValueError as error:
                raise ValueError(f"pairs[{i}].tgt does not fit tgt_vocab: {error}") from None
        longest = max(sum(len(w) for w in words) for words in self.sentences)  # a cut has at most one per letter
        self.shape = (len(self.sentences), longest + 2)  # (N, the longest a target can be with <bos> and <eos>)
        h = hashlib.sha256(repr((self.sentences, tgt_vocab.bpe.merges, self.dropout, self.seed)).encode())
        self._digest = h.hexdigest()[:16]

    def __len__(self):
        return len(self.sentences)

    def __repr__(self):
        return (
            f"DropoutTargets({len(self)} sentences, {len(self.tgt_vocab.bpe.merges)} merges, "
            f"dropout={self.dropout}, seed={self.seed}, sha256 {self._digest})"
        )

    def generator(self):
        """A torch.Generator in the state a training run starts from."""
        return torch.Generator().manual_seed(self.seed)

    def cut(self, idx, generator):
        """(B, T) long tensor: sentences `idx` (a 1-D tensor or list of indices) cut with dropout, padded to the
        longest."""
        v = self.tgt_vocab
        seqs = [v.encode(self.sentences[int(i)], True, True, self.dropout, generator) for i in idx]
        return pad_sequences(seqs, v.pad_id)


def batches(src, tgt, batch_size, seed, pad_id=0):
    """Endless shuffled batches (src (B, S), tgt (B, T)), trimmed to their longest sentence; seeded.

    tgt is a (N, T) tensor, or a DropoutTargets whose sentences are cut afresh in every batch (its own generator
    draws the cuts; the order of sentences comes from `seed`, the same as with a tensor)."""
    batch_size = validation.positive_int("batch_size", batch_size)
    validation.token_ids("src", src, min_dim=2)
    resampled = isinstance(tgt, DropoutTargets)
    if resampled:
        if len(tgt) != src.shape[0]:
            raise ValueError(f"tgt must hold one sentence per src sentence ({src.shape[0]}), got {len(tgt)}")
        validation.token_id("pad_id", pad_id)
        if pad_id != tgt.tgt_vocab.pad_id:
            raise ValueError(f"pad_id must be the targets' vocabulary's pad id {tgt.tgt_vocab.pad_id}, got {pad_id!r}")
        cuts = tgt.generator()
    else:
        if not isinstance(tgt, torch.Tensor):
            raise TypeError(f"tgt must be a torch.Tensor of token ids or a DropoutTargets, got {type(tgt).__name__}")
        validation.token_ids("tgt", tgt, min_dim=2)
        validation.shape("tgt", tgt, (("number of src sentences", src.shape[0]), "T"))
        validation.token_id("pad_id", pad_id)
    gen = torch.Generator().manual_seed(validation.seed("seed", seed))
    while True:
        order = torch.randperm(src.shape[0], generator=gen)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            idx = order[start : start + batch_size]
            s = src[idx]  # (B, S)
            t = tgt.cut(idx, cuts) if resampled else tgt[idx]  # (B, T)
            s = s[:, : int((s != pad_id).sum(1).max())]  # drop all-padding columns
            t = t[:, : int((t != pad_id).sum(1).max())]
            yield s, t
