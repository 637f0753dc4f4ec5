"""Every lesson notebook with a widget, opened in real JupyterLab, its widgets run, with every control moved.

For each notebook: no "Select Kernel" dialog; the cells a learner must run for the widgets run one after
another, as Run > "Run Selected Cell" runs them, without an error, and no other cell runs; each widget the
committed notebook shows appears with its figure; and stepping each slider (keyboard on its handle),
dropdown, checkbox, toggle or text box changes the widget's figure. The cells run are each widget's cell and
every earlier cell that binds or may change a name they use (`lab_driver.cells_needed` reads the code), so a
widget that needs a cell the reading leaves out fails here. JupyterLab reads the cells through the jupytext
pairing (lessons_src/), so the widget's cell is checked to be where the notebook has it. Every cell, top to
bottom, is run by nbval in the same `pytest` run (and by scripts/execute_notebooks.py in CI); running the
others here again cost about half of these tests' time.
The latencies these steps take are measured by benchmarks/widget_latency.py.
"""

import hashlib

import nbformat
import pytest

import lab_driver

NOTEBOOKS = lab_driver.widget_notebooks()
pytestmark = pytest.mark.browser


def test_some_lesson_has_a_widget():
    assert NOTEBOOKS, "no lesson notebook calls a *_explorer( widget; has_widget() finds none"
    assert all(lab_driver.widget_cells(p) for p in NOTEBOOKS), "a widget lesson's notebook shows no widget view"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_widget_notebook_runs_and_every_control_redraws(page, lab, path):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    rel = path.relative_to(lab_driver.ROOT).as_posix()
    cells = lab_driver.widget_cells(path)

    shown = lab_driver.open_notebook(page, lab, rel)
    assert not any("Select Kernel" in d for d in shown), f"{rel}: JupyterLab asked to select a kernel"
    assert not shown, f"{rel}: unexpected dialog(s) on opening: {shown}"

    last = nbformat.read(path, as_version=4).cells[cells[-1]].source
    assert lab_driver.cell_source(page, cells[-1]) == last, (
        f"{rel}: cell {cells[-1] + 1} in JupyterLab is not the widget's"
    )
    needed = lab_driver.cells_needed(path, cells)
    errors = lab_driver.run_cells(page, lab, needed, timeout=900)
    shown = ", ".join(str(i + 1) for i in needed)
    assert not errors, f"{rel}: error output running cells {shown}:\n" + "\n".join(errors)[:3000]

    roots = lab_driver.widget_roots(page)
    assert len(roots) == len(cells), (
        f"{rel}: {len(roots)} widget(s) with controls and a figure appeared; the notebook shows {len(cells)}"
    )

    steps = lab_driver.exercise_widgets(page, lab)
    assert steps, f"{rel}: the widgets have no control to move"
    stuck = [s for s in steps if s["latency_ms"] is None or "did not move" in s["action"]]
    assert not stuck, f"{rel}: these steps did not change the figure: {stuck}"
    assert not page.evaluate(lab_driver.ERROR_JS), f"{rel}: a control produced an error output"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{rel} was modified on disk"


def test_lesson_09_tile_explorer_is_covered():
    """Lesson 09's tile explorer (utils.figures.tile_widget) is found like the others and driven by the test above."""
    assert any(p.stem == "09_fast_attention" for p in NOTEBOOKS), "lesson 09 is not among the widget notebooks"


def test_lesson_10_merges_explorer_is_covered():
    """Lesson 10's merges explorer (utils.figures.subwords) is found like the others and driven by the test above."""
    assert any(p.stem == "10_subwords" for p in NOTEBOOKS), "lesson 10 is not among the widget notebooks"
