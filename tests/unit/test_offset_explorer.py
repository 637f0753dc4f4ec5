"""The offset explorer draws PE_t . PE_{t+k} (flat in t), sum_i cos(w_i k) against k, and a pair's rotation."""

import math

import numpy as np
import pytest
import torch

from utils.figures import plotting, widgets
from utils.positional import angular_frequencies, sinusoidal_encoding


def line(ax, label):
    found = [ln for ln in ax.lines if ln.get_label() == label]
    assert len(found) == 1, f"expected one line labelled {label!r}, got {[ln.get_label() for ln in ax.lines]}"
    return found[0]


@pytest.mark.parametrize(
    "d_model, base, k", [(64, 10000.0, 10), (16, 100.0, 3), (128, 10000.0, 0), (2, 10.0, 25), (32, 1000.0, -7)]
)
def test_dot_against_t_is_the_table_product_and_flat(d_model, base, k):
    fig = plotting.plot_offset_explorer(d_model=d_model, base=base, k=k)
    ln = line(fig.axes[0], "PE_t . PE_t+k")
    t, y = np.asarray(ln.get_xdata()), np.asarray(ln.get_ydata())
    pe = sinusoidal_encoding(int(t.max()) + abs(k) + 1, d_model, base, dtype=torch.float64).numpy()
    assert (t >= 0).all() and (t + k >= 0).all() and len(t) >= 50
    np.testing.assert_allclose(y, (pe[t] * pe[t + k]).sum(axis=1), atol=1e-12, rtol=0)
    assert np.ptp(y) < 1e-9, "PE_t . PE_t+k must not depend on t"
    w = angular_frequencies(d_model, base).numpy()
    assert y[0] == pytest.approx(np.cos(w * k).sum(), abs=1e-9)
    ref = line(fig.axes[0], "sum_i cos(w_i k)")
    assert ref.get_ydata()[0] == pytest.approx(np.cos(w * k).sum(), abs=1e-12)


@pytest.mark.parametrize("d_model, base, k", [(64, 10000.0, 10), (8, 10.0, -4), (256, 10000.0, 60)])
def test_dot_against_offset_matches_the_table_and_marks_k(d_model, base, k):
    fig = plotting.plot_offset_explorer(d_model=d_model, base=base, k=k, max_offset=60)
    ln = line(fig.axes[1], "sum_i cos(w_i j)")
    j, y = np.asarray(ln.get_xdata()), np.asarray(ln.get_ydata())
    np.testing.assert_array_equal(j, np.arange(-60, 61))
    pe = sinusoidal_encoding(61, d_model, base, dtype=torch.float64).numpy()  # (61, d_model)
    from_table = pe[0] @ pe[np.abs(j)].T  # PE_0 . PE_|j|, the value for offset j
    np.testing.assert_allclose(y, from_table, atol=1e-10, rtol=0)
    np.testing.assert_allclose(y, y[::-1], atol=1e-12, rtol=0)  # symmetric in j
    mark = line(fig.axes[1], "chosen k")
    assert mark.get_xdata()[0] == k
    assert mark.get_ydata()[0] == pytest.approx(y[j == k][0], abs=1e-12)


@pytest.mark.parametrize("d_model, pair, t, k", [(64, 0, 3, 10), (64, 5, 0, 7), (16, 7, 12, -3), (64, 0, 20, -7)])
def test_rotation_picture_shows_the_pair_at_t_and_t_plus_k(d_model, pair, t, k):
    fig = plotting.plot_offset_explorer(d_model=d_model, k=k, pair=pair, t=t)
    ax = fig.axes[2]
    pe = sinusoidal_encoding(t + abs(k) + 1, d_model, dtype=torch.float64).numpy()
    for pos in (t, t + k):
        if pos < 0:
            continue
        ln = line(ax, f"PE_{pos}")
        np.testing.assert_allclose([ln.get_xdata()[1], ln.get_ydata()[1]], pe[pos, 2 * pair : 2 * pair + 2], atol=1e-12)
    p0 = np.array([line(ax, f"PE_{t}").get_xdata()[1], line(ax, f"PE_{t}").get_ydata()[1]])
    p1 = np.array([line(ax, f"PE_{t + k}").get_xdata()[1], line(ax, f"PE_{t + k}").get_ydata()[1]])
    w = angular_frequencies(d_model).numpy()[pair]
    assert np.dot(p0, p1) == pytest.approx(math.cos(w * k), abs=1e-12)  # the angle between them is w_i k
    arc = line(ax, "arc: w_i k less whole turns")
    start, end = (arc.get_xdata()[0], arc.get_ydata()[0]), (arc.get_xdata()[-1], arc.get_ydata()[-1])
    assert math.atan2(*start) == pytest.approx(math.remainder(w * t, 2 * math.pi), abs=1e-9)
    assert math.cos(math.atan2(*end) - math.atan2(*start)) == pytest.approx(math.cos(w * k), abs=1e-9)
    # the arc turns the way the pair turns (clockwise from the cos axis for k > 0), by w_i k less whole turns
    angles = np.unwrap(np.arctan2(arc.get_xdata(), arc.get_ydata()))  # clockwise angle of each arc point
    assert np.all(np.sign(np.diff(angles)) == np.sign(k))
    assert angles[-1] - angles[0] == pytest.approx(math.copysign(abs(w * k) % (2 * math.pi), k), abs=1e-9)
    title = ax.get_title()
    assert f"pair {pair}" in title and f"w k={w * k:.3g}" in title
    if abs(w * k) >= 2 * math.pi:  # the title splits off the whole turns and names the rest, the arc's angle
        assert f"2pi+{abs(w * k) % (2 * math.pi):.2f}" in title


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(d_model=7), ValueError, r"d_model must be even.*got 7"),
        (dict(d_model="64"), TypeError, r"d_model must be an int"),
        (dict(base=0), ValueError, r"base must be a finite number >= 1"),
        (dict(k=1.5), TypeError, r"k must be an int, got float 1.5"),
        (dict(k=True), TypeError, r"k must be an int, got bool"),
        (dict(pair=32), ValueError, r"pair must be an int in \[0, d_model/2=32\), got 32"),
        (dict(pair=-1), ValueError, r"pair must be an int in \[0, d_model/2=32\), got -1"),
        (dict(pair=True), TypeError, r"pair must be an int, got bool True"),
        (dict(pair=1.0), TypeError, r"pair must be an int, got float 1\.0"),
        (dict(t=-2), ValueError, r"t must be an int >= 0.*got -2"),
        (dict(t=2.0), TypeError, r"t must be an int, got float 2.0"),
        (dict(max_offset=0), ValueError, r"max_offset must be a positive int, got 0"),
    ],
)
def test_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        plotting.plot_offset_explorer(**kwargs)


def test_widget_builds_and_redraws_with_new_values(monkeypatch):
    calls, figures, render = [], [], plotting.plot_offset_explorer

    def recording_render(**values):
        calls.append(values)
        figures.append(render(**values))
        return figures[-1]

    monkeypatch.setattr(plotting, "plot_offset_explorer", recording_render)
    box = widgets.offset_explorer()
    sliders = {c.description: c for row in box.children[0].children for c in row.children}
    assert set(sliders) == {"d_model", "base", "offset k", "pair i", "position t"}
    assert box.children[1].__class__.__name__ == "Output"
    assert calls == [dict(d_model=64, base=10000.0, k=10, pair=0, t=3)]  # the default state, drawn once

    sliders["offset k"].value = 25
    assert calls[-1]["k"] == 25 and len(calls) == 2
    assert figures[-1] is not figures[0]  # a new figure was drawn for the new value
    assert "k=25" in figures[-1].axes[0].get_title()

    sliders["pair i"].value = 30
    sliders["d_model"].value = 16  # pair 30 no longer exists: the slider is clamped, the render still works
    assert sliders["pair i"].max == 7 and sliders["pair i"].value == 7
    assert calls[-1]["d_model"] == 16 and calls[-1]["pair"] == 7


def test_offset_dot_products_reads_the_table():
    t, dots = plotting.offset_dot_products(32, 100.0, k=-4, num_t=10)
    np.testing.assert_array_equal(t, np.arange(4, 14))  # t + k >= 0
    pe = sinusoidal_encoding(14, 32, 100.0, dtype=torch.float64).numpy()
    np.testing.assert_allclose(dots, [pe[i] @ pe[i - 4] for i in range(4, 14)], atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(d_model=5, k=1), ValueError, r"d_model must be even.*got 5"),
        (dict(d_model=8, k="3"), TypeError, r"k must be an int, got str '3'"),
        (dict(d_model=8, k=3, num_t=0), ValueError, r"num_t must be a positive int, got 0"),
        (dict(d_model=8, k=3, base=-1.0), ValueError, r"base must be a finite number >= 1 .*, got -1.0"),
    ],
)
def test_offset_dot_products_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        plotting.offset_dot_products(**kwargs)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(k=61), ValueError, r"k must be an int in \[-60, 60\], got 61"),
        (dict(t=51), ValueError, r"t must be an int in \[0, 50\] \(a position\), got 51"),
        (dict(pair=32), ValueError, r"pair must be an int in \[0, d_model/2=32\), got 32"),
        (dict(d_model=7), ValueError, r"d_model must be even"),
    ],
)
def test_widget_bad_input_raises_by_name(kwargs, err, match):
    with pytest.raises(err, match=match):
        widgets.offset_explorer(**kwargs)
