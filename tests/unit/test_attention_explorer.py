"""The attention-map explorer: the weights it computes, what its render function draws, its controls."""

import math

import numpy as np
import pytest
import torch

from utils.experiments.attention_map import MASK_KINDS, attention_map, explorer_mask, token_embeddings
from utils.figures import plotting, widgets
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


@pytest.mark.parametrize("mask_kind", MASK_KINDS)
@pytest.mark.parametrize("scale, temperature, positional", [(True, 1.0, False), (False, 3.0, True), (True, 0.2, True)])
def test_attention_map_equals_explicit_softmax(scale, temperature, positional, mask_kind):
    weights, allowed = attention_map(SENTENCE, scale, temperature, positional, mask_kind)
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


@pytest.mark.parametrize("mask_kind", MASK_KINDS)
@pytest.mark.parametrize("query", [0, 5, 7])
def test_render_draws_the_weights_and_the_chosen_row(mask_kind, query):
    fig = plotting.plot_attention_explorer(
        SENTENCE, scale=True, temperature=2.0, positional=True, mask_kind=mask_kind, query=query
    )
    weights, allowed = attention_map(SENTENCE, True, 2.0, True, mask_kind)
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
    assert "mask=" + mask_kind in ax_map.get_title()


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
    with pytest.raises(ValueError, match=r"weights must have shape \(T_q, len\(tokens\)=3\), got \(3, 4\)"):
        plotting.plot_attention("a b c", np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"query must be an int in \[0, T_q=3\), got 3"):
        plotting.plot_attention("a b c", np.zeros((3, 3)), query=3)
    with pytest.raises(
        ValueError, match=r"mask_kind must be one of \('none', 'causal', 'padding', 'causal\+padding'\), got 'future'"
    ):
        attention_map("a b", mask_kind="future")
    with pytest.raises(TypeError, match=r"mask_kind must be one of .*, got bool True"):
        explorer_mask("a b", True)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0, got 0"):
        attention_map("a b", temperature=0)
    with pytest.raises(TypeError, match=r"tokens\[0\] must be a str, got int"):
        attention_map([1, 2])
    with pytest.raises(TypeError, match=r"tokens must be a non-empty str or list of str, got int"):
        attention_map(3)
    with pytest.raises(ValueError, match="tokens must be a non-empty str or list of str, got an empty one"):
        attention_map("")
    with pytest.raises(TypeError, match=r"scale must be a bool \(True or False\), got str 'yes'"):
        attention_map("a b", scale="yes")
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*63\)"):
        token_embeddings("a", seed=-1)
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


def test_widget_bad_input_raises_by_name():
    with pytest.raises(ValueError, match=r"mask_kind must be one of"):
        widgets.attention_explorer(SENTENCE, mask_kind="future")
    with pytest.raises(ValueError, match=r"query must be an int in \[0, len\(tokens\)=8\), got 8"):
        widgets.attention_explorer(SENTENCE, query=8)
    with pytest.raises(TypeError, match=r"positional must be a bool"):
        widgets.attention_explorer(SENTENCE, positional=1)


def test_widget_builds_and_every_control_redraws(monkeypatch):
    import ipywidgets

    drawn = []

    def recording_render(**values):
        fig = real(**values)
        drawn.append((values, fig))
        return fig

    real = plotting.plot_attention_explorer
    monkeypatch.setattr(plotting, "plot_attention_explorer", recording_render)
    box = widgets.attention_explorer(SENTENCE)
    assert isinstance(box, ipywidgets.VBox) and isinstance(box.children[-1], ipywidgets.Output)
    assert len(drawn) == 1 and drawn[0][0]["scale"] is True and drawn[0][0]["tokens"] == TOKENS
    query = find(box, ipywidgets.Dropdown, "query token")
    assert query.options == tuple((f"{i}: {t}", i) for i, t in enumerate(TOKENS))
    changes = [
        (find(box, ipywidgets.Checkbox, "scale by 1/√d_k"), "scale", False),
        (find(box, ipywidgets.FloatLogSlider, "temperature"), "temperature", 3.0),
        (find(box, ipywidgets.Checkbox, "add positional encoding"), "positional", True),
        (find(box, ipywidgets.Dropdown, "mask"), "mask_kind", "causal+padding"),
        (query, "query", 5),
    ]
    for control, name, value in changes:
        before = len(drawn)
        control.value = value
        assert len(drawn) == before + 1, f"changing {name} did not redraw"
        values, fig = drawn[-1]
        assert values[name] == value
        weights, _ = attention_map(
            TOKENS, values["scale"], values["temperature"], values["positional"], values["mask_kind"]
        )
        np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), weights.numpy())
    assert drawn[-1][0] == dict(
        tokens=TOKENS,
        scale=False,
        temperature=3.0,
        positional=True,
        mask_kind="causal+padding",
        query=5,
        d_model=16,
        seed=0,
    )


def test_left_padded_sentence_has_empty_rows_drawn_as_zeros():
    tokens = "<pad> <pad> THE CAT SAT"
    weights, allowed = attention_map(tokens, mask_kind="causal+padding")
    assert (~allowed.any(dim=1)).tolist() == [True, True, False, False, False]
    assert torch.all(weights[:2] == 0) and not torch.isnan(weights).any()
    fig = plotting.plot_attention_explorer(tokens, mask_kind="causal+padding", query=0)
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), weights.numpy())
    assert [bar.get_height() for bar in fig.axes[1].patches] == [0.0] * 5
    assert "row sums to 0.000" in fig.axes[1].get_title()
