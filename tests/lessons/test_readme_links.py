"""Every lesson row of README.md carries its "Open in Colab" and "Launch Binder" links, built from
utils.course.links (the one place the repository URL is written)."""

import pytest

from utils.course import links
from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
LESSONS = [lesson.notebook for lesson in lessons() if lesson.notebook.exists()]


def readme_row(notebook):
    rows = [
        line
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("|") and f"({notebook})" in line
    ]
    return rows[0] if rows else None


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_row_has_colab_and_binder_links(path):
    notebook = f"notebooks/{path.name}"
    row = readme_row(notebook)
    assert row, f"README.md has no lesson-table row linking {notebook}"
    assert f"]({links.colab_url(notebook)})" in row, (
        f"{path.stem}: no Open in Colab link; use utils.course.links.badges()"
    )
    assert f"]({links.binder_url(notebook)})" in row, (
        f"{path.stem}: no Launch Binder link; use utils.course.links.badges()"
    )


def test_readme_has_an_instructors_section():
    text = (ROOT / "README.md").read_text()
    assert "## For instructors" in text
    for command in (
        "pytest",
        "python -m utils.course.grade",
        "python scripts/build_notebooks.py",
        "python scripts/build_site.py",
    ):
        assert command in text, f"the instructors' section does not show `{command}`"
