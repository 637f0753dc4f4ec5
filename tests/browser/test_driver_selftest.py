"""The browser checks can fail: a slider that does not change the figure is caught, a redrawing one
is not, and a notebook whose kernel does not exist shows the "Select Kernel" dialog we look for."""

import shutil

import nbformat
import pytest

import lab_driver

pytestmark = pytest.mark.browser
WIDGET = '''
import ipywidgets as W
from utils.plotting import plot_pe_heatmap
from utils.widgets import _explorer

def render(position, ignored):
    return plot_pe_heatmap(max_len=20, d_model=16, position=position)

controls = {"position": W.IntSlider(3, 0, 19, 1, description="position"),
            "ignored": W.IntSlider(5, 0, 10, 1, description="ignored")}
_explorer(render, controls)
'''


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
    results = {label: latency for kind, label, loc in lab_driver.controls(root)
               for latency, _ in [lab_driver.step_control(page, lab, root, kind, loc, timeout=5)]}
    assert results["position"] is not None and results["position"] > 0
    assert results["ignored"] is None


def test_a_missing_kernel_shows_the_select_kernel_dialog(page, lab, scratch):
    rel = write(scratch / "nokernel.ipynb", "1 + 1", kernel="no-such-kernel")
    shown = lab_driver.open_notebook(page, lab, rel, timeout=30)
    assert any("Select Kernel" in d for d in shown), shown
