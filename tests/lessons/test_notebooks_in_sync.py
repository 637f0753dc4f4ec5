"""Every lesson source has its executed notebook, with the same cells and a python3 kernelspec."""

import jupytext
import nbformat
import pytest

from utils.course.lessons import checkout, lessons, strays

ROOT = checkout(__file__)
LESSONS = lessons()
SOURCES = [lesson.source for lesson in LESSONS if lesson.source.exists()]
NOTEBOOKS = [lesson.notebook for lesson in LESSONS if lesson.notebook.exists()]
PAIRS = [(lesson.source, lesson.notebook) for lesson in LESSONS if lesson.source.exists()]
REGENERATE = "regenerate it with: python scripts/build_notebooks.py"


def cells(nb):
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_there_are_lessons():
    assert SOURCES, "lessons_src/ has no lesson"


def test_every_lesson_file_is_named_like_a_lesson():
    found = [p.relative_to(ROOT).as_posix() for p in strays()]
    assert not found, f"name lessons NN_name (two digits, then words): {found}"


def test_every_source_has_a_notebook_and_back():
    assert {p.stem for p in SOURCES} == {p.stem for p in NOTEBOOKS}, (
        f"unpaired: {sorted({p.stem for p in SOURCES} ^ {p.stem for p in NOTEBOOKS})}; {REGENERATE}"
    )


@pytest.mark.parametrize("src, ipynb", PAIRS, ids=[s.stem for s, _ in PAIRS])
def test_pair_has_the_same_cells(src, ipynb):
    py_cells, nb_cells = cells(jupytext.read(src)), cells(nbformat.read(ipynb, as_version=4))
    for i, (a, b) in enumerate(zip(py_cells, nb_cells)):
        assert a == b, f"{ipynb.name} cell {i} differs from {src.name}; {REGENERATE}"
    assert len(py_cells) == len(nb_cells), f"{ipynb.name} has a different number of cells; {REGENERATE}"


@pytest.mark.parametrize("src, ipynb", PAIRS, ids=[s.stem for s, _ in PAIRS])
def test_verification_cells_are_collapsed_exactly_where_the_source_tags_them(src, ipynb):
    def hidden(c):
        return c.metadata.get("jupyter", {}).get("source_hidden", False)

    nb = nbformat.read(ipynb, as_version=4)
    tagged = [i for i, c in enumerate(jupytext.read(src).cells) if "hide-input" in c.metadata.get("tags", [])]
    collapsed = [i for i, c in enumerate(nb.cells) if hidden(c)]
    assert collapsed == tagged, f"{ipynb.name}: collapsed cells {collapsed}, tagged hide-input {tagged}; {REGENERATE}"


@pytest.mark.parametrize("src, ipynb", PAIRS, ids=[s.stem for s, _ in PAIRS])
def test_notebook_is_executed_with_python3_kernel(src, ipynb):
    nb = nbformat.read(ipynb, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", f"{ipynb.name}: no python3 kernelspec"
    unexecuted = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.execution_count is None]
    assert not unexecuted, f"{ipynb.name}: code cells {unexecuted} were not executed; {REGENERATE}"
    errors = [
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)
    ]
    assert not errors, f"{ipynb.name}: cells {errors} have error outputs"


def test_readme_lists_every_lesson():
    readme = (ROOT / "README.md").read_text()
    missing = [s.stem for s in SOURCES if f"notebooks/{s.stem}.ipynb" not in readme]
    assert not missing, f"README.md does not link these lessons: {missing}"
