"""`lab_driver.cells_needed` (which cells the browser test runs for a lesson's widgets) keeps every cell that
binds or may change a name a needed cell uses, and leaves out the others; no browser needed."""

import nbformat

import lab_driver


def notebook(tmp_path, *cells):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(c[3:]) if c.startswith("md:") else nbformat.v4.new_code_cell(c) for c in cells
        ]
    )
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return path


def test_only_the_cells_a_widget_depends_on_are_kept(tmp_path):
    path = notebook(
        tmp_path,
        "%matplotlib inline\nimport numpy as np\nfrom utils.figures.widgets import pe_explorer",  # 0: binds np, pe_explorer
        "md:some text",  # 1
        "xs = [1, 2]\nunused = np.zeros(3)",  # 2: binds xs (needed)
        "print(unused)",  # 3: reads only
        "ys = [3]",  # 4: never needed
        "xs.append(len(ys))",  # 5: changes xs, so needed, and so is ys
        "def scale(v):\n    return [k * FACTOR for k in v]",  # 6: binds scale, reads FACTOR
        "FACTOR = 2",  # 7: after scale, before the widget: needed through scale's body
        "after = 1",  # 8: below the widget
        "pe_explorer(scale(xs))",  # 9: the widget
        "xs = None",  # 10: below the widget
    )
    assert lab_driver.cells_needed(path, [9]) == [0, 2, 4, 5, 6, 7, 9]


def test_an_argument_passed_to_a_call_counts_as_changed(tmp_path):
    path = notebook(tmp_path, "model = object()", "train(model)", "other = 1", "explorer(model)")
    assert lab_driver.cells_needed(path, [3]) == [0, 1, 3]


def test_a_star_import_is_always_kept_and_every_target_is(tmp_path):
    path = notebook(tmp_path, "from math import *", "a = 1", "b = 2", "one(a)", "two(b)", "c = 3")
    assert lab_driver.cells_needed(path, [3, 4]) == [0, 1, 2, 3, 4]


def test_a_functions_parameters_and_locals_are_its_own(tmp_path):
    path = notebook(
        tmp_path,
        "s = 'a global s'",  # 0: a function's parameter s is not this s
        "w = 1",  # 1: a function's local w is not this w
        "v = 2",  # 2: read inside the function: needed
        "def f(s):\n    w = [s for s in range(3)]\n    return w, v",  # 3
        "explorer(f)",  # 4
    )
    assert lab_driver.cells_needed(path, [4]) == [2, 3, 4]


def test_a_name_bound_again_before_it_is_read_does_not_need_the_first_binding(tmp_path):
    path = notebook(
        tmp_path,
        "fig = draw(1)",  # 0: bound again by cell 2 before the widget reads it
        "n = 3",  # 1: read by cell 2 before it binds n again
        "n = n + 1\nfig = draw(n)\nfig.tight_layout()",  # 2
        "explorer(fig, len(range(2)))",  # 3: builtins and a call's result change nothing
        "len = 5",  # 4: below the target
    )
    assert lab_driver.cells_needed(path, [3]) == [1, 2, 3]
