"""The translator's pipeline with a sub-word target vocabulary (SubwordVocab, with_subword_targets): the word-level
path gives the tensors it gave before; sub-word targets decode back to the reference words, metrics compare
decoded words, per-word measures follow each word's tokens (alignment accuracy: test_translator_training.py)."""

import dataclasses
import hashlib

import pytest
import torch

from utils import subwords
from utils.translator.checkpoint import save_checkpoint
from utils.translator.data import HeldoutForm, make_dataset, to_tensors, with_subword_targets
from utils.translator.evaluate import (
    evaluate,
    exact_match,
    heldout_form_probability,
    per_token,
    translate_pairs,
)
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig, eval_mode
from utils.translator.train import shift_targets, train
from utils.translator.vocab import SubwordVocab, Vocab

# sha256 of to_tensors(split, src_vocab, tgt_vocab) (dtype, shape and bytes of src then tgt) for
# make_dataset(seed=3, n_train=800, n_val=100, n_test=100, n_test_unseen=100), computed at commit 166cfea, before
# the pipeline took sub-word vocabularies: the word-level ids must not change.
WORD_LEVEL_DIGESTS = {
    "train": "129134c0ba01898ec618b9d525b78f82d60390a1ecd01e62be6c6ea478442fc7",
    "val": "5037e4fd6f77c967c10bb309c09e2726901a3a907b2abdf89c67bb9ec90fd606",
    "test": "930c282152d5be9a12056799f980608f744d1ca27c437702e1cfaa32a6f75c81",
    "test_unseen": "0afc6da110855bf88c87fbd9074ae8f45c0ecce86774a95e2a24826e08d75cf5",
}
SPLITS = tuple(WORD_LEVEL_DIGESTS)


def digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def ds():
    return make_dataset(seed=3, n_train=800, n_val=100, n_test=100, n_test_unseen=100)


@pytest.fixture(scope="module")
def sw(ds):
    return with_subword_targets(ds, 40)


@pytest.fixture(scope="module")
def tiny(sw):
    """A tiny sub-word model after 30 steps (it translates nothing right; the plumbing is what is tested)."""
    torch.manual_seed(0)
    cfg = TranslatorConfig(len(sw.src_vocab), len(sw.tgt_vocab), d_model=16, num_heads=2, d_ff=32, num_layers=1)
    src, tgt = to_tensors(sw.train, sw.src_vocab, sw.tgt_vocab)
    model = Seq2SeqTransformer(cfg)
    train(model, src, tgt, steps=30, batch_size=32, warmup=10, num_threads=1, progress=False)
    return model


def test_word_level_tensors_are_the_ones_before_sub_words(ds):
    for split in SPLITS:
        assert digest(*to_tensors(getattr(ds, split), ds.src_vocab, ds.tgt_vocab)) == WORD_LEVEL_DIGESTS[split], split


def test_subword_dataset_keeps_the_splits_and_learns_merges_on_training_translations_only(ds, sw):
    for field in (*SPLITS, "heldout_forms", "src_vocab"):
        assert getattr(sw, field) is getattr(ds, field), field
    assert isinstance(sw.tgt_vocab, SubwordVocab) and type(ds.tgt_vocab) is Vocab
    assert sw.tgt_vocab.bpe == subwords.train([" ".join(p.tgt) for p in ds.train], 40)
    assert sw.tgt_vocab.itos[:4] == ds.tgt_vocab.itos[:4] and sw.tgt_vocab.words() == sw.tgt_vocab.bpe.vocabulary()
    with pytest.raises(TypeError, match="ds must be a Dataset, got list"):
        with_subword_targets(ds.train, 40)


def test_subword_targets_decode_back_to_the_reference_words(ds, sw):
    v = sw.tgt_vocab
    for split in SPLITS:
        pairs = getattr(sw, split)
        src, tgt = to_tensors(pairs, sw.src_vocab, v)  # (N, S), (N, T)
        assert torch.equal(src, to_tensors(pairs, ds.src_vocab, ds.tgt_vocab)[0]), "the source changed"
        for p, row in zip(pairs, tgt.tolist(), strict=True):
            assert row[0] == v.bos_id and v.decode(row) == list(p.tgt)
            assert row.index(v.eos_id) - 1 == sum(len(subwords.encode(v.bpe, w)) for w in p.tgt)
    lengths = (tgt > v.eos_id).sum(1)  # (N,): sub-word tokens per sentence
    words = torch.tensor([len(p.tgt) for p in pairs])
    assert (lengths >= words).all() and (lengths > words).any()


def test_exact_match_compares_decoded_words_not_token_ids(sw):
    v = sw.tgt_vocab
    word = next(w for p in sw.train for w in p.tgt if len(v.word_ids(w)) > 1)
    *first, last = subwords.encode(v.bpe, word)
    assert last.endswith(subwords.END_OF_WORD)
    letters = [c for t in first for c in t] + [last]  # another cut of the same word, character by character
    ids = [v.bos_id] + [v.stoi[c] for c in letters] + [v.eos_id, v.pad_id]
    assert ids[1:-2] != v.word_ids(word) and v.decode(ids) == [word]
    assert exact_match([v.decode(ids)], [[word]]) == 1.0
    # an unfinished last word (no end-of-word marker) is kept as it is, and is then not the reference
    assert v.decode([v.stoi[c] for c in letters[:-1]]) == [word[:-1]]


def test_per_token_values_follow_each_words_tokens(ds, sw):
    p = ds.test[0]
    assert per_token(p, p.alignment, ds.tgt_vocab) == list(p.alignment)
    tokens = [len(sw.tgt_vocab.word_ids(w)) for w in p.tgt]
    assert per_token(p, p.role, sw.tgt_vocab) == [r for r, n in zip(p.role, tokens, strict=True) for _ in range(n)]
    assert per_token(dataclasses.replace(p, role=()), (), sw.tgt_vocab) == []


def test_heldout_form_probability_is_the_product_over_the_forms_tokens(tiny, ds, sw):
    v = sw.tgt_vocab
    pairs = sw.test_unseen[:6]
    probs = heldout_form_probability(tiny, pairs, sw.src_vocab, v, sw.heldout_forms)
    held = {f.neo for f in sw.heldout_forms}
    assert probs.shape == (sum(w in held for p in pairs for w in p.tgt),)
    expected = []
    for p in pairs:  # one sentence at a time, token by token, teacher forced
        ids = v.encode(list(p.tgt), bos=True, eos=True)
        src = torch.tensor([sw.src_vocab.encode(list(p.src), eos=True)])  # (1, S)
        with eval_mode(tiny):
            prob = tiny(src, torch.tensor([ids[:-1]])).softmax(-1)[0]  # (T-1, vocab)
        t = 0
        for w in p.tgt:
            n = len(v.word_ids(w))
            if w in held:
                expected.append(torch.stack([prob[t + k, ids[t + k + 1]] for k in range(n)]).prod())
            t += n
    torch.testing.assert_close(probs, torch.stack(expected), rtol=1e-5, atol=1e-7)
    assert any(len(v.word_ids(w)) > 1 for p in pairs for w in p.tgt if w in held), "no form of several tokens"


def test_heldout_form_probability_at_word_level_is_the_probability_at_the_forms_id(ds):
    """The word-level answer equals the per-id formula it had before sub-words, bit for bit."""
    torch.manual_seed(0)
    model = Seq2SeqTransformer(TranslatorConfig(len(ds.src_vocab), len(ds.tgt_vocab), 16, 2, 32, 1))
    pairs = ds.test_unseen[:10]
    probs = heldout_form_probability(model, pairs, ds.src_vocab, ds.tgt_vocab, ds.heldout_forms)
    src, tgt = to_tensors(pairs, ds.src_vocab, ds.tgt_vocab)
    decoder_input, labels = shift_targets(tgt)
    with eval_mode(model):
        p = model(src, decoder_input).softmax(-1).gather(-1, labels[..., None])[..., 0]  # (N, T-1)
    is_held = torch.zeros_like(labels, dtype=torch.bool)
    for f in ds.heldout_forms:
        is_held |= labels == ds.tgt_vocab.stoi[f.neo]
    assert torch.equal(probs, p[is_held]) and len(probs) > 0
    form = HeldoutForm("adjective", "white", "m", "pl", "albi")
    assert heldout_form_probability(model, ds.test[:3], ds.src_vocab, ds.tgt_vocab, [form]).shape == (
        sum(p.tgt.count("albi") for p in ds.test[:3]),
    )


def test_a_subword_model_translates_into_words_and_is_evaluated_on_them(tiny, sw):
    pairs = sw.test[:20]
    hyps = translate_pairs(tiny, pairs, sw.src_vocab, sw.tgt_vocab)
    assert len(hyps) == 20 and all(isinstance(h, list) and all(isinstance(w, str) for w in h) for h in hyps)
    result = evaluate(tiny, pairs, sw.src_vocab, sw.tgt_vocab)
    assert result["hypotheses"] == hyps
    assert result["exact_match"] == exact_match(hyps, [list(p.tgt) for p in pairs])
    assert sw.tgt_vocab.max_tokens(12) is None and sw.src_vocab.max_tokens(12) == 12


def test_subword_vocab_bad_input(sw, tmp_path):
    v = sw.tgt_vocab
    cases = [
        (lambda: SubwordVocab(["lo"]), TypeError, "bpe must be a BPE, got list"),
        (lambda: v.encode("lo kano"), TypeError, r"words must be a list of words, got the str 'lo kano'"),
        (lambda: v.encode(["lo", 3]), TypeError, r"words\[1\] must be a str, got int"),
        (lambda: v.encode(["lo kano"]), ValueError, r"words\[0\] must be one word \(no spaces\), got 'lo kano'"),
        (lambda: v.encode([""]), ValueError, r"words\[0\] must be one word"),
        (lambda: v.encode(["lo", "loz"]), ValueError, r"words\[1\] has the word 'loz', whose symbol 'z</w>'"),
        (lambda: v.encode(["lo"], eos=1), TypeError, "eos must be a bool"),
        (lambda: v.decode([len(v)]), ValueError, r"ids must be an int in \[0, "),
        (lambda: v.word_ids(None), TypeError, "word must be a str, got NoneType"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
    model = Seq2SeqTransformer(TranslatorConfig(len(sw.src_vocab), len(v), 16, 2, 32, 1))
    with pytest.raises(TypeError, match="tgt_vocab must be a word-level Vocab"):
        save_checkpoint(tmp_path / "m.pt", model, sw.src_vocab, v)


def test_subword_vocabularies_are_equal_when_their_merges_are(sw):
    again = with_subword_targets(sw, 40).tgt_vocab
    assert again == sw.tgt_vocab and with_subword_targets(sw, 41).tgt_vocab != sw.tgt_vocab
    assert sw.tgt_vocab != Vocab(sw.tgt_vocab.words()) and "40 merges" in repr(sw.tgt_vocab)
