"""The static site: one command builds a page per lesson (with its figures) and an index in lesson
order; every relative link resolves, and previous/next links chain the lessons."""

import re
import subprocess
import sys
from urllib.parse import unquote

import nbformat
import pytest

from utils.course import links
from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
LESSONS = [lesson.notebook for lesson in lessons() if lesson.notebook.exists()]


def local_targets(page):
    """Every href/src of `page` that is a relative path (not a URL, a data URI or an in-page anchor)."""
    text = page.read_text(encoding="utf-8")
    urls = re.findall(r'\b(?:href|src)="([^"]*)"', text)
    return [u for u in urls if u and not re.match(r"^([a-z][a-z0-9+.-]*:|#|//)", u, re.I)]


def check_site(out, paths):
    index = out / "index.html"
    assert index.exists()
    text = index.read_text()
    positions = [text.find(f'href="{p.stem}.html"') for p in paths]
    assert all(i >= 0 for i in positions), "index.html does not link every lesson"
    assert positions == sorted(positions), "index.html does not list the lessons in order"
    for page in [index] + [out / f"{p.stem}.html" for p in paths]:
        assert page.exists(), f"{page.name} was not built"
        broken = [u for u in local_targets(page) if not (out / unquote(u.split("#")[0])).exists()]
        assert not broken, f"{page.name} has links that do not resolve: {broken}"
    for i, p in enumerate(paths):
        html = (out / f"{p.stem}.html").read_text(encoding="utf-8")
        assert 'href="index.html"' in html
        if i > 0:
            assert f'rel="prev" href="{paths[i - 1].stem}.html"' in html, f"{p.stem}: no link to the previous lesson"
        if i + 1 < len(paths):
            assert f'rel="next" href="{paths[i + 1].stem}.html"' in html, f"{p.stem}: no link to the next lesson"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_site.py"), "--out", str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_there_are_lessons():
    assert LESSONS


def test_every_lesson_has_a_page_in_order_and_links_resolve(site):
    check_site(site, LESSONS)


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_page_contains_its_figures_and_title(site, path, script):
    build_site = script("build_site")
    nb = nbformat.read(path, as_version=4)
    figures = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    html = (site / f"{path.stem}.html").read_text(encoding="utf-8")
    embedded = len(re.findall(r'<img[^>]+src="data:image/png;base64,[A-Za-z0-9+/]{100}', html))
    assert embedded >= figures, f"{path.stem}: {figures} figures in the notebook, {embedded} on the page"
    assert figures == 0 or embedded > 0
    assert f"<title>{build_site.title_of(nb, path.stem)}" in html


def tiny_lesson(path, title, body):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {title}\n\n{body}")])
    nbformat.write(nb, path)


def test_the_site_lists_the_same_lessons_as_the_tests(script):
    assert script("build_site").lessons() == LESSONS


def test_links_between_lessons_point_at_their_pages(tmp_path, script):
    build_site = script("build_site")
    (tmp_path / "notebooks").mkdir()
    paths = [tmp_path / "notebooks" / n for n in ("00_a.ipynb", "01_b.ipynb", "02_c.ipynb")]
    tiny_lesson(paths[0], "A", "Next: [lesson B](01_b.ipynb#goals); code: [plotting](../utils/figures/plotting.py)")
    tiny_lesson(paths[1], "B", "Back to [A](./00_a.ipynb).")
    tiny_lesson(paths[2], "C", "See [B](01_b.ipynb).")
    out = tmp_path / "site"
    build_site.build(out, root=tmp_path)
    check_site(out, paths)
    a = (out / "00_a.html").read_text()
    assert 'href="01_b.html#goals"' in a
    assert f'href="{links.REPOSITORY}/blob/{links.BRANCH}/utils/figures/plotting.py"' in a
    assert 'href="00_a.html"' in (out / "01_b.html").read_text()
    assert 'rel="prev"' not in a and 'rel="next" href="01_b.html"' in a
