"""plot_pe_heatmap draws the PE table and the chosen position's vector; pe_explorer's sliders redraw it."""

import ipywidgets
import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pytest

from utils.course.kernel_client import notebook_client
from utils.figures import plotting
from utils.figures.widgets import pe_explorer
from utils.positional import sinusoidal_encoding

CASES = [(100, 128, 10000.0, 10), (1, 2, 10000.0, 0), (37, 6, 10.0, 36), (500, 512, 1e5, 250), (20, 16, 1.0, 3)]


# --- the pure render function ---


@pytest.mark.parametrize("max_len, d_model, base, position", CASES)
def test_heatmap_image_is_the_pe_table(max_len, d_model, base, position):
    fig = plotting.plot_pe_heatmap(max_len, d_model, base, position)
    image = fig.axes[0].images[0]
    np.testing.assert_array_equal(image.get_array(), sinusoidal_encoding(max_len, d_model, base).numpy())
    assert image.get_clim() == (-1, 1)  # the colour scale is fixed, so colours compare across settings


@pytest.mark.parametrize("max_len, d_model, base, position", CASES)
def test_highlighted_row_and_vector_are_pe_of_position(max_len, d_model, base, position):
    fig = plotting.plot_pe_heatmap(max_len, d_model, base, position)
    ax_map, ax_vec = fig.axes[0], fig.axes[1]
    (marker,) = ax_map.lines
    assert list(marker.get_ydata()) == [position, position]
    (vector,) = ax_vec.lines
    np.testing.assert_array_equal(vector.get_xdata(), np.arange(d_model))
    np.testing.assert_array_equal(vector.get_ydata(), sinusoidal_encoding(max_len, d_model, base)[position].numpy())
    assert ax_vec.get_title() == f"PE({position})"
    assert f"d_model={d_model}" in ax_map.get_title() and f"base={base:g}" in ax_map.get_title()


def test_default_figure_matches_the_lesson():
    fig = plotting.plot_pe_heatmap()
    assert fig.axes[0].images[0].get_array().shape == (100, 128)
    assert list(fig.axes[0].lines[0].get_ydata()) == [10, 10]


@pytest.mark.parametrize(
    "position, error, match",
    [
        (-1, ValueError, r"position must be an int in \[0, max_len=20\), got -1"),
        (20, ValueError, r"position must be an int in \[0, max_len=20\), got 20"),
        (2.5, TypeError, r"position must be an int, got float 2\.5"),
        (True, TypeError, r"position must be an int, got bool True"),
        ("3", TypeError, r"position must be an int, got str '3'"),
    ],
)
def test_bad_position(position, error, match):
    with pytest.raises(error, match=match):
        plotting.plot_pe_heatmap(max_len=20, d_model=8, position=position)
    assert plt.get_fignums() == []  # nothing half-drawn is left open


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(d_model=7), ValueError, "d_model must be even"),
        (dict(max_len=0), ValueError, "max_len must be a positive int"),
        (dict(base=0.0), ValueError, "base must be a finite number >= 1"),
    ],
)
def test_bad_table_sizes_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        plotting.plot_pe_heatmap(**kwargs)


# --- the widget, in this process ---


def controls_of(widget):
    return {c.description: c for c in widget.children[0].children}


def test_explorer_has_its_sliders_and_an_output():
    widget = pe_explorer()
    controls = controls_of(widget)
    assert list(controls) == ["max_len", "d_model", "base", "position"]
    assert isinstance(controls["max_len"], ipywidgets.IntSlider) and controls["max_len"].value == 100
    assert isinstance(controls["d_model"], ipywidgets.IntSlider) and controls["d_model"].step == 2
    assert isinstance(controls["base"], ipywidgets.FloatLogSlider) and controls["base"].value == 10000.0
    assert isinstance(controls["position"], ipywidgets.IntSlider) and controls["position"].max == 99
    assert isinstance(widget.children[1], ipywidgets.Output)
    assert not controls["max_len"].continuous_update and controls["position"].continuous_update
    assert plt.get_fignums() == []  # each drawn figure is closed after it is shown


@pytest.fixture
def renders(monkeypatch):
    """Record every call pe_explorer makes to the render function, and still draw."""
    calls, real = [], plotting.plot_pe_heatmap

    def spy(**values):
        calls.append(values)
        return real(**values)

    monkeypatch.setattr(plotting, "plot_pe_heatmap", spy)
    return calls


def test_changing_a_slider_redraws_with_its_value(renders):
    controls = controls_of(pe_explorer())
    assert renders == [dict(max_len=100, d_model=128, base=10000.0, position=10)]
    controls["d_model"].value = 64
    controls["base"].value = 100.0
    controls["position"].value = 42
    assert renders[-3:] == [
        dict(max_len=100, d_model=64, base=10000.0, position=10),
        dict(max_len=100, d_model=64, base=100.0, position=10),
        dict(max_len=100, d_model=64, base=100.0, position=42),
    ]


def test_position_slider_follows_max_len(renders):
    controls = controls_of(pe_explorer(position=50))
    controls["max_len"].value = 300
    assert controls["position"].max == 299 and controls["position"].value == 50
    controls["max_len"].value = 20  # shrinking the table pulls the highlighted row inside it
    assert controls["position"].max == 19 and controls["position"].value == 19
    assert all(call["position"] < call["max_len"] for call in renders)
    assert renders[-1] == dict(max_len=20, d_model=128, base=10000.0, position=19)


def test_sliders_reach_the_given_arguments():
    controls = controls_of(pe_explorer(max_len=800, d_model=1024, base=1e6, position=700))
    assert [controls[n].value for n in ("max_len", "d_model", "base", "position")] == [800, 1024, 1e6, 700]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(d_model=7), ValueError, "d_model must be even"),
        (dict(max_len=0), ValueError, "max_len must be a positive int"),
        (dict(base=-1.0), ValueError, "base must be a finite number >= 1"),
        (dict(position=100), ValueError, r"position must be an int in \[0, max_len=100\)"),
        (dict(position=1.5), TypeError, "position must be an int"),
    ],
)
def test_explorer_rejects_bad_arguments_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        pe_explorer(**kwargs)


# --- the widget in a real kernel: the Output widget's outputs change when a slider moves ---


def test_slider_change_replaces_the_drawn_image_in_a_kernel():
    """nbclient plays the browser's part: it routes the kernel's display messages into the Output."""
    images = 'import hashlib; snap = lambda: [hashlib.md5(o["data"]["image/png"].encode()).hexdigest() for o in out.outputs if "image/png" in o.get("data", {})]'
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(src)
            for src in [
                "from utils.figures.widgets import pe_explorer\nwidget = pe_explorer()\nout = widget.children[-1]\n"
                "controls = {c.description: c for c in widget.children[0].children}\nwidget",
                images + "\nbefore = snap()\nprint(len(before))\ncontrols['d_model'].value = 32",
                "after = snap()\nprint(len(after), after != before)\ncontrols['position'].value = 3",
                "print(len(snap()), snap() not in (before, after))",
            ]
        ]
    )
    notebook_client(nb, kernel_name="python3", timeout=120).execute()
    printed = [cell.outputs[0]["text"].strip() for cell in nb.cells[1:]]
    assert printed == ["1", "1 True", "1 True"], printed


@pytest.mark.parametrize(
    "value, err, match",
    [
        (0, None, None),
        (np.int64(4), None, None),
        (5, ValueError, r"row must be an int in \[0, rows=5\), got 5"),
        (-1, ValueError, r"row must be an int in \[0, rows=5\), got -1"),
        (True, TypeError, r"row must be an int, got bool True"),
        (2.0, TypeError, r"row must be an int, got float 2\.0"),
    ],
)
def test_validation_index_accepts_only_ints_in_range(value, err, match):
    from utils import validation

    if err is None:
        assert (
            validation.index("row", value, 5, "rows") == value
            and type(validation.index("row", value, 5, "rows")) is int
        )
    else:
        with pytest.raises(err, match=match):
            validation.index("row", value, 5, "rows")
