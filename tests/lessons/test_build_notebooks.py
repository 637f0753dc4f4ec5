"""scripts/build_notebooks.py keeps cell ids, so a rebuild changes only the cells that were edited."""

import jupytext
import nbformat
import pytest

from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
SOURCES = [lesson.source for lesson in lessons() if lesson.source.exists()]


def ids(nb):
    return [c.get("id") for c in nb.cells]


def test_the_build_lists_the_same_lessons_as_the_tests(script):
    assert script("build_notebooks").lesson_sources() == SOURCES


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_rebuilding_unchanged_source_keeps_every_cell_id(src, script):
    build_notebooks = script("build_notebooks")
    committed = nbformat.read(ROOT / "notebooks" / (src.stem + ".ipynb"), as_version=4)
    rebuilt = build_notebooks.read_source(src)
    assert ids(rebuilt) == ids(committed)


def test_only_edited_and_new_cells_change_ids(script):
    build_notebooks = script("build_notebooks")
    src = SOURCES[0]
    committed = nbformat.read(ROOT / "notebooks" / (src.stem + ".ipynb"), as_version=4)
    nb = jupytext.read(src)
    nb.cells[3].source += "\n# an edit"
    nb.cells.insert(5, nbformat.v4.new_markdown_cell("A new paragraph."))
    del nb.cells[-1]
    build_notebooks.keep_cell_ids(nb, committed)
    old = ids(committed)
    assert ids(nb)[:5] == old[:5]  # unchanged, and cell 3 edited in place
    assert ids(nb)[5] not in old  # the inserted cell is new
    assert ids(nb)[6:] == old[5:-1]  # the rest kept their ids after the shift; the last was deleted
    assert len(set(ids(nb))) == len(nb.cells)


def test_fresh_ids_without_a_committed_notebook(script):
    build_notebooks = script("build_notebooks")
    nb = jupytext.read(SOURCES[0])
    before = ids(nb)
    build_notebooks.keep_cell_ids(nb, nbformat.v4.new_notebook())
    assert ids(nb) == before


def test_collapse_verification_hides_exactly_the_cells_tagged_hide_input(script):
    v4 = nbformat.v4
    nb = v4.new_notebook(
        cells=[
            v4.new_code_cell("1", metadata={"tags": ["hide-input"]}),
            v4.new_code_cell("2"),
            v4.new_markdown_cell("x"),
        ]
    )
    nb.cells[1].metadata["jupyter"] = {"source_hidden": True}  # a stale collapse the source no longer asks for
    script("build_notebooks").collapse_verification(nb)
    assert [c.metadata.get("jupyter", {}).get("source_hidden", False) for c in nb.cells] == [True, False, False]


def test_a_cell_moved_unchanged_keeps_its_id(script):
    build_notebooks = script("build_notebooks")
    src = SOURCES[0]
    committed = nbformat.read(ROOT / "notebooks" / (src.stem + ".ipynb"), as_version=4)
    nb = jupytext.read(src)
    moved = nb.cells.pop(4)
    nb.cells.append(moved)  # e.g. a detour moved to "Going further" at the end
    build_notebooks.keep_cell_ids(nb, committed)
    assert nb.cells[-1]["id"] == committed.cells[4]["id"]
    assert len(set(ids(nb))) == len(nb.cells), "two cells got the same id"
