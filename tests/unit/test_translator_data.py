"""The generated language pair: determinism, disjoint splits, held-out combinations, gold alignments, vocab."""

import numpy as np
import pytest
import torch

from utils.translator import grammar
from utils.translator.data import batches, make_dataset, make_pair, pad_sequences, to_tensors
from utils.translator.vocab import Vocab


@pytest.fixture(scope="module")
def ds():
    return make_dataset(seed=3, n_train=800, n_val=100, n_test=100, n_test_unseen=100)


def test_same_seed_same_data_other_seed_other_data(ds):
    again = make_dataset(seed=3, n_train=800, n_val=100, n_test=100, n_test_unseen=100)
    assert (again.train, again.val, again.test, again.test_unseen, again.heldout_forms) == (
        ds.train,
        ds.val,
        ds.test,
        ds.test_unseen,
        ds.heldout_forms,
    )
    other = make_dataset(seed=4, n_train=800, n_val=100, n_test=100, n_test_unseen=100)
    assert other.train != ds.train


def test_split_sizes_and_disjointness(ds):
    assert (len(ds.train), len(ds.val), len(ds.test), len(ds.test_unseen)) == (800, 100, 100, 100)
    keys = [{" ".join(p.src) for p in split} for split in (ds.train, ds.val, ds.test, ds.test_unseen)]
    assert sum(map(len, keys)) == 1100, "sentences repeat inside a split"
    for i in range(4):
        for j in range(i + 1, 4):
            assert not keys[i] & keys[j]


def test_heldout_forms_only_in_the_unseen_test(ds):
    held = {f.neo for f in ds.heldout_forms}
    assert [f.kind for f in ds.heldout_forms] == ["adjective"] * 6 + ["verb"] * 3
    assert len({f.english for f in ds.heldout_forms}) == 9  # each adjective and verb at most once
    for p in ds.train + ds.val + ds.test:
        assert not held & set(p.tgt), p.src
    for p in ds.test_unseen:
        assert held & set(p.tgt), p.src
    # every (gender, number) is held out at least once among the adjectives, and each held-out word is
    # still trained on in its three other forms
    assert {(f.gender, f.number) for f in ds.heldout_forms if f.kind == "adjective"} == set(grammar.GENDER_NUMBER)
    train_words = {w for p in ds.train for w in p.tgt}
    for f in ds.heldout_forms:
        form = grammar.adjective_form if f.kind == "adjective" else grammar.verb_form
        assert form(f.english, f.gender, f.number) == f.neo
        others = {form(f.english, g, n) for g, n in grammar.GENDER_NUMBER} - {f.neo}
        assert len(others) == 3 and others <= train_words


def test_vocabulary_sizes_and_sentence_lengths(ds):
    assert len(ds.src_vocab.words()) == 57 and len(ds.tgt_vocab.words()) == 108
    assert set(ds.tgt_vocab.words()) == set(grammar.target_words())
    lengths = [len(p.src) for p in ds.train]
    assert 5 <= min(lengths) and max(lengths) <= 14


def test_target_lengths_differ_from_source_lengths(ds):
    diffs = {len(p.tgt) - len(p.src) for p in ds.train}
    assert diffs == {-2, -1, 0, 1, 2}
    for p in ds.train:
        # one Neo word per English word, minus every "a", plus "ke", plus one for "behind"
        assert len(p.tgt) == len(p.src) - p.src.count("a") + 1 + p.src.count("behind")


def test_gold_alignment_drops_inserts_and_splits_words():
    pair = make_pair("the big dog sees a red cat behind the tree".split())
    assert pair.tgt == ("lo", "kano", "grando", "la", "arbora", "na", "post", "mira", "ruba", "ke", "vidos")
    assert pair.alignment == (0, 2, 1, 8, 9, 7, 7, 6, 5, None, 3)
    assert pair.role == ("det", "noun", "adj", "det", "noun", "postp", "postp", "noun", "adj", "particle", "verb")
    assert pair.agrees_with == (2, None, 2, 9, None, None, None, None, 6, None, 2)
    assert 4 not in pair.alignment  # "a" has no Neo word


def test_agreement_needs_context():
    # determiner and adjectives take the noun's gender and number; the verb the subject's gender and number
    assert make_pair("some quick foxes chase the old wolf".split()).tgt == (
        "une",
        "vulpe",
        "rape",
        "lo",
        "lupo",
        "veko",
        "ke",
        "chasant",
    )
    assert make_pair("some quick wolves chase a fox".split()).tgt == ("uni", "lupi", "rapi", "vulpa", "ke", "chasont")
    assert make_pair("a quick fox chases the old wolves".split()).tgt == (
        "vulpa",
        "rapa",
        "li",
        "lupi",
        "veki",
        "ke",
        "chasas",
    )
    # the English verb form carries the number, never the gender: both genders share "chases"
    assert make_pair("the dog chases a cat".split()).tgt[-1] == "chasos"


@pytest.mark.parametrize(
    "sentence, match",
    [
        ("dog sees a cat", "word 0: expected a determiner"),
        ("the dog sees", "word 3: expected a determiner .* got the end of the sentence"),
        ("the dog see a cat", "word 2: the verb 'see' does not agree with the singular subject"),
        ("a dogs see a cat", "word 0: 'a' cannot go with the plural noun 'dogs'"),
        ("the dog sees a cat the", "word 5: expected a preposition"),
        ("the dog sees a big", "word 5: expected an adjective or a noun"),
        ("the dog sees a cat near the tree now", "word 8: expected the end"),
    ],
)
def test_ungrammatical_sentences_are_named(sentence, match):
    with pytest.raises(grammar.GrammarError, match=match):
        grammar.reference_translation(sentence.split())


def test_vocab_round_trip(ds):
    for vocab, words in ((ds.src_vocab, ds.train[0].src), (ds.tgt_vocab, ds.train[0].tgt)):
        ids = vocab.encode(words, bos=True, eos=True)
        assert ids[0] == vocab.bos_id and ids[-1] == vocab.eos_id
        assert vocab.decode(ids + [vocab.pad_id] * 3) == list(words)
        assert vocab.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert ds.src_vocab.encode(["dog", "zebra"]) == [ds.src_vocab.stoi["dog"], ds.src_vocab.unk_id]
    assert ds.src_vocab.unknown(["dog", "zebra", "okapi", "zebra"]) == ["zebra", "okapi"]


def test_decode_stops_at_eos(ds):
    v = ds.tgt_vocab
    assert v.decode([v.stoi["lo"], v.eos_id, v.stoi["kano"]]) == ["lo"]
    assert "ke" in v and "na" in v and "post" in v


def test_tensors_and_batches(ds):
    src, tgt = to_tensors(ds.train, ds.src_vocab, ds.tgt_vocab)
    assert src.dtype == tgt.dtype == torch.long and src.shape[0] == tgt.shape[0] == 800
    assert (tgt[:, 0] == ds.tgt_vocab.bos_id).all()
    assert ((src == ds.src_vocab.eos_id).sum(1) == 1).all() and ((tgt == ds.tgt_vocab.eos_id).sum(1) == 1).all()
    b1 = [b for _, b in zip(range(3), batches(src, tgt, 32, seed=1))]
    b2 = [b for _, b in zip(range(3), batches(src, tgt, 32, seed=1))]
    for (s1, t1), (s2, t2) in zip(b1, b2):
        assert torch.equal(s1, s2) and torch.equal(t1, t2) and s1.shape[0] == 32
        assert (s1[:, -1] != 0).any() and (t1[:, -1] != 0).any(), "an all-padding column was kept"
    assert torch.equal(pad_sequences([[5], [6, 7]], 0), torch.tensor([[5, 0], [6, 7]]))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_train": 0}, ValueError, "n_train must be a positive int"),
        ({"n_test": 1.5}, TypeError, "n_test must be an int"),
        ({"seed": "a"}, TypeError, "seed must be an int"),
        ({"n_test_unseen": 0}, ValueError, "n_test_unseen must be a positive int"),
        ({"n_adjective_forms": 11}, ValueError, r"n_adjective_forms must be an int in \[0, 10\], got 11"),
        ({"seed": -1}, ValueError, r"seed must be an int in \[0, 2\*\*63\)"),
        ({"n_verb_forms": 1.0}, TypeError, "n_verb_forms must be an int"),
    ],
)
def test_make_dataset_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_dataset(**kwargs)


@pytest.mark.parametrize(
    "words, match",
    [
        (["a", "a"], "words must be distinct"),
        (["a b"], "without spaces"),
        (["<pad>"], "not a special token"),
    ],
)
def test_vocab_bad_input(words, match):
    with pytest.raises(ValueError, match=match):
        Vocab(words)


def test_vocab_encode_and_decode_bad_input(ds):
    with pytest.raises(TypeError, match="words must be a list of words, got the str"):
        ds.src_vocab.encode("the dog")
    with pytest.raises(
        ValueError, match=r"ids must be an int in \[0, 60\] \(a token id of a vocabulary of 61\), got 99"
    ):
        ds.src_vocab.decode([99])


def test_batches_and_padding_bad_input():
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        next(batches(torch.zeros(4, 3, dtype=torch.long), torch.zeros(4, 3, dtype=torch.long), 0, seed=0))
    with pytest.raises(ValueError, match=r"tgt must have shape \(number of src sentences=4, T\), got \(5, 3\)"):
        next(batches(torch.zeros(4, 3, dtype=torch.long), torch.zeros(5, 3, dtype=torch.long), 2, seed=0))
    with pytest.raises(ValueError, match="src must be an integer tensor"):
        next(batches(torch.zeros(4, 3), torch.zeros(4, 3, dtype=torch.long), 2, seed=0))
    with pytest.raises(TypeError, match="seed must be an int, got float 0.5"):
        next(batches(torch.zeros(4, 3, dtype=torch.long), torch.zeros(4, 3, dtype=torch.long), 2, seed=0.5))
    with pytest.raises(ValueError, match="seqs must be a non-empty list of id lists, got an empty one"):
        pad_sequences([], 0)
    with pytest.raises(TypeError, match="pad_id must be an int, got str"):
        pad_sequences([[1]], "0")
    with pytest.raises(ValueError, match="pairs must be a non-empty list of Pairs, got an empty one"):
        to_tensors([], None, None)
    with pytest.raises(TypeError, match="src_vocab must be a Vocab, got NoneType"):
        to_tensors([make_pair("the dog sees a cat".split())], None, None)


def test_sampler_covers_the_grammar():
    rng = np.random.default_rng(0)
    sentences = [grammar.sample_sentence(rng) for _ in range(2000)]
    for s in sentences:
        grammar.reference_translation(s)  # every sample parses
    lengths = {len(s) for s in sentences}
    assert min(lengths) == 5 and max(lengths) == 14  # 4 + 1 + 4 + 1 + 4


# --- bad input: every case names the argument ------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda v: Vocab(5), TypeError, "words must be a list of words, got int 5"),
        (lambda v: Vocab("dog cat"), TypeError, "words must be a list of words, got the str 'dog cat'"),
        (lambda v: v.encode(5), TypeError, "words must be a list of words, got int 5"),
        (lambda v: v.encode("the cat"), TypeError, r"words must be a list of words, got the str 'the cat'; split"),
        (lambda v: v.encode(["the"], bos="yes"), TypeError, "bos must be a bool"),
        (lambda v: v.encode(["the"], eos=1), TypeError, "eos must be a bool"),
        (lambda v: v.decode(5), TypeError, "ids must be a sequence of token ids, got int 5"),
        (lambda v: v.decode([2.0]), TypeError, "ids must be an int, got float 2.0"),
        (lambda v: v.decode(torch.tensor([2.5])), TypeError, "ids must be an int, got float 2.5"),
        (lambda v: v.decode(torch.tensor([4, 999])), ValueError, r"ids must be an int in \[0, 60\]"),
    ],
)
def test_vocab_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(Vocab(grammar.source_words()))


def test_vocab_takes_any_sequence_of_ids():
    v = Vocab(grammar.source_words())
    ids = v.encode(["the", "dog"], eos=True)
    assert v.decode(torch.tensor(ids)) == v.decode(np.array(ids)) == v.decode(tuple(ids)) == ["the", "dog"]


@pytest.mark.parametrize(
    "seqs, error, match",
    [
        ([[1, "a"]], TypeError, r"seqs\[0\] must be a list of int token ids, got \[1, 'a'\]"),
        ([[1, 2], [1, 2.5]], ValueError, r"seqs\[1\] must be an integer tensor, got dtype torch.float32"),
        ([[1, -2]], ValueError, r"seqs\[0\] must hold token ids >= 0, got min -2"),
        ([5], TypeError, r"seqs\[0\] must be a list of int token ids, got int 5"),
        ([[[1, 2]]], ValueError, r"seqs\[0\] must have shape \(T,\), got \(1, 2\)"),
    ],
)
def test_pad_sequences_refuses_what_it_would_truncate(seqs, error, match):
    with pytest.raises(error, match=match):
        pad_sequences(seqs, 0)


def test_pad_sequences_keeps_empty_sequences():
    assert pad_sequences([[], [3]], 0).tolist() == [[0], [3]]


def test_to_tensors_and_grammar_bad_input():
    v = Vocab(grammar.source_words())
    with pytest.raises(TypeError, match=r"pairs\[0\] must be a Pair, got str"):
        to_tensors(["the dog sees a cat"], v, v)
    with pytest.raises(TypeError, match="words must be a list of words, got the str 'the dog sees a cat'"):
        make_pair("the dog sees a cat")
    with pytest.raises(TypeError, match="words must be a list of words, got the str"):
        grammar.reference_translation("the dog sees a cat")
    with pytest.raises(ValueError, match=r"gender must be one of \('m', 'f'\), got 'x'"):
        grammar.adjective_form("big", "x", "sg")
    with pytest.raises(ValueError, match=r"number must be one of \('sg', 'pl'\), got 'plural'"):
        grammar.verb_form("sees", "m", "plural")
    with pytest.raises(ValueError, match="adjective must be one of .*, got 'zzz'"):
        grammar.adjective_form("zzz", "m", "sg")
    with pytest.raises(ValueError, match="verb must be one of .*, got 'zzz'"):
        grammar.verb_form("zzz", "m", "sg")
    with pytest.raises(TypeError, match=r"rng must be a numpy Generator \(np.random.default_rng\(seed\)\), got int"):
        grammar.sample_sentence(5)
    with pytest.raises(ValueError, match=r"number must be one of \('sg', 'pl'\), got 'x'"):
        grammar.sample_noun_phrase(np.random.default_rng(0), "x")


def test_pad_sequences_gives_the_same_tensor_for_lists_tuples_and_tensors():
    as_lists = pad_sequences([[5], [6, 7], []], 0)  # plain lists of ints: the fast path
    mixed = pad_sequences([(5,), torch.tensor([6, 7]), np.array([], dtype=np.int64)], 0)  # each checked on its own
    assert as_lists.dtype == mixed.dtype == torch.long and torch.equal(as_lists, mixed)
    with pytest.raises(ValueError, match=r"seqs\[1\] must hold token ids >= 0, got min -1"):
        pad_sequences([[1], [2, -1]], 0)  # a list the fast path does not take is still refused by name
