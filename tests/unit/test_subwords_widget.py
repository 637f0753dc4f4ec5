"""Lesson 10's figures: the merges explorer draws the sentence's cut under the first n merges and the tokens those
merges made; the first n merges of a long training run are what training with n merges learns; the merge curve
counts tokens right. tests/unit/test_widgets_generic.py moves the explorer's controls."""

import matplotlib.pyplot as plt
import pytest

from utils import subwords
from utils.figures import subwords as fig_subwords

CORPUS = ["lo kano ke vidos", "la mira ke vidas", "li kani ke vidont", "le mire ke vidant", "lo grando kano ke amos"]


@pytest.fixture(scope="module")
def bpe():
    return subwords.train(CORPUS, 1000)  # trains until every word is one token


def drawn_texts(ax):
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("n", [0, 1, 5, 12])
def test_first_merges_equal_training_with_fewer_merges(bpe, n):
    assert fig_subwords.first_merges(bpe, n) == subwords.train(CORPUS, n)


@pytest.mark.parametrize("n", [0, 3, 9])
def test_the_render_draws_the_sentence_cut_and_the_tokens_made(bpe, n):
    sentence = "li grandi kani ke amont"  # amont: a word no sentence has, cut from known pieces
    fig = fig_subwords.plot_tokenisation(bpe, sentence, n)
    ax_sentence, ax_vocab = fig.axes
    expected = subwords.encode(subwords.train(CORPUS, n), sentence)
    assert drawn_texts(ax_sentence) == expected
    assert f"{n} merges" in ax_sentence.get_title() and f"-> {len(expected)} tokens" in ax_sentence.get_title()
    made = [a + b for a, b in bpe.merges[:n]]
    assert drawn_texts(ax_vocab) == [f"{k + 1}. {t}" for k, t in enumerate(made)]
    if n:  # the newest token is the one highlighted
        newest = [t for t in ax_vocab.texts if t.get_color() == fig_subwords.NEWEST]
        assert [t.get_text() for t in newest] == [f"{n}. {made[-1]}"]
    plt.close(fig)


def test_the_render_changes_with_the_merges(bpe):
    texts = []
    for n in (0, len(bpe.merges)):
        fig = fig_subwords.plot_tokenisation(bpe, "lo kano ke vidos", n)
        texts.append(drawn_texts(fig.axes[0]))
        plt.close(fig)
    assert texts[0] == subwords.encode(subwords.train(CORPUS, 0), "lo kano ke vidos")
    assert texts[1] == ["lo</w>", "kano</w>", "ke</w>", "vidos</w>"]


def test_merge_curve_counts_the_vocabulary_and_the_tokens(bpe):
    merges, sizes, lengths = fig_subwords.merge_curve(bpe, CORPUS)
    assert list(merges) == list(range(len(bpe.merges) + 1))
    assert list(sizes) == [len(bpe.alphabet) + n for n in merges]  # every merge makes a new token here
    assert lengths[0] == sum(len(s.replace(" ", "")) for s in CORPUS) / len(CORPUS)  # characters
    assert lengths[-1] == sum(len(s.split()) for s in CORPUS) / len(CORPUS)  # words
    fig = fig_subwords.plot_merge_curve(merges, sizes, lengths, word_vocabulary=20, word_length=4.2)
    assert list(fig.axes[0].lines[0].get_ydata()) == list(sizes)
    plt.close(fig)


def test_bad_input_is_named(bpe):
    with pytest.raises(ValueError, match="num_merges"):
        fig_subwords.first_merges(bpe, len(bpe.merges) + 1)
    with pytest.raises(ValueError, match="sentence"):
        fig_subwords.plot_tokenisation(bpe, "lo zebra", 3)  # z: a letter the corpus never had
    with pytest.raises(TypeError, match="sentence"):
        fig_subwords.plot_tokenisation(bpe, 3, 3)
    with pytest.raises(ValueError, match="sentence"):
        fig_subwords.plot_tokenisation(bpe, "   ", 3)
    with pytest.raises(ValueError, match="num_merges"):
        fig_subwords.merges_explorer(bpe, "lo kano", num_merges=-1)
    with pytest.raises(ValueError, match="merges, sizes and lengths"):
        fig_subwords.plot_merge_curve([0, 1], [3], [2, 1])


def test_the_explorer_redraws_when_the_slider_or_the_sentence_changes(bpe, monkeypatch):
    import io

    import ipywidgets
    import numpy as np

    frames = []
    import utils.figures.widgets as fig_widgets  # merges_explorer draws through its _explorer

    monkeypatch.setattr(fig_widgets, "display", lambda image: frames.append(plt.imread(io.BytesIO(image.data))))
    w = fig_subwords.merges_explorer(bpe, "lo kano ke vidos", num_merges=3)
    slider, text = w.children[0].children
    assert isinstance(slider, ipywidgets.IntSlider) and isinstance(text, ipywidgets.Text)
    assert slider.max == len(bpe.merges) and len(frames) == 1
    for control, value in ((slider, 4), (text, "la mira ke vidas")):
        before = len(frames)
        control.value = value
        assert len(frames) == before + 1
        assert frames[-1].shape != frames[-2].shape or not np.array_equal(frames[-1], frames[-2])


def test_the_sweep_plot_draws_every_seed_and_the_means():
    import numpy as np

    unseen = np.array([[0.9, 0.8, 0.85], [0.7, 0.75, 0.6]])
    in_dist = np.array([[0.93, 0.95, 0.94], [0.99, 0.98, 0.99]])
    fig = fig_subwords.plot_merge_sweep([0, 100], unseen, in_dist, [34.2, 12.8], word=(0.0, 0.99, 8.9))
    ax = fig.axes[0]
    dots = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
    assert sorted(dots) == sorted(np.concatenate([in_dist.ravel(), unseen.ravel()]))
    assert np.allclose(ax.lines[1].get_ydata(), unseen.mean(1))
    plt.close(fig)
    with pytest.raises(ValueError, match="points, seeds"):
        fig_subwords.plot_merge_sweep([0, 100], unseen[:1], in_dist[:1], [1, 2])


def test_the_tradeoff_plot_draws_every_seed_at_its_setting_length():
    import numpy as np

    unseen, in_dist = [[0.0, 0.0, 0.0], [0.7, 0.5, 0.6]], [[0.99, 0.98, 0.97], [0.99, 0.95, 0.99]]
    fig = fig_subwords.plot_length_tradeoff(["word", "bpe100"], [8.9, 12.8], unseen, in_dist)
    points = np.concatenate([c.get_offsets() for c in fig.axes[0].collections])
    assert len(points) == 2 * (3 + 1) * 2  # per setting and measure: 3 seeds and a mean
    assert {tuple(p) for p in points} >= {(12.8, 0.5), (8.9, 0.97), (12.8, 0.6)}
    plt.close(fig)
    with pytest.raises(ValueError, match="one entry per setting"):
        fig_subwords.plot_length_tradeoff(["word"], [8.9, 12.8], unseen, in_dist)


def test_the_tradeoff_plot_draws_equal_lengths_side_by_side_with_names_that_do_not_overlap():

    names = ["word", "dropout150", "bpe100", "dropout100"]
    unseen, in_dist = [[0.0, 0.1], [0.7, 0.8], [0.6, 0.5], [0.9, 0.8]], [[0.9, 0.9]] * 4
    fig = fig_subwords.plot_length_tradeoff(names, [8.9, 9.0, 12.8, 12.8], unseen, in_dist)
    ax = fig.axes[0]
    columns = [c.get_offsets()[0][0] for c in ax.collections[:8:2]]  # in-distribution seeds, one column per setting
    assert len(set(columns)) == 4 and columns[0] < columns[1] and columns[2] < columns[3]
    assert all(abs(c - x) < 0.6 for c, x in zip(columns, [8.9, 9.0, 12.8, 12.8]))
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert sorted(t.get_text() for t in ax.texts) == sorted(names)
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    plt.close(fig)


def test_the_form_plot_draws_a_bar_per_setting_and_form_and_every_seed():
    import numpy as np

    diag = {
        "bpe100": {
            "june": {"rate": 0.66, "per_seed": [0.6, 0.8], "tokens": "j une</w>"},
            "albi": {"rate": 0.9, "per_seed": [0.9, None], "tokens": "alb i</w>"},
        },
        "dropout30": {
            "june": {"rate": 0.93, "per_seed": [0.9, 0.96], "tokens": "j une</w>"},
            "albi": {"rate": 0.98, "per_seed": [0.97, 0.99], "tokens": "a l b i</w>"},
        },
    }
    fig = fig_subwords.plot_form_rates(diag)
    ax = fig.axes[0]
    assert sorted(round(b.get_height(), 2) for b in ax.patches) == [0.66, 0.9, 0.93, 0.98]
    dots = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections if len(c.get_offsets())])
    assert sorted(np.round(dots, 2)) == [0.6, 0.8, 0.9, 0.9, 0.96, 0.97, 0.99]  # None (no sentence) is not drawn
    assert [t.get_text() for t in ax.get_xticklabels()] == ["june\nj une</w>", "albi\nalb i</w>"]
    plt.close(fig)
    with pytest.raises(ValueError, match="same non-empty list of forms"):
        fig_subwords.plot_form_rates({"a": {"june": diag["bpe100"]["june"]}, "b": {}})
    with pytest.raises(TypeError, match="diagnoses"):
        fig_subwords.plot_form_rates([1])
