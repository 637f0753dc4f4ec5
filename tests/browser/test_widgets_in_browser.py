"""Every lesson notebook with a widget, opened and run in real JupyterLab, with every control moved.

For each notebook: no "Select Kernel" dialog, all cells run without an error, and stepping each
slider (keyboard on its handle), dropdown, checkbox, toggle or text box changes the widget's figure.
The latencies these steps take are measured by benchmarks/widget_latency.py.
"""

import hashlib

import pytest

import lab_driver

NOTEBOOKS = lab_driver.widget_notebooks()
pytestmark = pytest.mark.browser


def test_some_lesson_has_a_widget():
    assert NOTEBOOKS, "no lesson notebook calls a *_explorer( widget; has_widget() finds none"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_widget_notebook_runs_and_every_control_redraws(page, lab, path):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    rel = path.relative_to(lab_driver.ROOT).as_posix()

    shown = lab_driver.open_notebook(page, lab, rel)
    assert not any("Select Kernel" in d for d in shown), f"{rel}: JupyterLab asked to select a kernel"
    assert not shown, f"{rel}: unexpected dialog(s) on opening: {shown}"

    errors = lab_driver.run_all(page, lab, timeout=900)
    assert not errors, f"{rel}: error output after Run All Cells:\n" + "\n".join(errors)[:3000]

    roots = lab_driver.widget_roots(page)
    assert roots, f"{rel}: no widget with controls and a figure appeared after running all cells"

    steps = lab_driver.exercise_widgets(page, lab)
    assert steps, f"{rel}: the widgets have no control to move"
    stuck = [s for s in steps if s["latency_ms"] is None or "did not move" in s["action"]]
    assert not stuck, f"{rel}: these steps did not change the figure: {stuck}"
    assert not page.evaluate(lab_driver.ERROR_JS), f"{rel}: a control produced an error output"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{rel} was modified on disk"


def test_lesson_09_tile_explorer_is_covered():
    """Lesson 09's tile explorer (utils.figures.tile_widget) is found like the others and driven by the test above."""
    assert any(p.stem == "09_fast_attention" for p in NOTEBOOKS), "lesson 09 is not among the widget notebooks"
