"""Every explorer in utils.figures.widgets, generically: it builds from its defaults, shows its controls above
an output, and changing any control (slider, dropdown, checkbox, toggle, text) redraws a different
figure. Uses only ipywidgets API common to 7.7 and 8; tests/test_ipywidgets7.py reruns it on 7.7.1."""

import inspect
import io

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest

from utils.figures import tile_widget, widgets

EXPLORER_MODULES = (widgets, tile_widget)  # modules whose *_explorer functions are tested here
EXPLORERS = [
    f
    for module in EXPLORER_MODULES
    for name, f in vars(module).items()
    if name.endswith("_explorer")
    and not name.startswith("_")
    and inspect.isfunction(f)
    and f.__module__ == module.__name__
]
SLIDERS = (ipywidgets.IntSlider, ipywidgets.FloatSlider, ipywidgets.FloatLogSlider)
CHOICES = (ipywidgets.Dropdown, ipywidgets.ToggleButtons, ipywidgets.RadioButtons, ipywidgets.SelectionSlider)
TOGGLES = (ipywidgets.Checkbox, ipywidgets.ToggleButton)
TEXTS = (ipywidgets.Text, ipywidgets.Textarea)


def needs_arguments(f):
    return any(
        p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in inspect.signature(f).parameters.values()
    )


def controls(widget):
    """Every value control in the widget tree, depth first."""
    if isinstance(widget, SLIDERS + CHOICES + TOGGLES + TEXTS):
        return [widget]
    return [c for child in getattr(widget, "children", ()) for c in controls(child)]


def outputs(widget):
    if isinstance(widget, ipywidgets.Output):
        return [widget]
    return [o for child in getattr(widget, "children", ()) for o in outputs(child)]


def next_value(c):
    """A value one step away from the control's current one."""
    if isinstance(c, ipywidgets.FloatLogSlider):
        up = c.value * c.base**c.step
        return up if np.log(up) / np.log(c.base) <= c.max + 1e-9 else c.value / c.base**c.step
    if isinstance(c, SLIDERS):
        return c.value + c.step if c.value + c.step <= c.max else c.value - c.step
    if isinstance(c, CHOICES):
        labels = list(c.options)
        values = [v[1] if isinstance(v, tuple) else v for v in labels]
        return values[(values.index(c.value) + 1) % len(values)]
    if isinstance(c, TOGGLES):
        return not c.value
    words = c.value.split()
    return " ".join(words[:-1]) if len(words) > 1 else c.value[:-1] or "a"


@pytest.fixture
def drawn(monkeypatch):
    """Record the pixels of every figure the explorers show (the PNG they pass to display)."""
    frames = []

    def display(image):
        frames.append(plt.imread(io.BytesIO(image.data), format="png"))

    for module in EXPLORER_MODULES:
        monkeypatch.setattr(module, "display", display)
    return frames


def test_there_are_explorers():
    assert EXPLORERS, "utils.figures.widgets defines no *_explorer function"


@pytest.mark.parametrize("explorer", EXPLORERS, ids=[f.__name__ for f in EXPLORERS])
def test_explorer_has_controls_and_an_output(explorer, drawn):
    if needs_arguments(explorer):
        pytest.skip(f"{explorer.__name__} needs arguments (a model): its lesson's tests build it")
    w = explorer()
    assert isinstance(w, ipywidgets.Box), f"{explorer.__name__} returned {type(w).__name__}, not a Box"
    assert controls(w), f"{explorer.__name__} has no control"
    assert outputs(w), f"{explorer.__name__} has no Output area"
    assert drawn, f"{explorer.__name__} drew nothing at its default state"


@pytest.mark.parametrize("explorer", EXPLORERS, ids=[f.__name__ for f in EXPLORERS])
def test_every_control_redraws_a_different_figure(explorer, drawn):
    if needs_arguments(explorer):
        pytest.skip(f"{explorer.__name__} needs arguments (a model): its lesson's tests build it")
    w = explorer()
    for c in controls(w):
        if getattr(c, "disabled", False):
            continue
        before, old = len(drawn), c.value
        c.value = next_value(c)
        label = f"{explorer.__name__}: {type(c).__name__} {c.description!r} {old!r} -> {c.value!r}"
        assert c.value != old, f"{label}: the value did not change"
        assert len(drawn) > before, f"{label}: nothing was redrawn"
        prev = drawn[before - 1]
        assert any(f.shape != prev.shape or not np.array_equal(f, prev) for f in drawn[before:]), (
            f"{label}: the figure did not change"
        )
