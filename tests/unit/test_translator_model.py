"""Seq2SeqTransformer: shapes, mask leakage, equality with torch.nn.Transformer, decoding, bad input."""

import pytest
import torch

from utils.multihead import MultiHeadAttention
from utils.translator.decode import greedy_decode, translate
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig, eval_mode, parameter_counts
from utils.translator.torch_reference import TorchSeq2Seq, copy_into_ours, randomize_layer_norms, with_final_norms
from utils.translator.vocab import Vocab

PAD = 0


def make_model(**kw):
    torch.manual_seed(0)
    cfg = dict(src_vocab_size=20, tgt_vocab_size=30, d_model=32, num_heads=4, d_ff=64, num_layers=2)
    cfg.update(kw)
    return Seq2SeqTransformer(TranslatorConfig(**cfg)).eval()


def tokens(batch, T, vocab, seed, n_pad=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(4, vocab, (batch, T), generator=g)  # (batch, T)
    if n_pad:
        t[0, -n_pad:] = PAD  # the first sentence is shorter
    return t


def test_logits_shape_and_parameter_counts():
    model = make_model()
    logits = model(tokens(3, 7, 20, 0), tokens(3, 5, 30, 1))
    assert logits.shape == (3, 5, 30)
    counts = parameter_counts(model)
    assert sum(counts.values()) == sum(p.numel() for p in model.parameters())
    assert counts["source embedding"] == 20 * 32 and counts["output projection"] == 32 * 30 + 30
    assert [w.shape for w in model.cross_attention()] == [(3, 4, 5, 7)] * 2


@pytest.mark.parametrize("t", [0, 2, 5])
def test_future_target_tokens_do_not_change_earlier_logits(t):
    model = make_model()
    src, tgt = tokens(2, 6, 20, 0), tokens(2, 7, 30, 1)
    changed = tgt.clone()
    changed[:, t + 1 :] = tokens(2, 7, 30, 2)[:, t + 1 :]
    a, b = model(src, tgt), model(src, changed)  # (2, 7, 30)
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, t + 1 :], b[:, t + 1 :]), "changing later tokens should change later logits"


def test_source_padding_changes_nothing():
    model = make_model()
    src, tgt = tokens(2, 6, 20, 0, n_pad=2), tokens(2, 5, 30, 1)
    base = model(src, tgt)
    more_pad = torch.cat([src, torch.full((2, 3), PAD)], dim=1)  # (2, 9): three extra padding columns
    torch.testing.assert_close(model(more_pad, tgt), base, atol=1e-5, rtol=0)
    with torch.no_grad():
        model.src_embed.weight[PAD] += 5.0  # a different vector at every padded position
    torch.testing.assert_close(model(src, tgt), base, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("shape", [(1, 4, 3), (3, 9, 6)])
def test_equals_torch_transformer_with_copied_weights(shape, norm_first):
    batch, S, T = shape
    torch.manual_seed(1)
    cfg = make_model(norm_first=norm_first).config
    ref = TorchSeq2Seq(cfg).train()  # train mode (dropout 0): keeps torch off its zero-filling fast path
    randomize_layer_norms(ref, seed=2)  # gamma, beta away from 1, 0: a fresh extra norm would be invisible
    ours = copy_into_ours(ref)
    norms = {name: m for name, m in ours.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    assert len(norms) == 10 + 2 * norm_first  # 2 x 2 + 2 x 3 per layer, and a pre-norm stack's final norms
    assert not any(torch.equal(m.weight, torch.ones_like(m.weight)) for m in norms.values())  # all copied
    src, tgt = tokens(batch, S, 20, 3, n_pad=1), tokens(batch, T, 30, 4, n_pad=1)
    got, expected = ours(src, tgt), ref(src, tgt)
    real = tgt != PAD  # compare real target positions
    torch.testing.assert_close(got[real], expected[real], atol=1e-5, rtol=1e-5)


def _set_every_dropout_rate(model, p):
    """Every dropout rate of ours or of a TorchSeq2Seq: nn.Dropout modules and the attention weights' dropout."""
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = p
        elif isinstance(m, (MultiHeadAttention, torch.nn.MultiheadAttention)):
            m.dropout = p
    return model


@pytest.mark.parametrize("norm_first", [False, True])
def test_torch_reference_has_dropout_where_ours_has_it(norm_first):
    """The same model with dropout 0.1 too: equal logits in eval mode; in training mode the two draw different
    masks, but with every rate 1 (all dropped, nothing random left) they agree again. Without TorchSeq2Seq's
    dropout on the embeddings + PE this last comparison differs by more than 1."""
    torch.manual_seed(1)
    ref = TorchSeq2Seq(make_model(norm_first=norm_first, dropout=0.1).config)
    randomize_layer_norms(ref, seed=2)  # every LayerNorm's beta away from 0: a dropped sum is not invisible
    ours = copy_into_ours(ref)
    assert ref.dropout.p == ours.dropout.p == 0.1
    src, tgt = tokens(3, 9, 20, 3, n_pad=1), tokens(3, 6, 30, 4, n_pad=1)
    real = tgt != PAD
    with torch.no_grad():
        ours.eval(), ref.eval()
        eval_logits = ours(src, tgt)[real]
        torch.testing.assert_close(eval_logits, ref(src, tgt)[real], atol=1e-5, rtol=1e-5)
        ours.train(), ref.train()
        for model in (ours, ref):
            assert (model(src, tgt)[real] - eval_logits).abs().max() > 0.1  # dropout acts in training mode
        _set_every_dropout_rate(ours, 1.0), _set_every_dropout_rate(ref, 1.0)
        dropped = ours(src, tgt)[real]
        assert (dropped - eval_logits).abs().max() > 0.1
        torch.testing.assert_close(dropped, ref(src, tgt)[real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", range(5))
def test_the_comparison_sees_nn_transformers_final_norms_once_gamma_and_beta_are_not_fresh(seed):
    """Post-norm: nn.Transformer's final LayerNorms (not in the paper) change the logits by rounding only
    while every gamma = 1, beta = 0, and by far more than the tolerance once they are not."""
    torch.manual_seed(seed)
    ref = TorchSeq2Seq(make_model().config).train()
    src, tgt = tokens(3, 9, 20, 3, n_pad=1), tokens(3, 6, 30, 4, n_pad=1)
    real = tgt != PAD
    diff = {}
    for name in ("fresh", "random"):
        if name == "random":
            randomize_layer_norms(ref, seed=seed + 10)
        got = copy_into_ours(ref)(src, tgt)[real]
        torch.testing.assert_close(got, ref(src, tgt)[real], atol=1e-5, rtol=1e-5)  # final norms removed
        diff[name] = (got - with_final_norms(ref)(src, tgt)[real]).abs().max().item()  # final norms kept
    assert diff["fresh"] < 1e-4 and diff["random"] > 0.1, diff


def test_with_final_norms_puts_back_what_nn_transformer_builds():
    torch.manual_seed(0)
    cfg = make_model().config
    ref = TorchSeq2Seq(cfg)
    kept = with_final_norms(ref)
    torch.manual_seed(0)
    torch_default = torch.nn.Transformer(32, 4, 2, 2, 64, 0.0, batch_first=True)
    for stack in ("encoder", "decoder"):
        assert getattr(ref.transformer, stack).norm is None
        ours_norm, torch_norm = getattr(kept.transformer, stack).norm, getattr(torch_default, stack).norm
        assert isinstance(torch_norm, torch.nn.LayerNorm) and isinstance(ours_norm, torch.nn.LayerNorm)
        assert ours_norm.normalized_shape == torch_norm.normalized_shape and ours_norm.eps == torch_norm.eps
        torch.testing.assert_close(ours_norm.state_dict(), torch_norm.state_dict())
    assert ref.transformer.encoder.norm is None  # the original is left as it was


def test_randomize_layer_norms_moves_every_gamma_and_beta_within_their_ranges():
    torch.manual_seed(0)
    ref = TorchSeq2Seq(make_model().config)
    assert randomize_layer_norms(ref, seed=1) is ref
    norms = [m for m in ref.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(norms) == 2 * 2 + 2 * 3  # two encoder layers with 2 norms, two decoder layers with 3
    for norm in norms:
        assert 0.5 <= norm.weight.min() and norm.weight.max() <= 1.5 and norm.weight.std() > 0.1
        assert -0.5 <= norm.bias.min() and norm.bias.max() <= 0.5 and norm.bias.std() > 0.1
    other = TorchSeq2Seq(make_model().config)
    torch.manual_seed(5)  # another global random state: the seed argument alone decides the values
    again = [m for m in randomize_layer_norms(other, seed=1).modules() if isinstance(m, torch.nn.LayerNorm)]
    assert all(torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias) for a, b in zip(norms, again))


def test_torch_reference_bad_input():
    torch.manual_seed(0)
    post, pre = TorchSeq2Seq(make_model().config), TorchSeq2Seq(make_model(norm_first=True).config)
    with pytest.raises(
        ValueError, match=r"torch_model must be a post-norm TorchSeq2Seq without final norms .*norm_first=True"
    ):
        with_final_norms(pre)
    with pytest.raises(ValueError, match=r"got one with norm_first=False whose stacks already end with a LayerNorm"):
        with_final_norms(with_final_norms(post))
    with pytest.raises(ValueError, match="torch_model has nn.Transformer's final norms, which our post-norm model"):
        copy_into_ours(with_final_norms(post))
    with pytest.raises(TypeError, match="torch_model must be a TorchSeq2Seq, got Seq2SeqTransformer"):
        with_final_norms(make_model())
    with pytest.raises(TypeError, match=r"model must be a torch.nn.Module, got dict"):
        randomize_layer_norms({}, seed=0)
    with pytest.raises(TypeError, match="seed must be an int, got float 1.5"):
        randomize_layer_norms(post, seed=1.5)
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*63\)"):
        randomize_layer_norms(post, seed=-1)
    with pytest.raises(ValueError, match="model must contain at least one nn.LayerNorm, got a Linear without one"):
        randomize_layer_norms(torch.nn.Linear(2, 2), seed=0)


class ScriptedModel(Seq2SeqTransformer):
    """A model whose next token is scripted: 5, 6, 7, <eos>=2, then 9 forever."""

    def decode(self, tgt, memory, src_mask):
        script = [5, 6, 7, 2] + [9] * 100
        logits = torch.zeros(tgt.shape[0], tgt.shape[1], self.config.tgt_vocab_size)
        for t in range(tgt.shape[1]):
            logits[:, t, script[t]] = 1.0
        return logits


def test_greedy_decoding_stops_at_eos_and_at_the_length_guard():
    model = ScriptedModel(TranslatorConfig(20, 30, 32, 4, 64, 1))
    src = tokens(2, 4, 20, 0)
    assert greedy_decode(model, src, bos_id=1, eos_id=2, max_len=10) == [[5, 6, 7]] * 2
    assert greedy_decode(model, src, bos_id=1, eos_id=2, max_len=2) == [[5, 6]] * 2
    # a random model rarely says <eos>: the guard bounds the output length
    out = greedy_decode(make_model(), src, bos_id=1, eos_id=2, max_len=6)
    assert all(len(o) <= 6 for o in out)


def test_translate_bad_input():
    src_vocab, tgt_vocab = Vocab([f"s{i}" for i in range(16)]), Vocab([f"t{i}" for i in range(26)])
    model = make_model()
    assert isinstance(translate(model, "s1 s2", src_vocab, tgt_vocab, max_len=4), str)
    with pytest.raises(ValueError, match="sentence is empty"):
        translate(model, "   ", src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match=r"never saw: \['zebra', 'okapi'\]; known words include: s0, s1"):
        translate(model, "s1 zebra okapi", src_vocab, tgt_vocab)
    with pytest.raises(TypeError, match="sentence must be a str, got list"):
        translate(model, ["s1"], src_vocab, tgt_vocab)
    with pytest.raises(TypeError, match="src_vocab must be a Vocab"):
        translate(model, "s1", ["s1"], tgt_vocab)
    with pytest.raises(ValueError, match="this model takes at most 63"):
        translate(model, " ".join(["s1"] * 70), src_vocab, tgt_vocab)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"d_model": 30, "num_heads": 4}, ValueError, "d_model must be divisible by num_heads=4, got d_model=30"),
        ({"d_model": 33}, ValueError, "d_model must be even"),
        ({"num_layers": 0}, ValueError, "num_layers must be a positive int"),
        ({"src_vocab_size": 2.5}, TypeError, "src_vocab_size must be an int"),
        ({"dropout": 1.0}, ValueError, r"dropout must be a probability in \[0, 1\), got 1.0"),
        ({"dropout": "0.1"}, TypeError, r"dropout must be a probability in \[0, 1\), got str '0.1'"),
        (
            {"pad_id": 40},
            ValueError,
            r"pad_id must be an int in \[0, 19\] \(a token id of a vocabulary of 20\), got 40",
        ),
        ({"pad_id": 0.0}, TypeError, "pad_id must be an int, got float 0.0"),
        ({"norm_first": 1}, TypeError, r"norm_first must be a bool \(True or False\), got int 1"),
    ],
)
def test_model_config_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_model(**kwargs)


def test_config_is_one_dataclass():
    import dataclasses

    config = TranslatorConfig(20, 30, d_model=32, dropout=0)
    assert config.dropout == 0.0 and isinstance(config.dropout, float)  # normalised
    assert dataclasses.replace(config, num_layers=3).differences(config) == {"num_layers": (3, 2)}
    assert TranslatorConfig(**dataclasses.asdict(config)) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 64
    with pytest.raises(TypeError, match="config must be a TranslatorConfig, got dict"):
        Seq2SeqTransformer(dataclasses.asdict(config))
    with pytest.raises(TypeError, match="config must be a TranslatorConfig, got dict"):
        TorchSeq2Seq(dataclasses.asdict(config))
    with pytest.raises(TypeError, match="other must be a TranslatorConfig, got dict"):
        config.differences({})


@pytest.mark.parametrize(
    "src, tgt, error, match",
    [
        ([[4, 5]], None, TypeError, "src must be a torch.Tensor, got list"),
        (torch.ones(2, 3), None, ValueError, "src must be an integer tensor"),
        (torch.ones(3, dtype=torch.long), None, ValueError, r"src must have shape \(batch, seq\)"),
        (torch.ones(2, 0, dtype=torch.long), None, ValueError, r"src.shape\[1\] \(seq\) must be a positive int, got 0"),
        (torch.full((1, 3), 20), None, ValueError, r"src must hold token ids in \[0, vocab_size=20\), got min 20"),
        (torch.ones(1, 65, dtype=torch.long), None, ValueError, "src has 65 positions, more than max_len=64"),
        (None, torch.full((1, 3), -1), ValueError, r"tgt must hold token ids in \[0, vocab_size=30\)"),
        (
            None,
            torch.ones(2, 3, dtype=torch.long),
            ValueError,
            r"tgt must have shape \(batch of src=1, T\), got \(2, 3\)",
        ),
    ],
)
def test_forward_bad_input(src, tgt, error, match):
    model = make_model()
    src = tokens(1, 4, 20, 0) if src is None else src
    tgt = tokens(1, 3, 30, 0) if tgt is None else tgt
    with pytest.raises(error, match=match):
        model(src, tgt)


def test_beam_search():
    from utils.translator.decode import beam_search

    scripted = ScriptedModel(TranslatorConfig(20, 30, 32, 4, 64, 1))
    src = tokens(1, 4, 20, 0)
    assert beam_search(scripted, src, 1, 2, beam_size=3, max_len=10) == [5, 6, 7]
    model = make_model()
    for seed in range(3):
        src = tokens(1, 5, 20, seed)
        # beam size 1 is greedy decoding (a random model: the length guard stops it)
        assert beam_search(model, src, 1, 2, beam_size=1, max_len=6) == greedy_decode(model, src, 1, 2, max_len=6)[0]
    with pytest.raises(ValueError, match=r"src must have shape \(1, S\), got \(2, 5\)"):
        beam_search(model, tokens(2, 5, 20, 0), 1, 2)
    with pytest.raises(ValueError, match="beam_size must be a positive int"):
        beam_search(model, src, 1, 2, beam_size=0)
    with pytest.raises(ValueError, match=r"eos_id must be an int in \[0, 29\]"):
        beam_search(model, src, 1, 30)
    with pytest.raises(TypeError, match="model must be a Seq2SeqTransformer, got Linear"):
        beam_search(torch.nn.Linear(2, 2), src, 1, 2)
    with pytest.raises(TypeError, match="bos_id must be an int, got float 1.0"):
        greedy_decode(model, src, 1.0, 2)


def test_beam_search_finds_a_more_probable_translation_than_greedy():
    """A model where the greedy first choice (token 5, p=0.5) leads to a poor continuation."""
    from utils.translator.decode import beam_search

    class Trap(Seq2SeqTransformer):
        def decode(self, tgt, memory, src_mask):
            V = self.config.tgt_vocab_size
            probs = torch.full((tgt.shape[0], tgt.shape[1], V), 1e-6)
            for b in range(tgt.shape[0]):
                for t in range(tgt.shape[1]):
                    seq = tgt[b, : t + 1].tolist()
                    if seq == [1]:
                        probs[b, t, 5], probs[b, t, 6] = 0.5, 0.4
                    elif seq == [1, 5]:
                        probs[b, t, 7:17] = 0.1  # ten equally likely words: 0.5 * 0.1 = 0.05
                    elif seq == [1, 6]:
                        probs[b, t, 8] = 1.0  # 0.4 * 1.0 = 0.4
                    else:
                        probs[b, t, 2] = 1.0  # then <eos>
            return probs.log()

    model = Trap(TranslatorConfig(20, 30, 32, 4, 64, 1))
    src = tokens(1, 3, 20, 0)
    assert greedy_decode(model, src, 1, 2, max_len=5)[0][0] == 5
    assert beam_search(model, src, 1, 2, beam_size=2, max_len=5) == [6, 8]


def test_training_runs_the_fused_kernel_and_eval_keeps_the_weights():
    """In training mode attention keeps no weights (torch's fused kernel); the logits are the same."""
    model = make_model()
    src, tgt = tokens(3, 7, 20, 0, n_pad=2), tokens(3, 5, 30, 1)
    kept = model(src, tgt)  # eval mode: weights kept for the attention maps
    assert [w.shape for w in model.cross_attention()] == [(3, 4, 5, 7)] * 2
    fused = model.train()(src, tgt)  # dropout is 0, so training mode computes the same function
    assert model.cross_attention() == [None, None]
    torch.testing.assert_close(fused, kept, atol=1e-5, rtol=0)
    model(src, tgt, need_weights=True)
    assert model.cross_attention()[0].shape == (3, 4, 5, 7)
    with pytest.raises(TypeError, match="need_weights must be a bool"):
        model(src, tgt, need_weights="yes")


class Boom(Exception):
    pass


@pytest.mark.parametrize("training", [True, False])
def test_eval_mode_restores_the_mode_after_normal_exit_and_after_an_exception(training):
    model = make_model().train(training)
    model.encoder.train(not training)  # a submodule in the other mode gets its own mode back too
    before = [m.training for m in model.modules()]
    with eval_mode(model) as inside:
        assert inside is model and not any(m.training for m in model.modules())
    assert [m.training for m in model.modules()] == before
    with pytest.raises(Boom):
        with eval_mode(model):
            assert not model.training
            raise Boom
    assert [m.training for m in model.modules()] == before
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got str"):
        with eval_mode("model"):
            pass


@pytest.mark.parametrize("training", [True, False])
def test_decoding_restores_the_mode_even_when_it_raises(training):
    from utils.translator.decode import beam_search

    class Failing(Seq2SeqTransformer):
        def decode(self, tgt, memory, src_mask):
            assert not self.training  # decoding runs in eval mode
            raise Boom

    model = Failing(TranslatorConfig(20, 30, 32, 4, 64, 1)).train(training)
    src = tokens(1, 4, 20, 0)
    for decode in (lambda: greedy_decode(model, src, 1, 2), lambda: beam_search(model, src, 1, 2)):
        with pytest.raises(Boom):
            decode()
        assert model.training is training and model.decoder.training is training
    good = make_model().train(training)
    greedy_decode(good, src, 1, 2, max_len=3)
    beam_search(good, src, 1, 2, max_len=3)
    assert good.training is training


def test_parameter_counts_and_torch_reference_bad_input():
    config = TranslatorConfig(20, 30, d_model=16, num_heads=2, d_ff=32, num_layers=1, max_len=8)
    with pytest.raises(TypeError, match="model must be a Seq2SeqTransformer, got str"):
        parameter_counts("model")
    ref = TorchSeq2Seq(config)
    src = torch.tensor([[4, 5, 2]])
    with pytest.raises(ValueError, match="src must be an integer tensor, got dtype torch.float32"):
        ref(src.float(), src)
    with pytest.raises(ValueError, match=r"tgt must hold token ids in \[0, vocab_size=30\), got min 4 and max 99"):
        ref(src, torch.tensor([[4, 99]]))
    with pytest.raises(ValueError, match=r"src has 9 positions, more than max_len=8"):
        ref(torch.ones(1, 9, dtype=torch.long), src)
    with pytest.raises(ValueError, match=r"tgt must have shape \(batch of src=1, T\), got \(2, 3\)"):
        ref(src, src.expand(2, -1))
