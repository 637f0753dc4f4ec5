"""The cross-attention heatmap and training-history plots (what is drawn) and the explorer widget."""

import ipywidgets
import numpy as np
import pytest
import torch

from utils.figures import plotting
from utils.figures.plotting import plot_cross_attention, plot_training_history
from utils.figures.widgets import cross_attention_explorer
from utils.translator.attention_maps import cross_attention_map
from utils.translator.data import make_dataset
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig


@pytest.fixture(scope="module")
def setup():
    ds = make_dataset(seed=0, n_train=50, n_val=10, n_test=10, n_test_unseen=10)
    torch.manual_seed(0)
    model = Seq2SeqTransformer(TranslatorConfig(len(ds.src_vocab), len(ds.tgt_vocab), 16, 2, 32, 2)).eval()
    return model, ds


def test_heatmap_draws_the_weights_and_the_gold_markers():
    w = np.random.default_rng(0).dirichlet(np.ones(4), size=3)  # (3, 4)
    fig = plot_cross_attention(w, ["a", "b", "c", "<eos>"], ["x", "y", "<eos>"], gold=[2, 0], title="t")
    ax = fig.axes[0]
    np.testing.assert_allclose(ax.images[0].get_array(), w)
    np.testing.assert_array_equal(ax.collections[0].get_offsets(), [[2, 0], [0, 1]])  # (source, target)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c", "<eos>"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "<eos>"]
    assert ax.get_title() == "t"
    with_none = plot_cross_attention(w, list("abcd"), list("xyz"), gold=[None, 3])  # row 0 translates no word
    np.testing.assert_array_equal(with_none.axes[0].collections[0].get_offsets(), [[3, 1]])
    assert len(fig.axes) == 2  # the heatmap and its colorbar
    no_gold = plot_cross_attention(w, list("abcd"), list("xyz"))
    assert len(no_gold.axes[0].collections) == 0
    assert (no_gold.axes[0].get_xlabel(), no_gold.axes[0].get_ylabel()) == (
        "source word (key)",
        "predicted Neo word (query)",
    )
    relabelled = plot_cross_attention(w, list("abcd"), list("xyz"), labels=("English", "Neo", "1 = aligned"))
    assert (relabelled.axes[0].get_xlabel(), relabelled.axes[0].get_ylabel()) == ("English", "Neo")
    assert relabelled.axes[1].get_ylabel() == "1 = aligned"  # the colour bar's label
    long_title = plot_cross_attention(w, list("abcd"), list("xyz"), title="word " * 40)
    assert "\n" in long_title.axes[0].get_title()  # wrapped to the figure's width
    long_title.canvas.draw()
    im_box, bar_box = (a.get_position(original=False) for a in long_title.axes)
    assert bar_box.y1 <= im_box.y1  # the colour bar ends below the heatmap's top, so under its title


@pytest.mark.parametrize(
    "weights, gold, match",
    [
        (np.ones((2, 4)), None, r"weights must have shape \(len\(tgt_words\)=3, len\(src_words\)=4\), got \(2, 4\)"),
        (np.ones((3, 4)), [0, 9], r"gold must give at most 3 source indices in \[0, 4\) \(or None\), got \[0, 9\]"),
        (np.ones((3, 4)), [0, 1, 2, 3], "gold must give at most 3"),
    ],
)
def test_heatmap_bad_input(weights, gold, match):
    with pytest.raises(ValueError, match=match):
        plot_cross_attention(weights, list("abcd"), list("xyz"), gold)


@pytest.mark.parametrize(
    "labels, error",
    [(("x", "y"), ValueError), (("x", "y", 3), ValueError), ("xyz", TypeError), (None, TypeError)],
)
def test_heatmap_bad_labels(labels, error):
    with pytest.raises(error, match="labels must be 3 strings"):
        plot_cross_attention(np.ones((3, 4)), list("abcd"), list("xyz"), labels=labels)


def test_training_history_draws_loss_and_lr():
    fig = plot_training_history([3.0, 2.0, 1.0], [0.1, 0.2, 0.3])
    loss_line, lr_line = fig.axes[0].lines[0], fig.axes[1].lines[0]
    np.testing.assert_array_equal(loss_line.get_ydata(), [3.0, 2.0, 1.0])
    np.testing.assert_array_equal(lr_line.get_xdata(), [1, 2, 3])
    with pytest.raises(ValueError, match=r"lrs must have shape \(len\(losses\)=3,\), got \(2,\)"):
        plot_training_history([3.0, 2.0, 1.0], [0.1, 0.2])


def test_cross_attention_map(setup):
    model, ds = setup
    m = cross_attention_map(model, "the big dog sees a red cat", ds.src_vocab, ds.tgt_vocab)
    assert m["src"] == "the big dog sees a red cat <eos>".split()
    assert m["reference"] == "lo kano grando mira ruba ke vidos".split()
    assert len(m["weights"]) == 2 and m["weights"][0].shape == (2, len(m["tgt"]), len(m["src"]))
    np.testing.assert_allclose(m["weights"][1].sum(-1), 1.0, atol=1e-5)
    assert m["gold"] is None  # an untrained model does not produce the reference, so no gold overlay
    outside = cross_attention_map(model, "dog the sees", ds.src_vocab, ds.tgt_vocab)
    assert outside["reference"] is None and outside["gold"] is None
    with pytest.raises(ValueError, match="never saw"):
        cross_attention_map(model, "the zebra", ds.src_vocab, ds.tgt_vocab)


def test_gold_is_overlaid_when_the_model_is_right(setup, monkeypatch):
    model, ds = setup
    reference = "lo kano grando mira ruba ke vidos".split()
    ids = ds.tgt_vocab.encode(reference)
    monkeypatch.setattr("utils.translator.attention_maps.greedy_decode", lambda *a, **k: [ids])
    m = cross_attention_map(model, "the big dog sees a red cat", ds.src_vocab, ds.tgt_vocab)
    assert m["gold"] == [0, 2, 1, 6, 5, None, 3]  # "a" (4) has no Neo word, "ke" no English word
    assert m["tgt"][:-1] == reference


def test_explorer_controls_and_redraw(setup, monkeypatch):
    model, ds = setup
    drawn = []
    real = plotting.plot_cross_attention

    def spy(weights, src, tgt, gold=None, title=""):
        fig = real(weights, src, tgt, gold, title)
        drawn.append((np.asarray(weights), title, fig.axes[0].images[0].get_array()))
        return fig

    monkeypatch.setattr(plotting, "plot_cross_attention", spy)
    box = cross_attention_explorer(model, ds.src_vocab, ds.tgt_vocab, sentence="the big dog sees a red cat")
    controls, out = box.children
    text, pickers = controls.children
    layer, head = pickers.children
    assert isinstance(text, ipywidgets.Text) and isinstance(out, ipywidgets.Output)
    assert list(layer.options) == [0, 1] and list(head.options) == [0, 1]
    assert drawn and drawn[-1][1].startswith("layer 0, head 0")
    head.value = 1
    layer.value = 1
    m = cross_attention_map(model, "the big dog sees a red cat", ds.src_vocab, ds.tgt_vocab)
    assert drawn[-1][1].startswith("layer 1, head 1")
    np.testing.assert_allclose(drawn[-1][2], m["weights"][1][1])  # the image is that head's map
    n = len(drawn)
    text.value = "some foxes see the tree"
    assert len(drawn) == n + 1 and drawn[-1][2].shape[1] == 6  # 5 words + <eos>
    text.value = "the zebra"  # bad input is reported in the figure, not raised
    assert len(drawn) == n + 1


def test_decoding_steps_draws_the_top_words_of_each_step():
    from utils.figures.translator import CHOSEN, OTHER, plot_decoding_steps

    itos = ["<pad>", "<bos>", "<eos>", "a", "b", "c"]
    probs = np.array([[0, 0, 0.1, 0.6, 0.2, 0.1], [0, 0, 0.7, 0.1, 0.1, 0.1], [0, 0, 0.9, 0, 0.05, 0.05]])
    fig = plot_decoding_steps(probs, itos, chosen=[3, 2, 2], top=3, ncols=2)
    ax = fig.axes[0]
    bars = ax.patches
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "a"  # the most probable at the top
    np.testing.assert_allclose(sorted(b.get_width() for b in bars), [0.1, 0.2, 0.6])
    assert [b.get_facecolor() for b in bars].count(plt_color(CHOSEN)) == 1
    assert plt_color(OTHER) in [b.get_facecolor() for b in bars]
    assert ax.get_title() == "step 1: a" and not fig.axes[3].axison  # 3 steps on a 2 x 2 grid
    with pytest.raises(ValueError, match=r"probs must have shape \(steps, len\(itos\)=6\)"):
        plot_decoding_steps(probs[:, :4], itos, [3, 2, 2])
    with pytest.raises(ValueError, match=r"chosen must have shape \(steps=3,\), got \(2,\)"):
        plot_decoding_steps(probs, itos, [3, 2])


def plt_color(name):
    import matplotlib.colors as mcolors

    return mcolors.to_rgba(name)


def test_head_scores_heatmaps_with_a_colorbar():
    from utils.figures.translator import plot_head_scores

    a, b = np.array([[0.1, 0.9], [0.5, 0.2]]), np.array([[1.0, 0.0], [0.3, 0.4]])
    fig = plot_head_scores({"first": a, "second": b}, "title")
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), a)
    np.testing.assert_array_equal(fig.axes[1].images[0].get_array(), b)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["first", "second"] and len(fig.axes) == 3  # + colorbar
    assert "0.90" in [t.get_text() for t in fig.axes[0].texts]
    with pytest.raises(ValueError, match="scores must be a non-empty dict"):
        plot_head_scores({}, "t")
    with pytest.raises(ValueError, match=r"scores\['b'\] must have shape \(num_layers=2, num_heads=2\), got \(3,\)"):
        plot_head_scores({"a": a, "b": np.ones(3)}, "t")


def test_explorer_bad_input_raises_by_name(setup):
    model, ds = setup
    with pytest.raises(ValueError, match=r"layer must be an int in \[0, num_layers=2\), got 2"):
        cross_attention_explorer(model, ds.src_vocab, ds.tgt_vocab, layer=2)
    with pytest.raises(ValueError, match=r"head must be an int in \[0, num_heads=2\), got 5"):
        cross_attention_explorer(model, ds.src_vocab, ds.tgt_vocab, head=5)
    with pytest.raises(TypeError, match="model must be a Seq2SeqTransformer, got str"):
        cross_attention_explorer("model", ds.src_vocab, ds.tgt_vocab)
    with pytest.raises(TypeError, match="sentence must be a str, got list"):
        cross_attention_explorer(model, ds.src_vocab, ds.tgt_vocab, sentence=["the"])
