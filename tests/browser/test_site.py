"""The book site: one command builds it from the committed notebooks without running or changing them; a table
of contents lists the lessons in order, previous/next links chain them, each page holds its title, math,
figures and Colab/Binder links, search exists, cells tagged hide-input are collapsed, every relative link resolves;
in Chromium (a browser test), every lesson page typesets its formulas with the network cut (MathJax ships with
the site). The site is built once for all of them."""

import functools
import hashlib
import json
import re
import subprocess
import sys
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from utils.course import links
from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
LESSONS = [lesson.notebook for lesson in lessons() if lesson.notebook.exists()]


def digest(paths):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@functools.cache
def soup(page):
    """A built page, parsed once (pages do not change after the build)."""
    return BeautifulSoup(page.read_bytes(), "lxml")


@functools.cache
def ids(page):
    """Every id on a built page (a link's #fragment must be one of them)."""
    return frozenset(tag["id"] for tag in soup(page).find_all(id=True))


def latex(text):
    """LaTeX compared up to spacing, without MathJax's delimiters or the split environment Sphinx wraps
    multi-line display math in."""
    text = re.sub(r"^\\[(\[]|\\[)\]]$", "", text.strip())
    text = re.sub(r"^\\begin\{split\}(.*)\\end\{split\}$", r"\1", text.strip(), flags=re.S)
    return " ".join(text.split())


def markdown_math(nb):
    """The LaTeX of every `$...$` and `$$...$$` in a notebook's Markdown cells, as a Markdown parser reads it."""
    parser = MarkdownIt("commonmark").use(dollarmath_plugin)
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for token in parser.parse(cell.source):
                found += [latex(t.content) for t in [token, *(token.children or [])] if t.type.startswith("math_")]
    return found


def rendered_math(page):
    """The LaTeX of every math element of a page."""
    return {latex(m.get_text()) for m in page.select(".math")}


def figures(nb):
    """How many PNG figures the notebook's code cells show (a widget's figure is drawn by the widget itself)."""
    return sum(
        "image/png" in o.get("data", {}) and "application/vnd.jupyter.widget-view+json" not in o.get("data", {})
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def check_links_resolve(out):
    """Every relative href/src of every page names a file of the site, and its #fragment an id on that page."""
    for page in sorted(out.glob("*.html")):
        broken = []
        html = soup(page)
        for tag in html.find_all(href=True) + html.find_all(src=True):
            url = tag.get("href") or tag.get("src")
            parts = urlsplit(url)
            if parts.scheme or url.startswith("//") or not url:
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists():
                broken.append(url)
            elif parts.fragment and target.suffix == ".html":
                if parts.fragment not in ids(target):
                    broken.append(url)
        assert not broken, f"{page.name} has links that do not resolve: {broken}"


def check_toc_and_chain(out, paths):
    """The index's table of contents lists every lesson in order; previous/next links chain the lessons."""
    pages = [f"{p.stem}.html" for p in paths]
    toc = [a["href"] for a in soup(out / "index.html").select("nav.bd-docs-nav a.reference.internal")]
    assert toc == pages, f"the table of contents lists {toc}, expected {pages}"
    for i, name in enumerate(pages):
        page = soup(out / name)
        prev, nxt = page.select_one("a.left-prev"), page.select_one("a.right-next")
        assert prev is not None and prev["href"] == (pages[i - 1] if i else "index.html"), f"{name}: previous link"
        if i + 1 < len(pages):
            assert nxt is not None and nxt["href"] == pages[i + 1], f"{name}: no link to the next lesson"
        else:
            assert nxt is None, f"{name} is the last lesson but links to a next page"


def collapsed(page):
    """(cells tagged hide-input whose source is folded in a closed <details>, cells tagged hide-input)."""
    cells = page.select("div.cell.tag_hide-input")
    folded = [
        c
        for c in cells
        if (d := c.find("details", recursive=False)) is not None
        and not d.has_attr("open")
        and d.select_one("div.cell_input") is not None
    ]
    return len(folded), len(cells)


def build(out, root=None):
    cmd = [sys.executable, str(ROOT / "scripts" / "build_site.py"), "--out", str(out)]
    if root is not None:
        cmd += ["--root", str(root)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The book of the committed lessons, built once for this file; the notebooks must come out unchanged."""
    before = digest(LESSONS)
    out = tmp_path_factory.mktemp("site") / "site"
    proc = build(out)
    assert digest(LESSONS) == before, "building the site changed the notebooks"
    return out, proc


def test_there_are_lessons():
    assert LESSONS


def test_the_site_lists_the_same_lessons_as_the_tests(script):
    assert script("build_site").lessons() == LESSONS


def test_the_build_warns_of_nothing(site):
    _, proc = site
    assert not proc.stderr.strip(), f"the site build printed warnings:\n{proc.stderr[-3000:]}"


def test_table_of_contents_and_previous_next_chain_the_lessons_in_order(site):
    out, _ = site
    check_toc_and_chain(out, LESSONS)


def test_every_relative_link_resolves(site):
    out, _ = site
    check_links_resolve(out)


def test_search_page_and_index_hold_every_lesson(site, script):
    out, _ = site
    assert soup(out / "search.html").select_one("form, input") is not None, "search.html has no search box"
    text = (out / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text.removeprefix("Search.setIndex(").removesuffix(")"))
    for path in LESSONS:
        title = script("build_site").title_of(nbformat.read(path, as_version=4), path.stem)
        assert path.stem in index["docnames"] and title in index["titles"], f"the search index lacks {path.stem}"
        doc = index["docnames"].index(path.stem)
        words = [w for w, docs in index["terms"].items() if doc == docs or (isinstance(docs, list) and doc in docs)]
        assert len(words) >= 100, f"the search index knows only {len(words)} words of {path.stem}"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_page_has_its_title_math_figures_launch_links_and_collapsed_cells(site, path, script):
    out, _ = site
    nb = nbformat.read(path, as_version=4)
    page = soup(out / f"{path.stem}.html")
    title = script("build_site").title_of(nb, path.stem)
    assert page.title.get_text().startswith(title), f"{path.stem}: page title {page.title.get_text()!r}"
    assert page.select_one("article h1").get_text().strip().rstrip("#").strip() == title

    mathjax = [s["src"] for s in page.find_all("script", src=True) if "mathjax" in s["src"].lower()]
    assert mathjax and all((out / src).is_file() for src in mathjax), f"MathJax is not in the site: {mathjax}"
    expected = markdown_math(nb)
    missing = sorted(set(expected) - rendered_math(page))
    assert not missing, f"{path.stem}: {len(missing)} of {len(expected)} $-math not rendered as math: {missing[:5]}"

    shown = [img["src"] for img in page.select("article div.cell_output img")]
    assert len(shown) == figures(nb), f"{path.stem}: {figures(nb)} figures in the notebook, {len(shown)} on the page"
    assert all((out / src).is_file() and (out / src).stat().st_size > 1000 for src in shown)

    hrefs = {a["href"] for a in page.find_all("a", href=True)}
    notebook = f"notebooks/{path.name}"
    assert links.colab_url(notebook) in hrefs, f"{path.stem}: no Open in Colab link"
    assert links.binder_url(notebook) in hrefs, f"{path.stem}: no Launch Binder link"

    tagged = sum(
        "hide-input" in c.metadata.get("tags", []) or "colab-setup" in c.metadata.get("tags", []) for c in nb.cells
    )
    folded, cells = collapsed(page)
    assert folded == cells == tagged, f"{path.stem}: {tagged} cells to collapse, {cells} tagged, {folded} folded"


def tiny_lesson(path, title, body, code=()):
    """A notebook with one Markdown cell and code cells given as (source, tags)."""
    cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\n{body}")]
    cells += [nbformat.v4.new_code_cell(src, metadata={"tags": list(tags)}) for src, tags in code]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)


def test_links_between_lessons_and_hidden_cells_on_a_tiny_book(tmp_path):
    """Links to another lesson or a heading, written as in JupyterLab, lead to the same place on the site;
    a link out of the lessons goes to GitHub; a hide-input cell is folded, the others are not."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "lessons_src").mkdir()
    paths = [tmp_path / "notebooks" / n for n in ("00_a.ipynb", "01_b.ipynb", "02_c.ipynb")]
    tiny_lesson(
        paths[0],
        "A",
        "Next: [lesson B](01_b.ipynb#2.-Why-B?), [its goals](01_b.ipynb#Goals); code: [plotting](../utils/figures/plotting.py); "
        "math $\\sqrt{d_k}$; [going further](#Going-further).\n\n## Going further\n\nMore.",
        code=[("x_checked = 1  # only verifies", ["hide-input"]), ("y_shown = 2", [])],
    )
    tiny_lesson(paths[1], "B", "## Goals\n\nBack to [A](./00_a.ipynb).\n\n## 2. Why B?\n\nBecause.")
    tiny_lesson(paths[2], "C", "See [B](01_b.ipynb).")
    out = tmp_path / "site"
    before = digest(paths)
    build(out, root=tmp_path)
    assert digest(paths) == before
    check_toc_and_chain(out, paths)
    check_links_resolve(out)
    a = soup(out / "00_a.html")
    hrefs = [x["href"] for x in a.find_all("a", href=True)]
    for text, heading in (("lesson B", "2. Why B?"), ("its goals", "Goals"), ("going further", "Going further")):
        (href,) = [x["href"] for x in a.select("article a[href]") if x.get_text() == text]
        page, _, frag = href.partition("#")
        section = soup(out / page if page else out / "00_a.html").find(id=frag)
        assert section is not None and section.find(re.compile("^h[1-6]$")).get_text().rstrip("#") == heading, href
    assert f"{links.REPOSITORY}/blob/{links.BRANCH}/utils/figures/plotting.py" in hrefs
    assert "00_a.html" in [x["href"] for x in soup(out / "01_b.html").select("article a[href]")]
    assert r"\sqrt{d_k}" in rendered_math(a)
    assert collapsed(a) == (1, 1), "the cell tagged hide-input is not the one folded away"
    hidden = a.select_one("div.tag_hide-input details")
    assert "x_checked" in hidden.get_text() and "y_shown" not in hidden.get_text()
    shown = [c for c in a.select("div.cell") if "y_shown" in c.get_text()]
    assert shown and shown[0].find("details") is None, "an untagged cell is folded away"


def test_the_build_refuses_to_replace_a_folder_that_is_not_a_site(tmp_path, script):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="out must be a new folder or an earlier site"):
        script("build_site").build(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_the_link_check_finds_a_missing_page_and_a_missing_fragment(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html#here">fine</a><p id="top"><a href="#top">fine</a></p>')
    (tmp_path / "b.html").write_text('<h1 id="here">B</h1>')
    check_links_resolve(tmp_path)
    for bad in ('<a href="c.html">no page</a>', '<a href="b.html#there">no such id</a>'):
        (tmp_path / "a.html").write_text(bad)
        soup.cache_clear()
        ids.cache_clear()
        with pytest.raises(AssertionError, match="do not resolve"):
            check_links_resolve(tmp_path)


@pytest.mark.browser
def test_mathjax_typesets_every_formula_offline(browser, site):
    out, _ = site
    page = browser.new_page()
    try:
        page.route("http*://**", lambda route: route.abort())  # no network: MathJax must come with the site
        for path in LESSONS:
            page.goto((out / f"{path.stem}.html").as_uri())
            formulas = page.locator(".math").count()
            assert formulas > 0, f"{path.stem}: no formula on the page"
            page.wait_for_function(f"document.querySelectorAll('mjx-container').length >= {formulas}", timeout=30000)
    finally:
        page.close()
