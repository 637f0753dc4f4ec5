"""utils.course.lessons: the one list of lessons (number, name, title, source, notebook) in lesson order."""

import pytest

from utils.course.lessons import Lesson, checkout, lessons, strays


def make(root, *names, notebooks=()):
    (root / "lessons_src").mkdir(exist_ok=True)
    (root / "notebooks").mkdir(exist_ok=True)
    for name in names:
        (root / "lessons_src" / f"{name}.py").write_text(f"# %% [markdown]\n# # {name[:2]} · Title {name}\n")
    for name in notebooks:
        (root / "notebooks" / f"{name}.ipynb").write_text(
            '{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# '
            + name[:2]
            + ' · From the notebook"]}],'
            ' "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
        )
    return root


def test_lessons_in_order_with_both_files_and_a_title(tmp_path):
    make(tmp_path, "01_b", "00_a", notebooks=["00_a", "01_b"])
    found = lessons(root=tmp_path)
    assert [x.name for x in found] == ["00_a", "01_b"]
    assert found[0] == Lesson("00", "00_a", tmp_path / "lessons_src/00_a.py", tmp_path / "notebooks/00_a.ipynb")
    assert found[1].title == "01 · Title 01_b"


def test_a_notebook_without_source_is_listed_with_the_notebook_title(tmp_path):
    make(tmp_path, notebooks=["02_c"])
    (lesson,) = lessons(root=tmp_path)
    assert not lesson.source.exists() and lesson.notebook.exists()
    assert lesson.title == "02 · From the notebook"


def test_prefixes_select_and_a_bare_string_is_refused(tmp_path):
    make(tmp_path, "00_a", "01_b", "03_self")
    assert [x.name for x in lessons(["01", "03_s"], root=tmp_path)] == ["01_b", "03_self"]
    with pytest.raises(TypeError, match="prefixes must be a list or tuple"):
        lessons("01", root=tmp_path)


def test_files_not_named_like_a_lesson_are_strays(tmp_path):
    make(tmp_path, "00_a", "1_typo")
    assert [x.name for x in lessons(root=tmp_path)] == ["00_a"]
    assert strays(tmp_path) == [tmp_path / "lessons_src" / "1_typo.py"]


def test_checkout_is_this_repository_and_refuses_a_file_of_another(tmp_path):
    root = checkout(__file__)
    assert (root / "lessons_src").is_dir() and (root / "utils" / "course" / "lessons.py").is_file()
    assert [x.name for x in lessons()] == sorted(x.name for x in lessons())
    with pytest.raises(RuntimeError, match="another checkout"):
        checkout(tmp_path / "scripts" / "build.py")
