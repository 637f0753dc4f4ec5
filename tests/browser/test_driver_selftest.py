"""The browser checks can fail, and see every kind of control: on a test widget, a slider that does
not change the figure is caught while a slider, dropdown, checkbox, toggle buttons, text box and
toggle button that do are seen to redraw; an error output is found; a notebook whose kernel does not
exist shows the "Select Kernel" dialog we look for."""

import shutil

import nbformat
import pytest

import lab_driver

pytestmark = pytest.mark.browser
WIDGET = """
import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
from utils.figures.widgets import _explorer

def render(position, ignored, cmap, flip, k, title, grid):
    fig, ax = plt.subplots(figsize=(3, 2))
    data = np.triu(np.ones((8, 8))) * np.arange(1, 9) ** k  # not symmetric: flipping changes it
    ax.imshow(data.T if flip else data, cmap=cmap)
    ax.axhline(position, color="k")
    ax.set_title(title)
    ax.grid(grid)
    return fig

controls = {
    "position": ipywidgets.IntSlider(3, 0, 7, 1, description="position"),
    "ignored": ipywidgets.IntSlider(5, 0, 10, 1, description="ignored"),
    "cmap": ipywidgets.Dropdown(options=["viridis", "magma"], value="viridis", description="cmap"),
    "flip": ipywidgets.Checkbox(False, description="flip"),
    "k": ipywidgets.ToggleButtons(options=[1, 2, 3], value=1, description="k"),
    "title": ipywidgets.Text("a short title", description="title"),
    "grid": ipywidgets.ToggleButton(False, description="grid"),
}
_explorer(render, controls)
"""
KINDS = {
    "position": "slider",
    "ignored": "slider",
    "cmap": "dropdown",
    "flip": "checkbox",
    "k": "toggle-buttons",
    "title": "text",
    "grid": "toggle",
}


def write(path, *sources, kernel="python3"):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path.relative_to(lab_driver.ROOT).as_posix()


@pytest.fixture
def scratch():
    """A git-ignored folder inside the server's root (build/), removed afterwards."""
    folder = lab_driver.ROOT / "build" / "browser-selftest"
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_error_and_a_control_that_does_not_redraw_are_caught(page, lab, scratch):
    rel = write(scratch / "widget.ipynb", WIDGET, "1 / 0")
    assert lab_driver.open_notebook(page, lab, rel) == []
    errors = lab_driver.run_all(page, lab, timeout=300)
    assert len(errors) == 1 and "ZeroDivisionError" in errors[0]
    (root,) = lab_driver.widget_roots(page)
    found = {label: kind for kind, label, _ in lab_driver.controls(root)}
    assert found == KINDS
    results = {
        label: latency
        for kind, label, loc in lab_driver.controls(root)
        for latency, _ in [lab_driver.step_control(page, lab, root, kind, loc, timeout=5)]
    }
    assert results.pop("ignored") is None, "a slider that does not change the figure went unnoticed"
    assert all(v is not None and v > 0 for v in results.values()), results


def test_a_missing_kernel_shows_the_select_kernel_dialog(page, lab, scratch):
    rel = write(scratch / "nokernel.ipynb", "1 + 1", kernel="no-such-kernel")
    shown = lab_driver.open_notebook(page, lab, rel, timeout=30)
    assert any("Select Kernel" in d for d in shown), shown
