"""utils.experiments.subword_attention: the ending tokens are the last piece of each adjective and verb, and the
hit rates count each head's arg-max on the noun, the word translated and its two neighbours (checked with heads
whose weights are set by hand); apart=True keeps only tokens whose noun is not a neighbour."""

import dataclasses
import types

import pytest
import torch

from utils.experiments import subword_attention as sa
from utils.translator import recipe
from utils.translator.data import make_dataset, with_subword_targets
from utils.translator.model import Seq2SeqTransformer


@pytest.fixture(scope="module")
def data():
    ds = make_dataset(seed=0, n_train=300, n_val=20, n_test=40, n_test_unseen=40)
    return with_subword_targets(ds, 30)


def test_ending_tokens_are_the_last_piece_of_each_adjective_and_verb(data):
    for p in data.test[:20]:
        tokens = data.tgt_vocab.tokens(data.tgt_vocab.encode(list(p.tgt)))
        ends = sa.ending_tokens(p, data.tgt_vocab)
        words = [(w, r, a, n) for w, r, a, n in zip(p.tgt, p.role, p.alignment, p.agrees_with) if r in ("adj", "verb")]
        assert len(ends) == len(words)
        for (t, role, a, n), (w, r, a2, n2) in zip(ends, words):
            assert tokens[t].endswith("</w>") and w.endswith(tokens[t].removesuffix("</w>"))
            assert (role, a, n) == (r, a2, n2)
        verbs = [(a, n) for _, role, a, n in ends if role == "verb"]
        assert verbs and all(n == a - 1 for a, n in verbs)  # English: the subject noun right before its verb


def hand_set_heads(model, data):
    """Replace the model's cross-attention by hand-set weights after each forward: head 0 on the word translated,
    head 1 on the agreeing noun (where a token has one; else position 0), head 2 one word back, head 3 one ahead."""
    forward = model.forward

    def patched(src, decoder_input):
        out = forward(src, decoder_input)
        B, T, S = decoder_input.shape[0], decoder_input.shape[1], src.shape[1]
        w = torch.zeros(B, model.config.num_heads, T, S)
        for i, p in enumerate(patched.pairs[:B]):
            for t, _, a, n in sa.ending_tokens(p, data.tgt_vocab):
                for h, j in enumerate((a, n, a - 1, a + 1)):
                    w[i, h, t, j] = 1.0
        for layer in model.decoder.layers:
            layer.cross_attn_weights = w
        return out

    model.forward = patched
    return patched


def test_hit_rates_follow_hand_set_heads(data):
    torch.manual_seed(0)
    config = dataclasses.replace(
        recipe.MODEL, tgt_vocab_size=len(data.tgt_vocab), num_layers=1, d_model=16, d_ff=32, max_len=64
    )
    model = Seq2SeqTransformer(config)
    patched = hand_set_heads(model, data)
    pairs = data.test[:30]
    patched.pairs = pairs
    out = sa.ending_attention(model, pairs, data.src_vocab, data.tgt_vocab, batch_size=30)
    rates = {k: v[0].tolist() for k, v in out["rates"].items()}
    assert out["count"] == sum(len(sa.ending_tokens(p, data.tgt_vocab)) for p in pairs)
    assert rates["word translated"][0] == 1 and rates["agreeing noun"][1] == 1
    assert rates["previous word"][2] == 1 and rates["next word"][3] == 1
    assert rates["previous word"][1] > 0  # the verbs: their noun is the word before
    apart = sa.ending_attention(model, pairs, data.src_vocab, data.tgt_vocab, apart=True, batch_size=30)
    r = {k: v[0].tolist() for k, v in apart["rates"].items()}
    assert 0 < apart["count"] < out["count"]
    assert r["agreeing noun"] == [0, 1, 0, 0] and r["previous word"] == [0, 0, 1, 0] and r["next word"] == [0, 0, 0, 1]


def test_token_map_labels_one_row_per_target_token(data):
    torch.manual_seed(0)
    config = dataclasses.replace(recipe.MODEL, tgt_vocab_size=len(data.tgt_vocab), d_model=16, d_ff=32, max_len=64)
    model = Seq2SeqTransformer(config)
    p = data.test_unseen[0]
    m = sa.token_attention_map(model, p, data.src_vocab, data.tgt_vocab)
    assert m["tgt"][-1] == "<eos>" and len(m["tgt"]) == len(data.tgt_vocab.encode(list(p.tgt))) + 1
    assert m["src"] == list(p.src) + ["<eos>"]
    assert all(w.shape == (config.num_heads, len(m["tgt"]), len(m["src"])) for w in m["weights"])
    assert m["endings"] == sa.ending_tokens(p, data.tgt_vocab)


@pytest.mark.parametrize("word_level", [False, True])
def test_noun_head_picks_the_head_on_the_noun_and_measures_it_where_the_noun_is_two_words_on(data, word_level):
    ds = make_dataset(seed=0, n_train=300, n_val=20, n_test=40, n_test_unseen=40) if word_level else data
    torch.manual_seed(0)
    config = dataclasses.replace(
        recipe.MODEL, tgt_vocab_size=len(ds.tgt_vocab), num_layers=1, d_model=16, d_ff=32, max_len=64
    )
    model = Seq2SeqTransformer(config)
    pairs = ds.test[:30]
    hand_set_heads(model, ds).pairs = pairs
    split = types.SimpleNamespace(src_vocab=ds.src_vocab, tgt_vocab=ds.tgt_vocab, test=pairs, test_unseen=pairs)
    out = sa.noun_head(model, split, maps=True)
    assert (out["layer"], out["head"], out["chosen_rate"]) == (0, 1, 1.0)
    assert out["rates"] == {"agreeing noun": 1.0, "word translated": 0.0, "previous word": 0.0, "next word": 0.0}
    assert out["count"] == sum(
        abs(n - a) >= 2 for p in pairs for _, _, a, n in sa.ending_tokens(p, ds.tgt_vocab, roles=("adj",))
    )
    assert out["maps"]["next word"][0].tolist() == [0, 0, 0, 1]


def test_bad_input_is_named(data):
    with pytest.raises(ValueError, match="pairs"):
        sa.ending_attention(Seq2SeqTransformer(recipe.MODEL), [], data.src_vocab, data.tgt_vocab)
    with pytest.raises(TypeError, match="pair"):
        sa.ending_tokens("lo kano", data.tgt_vocab)
    with pytest.raises(TypeError, match="model"):
        sa.noun_head("a model", data)
    with pytest.raises(TypeError, match="maps"):
        sa.noun_head(Seq2SeqTransformer(recipe.MODEL), data, maps="yes")
