"""The attention-map explorer: the weights it computes, what its render function draws, its controls."""

import math

import numpy as np
import pytest
import torch

from utils import plotting, widgets
from utils.attention_map import MASKS, attention_map, explorer_mask, token_embeddings
from utils.positional import sinusoidal_encoding

SENTENCE = "YOUR CAT IS A LOVELY CAT <pad> <pad>"
TOKENS = SENTENCE.split()


def explicit_map(tokens, scale, temperature, positional, allowed, d_model=16):
    """softmax(x x^T s / temperature) over allowed keys, written out with numpy."""
    x = token_embeddings(tokens, d_model).numpy()  # (T, d_model)
    if positional:
        x = x + sinusoidal_encoding(len(tokens), d_model, dtype=torch.float64).numpy()
    scores = x @ x.T * (1 / math.sqrt(d_model) if scale else 1.0) / temperature  # (T, T)
    e = np.exp(scores - scores.max(axis=1, keepdims=True)) * allowed  # (T, T)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def test_embeddings_are_seeded_per_word():
    x = token_embeddings(TOKENS)
    assert x.shape == (8, 16) and x.dtype == torch.float64
    assert torch.equal(x[1], x[5]) and torch.equal(x[6], x[7])  # CAT, CAT and <pad>, <pad>
    assert not torch.equal(x[0], x[1])
    assert torch.equal(token_embeddings(["CAT"])[0], x[1])  # independent of the sentence around it
    assert not torch.equal(token_embeddings(TOKENS, seed=1), x)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("scale, temperature, positional", [(True, 1.0, False), (False, 3.0, True), (True, 0.2, True)])
def test_attention_map_equals_explicit_softmax(scale, temperature, positional, mask):
    weights, allowed = attention_map(SENTENCE, scale, temperature, positional, mask)
    assert weights.shape == allowed.shape == (8, 8)
    expected = explicit_map(TOKENS, scale, temperature, positional, allowed.numpy())
    np.testing.assert_allclose(weights.numpy(), expected, atol=1e-12)
    assert torch.all(weights[~allowed] == 0), "a masked cell has weight"
    rows = allowed.any(dim=1)
    torch.testing.assert_close(weights[rows].sum(1), torch.ones(int(rows.sum()), dtype=torch.float64))


def test_explorer_masks():
    T = len(TOKENS)
    assert explorer_mask(TOKENS, "none").all()
    assert torch.equal(explorer_mask(TOKENS, "causal"), torch.ones(T, T, dtype=torch.bool).tril())
    pad = explorer_mask(TOKENS, "padding")
    assert pad[:, :6].all() and not pad[:, 6:].any()
    assert torch.equal(explorer_mask(TOKENS, "causal+padding"), pad & explorer_mask(TOKENS, "causal"))


def test_identical_words_identical_rows_without_pe_only():
    weights, _ = attention_map(SENTENCE)
    assert torch.equal(weights[1], weights[5])
    weights_pe, _ = attention_map(SENTENCE, positional=True)
    assert not torch.allclose(weights_pe[1], weights_pe[5])


def test_unscaled_is_scaled_at_lower_temperature():
    a, _ = attention_map(SENTENCE, scale=False, temperature=2.0)
    b, _ = attention_map(SENTENCE, scale=True, temperature=2.0 / math.sqrt(16))
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("query", [0, 5, 7])
def test_render_draws_the_weights_and_the_chosen_row(mask, query):
    fig = plotting.plot_attention_explorer(SENTENCE, scale=True, temperature=2.0, positional=True,
                                           mask=mask, query=query)
    weights, allowed = attention_map(SENTENCE, True, 2.0, True, mask)
    ax_map, ax_bar = fig.axes[0], fig.axes[1]
    drawn = np.asarray(ax_map.images[0].get_array())
    np.testing.assert_array_equal(drawn, weights.numpy())
    assert np.all(drawn[~allowed.numpy()] == 0)
    rows = allowed.numpy().any(axis=1)
    np.testing.assert_allclose(drawn[rows].sum(axis=1), 1.0, atol=1e-12)
    heights = [bar.get_height() for bar in ax_bar.patches]
    np.testing.assert_array_equal(heights, weights[query].numpy())
    assert [t.get_text() for t in ax_map.get_xticklabels()] == TOKENS
    assert [t.get_text() for t in ax_map.get_yticklabels()] == TOKENS
    assert [t.get_text() for t in ax_bar.get_xticklabels()] == TOKENS
    blocked = ax_map.lines[0].get_xydata() if ax_map.lines else np.empty((0, 2))
    assert len(blocked) == int((~allowed).sum())  # one marker per masked cell
    assert "mask=" + mask in ax_map.get_title()


def test_plot_attention_without_query_draws_only_the_heatmap():
    w = np.full((3, 3), 1 / 3)
    fig = plotting.plot_attention(["a", "b", "c"], w)
    assert len(fig.axes) == 2  # the heatmap and its colorbar
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), w)


def test_plot_attention_cross_attention_shape():
    w = np.full((2, 3), 1 / 3)  # 2 queries over 3 keys
    fig = plotting.plot_attention(["a", "b", "c"], w, query=1)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["0", "1"]


def test_bad_input():
    with pytest.raises(ValueError, match=r"weights must have shape \(T_q, 3\) for 3 tokens, got \(3, 4\)"):
        plotting.plot_attention("a b c", np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"query must be in \[0, 3\), got 3"):
        plotting.plot_attention("a b c", np.zeros((3, 3)), query=3)
    with pytest.raises(ValueError, match=r"mask must be one of \('none', 'causal', 'padding', 'causal\+padding'\), got 'future'"):
        attention_map("a b", mask="future")
    with pytest.raises(ValueError, match="temperature must be > 0, got 0"):
        attention_map("a b", temperature=0)
    with pytest.raises(TypeError, match=r"tokens must be a str or a list of str, got list \[1, 2\]"):
        attention_map([1, 2])
    with pytest.raises(ValueError, match="tokens must hold at least one token, got none"):
        attention_map("")
    with pytest.raises(ValueError, match="d_model must be a positive int, got 0"):
        token_embeddings("a", d_model=0)


def find(widget, cls, description):
    """The descendant control of type `cls` whose description is `description`."""
    stack = [widget]
    while stack:
        w = stack.pop()
        if isinstance(w, cls) and getattr(w, "description", None) == description:
            return w
        stack.extend(getattr(w, "children", ()))
    raise AssertionError(f"no {cls.__name__} described {description!r}")


def test_widget_builds_and_every_control_redraws(monkeypatch):
    import ipywidgets as W

    drawn = []

    def recording_render(**values):
        fig = real(**values)
        drawn.append((values, fig))
        return fig

    real = plotting.plot_attention_explorer
    monkeypatch.setattr(plotting, "plot_attention_explorer", recording_render)
    box = widgets.attention_explorer(SENTENCE)
    assert isinstance(box, W.VBox) and isinstance(box.children[-1], W.Output)
    assert len(drawn) == 1 and drawn[0][0]["scale"] is True and drawn[0][0]["tokens"] == TOKENS
    query = find(box, W.Dropdown, "query token")
    assert query.options == tuple((f"{i}: {t}", i) for i, t in enumerate(TOKENS))
    changes = [(find(box, W.Checkbox, "scale by 1/√d_k"), "scale", False),
               (find(box, W.FloatLogSlider, "temperature"), "temperature", 3.0),
               (find(box, W.Checkbox, "add positional encoding"), "positional", True),
               (find(box, W.Dropdown, "mask"), "mask", "causal+padding"),
               (query, "query", 5)]
    for control, name, value in changes:
        before = len(drawn)
        control.value = value
        assert len(drawn) == before + 1, f"changing {name} did not redraw"
        values, fig = drawn[-1]
        assert values[name] == value
        weights, _ = attention_map(TOKENS, values["scale"], values["temperature"], values["positional"],
                                   values["mask"])
        np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), weights.numpy())
    assert drawn[-1][0] == dict(tokens=TOKENS, scale=False, temperature=3.0, positional=True,
                                mask="causal+padding", query=5, d_model=16, seed=0)


def test_left_padded_sentence_has_empty_rows_drawn_as_zeros():
    tokens = "<pad> <pad> THE CAT SAT"
    weights, allowed = attention_map(tokens, mask="causal+padding")
    assert (~allowed.any(dim=1)).tolist() == [True, True, False, False, False]
    assert torch.all(weights[:2] == 0) and not torch.isnan(weights).any()
    fig = plotting.plot_attention_explorer(tokens, mask="causal+padding", query=0)
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), weights.numpy())
    assert [bar.get_height() for bar in fig.axes[1].patches] == [0.0] * 5
    assert "row sums to 0.000" in fig.axes[1].get_title()
