"""The per-head attention plots and the head-picker widget: what is drawn, and that the slider redraws."""

import ipywidgets
import numpy as np
import pytest

from utils.figures import plotting, widgets


def weights(num_heads=3, T_q=4, T_k=5, seed=0):
    w = np.random.default_rng(seed).random((num_heads, T_q, T_k))
    return w / w.sum(-1, keepdims=True)  # rows sum to 1 like attention weights


@pytest.mark.parametrize("head", [0, 1, 2])
def test_head_attention_draws_the_chosen_head_and_the_average(head):
    w = weights()
    fig = plotting.plot_head_attention(w, head, tokens=(list("abcd"), list("vwxyz")))
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), w[head])
    np.testing.assert_allclose(fig.axes[1].images[0].get_array(), w.mean(0))
    assert fig.axes[0].get_title() == "head %d of 3" % head
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list("vwxyz")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list("abcd")


def test_head_grid_draws_one_panel_per_head():
    w = weights(num_heads=5)
    fig = plotting.plot_head_grid(w, ncols=3)
    drawn = [ax for ax in fig.axes if ax.images]
    assert len(drawn) == 5
    for i, ax in enumerate(drawn):
        np.testing.assert_allclose(ax.images[0].get_array(), w[i])
        assert ax.get_title() == f"head {i}"


def test_plots_reject_bad_input():
    with pytest.raises(ValueError, match=r"weights must have shape \(num_heads, T_q, T_k\), got \(4, 5\)"):
        plotting.plot_head_grid(np.ones((4, 5)))
    with pytest.raises(TypeError, match=r"head must be an int, got float 1\.5"):
        plotting.plot_head_attention(np.full((3, 2, 2), 0.5), head=1.5)
    with pytest.raises(ValueError, match=r"head must be an int in \[0, num_heads=3\), got 3"):
        plotting.plot_head_attention(weights(), head=3)


def test_head_explorer_has_a_head_slider_that_redraws(monkeypatch):
    w = weights()
    drawn = []
    real = plotting.plot_head_attention

    def spy(weights, head, tokens):
        drawn.append(head)
        return real(weights, head, tokens)

    monkeypatch.setattr(plotting, "plot_head_attention", spy)
    box = widgets.head_explorer(w, head=1)
    assert isinstance(box, ipywidgets.VBox)
    sliders = [c for c in box.children[0].children if isinstance(c, ipywidgets.IntSlider)]
    assert len(sliders) == 1
    slider = sliders[0]
    assert (slider.description, slider.min, slider.max, slider.value) == ("head", 0, 2, 1)
    assert isinstance(box.children[1], ipywidgets.Output)
    assert drawn == [1]  # drawn once on creation
    slider.value = 2
    assert drawn == [1, 2]  # moving the slider redraws the new head


def test_widget_bad_head_raises_by_name():
    w = np.full((3, 4, 4), 0.25)
    with pytest.raises(ValueError, match=r"head must be an int in \[0, num_heads=3\), got 3"):
        widgets.head_explorer(w, head=3)
    with pytest.raises(ValueError, match=r"count must be a positive int, got 0"):
        plotting.panel_grid(0, 4, (1, 1))
