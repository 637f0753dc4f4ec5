"""BPE-dropout in the translator's pipeline: SubwordVocab.encode with dropout, DropoutTargets (targets cut afresh
each time a sentence is drawn), batches and train taking them; the tensor path is unchanged."""

import pytest
import torch

from utils import subwords
from utils.translator.data import DropoutTargets, batches, make_dataset, to_tensors, with_subword_targets
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig
from utils.translator.train import train


@pytest.fixture(scope="module")
def sw():
    return with_subword_targets(make_dataset(seed=3, n_train=400, n_val=20, n_test=20, n_test_unseen=20), 60)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_vocab_encode_with_dropout_zero_is_the_plain_encode(sw):
    v = sw.tgt_vocab
    for p in sw.train[:100]:
        plain = v.encode(p.tgt, bos=True, eos=True)
        assert v.encode(p.tgt, True, True, 0.0) == v.encode(p.tgt, True, True, 0.0, gen()) == plain


def test_vocab_encode_with_dropout_decodes_back_and_repeats_with_the_seed(sw):
    v = sw.tgt_vocab
    a, b = gen(5), gen(5)
    lengths_plain, lengths_dropout = 0, 0
    for p in sw.train[:200]:
        ids = v.encode(p.tgt, True, True, 0.2, a)
        assert ids == v.encode(p.tgt, True, True, 0.2, b), "the same seed gave another cut"
        assert ids[0] == v.bos_id and ids[-1] == v.eos_id and v.decode(ids) == list(p.tgt)
        lengths_plain += len(v.encode(p.tgt))
        lengths_dropout += len(ids) - 2
    assert lengths_dropout > lengths_plain, "dropout made no cut finer"
    chars = v.encode(["grandi"], dropout=1.0, generator=gen())
    assert [v.itos[i] for i in chars] == subwords.split_word("grandi")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"dropout": 1.5, "generator": gen()}, ValueError, r"dropout must be a probability in \[0, 1\]"),
        ({"dropout": "0.1", "generator": gen()}, TypeError, r"dropout must be a probability in \[0, 1\].*got str"),
        ({"dropout": 0.1}, TypeError, r"generator must be a torch.Generator \(dropout=0.1 > 0 draws from it\)"),
        ({"dropout": 0.1, "generator": 7}, TypeError, r"generator must be a torch.Generator.*got int"),
    ],
)
def test_vocab_encode_dropout_bad_input(sw, kwargs, error, match):
    with pytest.raises(error, match=match):
        sw.tgt_vocab.encode(["lo", "kano"], **kwargs)


def test_dropout_targets_cut_every_draw_afresh(sw):
    targets = DropoutTargets(sw.train, sw.tgt_vocab, 0.3, seed=1)
    assert len(targets) == len(sw.train) and targets.shape[0] == len(sw.train)
    idx = torch.arange(16)
    g = targets.generator()
    first, second = targets.cut(idx, g), targets.cut(idx, g)  # (16, T) each
    assert not torch.equal(first, second), "two draws of the same sentences were cut alike"
    assert torch.equal(first, targets.cut(idx, targets.generator())), "a fresh generator did not repeat the cut"
    for t in (first, second):
        assert t.dtype == torch.long and t.shape[1] <= targets.shape[1]
        assert [sw.tgt_vocab.decode(row) for row in t] == [list(sw.train[i].tgt) for i in range(16)]
    # the repr is the cache key: it says what the targets are, and no memory address
    assert repr(targets) == repr(DropoutTargets(sw.train, sw.tgt_vocab, 0.3, seed=1))
    assert "0x" not in repr(targets) and "dropout=0.3" in repr(targets)
    assert repr(targets) != repr(DropoutTargets(sw.train, sw.tgt_vocab, 0.3, seed=2))
    assert repr(targets) != repr(DropoutTargets(sw.train[1:], sw.tgt_vocab, 0.3, seed=1))


def test_batches_with_dropout_targets_keep_the_sentence_order(sw):
    src, tgt = to_tensors(sw.train, sw.src_vocab, sw.tgt_vocab)  # (N, S), (N, T)
    plain = batches(src, tgt, 32, seed=4)
    cut = batches(src, DropoutTargets(sw.train, sw.tgt_vocab, 0.2, seed=0), 32, seed=4)
    v = sw.tgt_vocab
    finer = 0
    for _ in range(15):  # past the end of the first pass over the 400 sentences
        (s1, t1), (s2, t2) = next(plain), next(cut)
        assert torch.equal(s1, s2)
        assert [v.decode(r) for r in t1] == [v.decode(r) for r in t2]
        finer += int((t2 != v.pad_id).sum() - (t1 != v.pad_id).sum())
    assert finer > 0


def test_training_on_dropout_targets_repeats_and_differs_from_plain_training(sw):
    cfg = TranslatorConfig(len(sw.src_vocab), len(sw.tgt_vocab), d_model=16, num_heads=2, d_ff=32, num_layers=1)
    src, tgt = to_tensors(sw.train, sw.src_vocab, sw.tgt_vocab)

    def trained(targets):
        torch.manual_seed(0)
        model = Seq2SeqTransformer(cfg)
        history = train(model, src, targets, steps=8, batch_size=16, warmup=4, num_threads=1, progress=False)
        return model, history

    targets = DropoutTargets(sw.train, sw.tgt_vocab, 0.1, seed=0)
    (a, ha), (b, hb), (_, hc) = trained(targets), trained(targets), trained(tgt)
    assert ha["loss"] == hb["loss"] and all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert ha["loss"] != hc["loss"]
    assert sum(ha["tokens"]) > sum(hc["tokens"]), "the dropout cuts were not longer than the plain ones"


def test_dropout_targets_bad_input(sw):
    src, _ = to_tensors(sw.train, sw.src_vocab, sw.tgt_vocab)
    cases = [
        (lambda: DropoutTargets([], sw.tgt_vocab, 0.1), ValueError, "pairs must be a non-empty list of Pairs"),
        (lambda: DropoutTargets(sw.train, sw.src_vocab, 0.1), TypeError, "tgt_vocab must be a SubwordVocab, got Vocab"),
        (lambda: DropoutTargets(sw.train, sw.tgt_vocab, 2), ValueError, r"dropout must be a probability in \[0, 1\]"),
        (lambda: DropoutTargets(sw.train, sw.tgt_vocab, None), TypeError, r"dropout must be a probability"),
        (lambda: DropoutTargets(sw.train, sw.tgt_vocab, 0.1, -1), ValueError, r"seed must be an int in \[0, 2\*\*63\)"),
        (
            lambda: next(batches(src[:5], DropoutTargets(sw.train, sw.tgt_vocab, 0.1), 2, 0)),
            ValueError,
            r"tgt must hold one sentence per src sentence \(5\), got 400",
        ),
        (
            lambda: next(batches(src, DropoutTargets(sw.train, sw.tgt_vocab, 0.1), 2, 0, pad_id=3)),
            ValueError,
            "pad_id must be the targets' vocabulary's pad id 0, got 3",
        ),
        (lambda: next(batches(src, [[1, 2]], 2, 0)), TypeError, "tgt must be a torch.Tensor of token ids or a Dropout"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
